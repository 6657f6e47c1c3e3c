"""The error classes: one base (PyptoError) for every error a user can reach, and a type error found
during a pass is a PassTypeError, not a ParserError (docs/architecture.md, "Errors")."""
import ast
from pathlib import Path

import pytest
import torch

import pypto.errors as E
from kernels_dbg import sub_scale
from pypto.driver.build import run_pipeline
from pypto.frontend.specialize import specialize
from pypto.ir.nodes import Var
from pypto.ir.types import TensorType
from pypto.ir.visit import iter_calls
from pypto.language.dtypes import FP32
from pypto.ops.registry import get_op
from pypto.passes.pipeline import Pipeline

PKG = Path(E.__file__).resolve().parent

# exception classes that never reach a user as such, and why
NOT_USER_FACING = {
    "StructuralMismatch": "an AssertionError raised by assert_structural_equal, for tests",
    "CastPathError": "cast_table's answer 'no chain': LegalizeTileCast re-raises it as a PassTypeError, "
                     "cast-check reports it as a result",
    "EditError": "a doctor/races fix that does not apply: caught, the finding is reported without it",
    "DumpError": "caught by pypto.tools.dump_viewer.main and printed as a usage error",
    "MapError": "caught by pypto.tools.memory_map.main and printed as a usage error",
    "TraceError": "caught by pypto.tools.ir_trace.main and printed as a usage error",
    "_UsageError": "the CLI's own usage error, caught in pypto.cli.main",
    "_DumpUnparsable": "validate_ir's internal signal, caught there",
    "NoGang": "the lockstep generator's 'no lockstep form', caught where the kernel module is generated",
    "_Unknown": "ParallelOverlap's 'not a constant region', caught in the pass",
    "_WritesIn": "the simulator's signal to start over on copies, caught in execute()",
    "_Refuse": "the batched-loop proof's 'not provably independent', caught in pypto.codegen.batch.plan",
    "_Return": "the host interpreter's `return` of a @pl.jit.host body, caught where the body runs",
    "_Timeout": "difffuzz's per-case time limit, caught in the executor",
}


def _exception_classes():
    """(module file, class name, base names) of every class in pypto named *Error / *Exception or
    deriving from one."""
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases]
                if node.name.endswith(("Error", "Exception", "Unparsable")) or any(
                        b.endswith(("Error", "Exception")) for b in bases):
                    yield path.relative_to(PKG.parent), node.name, bases


def test_every_user_facing_error_derives_from_pypto_error():
    import importlib

    bad = []
    for rel, name, _ in _exception_classes():
        if name in NOT_USER_FACING:
            continue
        module = importlib.import_module(".".join(rel.with_suffix("").parts).removesuffix(".__init__"))
        cls = getattr(module, name)
        if not issubclass(cls, E.PyptoError):
            bad.append(f"{rel}:{name}")
    assert bad == [], f"derive these from pypto.errors.PyptoError (or list them in NOT_USER_FACING): {bad}"


def test_the_class_relationships_callers_rely_on():
    assert issubclass(E.InvalidOperationError, E.ParserError) and issubclass(E.InvalidOperationError, E.TypeCheckError)
    assert issubclass(E.PassTypeError, E.PassError) and issubclass(E.PassTypeError, E.TypeCheckError)
    assert not issubclass(E.PassTypeError, E.ParserError) and not issubclass(E.PassError, E.ParserError)
    assert issubclass(E.PlatformError, ValueError) and issubclass(E.InternalError, RuntimeError)
    # the reference raises ValueError for the split-boundary refusals (pypto.ops.aiv_split)
    assert issubclass(E.SplitBoundaryError, ValueError) and issubclass(E.SplitBoundaryError, E.TypeCheckError)
    for cls in (E.ParserError, E.PassError, E.TypeCheckError, E.VerificationError, E.CodegenError, E.CapacityError,
                E.SimulationError, E.InternalError):
        assert issubclass(cls, E.PyptoError)
    from pypto.runtime import GoldenFileError

    assert issubclass(GoldenFileError, E.PyptoError)


def _program():
    return specialize(sub_scale, (torch.zeros(64, 128), torch.zeros(64, 128), torch.zeros(64, 128)), {}).program


def RecheckWithWrongOperands(program):
    """A pass that re-applies an op's type rule to operands it rejects (shapes that differ, as a pass
    building a bad call would): the rule raises the parser's InvalidOperationError."""
    for f in program.functions:
        for _, c in iter_calls(f.body):
            if c.op.endswith(".sub"):
                other = Var("w", TensorType((3, 5), FP32))
                get_op(c.op, c.span).infer_type((c.args[0], other, *c.args[2:]), c.span)
    return program


def test_a_type_error_in_a_pass_is_a_pass_type_error_not_a_parser_error():
    pipe = Pipeline.default().insert_after("ConvertToSSA", RecheckWithWrongOperands)
    with pytest.raises(E.TypeCheckError) as e:
        run_pipeline(_program(), {"platform": "a2a3sim"}, passes=pipe)
    assert type(e.value) is E.PassTypeError and not isinstance(e.value, E.ParserError)
    assert isinstance(e.value.__cause__, E.InvalidOperationError)      # the rule's own error, chained
    assert e.value.message == e.value.__cause__.message and e.value.span == e.value.__cause__.span
    assert "kernels_dbg.py" in str(e.value)                             # still located at the call
