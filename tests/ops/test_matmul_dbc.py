"""AutoTileMatmulL0's double-buffered-C (dbC = 2) tiling: realised when the memory planner is
DSA_RP / PTOAS (or PYPTO with ``enable_pypto_l0c_double_buffer``) and the reference's chooser picks
a dbC design; the moving loop carries ``pipeline_double_buffer_c`` and runs matmul, matmul, drain,
drain, so its two results sit in two Acc slots.

Oracles: the untiled-order float64 product (exact for the small-integer data, so the FP32 result
must equal it bit for bit), the same kernel compiled without dbC, and the reference executor. The
race detector (task races, cross-core races, intra-core pipe hazards) must find nothing."""
from __future__ import annotations

import ml_dtypes
import pytest
import torch

import kernels_mm_dbc as K
import kernels_mm_scratch as KS
import ops_harness as H
from pypto import passes
from pypto.debug.races import detect_races
from pypto.ir.nodes import ForStmt
from pypto.ir.visit import iter_stmts
from pypto.passes.auto_tile_matmul_l0 import DOUBLE_BUFFER_C, choose_dbc_design
from pypto.backend.platforms import get_platform
from pypto.runtime import RunConfig

SHAPES = [(16, 64, 256), (256, 64, 16), (320, 64, 320), (144, 64, 144)]
# the chooser's dbC tiles for SHAPES on a2a3 (the reference's st suite pins the same ones)
TILES = {(16, 64, 256): (16, 128), (256, 64, 16): (128, 16), (320, 64, 320): (64, 128), (144, 64, 144): (48, 128)}


def _data(m, k, n, seed, exact):
    g = torch.Generator().manual_seed(seed)
    if exact:  # small integers: every partial sum is exact in FP32, whatever the order
        return (torch.randint(-8, 9, (m, k), generator=g).float(), torch.randint(-8, 9, (k, n), generator=g).float())
    return torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)


def _run(kernel, args, platform, planner=None):
    args = [a.clone() for a in args]
    cfg = RunConfig(platform=platform, sim_seed=0, memory_planner=planner)
    compiled = kernel.compile(*args, config=cfg)
    compiled(*args, config=cfg)
    return args, compiled


def _marked_loops(compiled, planner=passes.MemoryPlanner.DSA_RP):
    """The loops marked dbC right after AutoTileMatmulL0 (a later pass folds a one-trip loop)."""
    prog = compiled.program
    with passes.PassContext([], memory_planner=planner):
        for make in (passes.convert_to_ssa, passes.outline_incore_scopes, passes.convert_tensor_to_tile_ops,
                     passes.flatten_tile_nd_to_2d, passes.auto_tile_matmul_l0):
            prog = make()(prog)
    return [s for f in prog.functions for s in iter_stmts(f.body) if isinstance(s, ForStmt) and s.attr(DOUBLE_BUFFER_C)]


def _plain_k(platform, m, k, n, bytes_ab=4):
    """The K block the roofline chooser gives a single-buffered (no dbC) matmul on ``platform``."""
    from pypto.backend import l0_tile_chooser as ch
    from pypto.language.enums import MemorySpace

    p = get_platform(platform)
    cfg = ch.L0TileConfig()
    cfg.M, cfg.K, cfg.N = m, k, n
    cfg.l0a_bytes, cfg.l0b_bytes = p.capacity(MemorySpace.Left), p.capacity(MemorySpace.Right)
    cfg.l0c_bytes = p.capacity(MemorySpace.Acc)
    cfg.bytes_a = cfg.bytes_b = bytes_ab
    cfg.allow_a_stationary = cfg.allow_b_stationary = cfg.allow_k_boundary = True
    r = ch.choose_l0_tile(cfg)
    # an output the chooser would tile M/N takes AutoTileMatmulL0's own grid, whose sub-tiles keep
    # the whole K when it fits L0 (every K of SHAPES does)
    return r.k if (r.m, r.n) == (m, n) else k


def _k_blocked(a, b, kc):
    """``a @ b`` as the cube computes a K-tiled matmul: FP32 products of ``kc``-wide blocks (each one
    BLAS call on contiguous FP32 copies, as the simulator makes), added in K order."""
    k = a.shape[1]
    acc = None
    for s in range(0, k, kc):
        prod = torch.matmul(a[:, s:s + kc].float().contiguous(), b[s:s + kc].float().contiguous())
        acc = prod if acc is None else acc + prod
    return acc


@pytest.mark.parametrize("m, k, n", SHAPES)
def test_chooser_picks_dbc_on_a2a3(m, k, n):
    """The shapes below are dbC designs of the roofline chooser on a2a3 (128 KiB Acc)."""
    d = choose_dbc_design(get_platform("a2a3sim"), m, k, n, 4, 4, 4)
    assert d is not None and (d.tm, d.tn) == TILES[(m, k, n)]


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("m, k, n", SHAPES)
def test_dbc_matmul_bits(m, k, n, exact, platform):
    a, b = _data(m, k, n, m + n, exact)
    out = torch.zeros(m, n)
    dbc, compiled = _run(K.mm_store, [a, b, out], platform, "DSA_RP")
    plain, plain_compiled = _run(K.mm_store, [a, b, out], platform)
    assert not _marked_loops(plain_compiled, passes.MemoryPlanner.PYPTO)
    if choose_dbc_design(get_platform(platform), m, k, n, 4, 4, 4) is not None:
        loops = _marked_loops(compiled)
        assert len(loops) == 1
        # matmul, matmul, then both drains: the two results are live together
        ops = [s.value.op for s in loops[0].body if hasattr(s, "value") and hasattr(s.value, "op")]
        mm = [i for i, o in enumerate(ops) if o == "tile.matmul"]
        st = [i for i, o in enumerate(ops) if o == "tile.store"]
        assert len(mm) == 2 and len(st) == 2 and max(mm) < min(st)
    # single-buffered (PYPTO planner, no dbC): the chooser's K block, accumulated in Acc in K order
    kc = _plain_k(platform, m, k, n)
    H.assert_same_bits(plain[2], _k_blocked(a, b, kc), f"single-buffered vs K blocks of {kc} in order")
    if kc == k:
        H.assert_same_bits(dbc[2], plain[2], "dbC vs single-buffered tiling")
    H.assert_same_bits(dbc[2], a @ b, "dbC vs the untiled FP32 product")
    f64 = (a.double() @ b.double()).float()
    if exact:
        H.assert_same_bits(dbc[2], f64, "dbC vs float64 oracle (exact data)")
    else:
        bound = (a.double().abs() @ b.double().abs()) * k * 2.0 ** -23
        assert ((dbc[2].double() - f64.double()).abs() <= bound).all()


def test_dbc_matches_reference_executor():
    m, k, n = 320, 64, 320
    a, b = _data(m, k, n, 7, False)
    out = torch.zeros(m, n)
    dbc, _ = _run(K.mm_store, [a, b, out], "a2a3sim", "PTOAS")
    ref = H.run_ref(K.mm_store, [a, b, out])
    H.assert_same_bits(dbc[2], ref[2], "dbC sim vs reference executor")


def test_dbc_no_race():
    """Two Acc slots, drains after both matmuls: no task, cross-core or pipe hazard."""
    m, k, n = 144, 64, 144
    a, b = _data(m, k, n, 3, False)
    out = torch.zeros(m, n)
    _, compiled = _run(K.mm_store, [a, b, out], "a2a3sim", "DSA_RP")
    assert _marked_loops(compiled)
    report = detect_races(compiled, [a, b, out.clone()], platform="a2a3sim")
    assert report.findings == [] and report.pipe == [], report.format()


def test_dbc_mat_scratch_both_matmuls_marked():
    """``rint_bf16(a @ b) @ e`` [256, 64, 256] x [256, 64]: both matmuls take dbC (the producer
    drains into the Mat scratch, the consumer to GM). Both are full-K tiles, so the result is the
    untiled one (the cube's FP32 full-K product: torch.matmul of FP32 copies, as pypto.ops.matmul
    documents), the intermediate narrowed to BF16 round-half-to-even by ml_dtypes; the
    single-buffered tiling K-chunks the consumer and so may differ in the last bits. Within FP32
    accumulation error of the float64 product."""
    g = torch.Generator().manual_seed(5)
    a = torch.randn(256, 64, generator=g).bfloat16()
    b = (torch.randn(64, 256, generator=g) / 8).bfloat16()
    e = (torch.randn(256, 64, generator=g) / 16).bfloat16()
    out = torch.zeros(256, 64)
    dbc, compiled = _run(KS.chain_bf16, [a, b, e, out], "a2a3sim", "DSA_RP")
    plain, _ = _run(KS.chain_bf16, [a, b, e, out], "a2a3sim")
    assert len(_marked_loops(compiled)) == 2
    c = a.float() @ b.float()
    cb = torch.from_numpy(c.numpy().astype(ml_dtypes.bfloat16).astype("float32"))
    H.assert_same_bits(dbc[3], cb @ e.float(), "dbC chain vs the untiled FP32 chain")
    f64 = cb.double() @ e.double()
    assert ((dbc[3].double() - f64).abs() <= (cb.double().abs() @ e.double().abs()) * 256 * 2.0 ** -23).all()
    assert (dbc[3] - plain[3]).abs().max() <= 1e-5


def test_pypto_planner_needs_opt_in():
    """Under the PYPTO planner dbC needs enable_pypto_l0c_double_buffer (the reference's gate);
    DSA_RP / PTOAS enable it, no context leaves it off."""
    assert passes.api._pass_ctx().l0c_double_buffer is False
    for planner, flag, want in ((passes.MemoryPlanner.PYPTO, False, False), (passes.MemoryPlanner.PYPTO, True, True),
                                (passes.MemoryPlanner.DSA_RP, False, True), (passes.MemoryPlanner.PTOAS, False, True)):
        with passes.PassContext([], memory_planner=planner, enable_pypto_l0c_double_buffer=flag):
            assert passes.api._pass_ctx().l0c_double_buffer is want


def test_dbc_every_stage_roundtrips():
    """Every pipeline stage of a dbC program prints and parses back (the loop mark included)."""
    a, b = _data(320, 64, 320, 2, True)
    out = torch.zeros(320, 320)
    cfg = RunConfig(platform="a2a3sim", sim_seed=0, memory_planner="DSA_RP", verification_level="roundtrip")
    args = [a, b, out]
    K.mm_store.compile(*args, config=cfg)(*args, config=cfg)
    H.assert_same_bits(out, a @ b, "roundtrip-verified dbC run")


def test_lower_applies_the_planners_double_buffering_as_compile_does():
    """kernel.lower(config=RunConfig(memory_planner=DSA_RP)) is the program a DSA_RP run executes
    (it used to skip the planner's dbC=2 tiling and show the single-buffered program)."""
    a, b = _data(320, 64, 320, 3, True)
    args = [a, b, torch.zeros(320, 320)]
    dsa = RunConfig(platform="a2a3sim", memory_planner="DSA_RP")
    lowered = K.mm_store.lower(*args, config=dsa).as_python()       # before any compile: the pipeline runs
    assert lowered == K.mm_store.compile(*args, config=dsa).lowered.as_python()
    assert lowered == K.mm_store.lower(*args, config=dsa).as_python()   # the build's program, reused
    plain = K.mm_store.lower(*args, config=RunConfig(platform="a2a3sim")).as_python()
    assert plain != lowered and plain == K.mm_store.compile(*args, config=RunConfig(platform="a2a3sim")).lowered.as_python()


def test_dbc_leaves_a_vector_cast_alone_on_a5():
    """A cast FIXPIPE cannot do (mode="round") keeps its vector cast on a5 under dbC too: the
    compile succeeds and the values match a float64 oracle."""
    g = torch.Generator().manual_seed(9)
    assert choose_dbc_design(get_platform("a5sim"), 160, 64, 160, 2, 2, 4) is not None  # the producer's design
    a = torch.randn(160, 64, generator=g).bfloat16()
    b = (torch.randn(64, 160, generator=g) / 8).bfloat16()
    e = (torch.randn(160, 64, generator=g) / 16).bfloat16()
    out = torch.zeros(160, 64)
    dbc, _ = _run(KS.chain_round, [a, b, e, out], "a5sim", "DSA_RP")
    # the single-buffered run K-tiles the chooser's way (other bits): both against float64
    plain, _ = _run(KS.chain_round, [a, b, e, out], "a5sim")
    want = (a.double() @ b.double()).bfloat16().double() @ e.double()
    for got in (dbc[3], plain[3]):
        assert torch.allclose(got.double(), want, rtol=2e-2, atol=2e-2)
    # dbC keeps the producer's full K: its first matmul is the untiled product, narrowed to BF16
    first = torch.matmul(a.float(), b.float())
    assert torch.allclose(dbc[3].double(), (first.bfloat16().double() @ e.double()), rtol=1e-2, atol=1e-2)


def test_dbc_scratch_falls_back_when_mat_is_short():
    """``[256, 192] @ [192, 256]`` into a BF16 scratch: the producer's dbC grid would carry the
    128 KiB scratch through its loop (three Mat copies plus the 96 KiB operands, over a2a3's
    512 KiB), so the producer takes the straight-line grid; the consumer still takes dbC. The
    result is the untiled chain's (full-K consumer tiles)."""
    g = torch.Generator().manual_seed(11)
    a = torch.randn(256, 192, generator=g).bfloat16()
    b = (torch.randn(192, 256, generator=g) / 16).bfloat16()
    e = (torch.randn(256, 64, generator=g) / 16).bfloat16()
    out = torch.zeros(256, 64)
    dbc, compiled = _run(KS.chain_bf16, [a, b, e, out], "a2a3sim", "DSA_RP")
    assert len(_marked_loops(compiled)) == 1
    plain, _ = _run(KS.chain_bf16, [a, b, e, out], "a2a3sim")
    c = plain[3]  # the producer is the same single-buffered grid in both runs: only the consumer differs
    assert (dbc[3] - c).abs().max() <= 1e-4
    cb = torch.from_numpy((a.float() @ b.float()).numpy().astype(ml_dtypes.bfloat16).astype("float32"))
    H.assert_same_bits(dbc[3], cb @ e.float(), "consumer dbC vs the untiled FP32 chain")
