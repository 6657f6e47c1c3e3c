"""Kernels of tests/ops/test_lowp_dtypes.py (kernels are parsed from source: they live in a module)."""
import pypto.language as pl


@pl.jit
def to_fp8(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.FP8E4M3FN, mode="rint")
    return out


@pl.jit
def to_e5m2_floor(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.FP8E5M2, mode="floor")
    return out


@pl.jit
def from_fp8(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.FP16, mode="rint")
    return out


@pl.jit
def hf8_roundtrip(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(pl.cast(x, pl.HF8), pl.FP32)
    return out


@pl.jit
def fp4_roundtrip(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(pl.cast(x, pl.FP4, mode="rint"), pl.BF16)
    return out


@pl.jit
def fp8_tile_moves(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 32])
        out = pl.store(pl.cast(pl.cast(t, pl.FP32), pl.FP8E4M3FN), [0, 0], out)
    return out


@pl.jit
def to_int4(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(pl.cast(x, pl.INT4), pl.FP16)
    return out


@pl.jit
def add_fp8(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(x, x)
    return out


@pl.jit
def int4_param(x: pl.Tensor[[16, 32], pl.INT4], out: pl.Out[pl.Tensor[[16, 32], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.FP16)
    return out


@pl.jit
def fp8_scalar(x: pl.Tensor, s: pl.FP8E4M3FN, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.adds(x, s)
    return out


@pl.jit
def fp4_in(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.BF16)
    return out


@pl.jit
def fp4_out(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.FP4, mode="rint")
    return out


@pl.jit
def fp4_to_fp8_tile(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    """The reference's MX case: an FP4 tile cast to FP8E4M3FN (FP4 -> BF16 -> FP32 -> FP8)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 16], [16, 32])
        out = pl.store(pl.cast(t, pl.FP8E4M3FN), [0, 0], out)
    return out
