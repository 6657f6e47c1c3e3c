"""Kernels for tests/ops/test_random.py (tile.random / tensor.random, TRANDOM)."""
import pypto.language as pl


@pl.jit
def t_random(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.random(0x1234, 0x5678, 1, 2, 3, 4, [4, 256]), [0, 0], out)
    return out


@pl.jit
def t_random_seeds(k0: pl.Scalar[pl.INT32], k1: pl.Scalar[pl.INT32], c0: pl.Scalar[pl.INT32],
                   c3: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    """Runtime seeds, INT32, 7 rounds, 600 columns (three loops per row, the last partial)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.random(k0, k1, c0, 0, 0, c3, [3, 600], dtype=pl.INT32, rounds=7), [0, 0], out)
    return out


@pl.jit
def t_random_valid(out: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.random(7, 8, 9, 10, 11, 12, [8, 64], valid_shape=[5, 40]), [0, 0], out)
    return out


@pl.jit
def tensor_random(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.random(-1, -2, -1, -1, -1, -1, [2, 128], dtype=pl.UINT32)
    return out


@pl.jit
def random_bad_dtype(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.random(1, 2, 3, 4, 5, 6, [4, 64], dtype=pl.FP32), [0, 0], out)
    return out
