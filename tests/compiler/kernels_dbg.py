"""Kernels for the compiler-debugging tests (validate_ir, diagnostics, custom pipelines)."""
import pypto.language as pl


@pl.jit
def sub_scale(a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
              out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.sub(a, b), 2.0)
    return out


@pl.jit
def scaled(a: pl.Tensor[[64, 128], pl.FP32], s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, s)
    return out


@pl.jit
def out_rebound(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.add(a, a)
    return out


@pl.jit
def unused_value(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.add(a, a)
        out[:] = pl.mul(a, 3.0)
    return out


@pl.jit
def fp16_accumulate(a: pl.Tensor[[16, 256], pl.FP16], out: pl.Out[pl.Tensor[[16, 256], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 256])
        acc = pl.load(a, [0, 0], [16, 256])
        for i in pl.range(100):
            acc = pl.add(acc, t)
        out = pl.store(acc, [0, 0], out)
    return out


@pl.jit
def int_to_bf16(x: pl.Tensor[[16, 128], pl.INT32], out: pl.Out[pl.Tensor[[16, 128], pl.BF16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.BF16)
    return out


@pl.jit
def read_uninit(a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 128])
        junk = pl.create_tile([16, 128], pl.FP32)
        out = pl.store(pl.add(t, junk), [0, 0], out)
    return out


@pl.jit
def short_rows(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        out = pl.store(pl.exp(t), [0, 0], out)
    return out


@pl.jit
def parallel_overlap(a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[40, 128], pl.FP32]]):
    """PTO-W003: the bands of neighbouring iterations overlap by 8 rows."""
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[i * 8:i * 8 + 16, :] = pl.mul(a, 2.0)
    return out


@pl.jit
def scratch_read_after(a: pl.Tensor[[16, 128], pl.FP32], m: pl.Out[pl.Tensor[[16, 1], pl.FP32]],
                       u_out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    """PTO-W004: u is stored after row_max used it as scratch."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 128])
        u = pl.mul(t, 2.0)
        m = pl.store(pl.row_max(t, u), [0, 0], m)
        u_out = pl.store(u, [0, 0], u_out)
    return m, u_out


@pl.jit
def fp8_floor(a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP8E4M3FN]]):
    """PTO-W006: the device rounds FP32 -> FP8E4M3FN to nearest-even, not down."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.FP8E4M3FN, mode="floor")
    return out


@pl.jit
def mixed_dtypes(a: pl.Tensor[[16, 128], pl.FP32], b: pl.Tensor[[16, 128], pl.FP16],
                 out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    """PTO-W005: FP32 + FP16 promotes to FP32."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def padded_row_max(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 1], pl.FP32]]):
    """row_max over a tile whose valid region is [64, 40]: the padding takes part (PTO-P001)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        part = pl.load(a, [0, 0], [64, 64], valid_shape=[64, 40])
        tmp = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.row_max(part, tmp), [0, 0], out)
    return out


@pl.jit
def writes_in_param(a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    # PTO-W007: `a` is declared In (no pl.InOut) and written: inferred InOut, written in place
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 128])
        out = pl.store(t, [0, 0], out)
        a = pl.store(pl.mul(t, 2.0), [0, 0], a)
    return out
