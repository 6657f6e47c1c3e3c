"""pl.split_aiv regions with the named crossings pl.aiv_shard / pl.aic_gather: each lane's share
bit for bit against torch on both simulators; the passes that lower them (LowerAutoVectorSplit,
ExpandMixedKernel, InjectGMPipeBuffer, SplitVectorKernel) and their dumps; misuse is located."""
import pytest
import torch

import pypto.ir as ir
import pypto.language as pl
from pypto.backend.platforms import get_platform
from pypto.errors import InvalidOperationError, ParserError, ParserTypeError, PassError, PyptoError
from pypto.ir.nodes import AssignStmt, Call, EvalStmt, FuncCall
from pypto.ir.visit import iter_stmts
from pypto.language.enums import FunctionType, ParamDirection
from pypto.passes import PIPELINE
from pypto.passes.context import PassContext
from pypto.passes.manager import run_passes

from tests.mixed import kernels_aiv as K

PLATFORMS = ["a2a3sim", "a5sim"]


def _ints(*shape, seed=0):
    # small integers: every fp32 product and sum below is exact, so any summation order agrees
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-4, 5, shape, generator=g).float()


def _upto(prog, name, platform="a2a3sim"):
    """The program after pass ``name``; every stage printed and parsed back (roundtrip)."""
    names = [p.NAME for p in PIPELINE]
    return run_passes(prog, PIPELINE[:names.index(name) + 1], PassContext(platform=get_platform(platform)),
                      verification_level="roundtrip").program


def _calls(f):
    for s in iter_stmts(f.body):
        c = s.value if isinstance(s, AssignStmt) else s.expr if isinstance(s, EvalStmt) else None
        if isinstance(c, (Call, FuncCall)):
            yield c


def _line(marker):
    return next(i for i, t in enumerate(open(K.__file__).read().splitlines(), 1) if marker in t)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_aiv_shard_gives_each_lane_its_rows_bit_exact(platform):
    a, b = _ints(K.M, K.K, seed=1), _ints(K.K, K.N, seed=2)
    out = torch.full((K.M, K.N), float("nan"))
    ir.compile(K.ShardUpDown, platform=platform)(a, b, out)
    # both halves written (a lane missing would leave NaN rows), each from its own half of a @ b
    assert torch.equal(out, torch.relu(a @ b + 1))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_aic_gather_joins_the_lanes_columns_bit_exact(platform):
    a, b = _ints(K.M, K.K, seed=3), _ints(K.K, K.N, seed=4)
    out = torch.full((K.M, K.N), float("nan"))
    ir.compile(K.GatherLeftRight, platform=platform)(a, b, out)
    assert torch.equal(out, (a * 2) @ b)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_none_region_runs_the_body_on_both_lanes(platform):
    x = _ints(K.M, K.N, seed=5)
    out = torch.full((K.M, K.N), float("nan"))
    ir.compile(K.NoneRegionVector, platform=platform)(x, out)
    assert torch.equal(out, x + x)   # rows 0-7 from lane 0, rows 8-15 from lane 1


def test_region_head_is_printed_and_parsed_back():
    text = K.ShardUpDown.as_python()
    assert "aiv_id: pl.Scalar[pl.INDEX] = pl.tile.split_aiv_lane(1)" in text
    assert "pl.tensor.aiv_shard(acc, split=1)" in text
    assert pl.parse(text).as_python() == text


def test_lower_auto_vector_split_consumes_the_heads_and_stamps_the_kernel():
    f = _upto(K.ShardUpDown, "LowerAutoVectorSplit").functions["shard"]
    assert f.attr("split_aiv") is True and f.attr("split") == pl.SplitMode.UP_DOWN
    ops = [c.op for c in _calls(f) if isinstance(c, Call)]
    assert "tile.split_aiv_lane" not in ops and "tile.get_subblock_idx" in ops and "tile.aiv_shard" in ops
    # a NONE region: split_aiv without a split mode (the reference's OutlineIncoreScopes rule)
    g = next(f for f in _upto(K.NoneRegionVector, "LowerAutoVectorSplit").functions
             if f.func_type == FunctionType.InCore)
    assert g.attr("split_aiv") is True and g.attr("split") is None


def test_expand_mixed_kernel_folds_the_crossings_into_split_pipe_ops():
    p = _upto(K.ShardUpDown, "SplitVectorKernel")
    aic, aiv = p.functions["shard_aic"], p.functions["shard_aiv"]
    push = next(c for c in _calls(aic) if getattr(c, "op", "") == "tile.tpush_to_aiv")
    pop = next(c for c in _calls(aiv) if getattr(c, "op", "") == "tile.tpop_from_aic")
    assert push.args[1] == 1 and push.args[0].type.shape == (16, 16)   # the whole Acc tile
    assert pop.args[2] == 1 and pop.type.shape == (8, 16)               # each lane's half
    assert aiv.attr("dual_aiv_dispatch") is True
    assert not any(getattr(c, "op", "") in ("tile.aiv_shard", "tile.aic_gather") for f in p.functions
                   for c in _calls(f))
    g = _upto(K.GatherLeftRight, "SplitVectorKernel")
    pop = next(c for c in _calls(g.functions["gather_aic"]) if getattr(c, "op", "") == "tile.tpop_from_aiv")
    assert pop.args[2] == 2 and pop.type.shape == (16, 32)               # the lanes' halves joined


def test_none_region_without_cube_work_is_a_two_lane_vector_kernel():
    p = _upto(K.NoneRegionVector, "SplitVectorKernel")
    kinds = sorted(f.func_type.name for f in p.functions)
    assert kinds == ["AIV", "Group", "Orchestration"]
    aiv = next(f for f in p.functions if f.func_type == FunctionType.AIV)
    assert aiv.attr("dual_aiv_dispatch") is True
    assert not any(getattr(c, "op", "").endswith("initialize_pipe") for c in _calls(aiv))


def test_inject_gm_pipe_buffer_threads_a_sized_workspace_on_a2a3_only():
    p = _upto(K.ShardUpDown, "InjectGMPipeBuffer")
    for name in ("shard_aic", "shard_aiv", "shard"):
        f = p.functions[name]
        assert f.params[-1].name == "__gm_pipe_buffer" and f.directions[-1] == ParamDirection.Out
        # one FP32 [16, 16] slot (1024 bytes) x 8 slots (the one-way default) = 2048 words
        assert f.params[-1].type.shape == (2048,)
    group_calls = [c for c in _calls(p.functions["shard"]) if isinstance(c, FuncCall)]
    assert all(c.args[-1] is p.functions["shard"].params[-1] for c in group_calls)
    main = p.functions["main"]
    create = next(c for c in _calls(main) if getattr(c, "op", "") == "tensor.create")
    assert tuple(e.value for e in create.args[0].elements) == (2048,)
    dispatch = next(c for c in _calls(main) if isinstance(c, FuncCall))
    assert dispatch.args[-1].name == "gm_pipe_buffer"
    # a5: pipes on chip, nothing injected
    q = _upto(K.ShardUpDown, "InjectGMPipeBuffer", platform="a5sim")
    assert all(v.name != "__gm_pipe_buffer" for f in q.functions for v in f.params)


def test_every_pass_dump_of_a_region_program_parses_back():
    # roundtrip verification prints each stage and parses it back to an equal program
    for prog in (K.ShardUpDown, K.GatherLeftRight, K.NoneRegionVector):
        _upto(prog, "FinalSimplify")


def _parse(body: str):
    src = f'''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[16, 16], pl.FP32], o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
{body}
        return o
'''
    return pl.parse(src)


@pytest.mark.parametrize("body, cls, msg", [
    ("            t = pl.aiv_shard(a)", ParserError, "only valid inside one"),
    ("            for i in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n                t = pl.aiv_shard(a, split=1)",
     ParserTypeError, "do not pass one"),
    ("            for i in pl.split_aiv(3, mode=pl.SplitMode.UP_DOWN):\n                o = pl.add(a, a)",
     ParserTypeError, "takes the lane count 2"),
    ("            for i in pl.split_aiv(2):\n                o = pl.add(a, a)", ParserTypeError,
     "must be a pl.SplitMode"),
    ("            for i in pl.split_aiv(2, mode=pl.SplitMode.NONE):\n"
     "                for j in pl.split_aiv(2, mode=pl.SplitMode.NONE):\n                    o = pl.add(a, a)",
     ParserError, "do not nest"),
])
def test_region_misuse_is_a_located_parser_error(body, cls, msg):
    with pytest.raises(cls) as e:
        _parse(body)
    assert msg in str(e.value) and "^" in str(e.value)


def test_odd_split_extent_in_the_tile_form_is_a_located_type_error():
    # the tile form cannot tell the lanes' 8 and 7 rows apart (the Tensor form's lowering does)
    body = ("            for i in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"
            "                t = pl.tile.aiv_shard(pl.load(a, [0, 0], [15, 16]), split=1)")
    with pytest.raises(InvalidOperationError) as e:
        _parse(body)
    assert "odd extent 15" in str(e.value) and "valid_shape" in str(e.value) and "^" in str(e.value)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_odd_split_extent_gives_lane_0_the_ceil_half_bit_exact(platform):
    from pypto.runtime import RunConfig

    a, w = _ints(K.ODD, K.K, seed=9), _ints(K.N, K.K, seed=10)
    out = torch.full((K.ODD, K.N), float("nan"))
    K.odd_shard(a, w, out, config=RunConfig(platform=platform))
    assert torch.equal(out, a @ w.T)   # rows 0-8 from lane 0, rows 9-16 from lane 1
    text = K.odd_shard.lower(config=RunConfig(platform=platform)).as_python()
    assert "pl.tile.tpush_to_aiv(acc, split=3, id=0)" in text          # pto-isa's odd code
    assert "valid_shape=[min(max(17, shard_lane * 9) - (shard_lane * 9), 9), 16]" in text


@pytest.mark.parametrize("prog, marker, msg", [
    (K.ShardOfVectorValue, "SHARD OF A VECTOR TILE", "takes a cube tile"),
    (K.UnnamedCrossing, "UNNAMED CROSSING", "without naming the crossing"),
    (K.SplitAndRegions, "SPLIT AND REGION", "exclusive"),
])
def test_pass_misuse_is_a_located_pass_error(prog, marker, msg):
    with pytest.raises(PassError) as e:
        ir.compile(prog, platform="a2a3sim")
    assert msg in str(e.value)
    assert f"kernels_aiv.py:{_line(marker)}" in str(e.value)


def test_unlowered_crossing_refuses_to_run():
    from pypto.ops import support as _pto

    with pytest.raises(PyptoError, match="ExpandMixedKernel lowers"):
        _pto.unlowered("tile.aiv_shard")


def test_automatic_split_is_lowered_before_the_expansion_into_named_crossings():
    from tests.mixed import kernels_auto as A

    f = _upto(A.CubeToVecLoopUpDown, "LowerAutoVectorSplit").functions["main_incore_0"]
    assert f.attr("split_aiv") is True and f.attr("split") == pl.SplitMode.UP_DOWN
    text = f.as_python()
    assert "pl.tile.aiv_shard(c, split=1)" in text and "pl.tile.move(c, pl.Mem.Vec)" not in text
    assert "pl.tile.store(r, [0 + (subblock_idx * 8), j * 32], out_1)" in text
    # the cube side stays whole
    assert "pl.Tile[[16, 32], pl.FP32, pl.Mem.Acc] = pl.tile.matmul" in text
    # a split over a reduction of the split axis is left whole (one lane, same values)
    g = _upto(A.ColSumUpDownFallsBack, "LowerAutoVectorSplit").functions["main_incore_0"]
    assert g.attr("split_aiv") is None and "aiv_shard" not in g.as_python()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_slice_box_past_the_tensor_reads_only_its_valid_rows(platform):
    a = _ints(13, K.N, seed=6)
    out = torch.full((K.M, K.N), float("nan"))
    ir.compile(K.RaggedTail, platform=platform)(a, out)
    assert torch.equal(out[:13], a + 1) and out[13:].isnan().all()


def test_slice_valid_region_past_the_tensor_is_still_a_located_error():
    body = "            t = pl.slice(a, [16, 16], [0, 0], valid_shape=[17, 16])"
    with pytest.raises(PyptoError) as e:
        _parse(body)
    assert "may only narrow" in str(e.value) or "leaves the tensor" in str(e.value)
    body = "            t = pl.slice(a, [16, 16], [4, 0], valid_shape=[13, 16])\n            o = pl.assemble(o, t, [0, 0])"
    with pytest.raises(PyptoError) as e:
        _parse(body)
    assert "offset 4 + extent 13 > size 16" in str(e.value)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_ragged_shard_gives_each_lane_its_share_of_the_valid_rows(platform):
    from pypto.runtime import RunConfig

    kernel = K.ragged_shard
    a = _ints(K.VALID_M, K.K, seed=7) / 4
    w = _ints(K.N, K.K, seed=8) / 4
    out = torch.full((K.M, K.N), float("nan"))
    kernel(a, w, out, config=RunConfig(platform=platform))
    # small quarter-integers: every fp32 product and sum is exact, relu too: bit for bit
    assert torch.equal(out[:K.VALID_M], torch.relu(a @ w.T))
    assert out[K.VALID_M:].isnan().all()   # no lane writes rows past the valid extent


def test_ragged_shard_states_each_lanes_share_on_the_pop():
    from pypto.runtime import RunConfig

    text = K.ragged_shard.lower(config=RunConfig(platform="a2a3sim")).as_python()
    # lane 0: min(5, 8) = 5 rows, lane 1: max(5 - 8, 0) = 0 rows
    assert "valid_shape=[min(max(5, aiv_shard__tmp_v1_lane * 8) - (aiv_shard__tmp_v1_lane * 8), 8), 16]" in text


@pytest.mark.parametrize("platform", PLATFORMS)
def test_none_region_gather_needs_the_same_tile_on_both_lanes(platform):
    from pypto.errors import SimulationError

    c = ir.compile(K.NoneGatherDiffers, platform=platform)
    b = _ints(K.K, K.N, seed=12)
    same = _ints(K.M, K.K, seed=11).repeat(2, 1)           # both lanes hold the same rows
    out = torch.full((K.M, K.N), float("nan"))
    c(same, b, out)
    assert torch.equal(out, (same[:K.M] * 2) @ b)
    differ = _ints(2 * K.M, K.K, seed=13)
    with pytest.raises(SimulationError) as e:
        c(differ, b, torch.zeros(K.M, K.N))
    assert "different tiles" in str(e.value)


def test_cross_core_slot_sets_the_ring_depth_of_the_pipes():
    text = K.GatherLeftRight.as_python()
    assert "optimizations=[pl.cross_core_slot(slot_num=2)]" in text and pl.parse(text).as_python() == text
    p = _upto(K.GatherLeftRight, "InjectGMPipeBuffer")
    for name in ("gather_aic", "gather_aiv"):
        init = next(c for c in _calls(p.functions[name]) if getattr(c, "op", "").endswith("initialize_pipe"))
        assert init.args[4] == 2, name                                   # slot_num
    # the workspace follows: one FP32 [16, 32] slot (2048 bytes) x 2 slots = 1024 words
    assert p.functions["gather"].params[-1].type.shape == (1024,)


@pytest.mark.parametrize("level", ["CONCISE", "EXPLICIT"])
def test_dump_files_of_the_mixed_kernel_passes_parse_back(level, tmp_path):
    from pypto.passes.manager import PassDumpLevel
    from pypto.runtime import RunConfig

    a, w = _ints(K.ODD, K.K), _ints(K.N, K.K)
    out = tmp_path / level
    K.odd_shard.compile(a, w, torch.zeros(K.ODD, K.N),
                        config=RunConfig(platform="a2a3sim", dump_passes=PassDumpLevel[level],
                                         save_kernels_dir=str(out)))
    files = {p.name.split("_after_")[-1][:-3]: p for p in (out / "passes_dump").glob("*_after_*.py")}
    for name in ("LowerAutoVectorSplit", "ExpandMixedKernel", "InjectGMPipeBuffer", "SplitVectorKernel"):
        text = files[name].read_text()
        reparsed = pl.parse(text)
        if level == "EXPLICIT":
            assert reparsed.as_python() == text, name   # the explicit dump is the printed program
    assert "pl.tile.aiv_shard(" in files["LowerAutoVectorSplit"].read_text()
    assert "__gm_pipe_buffer" in files["InjectGMPipeBuffer"].read_text()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_none_region_in_an_spmd_task_around_a_pipeline_loop(platform):
    from pypto.runtime import RunConfig

    a = _ints(K.M, K.N, seed=14)
    c = torch.full((K.M, K.N), float("nan"))
    K.none_region_in_spmd_pipeline(a, c, config=RunConfig(platform=platform))
    assert torch.equal(c, a * 4)   # both lanes' rows written (lane 1 missing would leave NaN)
