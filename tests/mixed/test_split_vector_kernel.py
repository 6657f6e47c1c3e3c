"""SplitVectorKernel: AIV / AIC functions with attrs split=UP_DOWN / LEFT_RIGHT written at full
shape run per vector lane (halved tiles, shifted offsets, run-time valid extents shared out), bit
for bit against torch; run-time tile.set_validshape; misuse is a located PassError."""
import pytest
import torch

import pypto.ir as ir
from pypto.backend.platforms import get_platform
from pypto.errors import PassError
from pypto.ir.nodes import AssignStmt, Call
from pypto.ir.types import TileType
from pypto.ir.visit import iter_stmts
from pypto.passes import PIPELINE
from pypto.passes.context import PassContext
from pypto.passes.manager import run_passes

from tests.mixed import kernels_split as K

PLATFORMS = ["a2a3sim", "a5sim"]
VALID = [(8, 12), (16, 16), (5, 3), (11, 16), (0, 4), (16, 1)]


def _ints(*shape, seed=0):
    # small integers: every fp32 product and sum of the 16-term dot products is exact, so the
    # simulator's matmul and torch's agree bit for bit whatever the summation order
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-4, 5, shape, generator=g).float()


def _upto(prog, name, platform="a2a3sim"):
    names = [p.NAME for p in PIPELINE]
    r = run_passes(prog, PIPELINE[:names.index(name) + 1], PassContext(platform=get_platform(platform)),
                   verification_level="roundtrip")
    return r.program


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("prog", ["PopHalvesUpDown", "PushNarrowedNoSplit"])
def test_runtime_valid_region_reaches_the_store_bit_exact(platform, prog):
    c = ir.compile(getattr(K, prog), platform=platform)
    a, b = _ints(K.R, K.C, seed=1), _ints(K.R, K.C, seed=2)
    want_full = a @ b + 1
    for vr, vc in VALID:
        out = torch.full((K.R, K.C), float("nan"))
        c(a, b, torch.tensor([vr, vc], dtype=torch.int64), out)
        want = torch.full((K.R, K.C), float("nan"))
        want[:vr, :vc] = want_full[:vr, :vc]
        # the valid region bit for bit; outside it nothing is written (still NaN)
        assert torch.equal(out.isnan(), want.isnan()), (vr, vc)
        assert torch.equal(out[:vr, :vc], want[:vr, :vc]), (vr, vc)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_left_right_split_load_pop_add_store_bit_exact(platform):
    c = ir.compile(K.LoadAddLeftRight, platform=platform)
    a, b, x = _ints(K.R, K.C, seed=3), _ints(K.R, K.C, seed=4), _ints(K.R, K.C, seed=5)
    out = torch.full((K.R, K.C), float("nan"))
    c(a, b, x, out)
    assert torch.equal(out, a @ b + x)


def test_split_aiv_function_becomes_per_lane_form():
    p = _upto(K.PopHalvesUpDown, "SplitVectorKernel")
    vec, cube = p.functions["vec"], p.functions["cube"]
    assert vec.attr("dual_aiv_dispatch") is True and vec.attr("split").name == "UP_DOWN"
    first = vec.body[0]
    assert isinstance(first, AssignStmt) and first.value.op == "tile.get_subblock_idx"
    tiles = [s.var.type for s in iter_stmts(vec.body) if isinstance(s, AssignStmt) and isinstance(s.var.type, TileType)]
    assert tiles and all(t.shape == (8, 16) for t in tiles)
    # the cube keeps its tiles whole
    assert any(isinstance(s, AssignStmt) and isinstance(s.var.type, TileType) and s.var.type.shape == (16, 16)
               for s in iter_stmts(cube.body))
    text = p.as_python()
    assert "min(max(vr, subblock_idx * 8) - (subblock_idx * 8), 8)" in text
    assert "[0 + (subblock_idx * 8), 0]" in text


def test_left_right_cube_pipe_ops_get_the_mode_code():
    p = _upto(K.LoadAddLeftRight, "SplitVectorKernel")
    push = next(s.expr for s in iter_stmts(p.functions["cube"].body)
                if isinstance(getattr(s, "expr", None), Call) and s.expr.op == "tile.tpush_to_aiv")
    assert push.args[1] == 2


def test_reduction_over_the_split_axis_is_a_located_pass_error():
    with pytest.raises(PassError) as e:
        ir.compile(K.ColSumOnSplitAxis, platform="a2a3sim")
    msg = str(e.value)
    assert "reduces axis 0, the UP_DOWN split axis" in msg
    line = next(i for i, t in enumerate(open(K.__file__).read().splitlines(), 1) if "REDUCES THE SPLIT AXIS" in t)
    assert f"kernels_split.py:{line}" in msg


def test_odd_split_extent_is_a_located_pass_error():
    with pytest.raises(PassError) as e:
        ir.compile(K.OddSplitExtent, platform="a2a3sim")
    msg = str(e.value)
    assert "odd extent 5 on axis 0" in msg
    line = next(i for i, t in enumerate(open(K.__file__).read().splitlines(), 1) if "ODD EXTENT" in t)
    assert f"kernels_split.py:{line}" in msg


@pytest.mark.parametrize("platform", PLATFORMS)
def test_pl_split_in_pl_at_halves_the_vector_member_bit_exact(platform):
    from tests.mixed import kernels_auto as A

    a, b, bias = _ints(A.M, A.K, seed=6), _ints(A.K, A.N, seed=7), _ints(A.M, A.N, seed=8)
    out = torch.full((A.M, A.N), float("nan"))
    ir.compile(A.CubeToVecLoopUpDown, platform=platform)(a, b, bias, out)
    assert torch.equal(out, torch.relu(a @ b + bias))
    a2, b2 = _ints(A.M, A.K, seed=9), _ints(A.K, A.M, seed=10)
    out2 = torch.full((A.M, A.M), float("nan"))
    ir.compile(A.VecToCubeLeftRight, platform=platform)(a2, b2, out2)
    assert torch.equal(out2, (a2 * 2) @ (b2 - 1))


def test_pl_split_reaches_the_outlined_kernel_and_the_lanes():
    from tests.mixed import kernels_auto as A

    text = A.CubeToVecLoopUpDown.as_python()
    assert "optimizations=[pl.split(pl.SplitMode.UP_DOWN)]" in text
    p = _upto(A.CubeToVecLoopUpDown, "SplitVectorKernel")
    aiv = p.functions["main_incore_0_aiv"]
    assert aiv.attr("dual_aiv_dispatch") is True
    assert "pl.tile.store(r, [0 + (subblock_idx * 8), j * 32], out_1)" in aiv.as_python()
    push = next(s.expr for s in iter_stmts(p.functions["main_incore_0_aic"].body)
                if isinstance(getattr(s, "expr", None), Call) and s.expr.op == "tile.tpush_to_aiv")
    assert push.args[1] == 1


@pytest.mark.parametrize("platform", PLATFORMS)
def test_pl_split_over_a_split_axis_reduction_keeps_one_lane_bit_exact(platform):
    from tests.mixed import kernels_auto as A

    a, b = _ints(A.M, A.K, seed=11), _ints(A.K, A.NB, seed=12)
    out = torch.full((1, A.NB), float("nan"))
    ir.compile(A.ColSumUpDownFallsBack, platform=platform)(a, b, out)
    assert torch.equal(out, (a @ b).sum(0, keepdim=True))
    if platform == "a2a3sim":
        aiv = _upto(A.ColSumUpDownFallsBack, "SplitVectorKernel").functions["main_incore_0_aiv"]
        assert aiv.attr("dual_aiv_dispatch") is None and aiv.attr("split") is None
