"""Kernels for the golden / harness / comparison tests."""
import pypto.language as pl


@pl.jit
def fused(a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
          out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.add(a, b), 2.0)
    return out


@pl.jit
def half_add(a: pl.Tensor[[64, 128], pl.FP16], b: pl.Tensor[[64, 128], pl.FP16],
             out: pl.Out[pl.Tensor[[64, 128], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out
