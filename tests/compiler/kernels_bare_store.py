"""Stores whose result is not bound (``pl.store(t, offs, x)`` as a statement, the reference's usual form)."""
import pypto.language as pl


@pl.jit
def two_bare_increments(x: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 64])
        pl.store(pl.add(t, 1.0), [0, 0], x)
    with pl.at(level=pl.Level.CORE_GROUP):
        t2 = pl.load(x, [0, 0], [16, 64])
        pl.store(pl.add(t2, 1.0), [0, 0], x)
    return x


@pl.jit
def bare_increments_in_a_loop(x: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]):
    for i in pl.range(8):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [(i % 4) * 16, 0], [16, 64])
            pl.store(pl.add(t, 1.0), [(i % 4) * 16, 0], x)
    return x


@pl.jit
def bare_store_then_read(a: pl.Tensor[[64, 64], pl.FP32], tmp: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
                         out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.mul(t, 2.0), [0, 0], tmp)
    with pl.at(level=pl.Level.CORE_GROUP):
        u = pl.load(tmp, [0, 0], [64, 64])
        pl.store(pl.add(u, 1.0), [0, 0], out)
    return out
