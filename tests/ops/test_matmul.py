"""Matmul: tile-level cube chain (load Mat -> move Left/Right -> matmul -> store from Acc),
matmul_acc, tile.extract (transposed), tensor-level pl.matmul / pl.matmul_acc and their lowering,
AutoTileMatmulL0 (K split), FP32 accumulation of FP16 products, and the placement errors.
Simulator == reference bit for bit on both platforms; reference vs a float64 product within a
documented bound."""
from __future__ import annotations

import pytest
import torch

import kernels_mm as K
import ops_harness as H
from pypto.errors import CapacityError, InvalidOperationError, PyptoError

COVERED_OPS = {"tile.matmul", "tile.matmul_acc", "tile.extract", "tensor.matmul", "tensor.matmul_acc"}

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.int8)


def _data(seed, shape, dtype):
    if dtype == torch.int8:
        g = torch.Generator().manual_seed(seed)
        return torch.randint(-128, 128, shape, generator=g, dtype=torch.int8)
    return H.make_data(seed, shape, dtype, "normal")


def _acc(dtype):
    return torch.int32 if dtype == torch.int8 else torch.float32


def _ref_a5(kernel, args, platform="a5sim"):
    """The reference executor on the program lowered for ``platform`` (a5 by default: kernels legal
    on a5 only; the M/N split's sub-tiles and K chunks depend on the platform's buffer sizes)."""
    from pypto.debug.torch_codegen import torch_codegen
    from pypto.runtime import RunConfig
    args = [x.clone() for x in args]
    ns: dict = {}
    exec(compile(torch_codegen(kernel.lower(*args, config=RunConfig(platform=platform))), "<ref a5>", "exec"), ns)
    ns[kernel.__name__](*args)
    return args


def _f64(a, b):
    return a.double() @ b.double()


def _check_close(got, a, b):
    """vs float64: integers exactly; floats within K * 2^-23 * sum|a||b| (FP32 accumulation)."""
    exact = _f64(a, b)
    if got.dtype == torch.int32:
        assert torch.equal(got.double(), exact)
        return
    bound = a.shape[-1] * 2.0 ** -23 * (a.double().abs() @ b.double().abs())
    assert bool(((got.double() - exact).abs() <= bound).all())


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", [K.tile_mm, K.tile_mm_inferred])
def test_tile_matmul_sim_equals_ref(kernel, dtype, platform):
    a, b = _data(1, (K.M, K.K), dtype), _data(2, (K.K, K.N), dtype)
    out = torch.zeros(K.M, K.N, dtype=_acc(dtype))
    sim, ref = H.run_sim(kernel, [a, b, out], platform), H.run_ref(kernel, [a, b, out])
    H.assert_same_bits(sim[2], ref[2], f"{kernel.__name__} {dtype} {platform}")
    _check_close(ref[2], a, b)


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_tile_matmul_acc(dtype, platform):
    a, b = _data(3, (K.M, K.K), dtype), _data(4, (K.K, K.N), dtype)
    out = torch.zeros(K.M, K.N, dtype=_acc(dtype))
    sim, ref = H.run_sim(K.tile_mm_acc, [a, b, out], platform), H.run_ref(K.tile_mm_acc, [a, b, out])
    H.assert_same_bits(sim[2], ref[2], "tile_mm_acc")
    acc = _acc(dtype)
    # acc + lhs @ rhs: chunk products in FP32 (INT32), then one add
    expected = (a[:, :32].to(acc) @ b[:32].to(acc)) + (a[:, 32:].to(acc) @ b[32:].to(acc))
    H.assert_same_bits(ref[2], expected, "matmul_acc semantics")
    _check_close(ref[2], a, b)


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_tile_extract_transposed(platform):
    at, b = _data(5, (K.K, K.M), torch.float16), _data(6, (K.K, K.N), torch.float16)
    out = torch.zeros(K.M, K.N)
    sim, ref = H.run_sim(K.tile_extract_t, [at, b, out], platform), H.run_ref(K.tile_extract_t, [at, b, out])
    H.assert_same_bits(sim[2], ref[2], "tile_extract_t")
    H.assert_same_bits(ref[2], at.float().t() @ b.float(), "extract(transpose) @ b")


def test_tile_out_dtype_and_trans_rejected():
    from pypto.language.dtypes import BF16, FP16, FP32, INT8, INT32
    from pypto.ops.matmul import acc_dtype
    from pypto.errors import Span
    assert acc_dtype("x", FP16, FP16, None) == FP32 and acc_dtype("x", BF16, BF16, None) == FP32
    assert acc_dtype("x", INT8, INT8, None) == INT32
    with pytest.raises(InvalidOperationError, match="operand dtypes differ"):
        acc_dtype("tile.matmul", FP16, FP32, None)
    with pytest.raises(InvalidOperationError, match="unsupported operand dtype"):
        acc_dtype("tile.matmul", INT32, INT32, None)


def test_tile_out_dtype_mismatch_is_error():
    import pypto.language as pl
    from pypto.ir.nodes import Var
    from pypto.ir.types import TileType
    from pypto.ops.registry import get_op
    op = get_op("tile.matmul")
    lhs, rhs = Var("l", TileType((16, 32), pl.FP16)), Var("r", TileType((32, 16), pl.FP16))
    assert op.infer_type((lhs, rhs, pl.FP32, False, False), None).dtype == pl.FP32
    with pytest.raises(InvalidOperationError, match="out_dtype FP16 is not the accumulator dtype FP32"):
        op.infer_type((lhs, rhs, pl.FP16, False, False), None)
    with pytest.raises(InvalidOperationError, match="'b_trans' is not supported for Tile operands"):
        op.infer_type((lhs, rhs, None, False, True), None)


def test_tile_matmul_acc_result_lives_where_the_accumulator_does():
    """A tile carried through matmul_acc in a loop keeps one type: an accumulator the kernel put in
    Acc (pl.create_tile(..., target_memory=pl.Mem.Acc)) gives an Acc result, an unplaced one an
    unplaced result (InferTileMemorySpace places it)."""
    import pypto.language as pl
    from pypto.ir.nodes import Var
    from pypto.ir.types import TileType
    from pypto.ops.registry import get_op
    op = get_op("tile.matmul_acc")
    lhs, rhs = Var("l", TileType((16, 32), pl.FP16)), Var("r", TileType((32, 16), pl.FP16))
    for space in (pl.Mem.Acc, None):
        acc = Var("acc", TileType((16, 16), pl.FP32, space))
        assert op.infer_type((acc, lhs, rhs, False, False), None) == acc.type


# ---------------------------------------------------------------- tensor level

@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_tensor_matmul_128_fp16_out_fp32(platform):
    """M1: 128x128 FP16, out_dtype FP32, within 1e-2 of torch; sim == ref bit for bit."""
    a, b = _data(7, (128, 128), torch.float16), _data(8, (128, 128), torch.float16)
    out = torch.zeros(128, 128)
    sim, ref = H.run_sim(K.tensor_mm_fp32, [a, b, out], platform), H.run_ref(K.tensor_mm_fp32, [a, b, out])
    H.assert_same_bits(sim[2], ref[2], "tensor_mm_fp32")
    torch.testing.assert_close(sim[2], a.float() @ b.float(), rtol=1e-2, atol=1e-2)
    text = K.tensor_mm_fp32.lower(a, b, out).as_python()
    for piece in ("target_memory=pl.Mem.Mat", "pl.tile.move(", "pl.Mem.Left", "pl.Mem.Right",
                  "pl.tile.matmul(", "pl.Mem.Acc"):
        assert piece in text, piece


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16, torch.float32))
def test_tensor_matmul_transposed(dtype, platform):
    at, bt = _data(9, (K.K, K.M), dtype), _data(10, (K.N, K.K), dtype)
    out = torch.zeros(K.M, K.N)
    sim, ref = H.run_sim(K.tensor_mm_trans, [at, bt, out], platform), H.run_ref(K.tensor_mm_trans, [at, bt, out])
    H.assert_same_bits(sim[2], ref[2], "tensor_mm_trans")
    H.assert_same_bits(ref[2], torch.matmul(at.float().t().contiguous(), bt.float().t().contiguous()), "a.T @ b.T")


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_tensor_matmul_acc(platform):
    a, b = _data(11, (K.M, K.K), torch.float16), _data(12, (K.K, K.N), torch.float16)
    out = torch.zeros(K.M, K.N)
    sim, ref = H.run_sim(K.tensor_mm_acc, [a, b, out], platform), H.run_ref(K.tensor_mm_acc, [a, b, out])
    H.assert_same_bits(sim[2], ref[2], "tensor_mm_acc")
    p = a.float() @ b.float()
    H.assert_same_bits(ref[2], p + p, "acc + a @ b")


def test_tensor_matmul_default_dtype_cast_on_a5_mixed_on_a2a3():
    """FP16 x FP16 defaults to an FP16 result: a rint cast of the FP32 accumulator in Vec. a5 moves
    Acc -> Vec on chip; a2a3 has no such path and runs it as a mixed kernel (cube + vector core)."""
    a, b = _data(13, (K.M, K.K), torch.float16), _data(14, (K.K, K.N), torch.float16)
    out = torch.zeros(K.M, K.N, dtype=torch.float16)
    sim, ref = H.run_sim(K.tensor_mm_default, [a, b, out], "a5sim"), _ref_a5(K.tensor_mm_default, [a, b, out])
    H.assert_same_bits(sim[2], ref[2], "tensor_mm_default")
    from pypto.numerics.cast import cast_tensor
    H.assert_same_bits(ref[2], cast_tensor(a.float() @ b.float(), torch.float16, "rint"), "rint cast")
    # a2a3: no on-chip Acc -> Vec, so the kernel is a mixed kernel (ExpandMixedKernel): the cube core
    # pushes the FP32 accumulator through the cluster's pipe, the vector core casts; same bits
    mixed = H.run_sim(K.tensor_mm_default, [a, b, torch.zeros_like(out)], "a2a3sim")
    H.assert_same_bits(mixed[2], ref[2], "tensor_mm_default as a mixed kernel on a2a3")


def test_tensor_matmul_acc_from_gm_a5():
    c = _data(15, (K.M, K.N), torch.float32)
    a, b = _data(16, (K.M, K.K), torch.float16), _data(17, (K.K, K.N), torch.float16)
    out = torch.zeros(K.M, K.N)
    sim, ref = H.run_sim(K.tensor_mm_acc_gm, [c, a, b, out], "a5sim"), _ref_a5(K.tensor_mm_acc_gm, [c, a, b, out])
    H.assert_same_bits(sim[3], ref[3], "tensor_mm_acc_gm")
    H.assert_same_bits(ref[3], c + a.float() @ b.float(), "c + a @ b")


def test_tensor_matmul_shape_errors():
    with pytest.raises(InvalidOperationError, match="inner dimensions differ"):
        K.tensor_mm_fp32.lower(torch.zeros(32, 64, dtype=torch.float16), torch.zeros(48, 48, dtype=torch.float16),
                               torch.zeros(32, 48))


# ---------------------------------------------------------------- placement

@pytest.mark.parametrize("dtype", (torch.float16, torch.float32))
def test_acc_to_vec_a5_on_chip_a2a3_mixed(dtype):
    a, b = _data(18, (K.M, K.K), dtype), _data(19, (K.K, K.N), dtype)
    bias, out = _data(20, (K.M, K.N), torch.float32), torch.zeros(K.M, K.N)
    sim, ref = H.run_sim(K.tile_mm_then_add, [a, b, bias, out], "a5sim"), \
        _ref_a5(K.tile_mm_then_add, [a, b, bias, out])
    H.assert_same_bits(sim[3], ref[3], "tile_mm_then_add")
    H.assert_same_bits(ref[3], torch.matmul(a.float(), b.float()) + bias, "a @ b + bias")
    # a2a3 has no on-chip Acc -> Vec: the kernel becomes a mixed kernel (ExpandMixedKernel: the cube
    # core pushes the FP32 tile through the cluster's pipe to the vector core), same bits
    mixed = H.run_sim(K.tile_mm_then_add, [a, b, bias, torch.zeros(K.M, K.N)], "a2a3sim")
    H.assert_same_bits(mixed[3], ref[3], "tile_mm_then_add as a mixed kernel on a2a3")


def test_oversized_explicit_left_tile_fails_in_allocation():
    a, b = torch.zeros(128, 512, dtype=torch.float16), torch.zeros(512, 16, dtype=torch.float16)
    with pytest.raises(CapacityError) as info:
        K.tile_mm_left_too_big.lower(a, b, torch.zeros(128, 16))
    msg = str(info.value)
    assert "Left" in msg and "la" in msg and "65536" in msg, msg


# ---------------------------------------------------------------- AutoTileMatmulL0

def _big(dtype=torch.float16, seed=21):
    a, b = _data(seed, (K.BIG_M, K.BIG_K), dtype), _data(seed + 1, (K.BIG_K, K.BIG_N), dtype)
    return a, b, torch.zeros(K.BIG_M, K.BIG_N, dtype=_acc(dtype))


def test_auto_tile_splits_k():
    a, b, out = _big()
    text = K.tile_mm_big_k.lower(a, b, out).as_python()
    # the chooser's K block (1024 of 4096 FP16 on a2a3) as the reference's pl.pipeline(stage=2) K
    # loop, lowered to a loop of stride 2048 holding its two stage copies (blocks ko and ko + 1024)
    assert "pl.range(0, 4096, 2048" in text and "[c__ko + 1024, 0]" in text, text
    assert "pl.tile.matmul_acc(" in text and "pl.tile.extract(" in text, text
    assert "[16, 1024]" in text and "[1024, 16]" in text, text


def test_auto_tile_not_triggered_when_operands_fit():
    a, b = torch.zeros(K.M, K.K, dtype=torch.float16), torch.zeros(K.K, K.N, dtype=torch.float16)
    text = K.tile_mm.lower(a, b, torch.zeros(K.M, K.N)).as_python()
    assert "pl.range" not in text and "matmul_acc" not in text


def test_choose_k_chunk():
    from pypto.passes.auto_tile_matmul_l0 import choose_k_chunk
    assert choose_k_chunk(16, 4096, 16, 2, 65536, 65536) == 1024
    assert choose_k_chunk(128, 512, 128, 2, 65536, 65536) == 128
    assert choose_k_chunk(2048, 64, 16, 2, 65536, 65536) is None


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_auto_tiled_matmul_correct(dtype, platform):
    a, b, out = _big(dtype)
    sim, ref = H.run_sim(K.tile_mm_big_k, [a, b, out], platform), H.run_ref(K.tile_mm_big_k, [a, b, out])
    H.assert_same_bits(sim[2], ref[2], "tile_mm_big_k")
    acc = _acc(dtype)
    from pypto.passes.auto_tile_matmul_l0 import choose_k_chunk
    kc = choose_k_chunk(K.BIG_M, K.BIG_K, K.BIG_N, a.element_size(), 65536, 65536)  # FP32: 512, else 1024
    expected = None
    for k in range(0, K.BIG_K, kc):
        p = a[:, k:k + kc].to(acc).contiguous() @ b[k:k + kc].to(acc).contiguous()
        expected = p if expected is None else expected + p
    H.assert_same_bits(ref[2], expected, "chunked accumulation order")
    _check_close(ref[2], a, b)


def _fp16_sequential(a, b):
    """Oracle for an FP16 accumulator: acc = fp16(acc + fp16(a_k * b_k)) for k in order."""
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float16)
    for k in range(a.shape[1]):
        prod = (a[:, k:k + 1].float() * b[k:k + 1, :].float()).half()
        acc = (acc.float() + prod.float()).half()
    return acc


def test_fp16_k4096_accumulates_in_fp32():
    a, b, out = _big(torch.float16, seed=30)
    got = H.run_sim(K.tile_mm_big_k, [a, b, out], "a2a3sim")[2]
    exact = _f64(a, b)
    err32 = (got.double() - exact).abs().max().item()
    rows = slice(0, 4)
    err16 = (_fp16_sequential(a[rows], b).double() - exact[rows]).abs().max().item()
    assert err32 < 1e-3, err32
    assert err16 > 100 * err32, (err16, err32)


def test_big_k_not_multiple_of_16_rejected():
    a, b = torch.zeros(16, 4104, dtype=torch.float16), torch.zeros(4104, 16, dtype=torch.float16)
    with pytest.raises(PyptoError, match="multiple of 16"):
        K.tensor_mm_fp32.lower(a, b, torch.zeros(16, 16))


def _mn_expected(a, b, tile):
    """Oracle of the M/N split: per [tm, tn] sub-tile, FP32 (INT32) products of kc-long K chunks
    added in K order (the accumulation rule of AutoTileMatmulL0), assembled."""
    acc = torch.int32 if a.dtype == torch.int8 else torch.float32
    tm, tn, kc = tile
    m, k = a.shape
    n = b.shape[1]
    out = torch.empty(m, n, dtype=acc)
    for mi in range(0, m, tm):
        for ni in range(0, n, tn):
            p = None
            for k0 in range(0, k, kc):
                q = a[mi:mi + tm, k0:k0 + kc].to(acc).contiguous() @ b[k0:k0 + kc, ni:ni + tn].to(acc).contiguous()
                p = q if p is None else p + q
            out[mi:mi + tm, ni:ni + tn] = p
    return out


def _tile_for(a, b, platform, vec_bytes=0):
    from pypto.backend.platforms import get_platform
    from pypto.language.enums import MemorySpace as Mem
    from pypto.passes.auto_tile_matmul_l0 import choose_mn_tile
    p = get_platform(platform)
    return choose_mn_tile(a.shape[0], a.shape[1], b.shape[1], a.element_size(), 4, p.capacity(Mem.Left),
                          p.capacity(Mem.Right), p.capacity(Mem.Acc), vec_bytes, p.capacity(Mem.Vec))


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_auto_tile_splits_mn_512(dtype, platform):
    """A [512, 512] result (1 MiB FP32, Acc is 128/256 KiB) is cut into sub-tiles stored straight to
    GM; sim == ref bit for bit, == the sub-tile/K-chunk oracle, within the FP32 bound of float64."""
    a, b = _data(50, (512, 64), dtype), _data(51, (64, 512), dtype)
    out = torch.zeros(512, 512, dtype=_acc(dtype))
    sim, ref = H.run_sim(K.tile_mm_512, [a, b, out], platform), _ref_a5(K.tile_mm_512, [a, b, out], platform)
    H.assert_same_bits(sim[2], ref[2], f"tile_mm_512 {dtype} {platform}")
    H.assert_same_bits(ref[2], _mn_expected(a, b, _tile_for(a, b, platform)), "M/N split accumulation order")
    _check_close(ref[2], a, b)
    text = K.tile_mm_512.lower(a, b, out, config=__import__("pypto.runtime", fromlist=["RunConfig"]).RunConfig(
        platform=platform)).as_python()
    assert "out__t0" in text and "does not split" not in text


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("shape", [(272, 256, 144), (256, 512, 256), (1040, 64, 64)])
def test_tensor_matmul_mn_and_k_split(shape, platform):
    """Tensor-level matmul whose result exceeds Acc, with boundary sub-tiles (272 = 256 + 16) and
    K chunks: sim == ref, == oracle, special values (inf, NaN, -0) propagate as in the oracle."""
    m, k, n = shape
    a, b = _data(52, (m, k), torch.bfloat16), _data(53, (k, n), torch.bfloat16)
    a[0, 0], a[1, :] = float("inf"), -0.0
    b[3, 5] = float("nan")
    out = torch.zeros(m, n)
    sim, ref = H.run_sim(K.tensor_mm_fp32, [a, b, out], platform), _ref_a5(K.tensor_mm_fp32, [a, b, out], platform)
    H.assert_same_bits(sim[2], ref[2], f"tensor_mm_fp32 {shape} {platform}")
    H.assert_same_bits(ref[2], _mn_expected(a, b, _tile_for(a, b, platform)), "M/N split accumulation order")
    fin = torch.isfinite(ref[2])
    a2, b2 = a.clone(), b.clone()
    a2[0, 0], b2[3, 5] = 0, 0
    bound = k * 2.0 ** -23 * (a2.double().abs() @ b2.double().abs())
    exact = a2.double() @ b2.double()
    rows = torch.ones(m, dtype=torch.bool)
    rows[0] = False
    cols = torch.ones(n, dtype=torch.bool)
    cols[5] = False
    keep = fin & rows[:, None] & cols[None, :]
    assert bool(((ref[2].double() - exact).abs() <= bound)[keep].all())


def test_tensor_matmul_mn_split_with_cast_a5():
    """out_dtype FP16: each FP32 sub-tile is rint-cast to FP16, then stored."""
    from pypto.numerics.cast import cast_tensor
    a, b = _data(54, (256, 64), torch.float16), _data(55, (64, 512), torch.float16)
    out = torch.zeros(256, 512, dtype=torch.float16)
    sim, ref = H.run_sim(K.tensor_mm_fp16_out, [a, b, out], "a5sim"), _ref_a5(K.tensor_mm_fp16_out, [a, b, out])
    H.assert_same_bits(sim[2], ref[2], "tensor_mm_fp16_out")
    H.assert_same_bits(ref[2], cast_tensor(_mn_expected(a, b, _tile_for(a, b, "a5sim", 4 + 2)), torch.float16, "rint"),
                       "rint(sub-tile)")


def test_acc_overflow_is_clear_error():
    """An oversized result read twice has no direct-store split: CapacityError naming why and the fix."""
    a, b = torch.zeros(512, 64, dtype=torch.float16), torch.zeros(64, 512, dtype=torch.float16)
    with pytest.raises(CapacityError, match="does not fit the Acc buffer.*used more than once") as info:
        K.tile_mm_512_twice.lower(a, b, torch.zeros(512, 512), torch.zeros(512, 512))
    assert "pl.store" in str(info.value)


def test_choose_mn_tile():
    from pypto.passes.auto_tile_matmul_l0 import choose_mn_tile
    KB = 1024
    # [512, 64] @ [64, 512] FP16, Acc 128 KiB: 512 x 64 FP32 sub-tiles (8), K whole
    assert choose_mn_tile(512, 64, 512, 2, 4, 64 * KB, 64 * KB, 128 * KB) == (512, 64, 64)
    tm, tn, kc = choose_mn_tile(272, 256, 144, 2, 4, 64 * KB, 64 * KB, 128 * KB)
    assert tm * tn * 4 <= 128 * KB and 256 % kc == 0 and tm * kc * 2 <= 64 * KB
    assert choose_mn_tile(16, 100, 16, 2, 4, 64, 64, 64) is None


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_tensor_level_big_k_auto_tiled(platform):
    a, b, out = _big(torch.bfloat16, seed=40)
    sim, ref = H.run_sim(K.tensor_mm_fp32, [a, b, out], platform), H.run_ref(K.tensor_mm_fp32, [a, b, out])
    H.assert_same_bits(sim[2], ref[2], "tensor_mm_fp32 big K")
    assert "pl.tile.matmul_acc(" in K.tensor_mm_fp32.lower(a, b, out).as_python()
    _check_close(ref[2], a, b)


_EXAMPLES = ("matmul_small", "matmul_k_blocked", "matmul_tile_chain", "matmul_acc", "fused_linear")


@pytest.mark.parametrize("name", _EXAMPLES)
def test_matmul_examples_run(name):
    """examples/matmul/*.py assert against torch on both platforms and torch_codegen (their one run,
    shared with tests/test_examples.py)."""
    from pathlib import Path

    from inproc import run_example

    r = run_example(Path(__file__).resolve().parents[2] / "examples" / "matmul" / f"{name}.py")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
