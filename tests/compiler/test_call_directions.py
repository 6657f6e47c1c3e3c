"""DeriveCallDirections and the CallDirectionsResolved property: every task dispatch of the
orchestration carries its per-argument runtime tags (docs/language.md, "Task dependencies": INPUT / INOUT /
OUTPUT_EXISTING / NO_DEP, SCALAR for scalars; Out promoted to INOUT by R-seq, R-prior, R-enclosing),
printed in the IR as ``attrs={"arg_directions": [...]}``, parsed back, checked by the verifier and
emitted verbatim by orchestration codegen."""
import re

import pytest
import torch

import kernels_call_dirs as K
from pypto.errors import InternalError, ParserError, VerificationError
from pypto.frontend.specialize import specialize
from pypto.ir import assert_structural_equal, run_pipeline
from pypto.ir.compile import compile as ir_compile
from pypto.ir.nodes import FuncCall
from pypto.ir.visit import Mutator
from pypto.language import parse
from pypto.passes.pipeline import Pipeline
from pypto.runtime import RunConfig
from pypto.runtime import simulator as S

Z = torch.zeros
ARGS = {
    "seq_loop": (K.seq_loop, (Z(64, 64), Z(64, 64))),
    "par_loop": (K.par_loop, (Z(64, 64), Z(256, 64))),
    "two_writers": (K.two_writers, (Z(64, 64),) * 3),
    "no_dep": (K.no_dep, (Z(64, 64),) * 2),
}


def _program(name):
    kernel, args = ARGS[name]
    return specialize(kernel, args, {}).program


def _stages(name, passes=None):
    return dict(run_pipeline(_program(name), {"platform": "a2a3sim"}, passes=passes).stages)


def _tags(text, kernel):
    """The arg_directions printed on the call of ``kernel`` (one list per call)."""
    return [re.findall(r'"(\w+)"', m) for m in
            re.findall(r"self\." + kernel + r"\b[^\n]*attrs=\{\"arg_directions\": \[([^\]]*)\]\}", text)]


def test_pass_position_and_no_tags_before_it():
    names = [n for n, _ in run_pipeline(_program("seq_loop"), {"platform": "a2a3sim"}).stages]
    assert names.index("DeriveCallDirections") == names.index("AllocateMemoryAddr") + 1
    assert names.index("AutoDeriveTaskDependencies") == names.index("DeriveCallDirections") + 1
    assert names.index("FinalSimplify") == names.index("AutoDeriveTaskDependencies") + 1
    stages = _stages("seq_loop")
    assert "arg_directions" not in stages["AllocateMemoryAddr"].as_python()
    assert "arg_directions" in stages["DeriveCallDirections"].as_python()
    assert "arg_directions" in stages["FinalSimplify"].as_python()  # later passes keep the decision


def test_r_seq_out_in_sequential_loop_is_inout():
    text = _stages("seq_loop")["DeriveCallDirections"].as_python()
    assert _tags(text, "acc") == [["INPUT", "INOUT"]]
    assert 'self.acc(a, out_1, attrs={"arg_directions": ["INPUT", "INOUT"]})' in text


def test_parallel_loop_is_not_r_seq_and_scalars_are_scalar():
    text = _stages("par_loop")["DeriveCallDirections"].as_python()
    assert _tags(text, "rows") == [["INPUT", "SCALAR", "OUTPUT_EXISTING"]]


def test_first_writer_output_existing_second_writer_inout_reader_input():
    text = _stages("two_writers")["DeriveCallDirections"].as_python()
    assert _tags(text, "first") == [["INPUT", "OUTPUT_EXISTING"]]      # a first writer
    assert _tags(text, "second") == [["INPUT", "INOUT"]]               # R-prior: out was written before
    assert _tags(text, "reader") == [["INPUT", "OUTPUT_EXISTING", "INPUT"]]  # reads out, first writer of other


def test_no_dep_args_are_no_dep():
    text = _stages("no_dep")["DeriveCallDirections"].as_python()
    assert 'pl.submit(self.nd, a, pl.no_dep(out), attrs={"arg_directions": ["INPUT", "NO_DEP"]})' in text


@pytest.mark.parametrize("name", list(ARGS))
def test_every_stage_roundtrips(name):
    for stage, program in _stages(name).items():
        text = program.as_python()
        reparsed = parse(text)
        assert_structural_equal(program, reparsed)
        assert reparsed.as_python() == text, stage


def test_parser_reads_attrs_back_and_rejects_bad_ones():
    text = _stages("two_writers")["DeriveCallDirections"].as_python()
    prog = parse(text)
    calls = [e for f in prog.functions for s in f.body for e in [getattr(s, "value", None)]
             if isinstance(e, FuncCall)]
    assert [c.arg_directions for c in calls] == [("INPUT", "OUTPUT_EXISTING"), ("INPUT", "INOUT"),
                                                 ("INPUT", "OUTPUT_EXISTING", "INPUT")]
    with pytest.raises(ParserError, match="arg_directions must be a list"):
        parse(text.replace('["INPUT", "INOUT"]', '["INPUT", "WRITE"]'))
    with pytest.raises(ParserError, match="2 tags for 3 arguments"):
        parse(text.replace('["INPUT", "OUTPUT_EXISTING", "INPUT"]', '["INPUT", "INPUT"]'))
    with pytest.raises(ParserError, match="attrs= must be a literal dict"):
        parse(text.replace('attrs={"arg_directions"', 'attrs={"directions"'))


# ------------------------------------------------------------------ the property catches a bad tag
class _Corrupt(Mutator):
    """Tags the first argument (an In parameter read by the kernel) as written."""

    def visit_FuncCall(self, c):
        if not c.arg_directions:
            return c
        return c.replace(arg_directions=("INOUT",) + c.arg_directions[1:])


def CorruptTags(program):
    return _Corrupt().program(program)


def DropTag(program):
    class _Drop(Mutator):
        def visit_FuncCall(self, c):
            return c.replace(arg_directions=c.arg_directions[:-1])
    return _Drop().program(program)


def test_planted_corruption_is_caught_by_the_property():
    pipe = Pipeline.default().insert_after("DeriveCallDirections", CorruptTags)
    with pytest.raises(VerificationError,
                       match=r"after 'CorruptTags' for property CallDirectionsResolved.*argument 0 \('a', In\) "
                             r"is only read but tagged INOUT"):
        run_pipeline(_program("two_writers"), {"platform": "a2a3sim"}, passes=pipe)
    pipe = Pipeline.default().insert_after("DeriveCallDirections", DropTag)
    with pytest.raises(VerificationError, match="CallDirectionsResolved.*1 runtime tags for 2 arguments"):
        run_pipeline(_program("seq_loop"), {"platform": "a2a3sim"}, passes=pipe)


def test_codegen_requires_the_tags(tmp_path):
    pipe = Pipeline.default().drop("DeriveCallDirections")
    with pytest.raises(InternalError, match="call of 'acc'.*DeriveCallDirections"):
        ir_compile(_program("seq_loop"), output_dir=tmp_path / "o", passes=pipe)


def test_generated_orchestration_submits_the_ir_tags(tmp_path):
    a = torch.randn(64, 64)
    out = Z(256, 64)
    K.par_loop(a, out, config=RunConfig(sim_seed=0, sim_batch=False))   # (one task per iteration)
    assert [t.tags for t in S._LAST_RUNTIME[0].tasks] == [["INPUT", "SCALAR", "OUTPUT_EXISTING"]] * 4
    assert torch.equal(out, (a * 2).repeat(4, 1))
    out = Z(64, 64)
    K.seq_loop(a, out, config=RunConfig(sim_seed=0))
    assert [t.tags for t in S._LAST_RUNTIME[0].tasks] == [["INPUT", "INOUT"]] * 4
