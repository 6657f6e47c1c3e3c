"""Kernels past the pl.unroll limits (issue 13 item 14)."""
import pypto.language as pl


@pl.jit
def unroll_too_long(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.add(a, a)
        for k in pl.unroll(1025):
            acc = pl.add(acc, a)
        out[:] = acc
    return out


@pl.jit
def unroll_nest_too_big(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.add(a, a)
        for j in pl.unroll(200):
            for k in pl.unroll(100):
                acc = pl.add(acc, a)
        out[:] = acc
    return out


@pl.jit
def pipeline_too_deep(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.add(a, a)
        for k in pl.pipeline(4096, stage=2048):
            acc = pl.add(acc, a)
        out[:] = acc
    return out


@pl.jit
def unroll_ok(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.add(a, a)
        for j in pl.unroll(4):
            for k in pl.unroll(3):
                acc = pl.add(acc, a)
        out[:] = acc
    return out
