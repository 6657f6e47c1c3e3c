"""A one-trip loop whose tile has a run-time valid extent (issue 17's allreduce staging loop, on one card)."""
import pypto.language as pl

SZ = 17
CH = 64


@pl.jit
def one_trip(x: pl.Tensor[[1, SZ], pl.FP32], y: pl.Out[pl.Tensor[[1, SZ], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for col, (acc,) in pl.range(0, SZ, CH, init_values=(y,)):
            valid = pl.min(CH, SZ - col)
            t = pl.load(x, [0, col], [1, CH], valid_shape=[1, valid])
            acc = pl.store(t, [0, col], acc)
            out = pl.yield_(acc)
    return out
