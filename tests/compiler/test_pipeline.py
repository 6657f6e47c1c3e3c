"""Custom pipelines and verification levels (seed step 3)."""
import pytest
import torch

from kernels_dbg import sub_scale
import pypto.ir as ir
from pypto.errors import VerificationError
from pypto.frontend.specialize import specialize
from pypto.ir.nodes import AssignStmt, Call, ConstInt, MakeTuple, Var
from pypto.ir.types import TileType
from pypto.language.dtypes import FP32
from pypto.language.enums import FunctionType
from pypto.passes.pipeline import Pipeline


def _program():
    return specialize(sub_scale, (torch.zeros(64, 128), torch.zeros(64, 128), torch.zeros(64, 128)), {}).program


def LeakTileOp(program):
    """A planted fault: puts a tile op into the orchestration function."""
    fns = []
    for f in program.functions:
        if f.func_type == FunctionType.Orchestration:
            t = TileType((16, 16), FP32)
            shape = MakeTuple((ConstInt(16), ConstInt(16)))
            stmt = AssignStmt(Var("leak", t), Call("tile.create", (shape, FP32, None), t))
            f = f.replace(body=(stmt,) + f.body)
        fns.append(f)
    return program.replace(functions=tuple(fns))


def test_basic_verification_names_the_pass():
    pipe = Pipeline.default().insert_after("AllocateMemoryAddr", LeakTileOp)
    with pytest.raises(VerificationError) as e:
        ir.compile(_program(), passes=pipe, verification_level=ir.VerificationLevel.BASIC)
    msg = str(e.value)
    assert "after 'LeakTileOp'" in msg and "SplitIncoreOrch" in msg and "tile.create" in msg


def test_verification_none_skips_it():
    pipe = Pipeline.default().insert_after("AllocateMemoryAddr", LeakTileOp)
    lowered = ir.run_pipeline(_program(), {"verification_level": ir.VerificationLevel.NONE, "passes": pipe})
    assert lowered.program is not None


def test_env_var_selects_level(monkeypatch):
    pipe = Pipeline.default().insert_after("AllocateMemoryAddr", LeakTileOp)
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "none")
    ir.run_pipeline(_program(), {"passes": pipe})
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "basic")
    with pytest.raises(VerificationError):
        ir.run_pipeline(_program(), {"passes": pipe})


def test_roundtrip_level_really_roundtrips():
    res = ir.run_pipeline(_program(), {"verification_level": ir.VerificationLevel.ROUNDTRIP})
    assert res.program.as_python() == ir.parse(res.program.as_python()).as_python()


def test_pipeline_editing():
    base = Pipeline.default()
    assert "AllocateMemoryAddr" in base.names
    dropped = base.drop("LegalizeTileCast")
    assert "LegalizeTileCast" not in dropped.names and len(dropped) == len(base) - 1
    replaced = base.replace("LegalizeTileCast", lambda p: p)
    assert "<lambda>" in replaced.names   # a lambda is a fine pass (its dump: NN_after_<lambda>.py)
    with pytest.raises(KeyError, match="no pass named"):
        base.drop("NoSuchPass")
    with pytest.raises(ValueError, match="duplicate"):
        base.insert_after("LegalizeTileCast", base[base.names.index("LegalizeTileCast")])


@pytest.mark.parametrize("name", ["../escape", "a/b", "a\\b", "", "..", ".hidden", "x\0y", "a\nb"])
def test_a_pass_name_that_cannot_be_a_file_name_is_refused(name, tmp_path):
    # issue 13 item 10: a user pass whose __name__ contains '/' wrote passes_dump/NN_after_<name>.py elsewhere
    def p(program):
        return program
    p.__name__ = name
    with pytest.raises(ValueError, match="cannot be a file name.*NAME attribute"):
        Pipeline.default().insert_after("ConvertTensorToTileOps", p)
    with pytest.raises(ValueError, match="cannot be a file name"):
        Pipeline([p])
    assert not list(tmp_path.iterdir())


def test_type_check_skips_the_calls_it_accepted_earlier_in_the_same_compile(monkeypatch):
    """TypeChecked runs after every pass; a call object it accepted (frozen IR: the same object is
    the same call) is not re-checked within one compilation, and a new context checks everything."""
    import textwrap

    from pypto.ir.verifier import verify
    from pypto.language.program import parse
    from pypto.ops.registry import OpDef
    from pypto.passes.context import PassContext

    prog = parse(textwrap.dedent('''
        import pypto.language as pl

        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
                o = pl.store(pl.add(pl.load(a, [0, 0], [16, 64]), 1.0), [0, 0], o)
                return o
    '''))
    ctx = PassContext()
    verify(prog, ["TypeChecked"], ctx, "first")
    assert len(ctx.typed_calls) >= 3
    seen = []
    real = OpDef.infer_type
    monkeypatch.setattr(OpDef, "infer_type", lambda self, *a, **k: seen.append(self.name) or real(self, *a, **k))
    verify(prog, ["TypeChecked"], ctx, "second")
    assert seen == []
    verify(prog, ["TypeChecked"], PassContext(), "fresh")
    assert len(seen) >= 3


_CALLER_CALLEE = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        r = pl.store(pl.add(pl.load(a, [0, 0], [16, 64]), 1.0), [0, 0], o)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        r = self.k(a, o)
        return r
'''


def test_verifier_skips_a_function_it_accepted_while_it_and_what_it_reads_are_unchanged(monkeypatch):
    """A per-function property (function_prop) accepted on a function object is not re-checked on
    that object within one compilation (ctx), is re-checked on a new object, and a check that reads
    other functions (CallDirections: the callees' signatures) re-judges an unchanged caller whose
    callee changed: a skip can never hide a failure."""
    import dataclasses
    import textwrap

    from pypto.errors import VerificationError
    from pypto.ir.nodes import Program
    from pypto.ir.types import ScalarType
    from pypto.ir.verifier import verify
    from pypto.ir.verifier.registry import PER_FUNCTION
    from pypto.language import DataType
    from pypto.language.program import parse
    from pypto.passes.context import PassContext

    prog = parse(textwrap.dedent(_CALLER_CALLEE))
    checked = []
    for name in ("SSA", "CallDirections"):
        fcheck, reads = PER_FUNCTION[name]
        monkeypatch.setitem(PER_FUNCTION, name, (lambda f, p, c, _n=name, _g=fcheck: checked.append((_n, f.name))
                                                 or _g(f, p, c), reads))
    ctx = PassContext()
    verify(prog, ["SSA", "CallDirections"], ctx, "first")
    assert sorted(checked) == [("CallDirections", "k"), ("CallDirections", "main"), ("SSA", "k"), ("SSA", "main")]
    checked.clear()
    verify(prog, ["SSA", "CallDirections"], ctx, "second")
    assert checked == []
    # a pass rebuilt the callee (a new object, same signature): only it is checked again
    k, main = prog.functions
    k2 = dataclasses.replace(k, body=tuple(k.body))
    verify(Program(prog.name, (k2, main)), ["SSA", "CallDirections"], ctx, "rebuilt")
    assert sorted(checked) == [("CallDirections", "k"), ("SSA", "k")]
    checked.clear()
    # the callee's first parameter became a scalar: the caller object is unchanged, but its call
    # now passes a tensor to a scalar parameter, and the check must say so
    a = k.params[0]
    scalar = dataclasses.replace(a, type=ScalarType(DataType.FP32))
    k3 = dataclasses.replace(k, params=(scalar, *k.params[1:]))
    with pytest.raises(VerificationError, match="parameter 'a'.*receives"):
        verify(Program(prog.name, (k3, main)), ["CallDirections"], ctx, "BadPass")
    assert ("CallDirections", "main") in checked
