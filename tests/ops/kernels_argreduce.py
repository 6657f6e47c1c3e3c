"""Kernels for tests/ops/test_argreduce.py: ``t_*`` tensor level (dispatching ``pl.<name>``), ``p_*``
tile level on a PARTIAL tile (a [16, 64] load with ``valid_shape=[13, 37]``)."""
import pypto.language as pl


@pl.jit
def t_row_prod(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_prod(a)
    return out


@pl.jit
def p_row_prod(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """With the scratch tile (prod: the binary-tree order)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.create_tile([16, 64], dtype=t.dtype, target_memory=pl.Mem.Vec)
        out = pl.store(pl.tile.row_prod(t, tmp), [0, 0], out)
    return out


@pl.jit
def t_row_argmax(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_argmax(a)
    return out


@pl.jit
def p_row_argmax(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """With the scratch tile (prod: the binary-tree order)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.create_tile([16, 64], dtype=t.dtype, target_memory=pl.Mem.Vec)
        out = pl.store(pl.tile.row_argmax(t, tmp), [0, 0], out)
    return out


@pl.jit
def t_row_argmin(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_argmin(a)
    return out


@pl.jit
def p_row_argmin(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """With the scratch tile (prod: the binary-tree order)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.create_tile([16, 64], dtype=t.dtype, target_memory=pl.Mem.Vec)
        out = pl.store(pl.tile.row_argmin(t, tmp), [0, 0], out)
    return out


@pl.jit
def p_row_prod_seq(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Without a scratch tile: the sequential order."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.row_prod(t), [0, 0], out)
    return out


@pl.jit
def t_col_prod(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_prod(a)
    return out


@pl.jit
def p_col_prod(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """With the scratch tile (prod: the binary-tree order)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.create_tile([16, 64], dtype=t.dtype, target_memory=pl.Mem.Vec)
        out = pl.store(pl.tile.col_prod(t), [0, 0], out)
    return out


@pl.jit
def t_col_argmax(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_argmax(a)
    return out


@pl.jit
def p_col_argmax(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """With the scratch tile (prod: the binary-tree order)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.create_tile([16, 64], dtype=t.dtype, target_memory=pl.Mem.Vec)
        out = pl.store(pl.tile.col_argmax(t, tmp), [0, 0], out)
    return out


@pl.jit
def t_col_argmin(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_argmin(a)
    return out


@pl.jit
def p_col_argmin(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """With the scratch tile (prod: the binary-tree order)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.create_tile([16, 64], dtype=t.dtype, target_memory=pl.Mem.Vec)
        out = pl.store(pl.tile.col_argmin(t, tmp), [0, 0], out)
    return out


@pl.jit
def p_col_prod_seq(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Without a scratch tile: the sequential order."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.col_prod(t), [0, 0], out)
    return out


@pl.jit
def row_argmax_no_tmp(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.row_argmax(t), [0, 0], out)
    return out


@pl.jit
def row_argmax_bad_tmp(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        tmp = pl.create_tile([16, 128], dtype=t.dtype, target_memory=pl.Mem.Vec)
        out = pl.store(pl.row_argmax(t, tmp), [0, 0], out)
    return out


@pl.jit
def row_prod_no_tmp(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.row_prod(t), [0, 0], out)
    return out
