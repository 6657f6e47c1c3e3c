"""Kernels for tests/test_tile_view_valid.py (module level: kernels are parsed from source)."""
import pypto.language as pl


@pl.jit
def runtime_view(a: pl.Tensor[[16, 32], pl.FP32], n: pl.Scalar[pl.INDEX],
                 out: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[n, 32])] = pl.load(a, [0, 0], [16, 32])
        out = pl.store(pl.add(t, t), [0, 0], out)
    return out


@pl.jit
def float_view(a: pl.Tensor[[16, 32], pl.FP32], out: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[1.5, 32])] = pl.load(a, [0, 0], [16, 32])
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def short_view(a: pl.Tensor[[16, 32], pl.FP32], out: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[8])] = pl.load(a, [0, 0], [16, 32])
        out = pl.store(t, [0, 0], out)
    return out
