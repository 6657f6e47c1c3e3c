"""Kernels of the reference's fillpad variants (tests/ops/test_fillpad_variants.py)."""
import pypto.language as pl


@pl.jit
def expand_valid_max(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """A [16, 48] tile of valid region [13, 37] expanded to [32, 64]: max everywhere else."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 48], valid_shape=[13, 37])
        out = pl.store(pl.tile.fillpad_expand(t, [32, 64], pad_value=pl.PadValue.max), [0, 0], out)
    return out


@pl.jit
def expand_tensor_min(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Tensor level: the whole [16, 48] tensor at the top left of a [32, 64] one, -inf / min elsewhere."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.fillpad_expand(a, [32, 64], pad_value=pl.PadValue.min)
    return out


@pl.jit
def inplace_zero(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.fillpad_inplace(t, pad_value=pl.PadValue.zero), [0, 0], out)
    return out


@pl.jit
def err_expand_smaller(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 48])
        out = pl.store(pl.tile.fillpad_expand(t, [8, 64]), [0, 0], out)
    return out
