"""Kernels of the matmul variants (tests/ops/test_matmul_ext.py): matmul_bias, gemv*, batch_matmul*
and tensor-level N-D pl.matmul. Module level: kernel source is read with inspect."""
import pypto.language as pl


@pl.jit
def tile_mm_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 48], target_memory=pl.Mem.Mat)
        tc = pl.load(bias, [0, 0], [1, 48], target_memory=pl.Mem.Mat)
        out = pl.store(pl.matmul_bias(ta, tb, tc), [0, 0], out)
    return out


@pl.jit
def tile_mm_bias_narrow_n(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.InOut[pl.Tensor]):
    """rhs and bias valid N = 30 of 48: only [32, 30] is stored."""
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 48], valid_shape=[64, 30], target_memory=pl.Mem.Mat)
        tc = pl.load(bias, [0, 0], [1, 48], valid_shape=[1, 30], target_memory=pl.Mem.Mat)
        out = pl.store(pl.tile.matmul_bias(ta, tb, tc), [0, 0], out)
    return out


@pl.jit
def tile_gemv(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [1, 128], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [128, 64], target_memory=pl.Mem.Mat)
        out = pl.store(pl.tile.gemv(ta, tb), [0, 0], out)
    return out


@pl.jit
def tile_gemv_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [1, 128], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [128, 64], target_memory=pl.Mem.Mat)
        tc = pl.load(bias, [0, 0], [1, 64], target_memory=pl.Mem.Mat)
        out = pl.store(pl.gemv_bias(ta, tb, tc, acc_phase="final"), [0, 0], out)
    return out


@pl.jit
def tile_gemv_acc(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """K = 256 as two gemv halves: gemv (partial), then gemv_acc (final)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        a0 = pl.load(a, [0, 0], [1, 128], target_memory=pl.Mem.Mat)
        b0 = pl.load(b, [0, 0], [128, 64], target_memory=pl.Mem.Mat)
        a1 = pl.load(a, [0, 128], [1, 128], target_memory=pl.Mem.Mat)
        b1 = pl.load(b, [128, 0], [128, 64], target_memory=pl.Mem.Mat)
        c = pl.tile.gemv(a0, b0, acc_phase="partial")
        c = pl.tile.gemv_acc(c, a1, b1, acc_phase="final")
        out = pl.store(c, [0, 0], out)
    return out


@pl.jit
def tile_bmm(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """[2, 32, 64] @ [2, 64, 48] at tile level."""
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0, 0], [2, 32, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0, 0], [2, 64, 48], target_memory=pl.Mem.Mat)
        out = pl.store(pl.batch_matmul(ta, tb), [0, 0, 0], out)
    return out


@pl.jit
def tile_bmm_acc(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """acc = a @ b, then acc += a @ b (batched)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0, 0], [2, 32, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0, 0], [2, 64, 48], target_memory=pl.Mem.Mat)
        c = pl.batch_matmul(ta, tb)
        c = pl.tile.batch_matmul_acc(c, ta, tb)
        out = pl.store(c, [0, 0, 0], out)
    return out


@pl.jit
def tensor_bmm(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Tensor-level N-D pl.matmul (batch dims broadcast)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.matmul(a, b, out_dtype=pl.FP32)
    return out


@pl.jit
def tensor_bmm_bt(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Tensor-level N-D pl.matmul with b stored [..., N, K]."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.matmul(a, b, out_dtype=pl.FP32, b_trans=True, c_matrix_nz=False)
    return out


@pl.jit
def tile_mm_bias_big(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    """[272, 256] @ [256, 528] + bias[1, 528]: the result exceeds Acc and the bias the a2a3 Bias
    buffer: M/N sub-tiles, each with its bias window, K chunked."""
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [272, 256], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [256, 528], target_memory=pl.Mem.Mat)
        tc = pl.load(bias, [0, 0], [1, 528], target_memory=pl.Mem.Mat)
        out = pl.store(pl.matmul_bias(ta, tb, tc), [0, 0], out)
    return out


@pl.jit
def tile_mm_bias_big_k(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    """[16, 2048] @ [2048, 64] + bias: K split only; the bias goes with chunk 0."""
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 2048], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [2048, 64], target_memory=pl.Mem.Mat)
        tc = pl.load(bias, [0, 0], [1, 64], target_memory=pl.Mem.Mat)
        out = pl.store(pl.matmul_bias(ta, tb, tc), [0, 0], out)
    return out


@pl.jit
def tile_mm_narrow(a: pl.Tensor, b: pl.Tensor, out: pl.InOut[pl.Tensor]):
    """lhs valid M = 20 of 32, rhs valid N = 30 of 48: the store writes [20, 30] only."""
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [32, 64], valid_shape=[20, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 48], valid_shape=[64, 30], target_memory=pl.Mem.Mat)
        out = pl.store(pl.matmul(ta, tb), [0, 0], out)
    return out
