"""The seed page's INT32 -> FP16 kernel (an exact chain on a5)."""
import pypto.language as pl


@pl.jit
def to_fp16(x: pl.Tensor[[16, 128], pl.INT32], out: pl.Out[pl.Tensor[[16, 128], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.FP16)
    return out
