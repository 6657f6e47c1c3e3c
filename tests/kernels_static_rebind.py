"""Kernels for tests/test_static_rebind.py: a compile-time constant re-assigned inside a loop body."""
import pypto.language as pl


@pl.jit
def doubling_static(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 32])
        x = 1
        for k in pl.range(3):
            t = pl.add(t, x)
            x = x * 2
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def doubling_static_init_values(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t0 = pl.load(a, [0, 0], [8, 32])
        x = 1.5
        for k, (t,) in pl.range(3, init_values=(t0,)):
            u = pl.add(t, x)
            x = x * 2
            t1 = pl.yield_(u)
        out = pl.store(t1, [0, 0], out)
    return out


@pl.jit
def doubling_runtime(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 32])
        x = pl.const(1, pl.INDEX)
        for k in pl.range(3):
            t = pl.add(t, x)
            x = x * 2
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def same_static_value(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 32])
        x = 2
        for k in pl.range(3):
            t = pl.add(t, x)
            x = 2
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def doubling_annotated(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """The printed form of doubling_runtime: an annotated constant is a runtime scalar."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 32])
        x: pl.Scalar[pl.INDEX] = 1
        for k in pl.range(3):
            t = pl.add(t, x)
            x = x * 2
        out = pl.store(t, [0, 0], out)
    return out
