"""Matmul variants (issue 15): matmul_bias, gemv / gemv_acc / gemv_bias, batch_matmul /
batch_matmul_acc, tensor-level N-D pl.matmul, c_matrix_nz. Per op and dtype, on both platforms:
simulator == reference (torch_codegen) bit for bit, on random and special values (NaN, +-inf, -0,
subnormals, FP16/BF16 extremes); the reference == its definition in terms of the plain FP32 (INT32)
cube product bit for bit; and, on finite data, within K * 2^-23 * sum|a||b| (+ |bias| * 2^-24) of a
float64 oracle (integers exactly)."""
from __future__ import annotations

import pytest
import torch

import kernels_mmx as K
import ops_harness as H
from pypto.errors import InvalidOperationError, PyptoError

COVERED_OPS = {"tile.matmul_bias", "tile.gemv", "tile.gemv_acc", "tile.gemv_bias", "tile.batch_matmul",
               "tile.batch_matmul_acc"}

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.int8)
KINDS = ("normal", "special")


def _acc(dtype):
    return torch.int32 if dtype == torch.int8 else torch.float32


def _data(seed, shape, dtype, kind="normal"):
    if dtype == torch.int8:
        g = torch.Generator().manual_seed(seed)
        return torch.randint(-128, 128, shape, generator=g, dtype=torch.int8)
    return H.make_data(seed, shape, dtype, kind)


def _bias(seed, n, dtype, kind):
    acc = _acc(dtype)
    if acc == torch.int32:
        return H.make_data(seed, (1, n), torch.int32, "int")
    return H.make_data(seed, (1, n), torch.float32, kind)


def _mm(a, b, acc=None):
    """The cube product in the accumulator dtype (fresh contiguous copies: the executors' BLAS call)."""
    dt = _acc(a.dtype)
    p = a.to(dt).contiguous() @ b.to(dt).contiguous()
    return p if acc is None else acc + p


def _f64_close(got, a, b, extra=None):
    """``got`` vs float64 ``a @ b (+ extra)`` where every input is finite: exact for integers, else
    within K * 2^-23 * (|a| @ |b|) + 2^-24 * |extra| (FP32 products of FP16/BF16 are exact; each of
    the K adds rounds once)."""
    exact = a.double() @ b.double()
    if extra is not None:
        exact = exact + extra.double()
    if got.dtype == torch.int32:
        assert torch.equal(got.double(), exact)
        return
    rows = torch.isfinite(a.double()).all(1)
    cols = torch.isfinite(b.double()).all(0)
    keep = rows[:, None] & cols[None, :] & torch.isfinite(got)
    bound = a.shape[-1] * 2.0 ** -23 * (a.double().abs().nan_to_num(0, 0, 0) @ b.double().abs().nan_to_num(0, 0, 0))
    if extra is not None:
        bound = bound + 2.0 ** -24 * extra.double().abs()
        keep = keep & torch.isfinite(extra.double())
    assert bool(((got.double() - exact).abs() <= bound)[keep].all())


def _both(kernel, args, platform):
    sim = H.run_sim(kernel, args, platform)
    ref = H.run_ref(kernel, args)
    return sim, ref


# ---------------------------------------------------------------- matmul_bias

@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_bias(dtype, kind, platform):
    if dtype == torch.int8 and kind == "special":
        pytest.skip("no special values in INT8")
    a, b = _data(1, (32, 64), dtype, kind), _data(2, (64, 48), dtype, kind)
    bias = _bias(3, 48, dtype, kind)
    out = torch.zeros(32, 48, dtype=_acc(dtype))
    sim, ref = _both(K.tile_mm_bias, [a, b, bias, out], platform)
    H.assert_same_bits(sim[3], ref[3], f"matmul_bias {dtype} {kind} {platform}")
    H.assert_same_bits(ref[3], _mm(a, b, bias.expand(32, 48)), "bias + a @ b (bias as the initial accumulator)")
    if kind == "normal":
        _f64_close(ref[3], a, b, bias.expand(32, 48))


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_matmul_bias_narrow_n_stores_the_valid_region(platform):
    a, b = _data(4, (32, 64), torch.float32), _data(5, (64, 48), torch.float32)
    bias = _bias(6, 48, torch.float32, "normal")
    out = torch.full((32, 48), -7.0)
    sim, ref = _both(K.tile_mm_bias_narrow_n, [a, b, bias, out], platform)
    H.assert_same_bits(sim[3], ref[3], "matmul_bias narrow N")
    want = out.clone()
    want[:, :30] = _mm(a, b[:, :30], bias[:, :30].expand(32, 30))
    H.assert_same_bits(ref[3], want, "valid [32, 30] written, the rest untouched")


def test_matmul_bias_type_errors():
    import pypto.language as pl
    from pypto.ir.nodes import Var
    from pypto.ir.types import TileType
    from pypto.ops.registry import get_op
    op = get_op("tile.matmul_bias")
    lhs, rhs = Var("l", TileType((16, 32), pl.FP16)), Var("r", TileType((32, 16), pl.FP16))
    assert op.infer_type((lhs, rhs, Var("c", TileType((1, 16), pl.FP32))), None) == TileType((16, 16), pl.FP32)
    with pytest.raises(InvalidOperationError, match="bias dtype FP16 is not the accumulator dtype FP32"):
        op.infer_type((lhs, rhs, Var("c", TileType((1, 16), pl.FP16))), None)
    with pytest.raises(InvalidOperationError, match=r"bias must be \[1, N\]"):
        op.infer_type((lhs, rhs, Var("c", TileType((2, 16), pl.FP32))), None)
    with pytest.raises(InvalidOperationError, match="bias N 32 differs from the output N 16"):
        op.infer_type((lhs, rhs, Var("c", TileType((1, 32), pl.FP32))), None)


# ---------------------------------------------------------------- gemv

@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gemv_family(dtype, kind, platform):
    if dtype == torch.int8 and kind == "special":
        pytest.skip("no special values in INT8")
    a, b = _data(7, (1, 256), dtype, kind), _data(8, (256, 64), dtype, kind)
    bias = _bias(9, 64, dtype, kind)
    out = torch.zeros(1, 64, dtype=_acc(dtype))
    sim, ref = _both(K.tile_gemv, [a[:, :128], b[:128], out], platform)
    H.assert_same_bits(sim[2], ref[2], f"gemv {dtype} {kind}")
    H.assert_same_bits(ref[2], _mm(a[:, :128], b[:128]), "gemv = row 0 of the cube product")
    sim, ref = _both(K.tile_gemv_bias, [a[:, :128], b[:128], bias, out], platform)
    H.assert_same_bits(sim[3], ref[3], f"gemv_bias {dtype} {kind}")
    H.assert_same_bits(ref[3], _mm(a[:, :128], b[:128], bias), "bias + a @ b")
    sim, ref = _both(K.tile_gemv_acc, [a, b, out], platform)
    H.assert_same_bits(sim[2], ref[2], f"gemv_acc {dtype} {kind}")
    H.assert_same_bits(ref[2], _mm(a[:, 128:], b[128:], _mm(a[:, :128], b[:128])), "acc + a1 @ b1 (chunks in order)")
    if kind == "normal":
        _f64_close(ref[2], a, b)


def test_gemv_types_and_errors():
    import pypto.language as pl
    from pypto.ir.nodes import Var
    from pypto.ir.types import TileType
    from pypto.ops.registry import get_op
    g = get_op("tile.gemv")
    lhs, rhs = Var("l", TileType((1, 128), pl.BF16)), Var("r", TileType((128, 64), pl.BF16))
    t = g.infer_type((lhs, rhs, "unspecified"), None)
    assert t.shape == (16, 64) and t.dtype == pl.FP32 and t.effective_valid_shape == (1, 64)
    with pytest.raises(InvalidOperationError, match="acc_phase must be one of"):
        g.infer_type((lhs, rhs, "later"), None)
    with pytest.raises(InvalidOperationError, match=r"lhs must be one row"):
        g.infer_type((Var("l", TileType((2, 128), pl.BF16)), rhs, "final"), None)
    ga = get_op("tile.gemv_acc")
    with pytest.raises(InvalidOperationError, match="accumulate into the result of pl.tile.gemv"):
        ga.infer_type((Var("c", TileType((1, 64), pl.FP32)), lhs, rhs, "final"), None)
    assert ga.infer_type((Var("c", t), lhs, rhs, "final"), None).shape == (16, 64)


# ---------------------------------------------------------------- batch_matmul

def _bmm(a, b, acc=None, b_trans=False):
    """Per broadcast batch, the 2-D cube product (a reference independent of the executors' loop)."""
    ob = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    A = a.expand(*ob, *a.shape[-2:]).reshape(-1, *a.shape[-2:])
    B = b.expand(*ob, *b.shape[-2:]).reshape(-1, *b.shape[-2:])
    outs = []
    for i in range(A.shape[0]):
        y = B[i].t() if b_trans else B[i]
        outs.append(_mm(A[i], y, None if acc is None else acc.reshape(A.shape[0], *acc.shape[-2:])[i]))
    return torch.stack(outs).reshape(*ob, *outs[0].shape)


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_matmul_tile(dtype, kind, platform):
    if dtype == torch.int8 and kind == "special":
        pytest.skip("no special values in INT8")
    a, b = _data(10, (2, 32, 64), dtype, kind), _data(11, (2, 64, 48), dtype, kind)
    out = torch.zeros(2, 32, 48, dtype=_acc(dtype))
    sim, ref = _both(K.tile_bmm, [a, b, out], platform)
    H.assert_same_bits(sim[2], ref[2], f"batch_matmul {dtype} {kind}")
    H.assert_same_bits(ref[2], _bmm(a, b), "per-batch cube product")
    sim, ref = _both(K.tile_bmm_acc, [a, b, out], platform)
    H.assert_same_bits(sim[2], ref[2], f"batch_matmul_acc {dtype} {kind}")
    H.assert_same_bits(ref[2], _bmm(a, b, _bmm(a, b)), "acc + a @ b per batch")
    if kind == "normal":
        for i in range(2):
            _f64_close(ref[2][i] // 2 if dtype == torch.int8 else ref[2][i] / 2, a[i], b[i])  # acc = 2 a @ b


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("shapes", [((2, 32, 64), (2, 64, 48)), ((2, 32, 64), (1, 64, 48)), ((32, 64), (3, 64, 48)),
                                    ((2, 1, 32, 64), (3, 64, 48))])
def test_tensor_matmul_nd(shapes, platform):
    sa, sb = shapes
    a, b = _data(12, sa, torch.bfloat16, "special"), _data(13, sb, torch.bfloat16, "special")
    ob = torch.broadcast_shapes(sa[:-2], sb[:-2])
    out = torch.zeros(*ob, 32, 48)
    sim, ref = _both(K.tensor_bmm, [a, b, out], platform)
    H.assert_same_bits(sim[2], ref[2], f"tensor N-D matmul {shapes}")
    H.assert_same_bits(ref[2], _bmm(a, b), "batch-broadcast cube product")


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_tensor_matmul_nd_b_trans(platform):
    a, b = _data(14, (3, 32, 64), torch.float16), _data(15, (3, 48, 64), torch.float16)
    out = torch.zeros(3, 32, 48)
    sim, ref = _both(K.tensor_bmm_bt, [a, b, out], platform)
    H.assert_same_bits(sim[2], ref[2], "tensor N-D matmul b_trans")
    H.assert_same_bits(ref[2], _bmm(a, b, b_trans=True), "a @ b^T per batch")
    for i in range(3):
        _f64_close(ref[2][i], a[i], b[i].t())


def test_batch_matmul_errors():
    a, b = torch.zeros(2, 32, 64, dtype=torch.float16), torch.zeros(3, 64, 48, dtype=torch.float16)
    with pytest.raises(PyptoError, match=r"batch dims \[2\] and \[3\] do not broadcast"):
        K.tensor_bmm.lower(a, b, torch.zeros(2, 32, 48))
    with pytest.raises(PyptoError, match="inner dimensions differ"):
        K.tensor_bmm.lower(a, torch.zeros(2, 32, 48, dtype=torch.float16), torch.zeros(2, 32, 48))


def test_c_matrix_nz_is_recorded_and_inert():
    """tensor.matmul accepts c_matrix_nz (the reference declares it and no pass reads it): the
    printed IR keeps it, the values are those of the plain product."""
    import pypto.language as pl
    from pypto.ir.nodes import Var
    from pypto.ir.types import TensorType
    from pypto.ops.registry import get_op
    op = get_op("tensor.matmul")
    assert [p.name for p in op.params][-1] == "c_matrix_nz"
    lhs, rhs = Var("l", TensorType((16, 32), pl.FP16)), Var("r", TensorType((32, 16), pl.FP16))
    assert op.infer_type((lhs, rhs, pl.FP32, False, False, True), None) == TensorType((16, 16), pl.FP32)


# ---------------------------------------------------------------- matmul_bias through AutoTileMatmulL0

def _ref_on(kernel, args, platform):
    from pypto.debug.torch_codegen import torch_codegen
    from pypto.runtime import RunConfig
    args = [x.clone() for x in args]
    ns: dict = {}
    exec(compile(torch_codegen(kernel.lower(*args, config=RunConfig(platform=platform))), "<ref>", "exec"), ns)
    ns[kernel.__name__](*args)
    return args


def _tiled_bias_oracle(a, b, bias, tile):
    """Per [tm, tn] sub-tile: bias window + chunk 0 product, then + each later kc chunk, in K order."""
    tm, tn, kc = tile
    out = torch.empty(a.shape[0], b.shape[1])
    for mi in range(0, a.shape[0], tm):
        for ni in range(0, b.shape[1], tn):
            p = None
            for k0 in range(0, a.shape[1], kc):
                x = a[mi:mi + tm, k0:k0 + kc].float().contiguous()
                y = b[k0:k0 + kc, ni:ni + tn].float().contiguous()
                p = _mm(x, y, bias[:, ni:ni + tn].expand(x.shape[0], -1)) if p is None else _mm(x, y, p)
            out[mi:mi + tm, ni:ni + tn] = p
    return out


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("kernel,shape", [("tile_mm_bias_big", (272, 256, 528)), ("tile_mm_bias_big_k", (16, 2048, 64))])
def test_matmul_bias_auto_tiled(kernel, shape, platform):
    """matmul_bias whose result exceeds Acc (and whose bias exceeds the a2a3 Bias buffer), or whose K
    exceeds L0: the bias is added once, by K chunk 0 of each sub-tile. sim == ref == oracle."""
    from pypto.backend.platforms import get_platform
    from pypto.language.enums import MemorySpace as Mem
    from pypto.passes.auto_tile_matmul_l0 import _acc_need, _k_fit, choose_mn_tile
    m, k, n = shape
    kern = getattr(K, kernel)
    a, b = _data(20, (m, k), torch.float16, "special"), _data(21, (k, n), torch.float16, "special")
    bias = _bias(22, n, torch.float16, "special")
    out = torch.zeros(m, n)
    sim, ref = H.run_sim(kern, [a, b, bias, out], platform), _ref_on(kern, [a, b, bias, out], platform)
    H.assert_same_bits(sim[3], ref[3], f"{kernel} {platform}")
    p = get_platform(platform)
    L, R, A, B = (p.capacity(s) for s in (Mem.Left, Mem.Right, Mem.Acc, Mem.Bias))
    kc = _k_fit(m, k, n, 2, L, R)
    whole = kc is not None and _acc_need(m, n, 4, kc < k) <= A and n * 4 <= B
    tile = (m, n, kc) if whole else choose_mn_tile(m, k, n, 2, 4, L, R, A, max_n=B // 4)
    H.assert_same_bits(ref[3], _tiled_bias_oracle(a, b, bias, tile), "bias once, then K chunks in order")


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_matmul_narrowed_operands_store_only_the_valid_product(platform):
    """Regression: a matmul of narrowed operands used to store its whole [32, 48] tile, writing the
    zero padding over the output the reference leaves untouched."""
    a, b = _data(23, (32, 64), torch.float32), _data(24, (64, 48), torch.float32)
    out = torch.full((32, 48), -7.0)
    sim, ref = _both(K.tile_mm_narrow, [a, b, out], platform)
    H.assert_same_bits(sim[2], ref[2], "narrow matmul")
    want = out.clone()
    want[:20, :30] = _mm(a[:20], b[:, :30])
    H.assert_same_bits(ref[2], want, "valid [20, 30] written, the rest untouched")
