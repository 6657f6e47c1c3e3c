"""Kernels for tests/ops/test_padding_ext.py (fillpad_expand, fillpad_inplace; the reference's
fillpad variants, merged here from kernels_fillpad_variants.py)."""
import pypto.language as pl


@pl.jit
def expand_zero(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(a, [0, 0], [16, 32], valid_shape=[11, 23])
        out = pl.store(pl.tile.fillpad_expand(s, [24, 64], pad_value=pl.PadValue.zero), [0, 0], out)
    return out


@pl.jit
def expand_max(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(a, [0, 0], [16, 32], valid_shape=[11, 23])
        out = pl.store(pl.fillpad_expand(s, [24, 64], pad_value=pl.PadValue.max), [0, 0], out)
    return out


@pl.jit
def expand_min_sugar(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(a, [0, 0], [16, 32], valid_shape=[11, 23])
        out = pl.store(pl.fillpad_expand(s, [24, 64], -float("inf")), [0, 0], out)
    return out


@pl.jit
def t_expand(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.fillpad_expand(a, [24, 64], pad_value=pl.PadValue.max)
    return out


@pl.jit
def t_expand_min(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Tensor level, min pad: the whole tensor at the top left, -inf / iinfo.min elsewhere."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.fillpad_expand(a, [24, 64], pad_value=pl.PadValue.min)
    return out


@pl.jit
def expand_shrinks(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(a, [0, 0], [16, 32])
        out = pl.store(pl.tile.fillpad_expand(s, [8, 64]), [0, 0], out)
    return out


@pl.jit
def inplace_min(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32], valid_shape=[9, 30])
        pl.tile.fillpad_inplace(t, pad_value=pl.PadValue.min)
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def inplace_zero_result(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """fillpad_inplace(zero), its result stored (not the rebound tile, as inplace_min does)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32], valid_shape=[9, 30])
        out = pl.store(pl.tile.fillpad_inplace(t, pad_value=pl.PadValue.zero), [0, 0], out)
    return out


@pl.jit
def inplace_max_then_row_min(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """fillpad_inplace(max) before a min reduction over the whole physical row."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32], valid_shape=[16, 5])
        p = pl.tile.fillpad_inplace(t, pl.PadValue.max)
        out = pl.store(pl.tile.row_min(p), [0, 0], out)
    return out
