"""Kernels of tests/test_compile_cache.py: module globals a kernel reads, scalar specialisation,
same-named callees from a factory."""
import pypto.language as pl

SCALE = 2.0
OFFSETS = [1.0]


@pl.jit
def doubled(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)
    return out


@pl.jit
def by_global(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, SCALE)
    return out


@pl.jit
def by_global_item(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, OFFSETS[0])
    return out


@pl.jit
def divided(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.div(a, s)
    return out


def make_scaler(factor: float):
    """Two calls give two different incore functions with the same ``__name__``."""

    @pl.jit.incore
    def scale_tile(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        t = pl.load(x, [0, 0], [16, 64])
        out = pl.store(pl.mul(t, factor), [0, 0], out)
        return out

    return scale_tile


scale_by_two = make_scaler(2.0)
scale_by_ten = make_scaler(10.0)


@pl.jit
def two_scalers(a: pl.Tensor[[16, 64], pl.FP32], x: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
                y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    x = scale_by_two(a, x)
    y = scale_by_ten(a, y)
    return x, y
