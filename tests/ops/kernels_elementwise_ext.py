"""Kernels for tests/ops/test_elementwise_ext.py: ``t_*`` tensor level (dispatching ``pl.<name>``),
``p_*`` tile level on PARTIAL tiles ([16, 64] loads with ``valid_shape=[13, 37]``)."""
import pypto.language as pl


@pl.jit
def t_fmod(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.fmod(a, b)
    return out


@pl.jit
def t_fmods(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.fmods(a, s)
    return out


@pl.jit
def p_fmod(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.fmod(ta, tb), [0, 0], out)
    return out


@pl.jit
def p_fmods(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.fmods(ta, s), [0, 0], out)
    return out


@pl.jit
def p_rem(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.create_tile([16, 64], dtype=ta.dtype, target_memory=pl.Mem.Vec)
        out = pl.store(pl.rem(ta, tb, tmp), [0, 0], out)
    return out


@pl.jit
def p_rems_i(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.create_tile([16, 64], dtype=ta.dtype, target_memory=pl.Mem.Vec)
        out = pl.store(pl.tile.rems(ta, s, tmp), [0, 0], out)
    return out


@pl.jit
def p_rems_f(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.create_tile([16, 64], dtype=ta.dtype, target_memory=pl.Mem.Vec)
        out = pl.store(pl.rems(ta, s, tmp), [0, 0], out)
    return out


@pl.jit
def t_sin(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.sin(a)
    return out


@pl.jit
def p_sin(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.sin(ta), [0, 0], out)
    return out


@pl.jit
def t_cos(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cos(a)
    return out


@pl.jit
def p_cos(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.cos(ta), [0, 0], out)
    return out


@pl.jit
def p_prelu(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.create_tile([16, 64], dtype=ta.dtype, target_memory=pl.Mem.Vec)
        out = pl.store(pl.tile.prelu(ta, tb, tmp), [0, 0], out)
    return out


@pl.jit
def p_lrelu(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.lrelu(ta, s), [0, 0], out)
    return out


@pl.jit
def p_addc(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        tc = pl.load(c, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.addc(ta, tb, tc), [0, 0], out)
    return out


@pl.jit
def p_subc(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        tc = pl.load(c, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.subc(ta, tb, tc), [0, 0], out)
    return out


@pl.jit
def p_addsc(a: pl.Tensor, s: pl.Scalar[pl.FP32], c: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tc = pl.load(c, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.addsc(ta, s, tc), [0, 0], out)
    return out


@pl.jit
def p_addsc_i(a: pl.Tensor, s: pl.Scalar[pl.INT32], c: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tc = pl.load(c, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.addsc(ta, s, tc), [0, 0], out)
    return out


@pl.jit
def p_subsc(a: pl.Tensor, s: pl.Scalar[pl.FP32], c: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tc = pl.load(c, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.subsc(ta, s, tc), [0, 0], out)
    return out


@pl.jit
def p_subsc_i(a: pl.Tensor, s: pl.Scalar[pl.INT32], c: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tc = pl.load(c, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.subsc(ta, s, tc), [0, 0], out)
    return out


@pl.jit
def t_part_add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.part_add(a, b)
    return out


@pl.jit
def p_part_add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[16, 20])
        out = pl.store(pl.tile.part_add(ta, tb), [0, 0], out)
    return out


@pl.jit
def t_part_mul(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.part_mul(a, b)
    return out


@pl.jit
def p_part_mul(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[16, 20])
        out = pl.store(pl.tile.part_mul(ta, tb), [0, 0], out)
    return out


@pl.jit
def t_part_max(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.part_max(a, b)
    return out


@pl.jit
def p_part_max(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[16, 20])
        out = pl.store(pl.tile.part_max(ta, tb), [0, 0], out)
    return out


@pl.jit
def t_part_min(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.part_min(a, b)
    return out


@pl.jit
def p_part_min(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[16, 20])
        out = pl.store(pl.tile.part_min(ta, tb), [0, 0], out)
    return out


@pl.jit
def scalar_min_max(a: pl.Tensor, n: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        k = pl.max(pl.min(n, 48), 16)
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.adds(t, k), [0, 0], out)
    return out
