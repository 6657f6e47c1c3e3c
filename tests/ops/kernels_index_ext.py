"""Kernels for tests/ops/test_index_ext.py (mscatter, gatherb, gather_row, paged_gather, gather_compare)."""
import pypto.language as pl


@pl.jit
def mscatter(src: pl.Tensor, idx: pl.Tensor, out: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(src, [0, 0], [8, 32])
        ti = pl.load(idx, [0, 0], [8, 32])
        out = pl.mscatter(s, ti, out)
    return out


@pl.jit
def mscatter_partial(src: pl.Tensor, idx: pl.Tensor, out: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(src, [0, 0], [8, 32])
        ti = pl.load(idx, [0, 0], [8, 32], valid_shape=[5, 17])
        out = pl.tile.mscatter(s, ti, output_tensor=out)
    return out
