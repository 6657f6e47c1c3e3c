"""Kernels for tests/ops/test_debug_print.py (kernels are parsed from source: module level)."""
import pypto.language as pl


@pl.jit
def row_sums(x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
    for i in pl.parallel(0, 64, 16):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [i, 0], [16, 32])
            s = pl.mul(t, 2.0)
            pl.debug_print(s, "doubled")
            pl.debug_print(i)
            pl.store(s, [i, 0], out)
    return out


@pl.jit
def tensor_level(x: pl.Tensor[[16, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y = pl.exp(x)
        pl.debug_print(y)
        out[:] = y
    return out


@pl.jit
def partial_tile(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 32], valid_shape=[3, 5])
        pl.debug_print(t)
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def same_without_print(x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
    for i in pl.parallel(0, 64, 16):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [i, 0], [16, 32])
            s = pl.mul(t, 2.0)
            pl.store(s, [i, 0], out)
    return out


@pl.jit
def prints_a_tensor_in_orchestration(x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    pl.debug_print(x)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(x, 1.0)
    return out
