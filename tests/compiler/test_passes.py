"""Simplify, NormalizeReturnOrder, FlattenTileNdTo2D and the verifier properties NoLiveOverlap,
CallDirections, ReturnParamsExplicit, TileOps2D: each pass does its job (printed IR before/after),
keeps the semantics (validate_ir at tight tolerance) and the printed IR round-trips."""
from dataclasses import replace

import pytest
import torch

import kernels_passes as K
import pypto.language as pl
from kernels_dbg import scaled
from pypto.errors import PyptoError, VerificationError
from pypto.frontend.specialize import specialize
from pypto.ir import run_pipeline
from pypto.ir.nodes import ReturnStmt
from pypto.ir.types import TileType
from pypto.ir.visit import Mutator
from pypto.language.enums import FunctionType, ParamDirection
from pypto.passes import PIPELINE
from pypto.passes.pipeline import Pipeline
from pypto.runtime import RunConfig

PLATFORMS = ["a2a3sim", "a5sim"]


def _data(*shapes, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=g) for s in shapes]


def _run(kernel, args, **options):
    return run_pipeline(specialize(kernel, args, {}).program, {"platform": "a2a3sim", **options})


def _stage(result, name):
    names = [n for n, _ in result.stages]
    i = names.index(name)
    return result.stages[i - 1][1].as_python(), result.stages[i][1].as_python()


# ------------------------------------------------------------------------------------- pipeline


def test_pipeline_positions():
    names = [p.NAME for p in PIPELINE]
    assert names == ["InlineFunctions", "UnrollLoops", "AccWindows", "ConvertToSSA", "Simplify", "FlattenCallExpr",
                     "OutlineIncoreScopes", "ConvertTensorToTileOps", "FuseCreateAssembleToView",
                     "OptimizeOrchTensors", "FlattenTileNdTo2D", "LegalizeTileCast", "AutoTileMatmulL0", "LowerPipelineLoops",
                     "InferTileMemorySpace",
                     "LowerAutoVectorSplit", "ExpandMixedKernel", "InjectGMPipeBuffer", "SplitVectorKernel", "NormalizeReturnOrder", "InitMemRef", "MemoryReuse", "AllocateMemoryAddr", "DeriveCallDirections",
                     "AutoDeriveTaskDependencies", "FinalSimplify", "InsertCommFence"]
    for p in PIPELINE:
        assert p.__doc__ and "Requires" in p.__doc__ and "Produces" in p.__doc__, p.NAME


# ------------------------------------------------------------------------------------- Simplify


def test_simplify_folds_one_trip_loop_and_dead_branch():
    a, out = _data((64, 128), (64, 128))
    before, after = _stage(_run(K.one_trip, (a, out)), "Simplify")
    assert "pl.range(1" in before and "pl.range(0" in before and "if (i + 1) > 1:" in before
    assert "pl.range" not in after and "if " not in after
    assert "pl.tile.load(a, [0, 0], [64, 128])" in after     # i * 32 with i = 0 folded
    assert "muls(" in after and "2.0)" in after and "3.0" not in after   # the live (else) branch only
    # the 0-trip loop's body is gone; its result is the init value
    assert after.count("pl.tile.add(") == 1


def test_simplify_keeps_multi_trip_loops():
    a, out = _data((64, 128), (64, 128))
    before, after = _stage(_run(K.multi_trip, (a, out)), "Simplify")
    assert before == after


def test_simplify_constant_folding_and_dce_unit():
    from pypto.ir.nodes import AssignStmt, BinOp, ConstInt, Function, Program, ReturnStmt, UnaryOp, Var
    from pypto.ir.types import ScalarType
    from pypto.language.dtypes import INDEX
    from pypto.passes import simplify
    from pypto.passes.context import PassContext

    idx = ScalarType(INDEX)
    n = Var("n", idx)
    x, y, z = Var("x", idx), Var("y", idx), Var("z", idx)
    body = (AssignStmt(x, BinOp("mul", ConstInt(4), ConstInt(8), idx)),          # x = 32 -> propagated
            AssignStmt(y, BinOp("add", n, UnaryOp("neg", BinOp("sub", x, ConstInt(2), idx), idx), idx)),
            AssignStmt(z, BinOp("add", n, ConstInt(1), idx)),                     # unused: removed
            ReturnStmt((y,)))
    f = Function("f", (n,), (ParamDirection.In,), (idx,), body, FunctionType.Opaque)
    out = simplify.run(Program("p", (f,)), PassContext())
    text = out.as_python()
    assert "n + -30" in text and "z" not in text and "x" not in text.replace("max", ""), text


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", ["one_trip", "multi_trip"])
def test_simplify_preserves_semantics(name, platform):
    a, out = _data((64, 128), (64, 128))
    kernel = getattr(K, name)
    expected = (a + a) * 2.0 if name == "one_trip" else a * 4.0
    compiled = kernel.compile(a, out, config=RunConfig(platform=platform, dump_passes=True))
    report = compiled.validate_ir({"a": a, "out": out}, {"out": expected}, rtol=1e-6, atol=1e-6, verbose=False)
    assert report.passed


# ------------------------------------------------------------------------------------- NormalizeReturnOrder


def test_normalize_return_order_reorders_returns_and_call_sites():
    a, x, y = _data((64, 128), (64, 128), (64, 128))
    before, after = _stage(_run(K.two_outs, (a, x, y)), "NormalizeReturnOrder")
    assert "return y_1, x_1" in before and "y_1: pl.Tensor[[64, 128], pl.FP32] = two_outs_incore_0_ret[0]" in before
    assert "return x_1, y_1" in after
    assert "y_1: pl.Tensor[[64, 128], pl.FP32] = two_outs_incore_0_ret[1]" in after
    assert "x_1: pl.Tensor[[64, 128], pl.FP32] = two_outs_incore_0_ret[0]" in after


@pytest.mark.parametrize("platform", PLATFORMS)
def test_normalize_return_order_preserves_semantics(platform):
    a, x, y = _data((64, 128), (64, 128), (64, 128))
    compiled = K.two_outs.compile(a, x, y, config=RunConfig(platform=platform, dump_passes=True))
    report = compiled.validate_ir({"a": a, "x": x, "y": y}, {"x": a + a, "y": a * 2.0}, rtol=1e-6, atol=1e-6,
                                  verbose=False)
    assert report.passed


# ------------------------------------------------------------------------------------- FlattenTileNdTo2D

_FLAT = {
    "three_d": (lambda: _data((2, 16, 64), (2, 16, 64), (2, 16, 64)), ("a", "b", "out"),
                lambda a, b, out: {"out": (a + b) * (a + b)}),
    "three_d_region": (lambda: _data((4, 8, 64), (4, 8, 64)), ("a", "out"), None),
    "one_d": (lambda: _data((128,), (128,)), ("a", "out"), lambda a, out: {"out": a + a}),
}


def _region_expected(a, out):
    e = out.clone()
    e[2:4] = torch.exp(a[1:3])
    e[0, 0, 0:32] = a[0, 3, 32:64] + a[0, 3, 32:64]
    return {"out": e}


def test_flatten_makes_tiles_2d():
    before, after = _stage(_run(K.three_d, tuple(_FLAT["three_d"][0]())), "FlattenTileNdTo2D")
    assert "pl.Tile[[2, 16, 64], pl.FP32]" in before and "pl.tile.load(a, [0, 0, 0], [2, 16, 64])" in before
    assert "pl.Tile[[2, 16, 64]" not in after
    assert "a_tile: pl.Tile[[32, 64], pl.FP32] = pl.tile.load(a, [0, 0, 0], [32, 64])" in after
    assert "pl.tile.store(mul__tmp_v0, [0, 0, 0], out)" in after
    before, after = _stage(_run(K.three_d_region, tuple(_FLAT["three_d_region"][0]())), "FlattenTileNdTo2D")
    assert "pl.tile.load(a, [1, 0, 0], [16, 64])" in after and "pl.tile.load(a, [0, 3, 32], [1, 32])" in after
    before, after = _stage(_run(K.one_d, tuple(_FLAT["one_d"][0]())), "FlattenTileNdTo2D")
    assert "pl.Tile[[128], pl.FP32]" in before
    assert "a_tile: pl.Tile[[1, 128], pl.FP32] = pl.tile.load(a, [0], [1, 128])" in after


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", list(_FLAT))
def test_flatten_preserves_semantics(name, platform):
    make, names, expect = _FLAT[name]
    args = make()
    expected = (expect or _region_expected)(*args)
    compiled = getattr(K, name).compile(*args, config=RunConfig(platform=platform, dump_passes=True))
    report = compiled.validate_ir(dict(zip(names, args)), expected, rtol=1e-6, atol=1e-6, verbose=False)
    assert report.passed
    # the end-to-end run agrees too
    outs = [a.clone() for a in args]
    compiled(*outs)
    for k, v in expected.items():
        torch.testing.assert_close(outs[names.index(k)], v, rtol=1e-6, atol=1e-6)


def test_flatten_rejects_a_non_contiguous_region():
    with pytest.raises(PyptoError, match="not contiguous in the leading dimensions"):
        _run(K.three_d_strided, tuple(_data((4, 8, 64), (4, 8, 64))))


# ------------------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", ["one_trip", "multi_trip", "two_outs", "three_d", "three_d_region", "one_d"])
def test_every_stage_roundtrips(name, platform):
    from pypto.ir import assert_structural_equal
    from pypto.language import parse

    shapes = {"one_trip": [(64, 128)] * 2, "multi_trip": [(64, 128)] * 2, "two_outs": [(64, 128)] * 3,
              "three_d": [(2, 16, 64)] * 3, "three_d_region": [(4, 8, 64)] * 2, "one_d": [(128,)] * 2}[name]
    result = _run(getattr(K, name), tuple(_data(*shapes)), platform=platform, verification_level="roundtrip")
    for stage, prog in result.stages:
        assert_structural_equal(prog, parse(prog.as_python()))


# ------------------------------------------------------------------------------------- verifier properties


def _pipe_fault(after, fault):
    return Pipeline.default().insert_after(after, fault)


class _Retype(Mutator):
    """Rebuild with every tile Var's type passed through ``fn``."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def var(self, v):
        got = self.subst.get(id(v))
        if got is not None:
            return got
        if isinstance(v.type, TileType):
            from pypto.ir.nodes import Var
            return self.redefine(v, Var(v.name, self.fn(v.type), v.span))
        return v

    def visit_Call(self, c):
        c = self.rebuild(c)
        return c.replace(type=self.fn(c.type)) if isinstance(c.type, TileType) else c


def StackAtZero(program):
    """A planted fault: every tile at address 0 (the live ones overlap)."""
    return _Retype(lambda t: t.with_(memref=replace(t.memref, addr=0)) if t.memref else t).program(program)


def ScalarAsOut(program):
    """A planted fault: the scalar parameter of each kernel becomes an Out parameter."""
    from pypto.ir.types import ScalarType

    funcs = []
    for f in program.functions:
        if f.func_type == FunctionType.InCore:
            f = f.replace(directions=tuple(ParamDirection.Out if isinstance(p.type, ScalarType) else d
                                           for p, d in zip(f.params, f.directions)))
        funcs.append(f)
    return program.replace(functions=tuple(funcs))


def ReverseReturns(program):
    """A planted fault: each kernel returns its results in reverse order."""
    funcs = []
    for f in program.functions:
        if f.func_type == FunctionType.InCore and len(f.return_types) > 1:
            body = tuple(s.replace(values=tuple(reversed(s.values))) if isinstance(s, ReturnStmt) else s
                         for s in f.body)
            f = f.replace(body=body, return_types=tuple(reversed(f.return_types)))
        funcs.append(f)
    return program.replace(functions=tuple(funcs))


def _fault_cases():
    t = lambda *s: tuple(_data(*s))  # noqa: E731
    return {
        "NoLiveOverlap": ("AllocateMemoryAddr", StackAtZero, K.two_outs, lambda: t((64, 128), (64, 128), (64, 128))),
        "CallDirections": ("OutlineIncoreScopes", ScalarAsOut, scaled,
                           lambda: (torch.zeros(64, 128), pl.RUNTIME, torch.zeros(64, 128))),
        "ReturnParamsExplicit": ("NormalizeReturnOrder", ReverseReturns, K.two_outs,
                                 lambda: t((64, 128), (64, 128), (64, 128))),
    }


@pytest.mark.parametrize("prop", ["NoLiveOverlap", "CallDirections", "ReturnParamsExplicit"])
def test_planted_fault_names_pass_and_property(prop):
    after, fault, kernel, args = _fault_cases()[prop]
    prog = specialize(kernel, args(), {}).program
    with pytest.raises(VerificationError) as e:
        run_pipeline(prog, {"platform": "a2a3sim"}, passes=_pipe_fault(after, fault))
    msg = str(e.value)
    assert f"after '{fault.__name__}'" in msg and f"property {prop}" in msg, msg
    # VerificationLevel.NONE skips the check
    run_pipeline(prog, {"platform": "a2a3sim", "verification_level": "none"}, passes=_pipe_fault(after, fault))


def test_planted_fault_tile_ops_2d():
    prog = specialize(K.three_d, tuple(_FLAT["three_d"][0]()), {}).program
    stash = []

    def Stash(program):
        stash.append(program)
        return program

    def Unflatten(program):
        """A planted fault: undo FlattenTileNdTo2D (the rank-3 tiles come back)."""
        return stash[-1]

    pipe = Pipeline.default().insert_before("FlattenTileNdTo2D", Stash).insert_after("FlattenTileNdTo2D", Unflatten)
    with pytest.raises(VerificationError, match="after 'Unflatten' for property TileOps2D"):
        run_pipeline(prog, {"platform": "a2a3sim"}, passes=pipe)
    run_pipeline(prog, {"platform": "a2a3sim", "verification_level": "none"}, passes=pipe)


def test_no_live_overlap_accepts_in_place_reuse():
    """MemoryReuse puts add(t, t) in t's buffer as t dies there (in place): NoLiveOverlap accepts
    it, and moving a still-live tile onto another is caught."""
    import re

    a, x, y = _data((64, 128), (64, 128), (64, 128))
    result = _run(K.two_outs, (a, x, y))
    text = result.program.as_python()
    t_buf = 'pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec, pl.MemRef("mem_vec_0", 0, 32768, addr=0)]'
    assert f"t: {t_buf} = pl.tile.load(" in text
    assert re.search(r"\w+: " + re.escape(t_buf) + r" = pl\.tile\.add\(t, t\)", text), text

    def MulsOntoT(program):
        return _Retype(lambda t: t.with_(memref=replace(t.memref, addr=0)) if t.memref and t.memref.addr == 32768
                       else t).program(program)
    prog = specialize(K.two_outs, (a, x, y), {}).program
    with pytest.raises(VerificationError, match="NoLiveOverlap.*'t'.*'muls_t'|NoLiveOverlap"):
        run_pipeline(prog, {"platform": "a2a3sim"}, passes=_pipe_fault("AllocateMemoryAddr", MulsOntoT))
