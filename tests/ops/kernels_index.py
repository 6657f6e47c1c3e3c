"""Kernels for tests/ops/test_index.py (gather, scatter, scatter_update, mgather)."""
import pypto.language as pl


@pl.jit
def t_gather(a: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.gather(a, dim=-1, index=idx)
    return out


@pl.jit
def t_gather_explicit(a: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.tensor.gather(a, 1, idx)
    return out


@pl.jit
def p_gather_flat(a: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Flat indices into a [16, 64] source tile; the index tile is partially valid."""
    with pl.at(level=pl.Level.CORE_GROUP):
        src = pl.load(a, [0, 0], [16, 64])
        ti = pl.load(idx, [0, 0], [8, 32], valid_shape=[6, 20])
        tmp = pl.create_tile([8, 32], dtype=pl.INT32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.tile.gather(src, ti, tmp), [0, 0], out)
    return out


@pl.jit
def t_scatter(a: pl.Tensor, idx: pl.Tensor, src: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.scatter(a, -1, idx, src)
    return out


@pl.jit
def p_scatter_flat(a: pl.Tensor, src: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        d = pl.load(a, [0, 0], [16, 64])
        s = pl.load(src, [0, 0], [8, 32], valid_shape=[6, 20])
        ti = pl.load(idx, [0, 0], [8, 32], valid_shape=[6, 20])
        out = pl.store(pl.tile.scatter(d, s, ti), [0, 0], out)
    return out


@pl.jit
def t_scatter_update(a: pl.Tensor, idx: pl.Tensor, src: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.scatter_update(a, -2, idx, src)
    return out


@pl.jit
def p_scatter_update(a: pl.Tensor, idx: pl.Tensor, src: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [32, 32])
        ti = pl.load(idx, [0, 0], [2, 4])
        s = pl.load(src, [0, 0], [8, 32])
        out = pl.store(pl.tile.scatter_update(x, ti, s), [0, 0], out)
    return out


@pl.jit
def mgather_row_undefined(mem: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ti = pl.load(idx, [0, 0], [16, 1], valid_shape=[12, 1])
        out = pl.store(pl.tile.mgather(mem, ti, coalesce="row", gather_oob="undefined"), [0, 0], out)
    return out


@pl.jit
def mgather_row_clamp(mem: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ti = pl.load(idx, [0, 0], [16, 1], valid_shape=[12, 1])
        out = pl.store(pl.tile.mgather(mem, ti, coalesce="row", gather_oob="clamp"), [0, 0], out)
    return out


@pl.jit
def mgather_row_wrap(mem: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ti = pl.load(idx, [0, 0], [16, 1], valid_shape=[12, 1])
        out = pl.store(pl.tile.mgather(mem, ti, coalesce="row", gather_oob="wrap"), [0, 0], out)
    return out


@pl.jit
def mgather_row_zero(mem: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ti = pl.load(idx, [0, 0], [16, 1], valid_shape=[12, 1])
        out = pl.store(pl.tile.mgather(mem, ti, coalesce="row", gather_oob="zero"), [0, 0], out)
    return out


@pl.jit
def mgather_elem(mem: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ti = pl.load(idx, [0, 0], [8, 32], valid_shape=[8, 20])
        out = pl.store(pl.mgather(mem, ti, "elem", gather_oob="wrap"), [0, 0], out)
    return out


@pl.jit
def scatter_mask_pair(even: pl.Tensor, odd: pl.Tensor, dst: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o = pl.tensor.scatter(even, mask_pattern=pl.tile.MaskPattern.P0101, dst=dst)
        out[:] = pl.scatter(odd, mask_pattern=pl.tile.MaskPattern.P1010, dst=o)
    return out


@pl.jit
def p_scatter_mask4(src: pl.Tensor, dst: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(src, [0, 0], [8, 16])
        d = pl.load(dst, [0, 0], [8, 64])
        out = pl.store(pl.tile.scatter_mask(d, s, pl.tile.MaskPattern.P0100), [0, 0], out)
    return out


@pl.jit
def p_scatter_update_kw(a: pl.Tensor, idx: pl.Tensor, src: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [32, 32])
        ti = pl.load(idx, [0, 0], [2, 4])
        s = pl.load(src, [0, 0], [8, 32])
        out = pl.store(pl.tile.scatter_update(x, dim=-2, index=ti, src=s), [0, 0], out)
    return out


@pl.jit
def t_gather_nd(a: pl.Tensor, idx: pl.Tensor, d: pl.INDEX, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.tensor.gather(a, dim=d, index=idx)
    return out
