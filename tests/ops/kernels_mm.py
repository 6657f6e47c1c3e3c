"""Matmul kernels for tests/ops/test_matmul.py (module level: kernel source is read with inspect).

Annotations are bare so each kernel specialises on its arguments' dtypes; shapes inside tile-level
kernels are literal. ``tile_*`` kernels are explicit cube chains, ``tensor_*`` kernels use
tensor-level ``pl.matmul``.
"""
import pypto.language as pl

M, K, N = 32, 64, 48
BIG_M, BIG_K, BIG_N = 16, 4096, 16


@pl.jit
def tile_mm(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """load(Mat) -> move(Left/Right) -> matmul -> store (Acc -> GM)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 48], target_memory=pl.Mem.Mat)
        la = pl.move(ta, target_memory=pl.Mem.Left)
        rb = pl.move(tb, target_memory=pl.Mem.Right)
        c = pl.matmul(la, rb)
        out = pl.store(c, [0, 0], out)
    return out


@pl.jit
def tile_mm_inferred(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Loads without target_memory: InferTileMemorySpace puts them in Mat and inserts the moves."""
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [32, 64])
        tb = pl.load(b, [0, 0], [64, 48], target_memory=pl.Mem.Mat)
        c = pl.matmul(ta, tb)
        out = pl.store(c, [0, 0], out)
    return out


@pl.jit
def tile_mm_acc(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """K = 64 as two K = 32 chunks: matmul, then matmul_acc."""
    with pl.at(level=pl.Level.CORE_GROUP):
        a0 = pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        b0 = pl.load(b, [0, 0], [32, 48], target_memory=pl.Mem.Mat)
        acc = pl.matmul(a0, b0)
        a1 = pl.load(a, [0, 32], [32, 32], target_memory=pl.Mem.Mat)
        b1 = pl.load(b, [32, 0], [32, 48], target_memory=pl.Mem.Mat)
        acc = pl.matmul_acc(acc, a1, b1)
        out = pl.store(acc, [0, 0], out)
    return out


@pl.jit
def tile_extract_t(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """a is [K, M] in GM: extract it transposed from Mat into Left."""
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [64, 32], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 48], target_memory=pl.Mem.Mat)
        la = pl.tile.extract(ta, [0, 0], [64, 32], target_memory=pl.Mem.Left, transpose=True)
        c = pl.matmul(la, tb)
        out = pl.store(c, [0, 0], out)
    return out


@pl.jit
def tile_mm_big_k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """[16, 4096] @ [4096, 16]: the operands exceed L0, AutoTileMatmulL0 splits K."""
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 4096], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [4096, 16], target_memory=pl.Mem.Mat)
        c = pl.matmul(ta, tb)
        out = pl.store(c, [0, 0], out)
    return out


@pl.jit
def tile_mm_left_too_big(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """An explicit [128, 512] FP16 Left tile (128 KB) does not fit the 64 KB Left buffer."""
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [128, 512], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [512, 16], target_memory=pl.Mem.Mat)
        la = pl.move(ta, target_memory=pl.Mem.Left)
        c = pl.matmul(la, tb)
        out = pl.store(c, [0, 0], out)
    return out


@pl.jit
def tile_mm_then_add(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    """An Acc result feeding a vector op: Acc -> Vec exists on a5 only."""
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 48], target_memory=pl.Mem.Mat)
        c = pl.matmul(ta, tb)
        tbias = pl.load(bias, [0, 0], [32, 48])
        out = pl.store(pl.add(c, tbias), [0, 0], out)
    return out


@pl.jit
def tensor_mm_fp32(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.matmul(a, b, out_dtype=pl.FP32)
    return out


@pl.jit
def tensor_mm_default(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Default result dtype = operand dtype (FP16 x FP16 -> FP16: a cast of the accumulator)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.matmul(a, b)
    return out


@pl.jit
def tensor_mm_trans(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.matmul(a, b, out_dtype=pl.FP32, a_trans=True, b_trans=True)
    return out


@pl.jit
def tensor_mm_acc(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """acc = a @ b; acc += a @ b (tensor level, the accumulator stays in Acc)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        acc = pl.matmul_acc(acc, a, b)
        out[:] = acc
    return out


@pl.jit
def tensor_mm_acc_gm(c: pl.Tensor, a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """The accumulator is a global tensor: c + a @ b is added in Vec (Acc -> Vec: a5 only)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.matmul_acc(c, a, b)
    return out


@pl.jit
def tile_mm_512(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """[512, 64] @ [64, 512]: the [512, 512] FP32 result exceeds Acc, AutoTileMatmulL0 splits M/N
    (each sub-tile stored straight to ``out``)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [512, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 512], target_memory=pl.Mem.Mat)
        c = pl.matmul(ta, tb)
        out = pl.store(c, [0, 0], out)
    return out


@pl.jit
def tile_mm_512_twice(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor], out2: pl.Out[pl.Tensor]):
    """An oversized result stored twice: no direct-store M/N split applies (a clear error)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [512, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 512], target_memory=pl.Mem.Mat)
        c = pl.matmul(ta, tb)
        out = pl.store(c, [0, 0], out)
        out2 = pl.store(c, [0, 0], out2)
    return out, out2


@pl.jit
def tensor_mm_fp16_out(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """FP16 result (a rint cast of each FP32 sub-tile in Vec: a5 only)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.matmul(a, b, out_dtype=pl.FP16)
    return out
