"""Kernels for tests/ops/test_bitwise.py. ``t_*``: tensor level (the whole tensor is one tile; the
dispatching ``pl.<name>``); ``p_*``: tile level on a PARTIAL tile (a [16, 64] load with
``valid_shape=[13, 37]``, the explicit ``pl.tile.<name>``, a store of the valid region)."""
import pypto.language as pl


@pl.jit
def t_and(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.and_(a, b)
    return out


@pl.jit
def t_ands(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.and_(a, s)
    return out


@pl.jit
def p_and(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.and_(ta, tb), [0, 0], out)
    return out


@pl.jit
def p_ands(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.ands(ta, s), [0, 0], out)
    return out


@pl.jit
def t_or(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.or_(a, b)
    return out


@pl.jit
def t_ors(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.or_(a, s)
    return out


@pl.jit
def p_or(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.or_(ta, tb), [0, 0], out)
    return out


@pl.jit
def p_ors(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.ors(ta, s), [0, 0], out)
    return out


@pl.jit
def t_xor(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.xor(a, b)
    return out


@pl.jit
def t_xors(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.xor(a, s)
    return out


@pl.jit
def p_xor(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.create_tile([16, 64], dtype=ta.dtype, target_memory=pl.Mem.Vec)
        out = pl.store(pl.tile.xor(ta, tb, tmp), [0, 0], out)
    return out


@pl.jit
def p_xors(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.create_tile([16, 64], dtype=ta.dtype, target_memory=pl.Mem.Vec)
        out = pl.store(pl.tile.xors(ta, s, tmp), [0, 0], out)
    return out


@pl.jit
def t_shl(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.shl(a, b)
    return out


@pl.jit
def t_shls(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.shl(a, s)
    return out


@pl.jit
def p_shl(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.shl(ta, tb), [0, 0], out)
    return out


@pl.jit
def p_shls(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.shls(ta, s), [0, 0], out)
    return out


@pl.jit
def t_shr(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.shr(a, b)
    return out


@pl.jit
def t_shrs(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.shr(a, s)
    return out


@pl.jit
def p_shr(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.shr(ta, tb), [0, 0], out)
    return out


@pl.jit
def p_shrs(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.shrs(ta, s), [0, 0], out)
    return out


@pl.jit
def t_not(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.not_(a)
    return out


@pl.jit
def p_not(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.not_(ta), [0, 0], out)
    return out


@pl.jit
def tensor_explicit(a: pl.Tensor, b: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor],
                    o3: pl.Out[pl.Tensor], o4: pl.Out[pl.Tensor]):
    """The explicit pl.tensor.* spellings (scalar forms by name)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        o1[:] = pl.tensor.xor(a, b)
        o2[:] = pl.tensor.xors(a, 0x5A)
        o3[:] = pl.tensor.shrs(a, 3)
        o4[:] = pl.tensor.not_(pl.tensor.ands(a, 0xF0))
    return o1, o2, o3, o4
