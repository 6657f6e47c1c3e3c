"""Kernels for tests/ops/test_create_sort.py (ci / arange, tri, sort32, mrgsort, gather_mask)."""
import pypto.language as pl


@pl.jit
def t_arange(s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.arange(s, [1, 48])
    return out


@pl.jit
def t_ci_desc_i16(s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.tensor.ci(s, [1, 40], dtype=pl.INT16, descending=True)
    return out


@pl.jit
def p_ci(s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.ci(s, [1, 64], dtype=pl.UINT32), [0, 0], out)
    return out


@pl.jit
def p_arange_u16(s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.arange(s, [1, 32], dtype=pl.UINT16, descending=True), [0, 0], out)
    return out


@pl.jit
def p_tri_lower(d: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tri(d, [16, 32], dtype=pl.FP32), [0, 0], out)
    return out


@pl.jit
def p_tri_upper_valid(d: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.tri(d, [16, 32], valid_shape=[10, 20], dtype=pl.INT8, upper=True), [0, 0], out)
    return out


@pl.jit
def bad_ci_rows(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.arange(0, [4, 32])
    return out
