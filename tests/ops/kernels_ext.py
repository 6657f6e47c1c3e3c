"""Kernels for the tests of the math, compare, broadcast and layout ops (tests/ops/test_math.py,
test_compare.py, test_broadcast.py, test_layout.py). Generated in the style of ops_kernels.py:
``t_*`` are tensor-level kernels (the whole tensor is one tile), ``p_*`` work at tile level on a
PARTIAL tile (a [16, 64] load with ``valid_shape=[13, 37]``, the op, a store of the valid region).
Compile-time attributes (cmp_type, shapes, dtypes) are written out per kernel.
"""
import pypto.language as pl



@pl.jit
def t_log(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.log(a)
    return out


@pl.jit
def p_log(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.log(ta), [0, 0], out)
    return out


@pl.jit
def t_sqrt(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.sqrt(a)
    return out


@pl.jit
def p_sqrt(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.sqrt(ta), [0, 0], out)
    return out


@pl.jit
def t_rsqrt(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.rsqrt(a)
    return out


@pl.jit
def p_rsqrt(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.rsqrt(ta), [0, 0], out)
    return out


@pl.jit
def t_recip(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.recip(a)
    return out


@pl.jit
def p_recip(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.recip(ta), [0, 0], out)
    return out


@pl.jit
def t_relu(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.relu(a)
    return out


@pl.jit
def p_relu(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.relu(ta), [0, 0], out)
    return out


@pl.jit
def t_maximum(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.maximum(a, b)
    return out


@pl.jit
def p_maximum(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.maximum(ta, tb), [0, 0], out)
    return out


@pl.jit
def t_maximums(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.maximum(a, s)
    return out


@pl.jit
def p_maximums(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.maximum(ta, s), [0, 0], out)
    return out


@pl.jit
def t_maximums_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.maximum(a, s)
    return out


@pl.jit
def p_maximums_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.maximum(ta, s), [0, 0], out)
    return out


@pl.jit
def t_maximum_const(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.maximum(a, 2.0)
    return out


@pl.jit
def t_minimum(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.minimum(a, b)
    return out


@pl.jit
def p_minimum(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.minimum(ta, tb), [0, 0], out)
    return out


@pl.jit
def t_minimums(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.minimum(a, s)
    return out


@pl.jit
def p_minimums(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.minimum(ta, s), [0, 0], out)
    return out


@pl.jit
def t_minimums_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.minimum(a, s)
    return out


@pl.jit
def p_minimums_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.minimum(ta, s), [0, 0], out)
    return out


@pl.jit
def t_minimum_const(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.minimum(a, 2.0)
    return out


@pl.jit
def t_cmp0(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmp(a, b, cmp_type=0)
    return out


@pl.jit
def p_cmp0(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmp(ta, tb, cmp_type=0), [0, 0], out)
    return out


@pl.jit
def t_cmps0(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmps(a, s, cmp_type=0)
    return out


@pl.jit
def p_cmps0(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmps(ta, s, cmp_type=0), [0, 0], out)
    return out


@pl.jit
def t_cmps0_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmps(a, s, cmp_type=0)
    return out


@pl.jit
def p_cmps0_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmps(ta, s, cmp_type=0), [0, 0], out)
    return out


@pl.jit
def t_cmp1(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmp(a, b, cmp_type=1)
    return out


@pl.jit
def p_cmp1(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmp(ta, tb, cmp_type=1), [0, 0], out)
    return out


@pl.jit
def t_cmps1(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmps(a, s, cmp_type=1)
    return out


@pl.jit
def p_cmps1(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmps(ta, s, cmp_type=1), [0, 0], out)
    return out


@pl.jit
def t_cmps1_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmps(a, s, cmp_type=1)
    return out


@pl.jit
def p_cmps1_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmps(ta, s, cmp_type=1), [0, 0], out)
    return out


@pl.jit
def t_cmp2(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmp(a, b, cmp_type=2)
    return out


@pl.jit
def p_cmp2(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmp(ta, tb, cmp_type=2), [0, 0], out)
    return out


@pl.jit
def t_cmps2(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmps(a, s, cmp_type=2)
    return out


@pl.jit
def p_cmps2(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmps(ta, s, cmp_type=2), [0, 0], out)
    return out


@pl.jit
def t_cmps2_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmps(a, s, cmp_type=2)
    return out


@pl.jit
def p_cmps2_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmps(ta, s, cmp_type=2), [0, 0], out)
    return out


@pl.jit
def t_cmp3(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmp(a, b, cmp_type=3)
    return out


@pl.jit
def p_cmp3(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmp(ta, tb, cmp_type=3), [0, 0], out)
    return out


@pl.jit
def t_cmps3(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmps(a, s, cmp_type=3)
    return out


@pl.jit
def p_cmps3(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmps(ta, s, cmp_type=3), [0, 0], out)
    return out


@pl.jit
def t_cmps3_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmps(a, s, cmp_type=3)
    return out


@pl.jit
def p_cmps3_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmps(ta, s, cmp_type=3), [0, 0], out)
    return out


@pl.jit
def t_cmp4(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmp(a, b, cmp_type=4)
    return out


@pl.jit
def p_cmp4(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmp(ta, tb, cmp_type=4), [0, 0], out)
    return out


@pl.jit
def t_cmps4(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmps(a, s, cmp_type=4)
    return out


@pl.jit
def p_cmps4(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmps(ta, s, cmp_type=4), [0, 0], out)
    return out


@pl.jit
def t_cmps4_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmps(a, s, cmp_type=4)
    return out


@pl.jit
def p_cmps4_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmps(ta, s, cmp_type=4), [0, 0], out)
    return out


@pl.jit
def t_cmp5(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmp(a, b, cmp_type=5)
    return out


@pl.jit
def p_cmp5(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmp(ta, tb, cmp_type=5), [0, 0], out)
    return out


@pl.jit
def t_cmps5(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmps(a, s, cmp_type=5)
    return out


@pl.jit
def p_cmps5(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmps(ta, s, cmp_type=5), [0, 0], out)
    return out


@pl.jit
def t_cmps5_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmps(a, s, cmp_type=5)
    return out


@pl.jit
def p_cmps5_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cmps(ta, s, cmp_type=5), [0, 0], out)
    return out


@pl.jit
def t_sel(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.sel(pl.cmp(a, b, cmp_type=2), a, b)
    return out


@pl.jit
def p_sel(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.sel(pl.cmp(ta, tb, cmp_type=4), ta, tb), [0, 0], out)
    return out


@pl.jit
def t_sels(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.sels(pl.cmps(a, s, cmp_type=3), a, s)
    return out


@pl.jit
def p_sels(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.sels(pl.cmps(ta, s, cmp_type=5), ta, s), [0, 0], out)
    return out


@pl.jit
def t_sels_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.sels(pl.cmps(a, s, cmp_type=3), a, s)
    return out


@pl.jit
def p_sels_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.sels(pl.cmps(ta, s, cmp_type=5), ta, s), [0, 0], out)
    return out


@pl.jit
def t_row_expand(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_expand(a, w)
    return out


@pl.jit
def p_row_expand(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [16, 1], valid_shape=[13, 1])
        out = pl.store(pl.row_expand(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_row_expand_add(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_expand_add(a, w)
    return out


@pl.jit
def p_row_expand_add(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [16, 1], valid_shape=[13, 1])
        out = pl.store(pl.row_expand_add(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_row_expand_sub(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_expand_sub(a, w)
    return out


@pl.jit
def p_row_expand_sub(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [16, 1], valid_shape=[13, 1])
        out = pl.store(pl.row_expand_sub(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_row_expand_mul(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_expand_mul(a, w)
    return out


@pl.jit
def p_row_expand_mul(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [16, 1], valid_shape=[13, 1])
        out = pl.store(pl.row_expand_mul(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_row_expand_div(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_expand_div(a, w)
    return out


@pl.jit
def p_row_expand_div(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [16, 1], valid_shape=[13, 1])
        out = pl.store(pl.row_expand_div(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_row_expand_max(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_expand_max(a, w)
    return out


@pl.jit
def p_row_expand_max(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [16, 1], valid_shape=[13, 1])
        out = pl.store(pl.row_expand_max(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_row_expand_min(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_expand_min(a, w)
    return out


@pl.jit
def p_row_expand_min(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [16, 1], valid_shape=[13, 1])
        out = pl.store(pl.row_expand_min(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_row_expand_expdif(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_expand_expdif(a, w)
    return out


@pl.jit
def p_row_expand_expdif(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [16, 1], valid_shape=[13, 1])
        out = pl.store(pl.row_expand_expdif(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_col_expand(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_expand(a, w)
    return out


@pl.jit
def p_col_expand(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [1, 64], valid_shape=[1, 37])
        out = pl.store(pl.col_expand(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_col_expand_add(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_expand_add(a, w)
    return out


@pl.jit
def p_col_expand_add(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [1, 64], valid_shape=[1, 37])
        out = pl.store(pl.col_expand_add(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_col_expand_sub(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_expand_sub(a, w)
    return out


@pl.jit
def p_col_expand_sub(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [1, 64], valid_shape=[1, 37])
        out = pl.store(pl.col_expand_sub(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_col_expand_mul(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_expand_mul(a, w)
    return out


@pl.jit
def p_col_expand_mul(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [1, 64], valid_shape=[1, 37])
        out = pl.store(pl.col_expand_mul(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_col_expand_div(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_expand_div(a, w)
    return out


@pl.jit
def p_col_expand_div(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [1, 64], valid_shape=[1, 37])
        out = pl.store(pl.col_expand_div(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_col_expand_max(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_expand_max(a, w)
    return out


@pl.jit
def p_col_expand_max(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [1, 64], valid_shape=[1, 37])
        out = pl.store(pl.col_expand_max(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_col_expand_min(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_expand_min(a, w)
    return out


@pl.jit
def p_col_expand_min(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [1, 64], valid_shape=[1, 37])
        out = pl.store(pl.col_expand_min(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_col_expand_expdif(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_expand_expdif(a, w)
    return out


@pl.jit
def p_col_expand_expdif(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tv = pl.load(w, [0, 0], [1, 64], valid_shape=[1, 37])
        out = pl.store(pl.col_expand_expdif(ta, tv), [0, 0], out)
    return out


@pl.jit
def t_expands(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.expands(a, s)
    return out


@pl.jit
def p_expands(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.expands(ta, s), [0, 0], out)
    return out


@pl.jit
def t_expands_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.expands(a, s)
    return out


@pl.jit
def p_expands_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.expands(ta, s), [0, 0], out)
    return out


@pl.jit
def t_full_fp32(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.full([16, 64], pl.FP32, 0.1)
    return out


@pl.jit
def p_full_fp32(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.full([16, 64], pl.FP32, 0.1), [0, 0], out)
    return out


@pl.jit
def t_full_fp16(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.full([16, 64], pl.FP16, 0.1)
    return out


@pl.jit
def p_full_fp16(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.full([16, 64], pl.FP16, 0.1), [0, 0], out)
    return out


@pl.jit
def t_full_bf16(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.full([16, 64], pl.BF16, 0.1)
    return out


@pl.jit
def p_full_bf16(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.full([16, 64], pl.BF16, 0.1), [0, 0], out)
    return out


@pl.jit
def t_full_i32(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.full([16, 64], pl.INT32, 7)
    return out


@pl.jit
def p_full_i32(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.full([16, 64], pl.INT32, 7), [0, 0], out)
    return out


@pl.jit
def t_reshape(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.reshape(a, [32, 32])
    return out


@pl.jit
def p_reshape(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.reshape(ta, [64, 16]), [0, 0], out)
    return out


@pl.jit
def p_reshape_partial(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.reshape(ta, [64, 16]), [0, 0], out)
    return out


@pl.jit
def t_transpose(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.transpose(a, 0, 1)
    return out


@pl.jit
def p_transpose(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.transpose(ta, -2, -1), [0, 0], out)
    return out


@pl.jit
def t_concat(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.concat(a, b)
    return out


@pl.jit
def p_concat(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 32])
        tb = pl.load(b, [0, 0], [16, 32], valid_shape=[13, 20])
        out = pl.store(pl.concat(ta, tb), [0, 0], out)
    return out


@pl.jit
def t_slice(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    # tensor.slice of a kernel parameter: lowered to a tile.load of the region
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.slice(a, [8, 32], [4, 16])
    return out


@pl.jit
def t_slice_onchip(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    # tensor.slice of a value computed in the kernel: lowered to a tile.slice
    with pl.at(level=pl.Level.CORE_GROUP):
        b = pl.add(a, a)
        out[:] = pl.slice(b, [8, 32], [4, 16])
    return out


@pl.jit
def t_slice_orch(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    # tensor.slice in orchestration: a view of the global tensor passed to the kernel
    s = pl.slice(a, [8, 32], [4, 16])
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(s, 2.0)
    return out


@pl.jit
def p_slice(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    # a [8, 32] sub-tile at [4, 16] of a [16, 64] tile valid [13, 37]: valid [8, 21]
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.slice(ta, [8, 32], [4, 16]), [0, 0], out)
    return out


@pl.jit
def p_slice_valid(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.slice(ta, [8, 32], [8, 32], valid_shape=[5, 7]), [0, 0], out)
    return out


@pl.jit
def t_read(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.read(a, [3, 5])
        out[:] = pl.add(a, s)
    return out


@pl.jit
def p_read(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        s = pl.read(ta, [12, 36])
        out = pl.store(pl.mul(ta, s), [0, 0], out)
    return out


@pl.jit
def t_read_orch(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    s = pl.read(a, [1, 2])
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, s)
    return out


@pl.jit
def p_assemble(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64])
        tb = pl.load(b, [0, 0], [8, 32])
        out = pl.store(pl.assemble(ta, tb, [4, 16]), [0, 0], out)
    return out


@pl.jit
def t_assemble_atomic(a: pl.Tensor, out: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.mul(a, 2.0), [0, 0], atomic=pl.AtomicType.Add)
    return out


@pl.jit
def t_assemble_atomic_split(a: pl.Tensor, out: pl.InOut[pl.Tensor]):
    # four tasks add their [16, 64] parts into the same output (split-K style)
    for i in pl.parallel(0, 4):
        with pl.at(level=pl.Level.CORE_GROUP):
            part = pl.slice(a, [16, 64], [16 * i, 0])
            out = pl.assemble(out, part, [0, 0], atomic=pl.AtomicType.Add)
    return out
