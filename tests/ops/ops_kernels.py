"""Kernels shared by the tests in tests/ops (module level: kernel source is read with inspect).

Annotations are bare (``pl.Tensor``) so each kernel specialises on its arguments' shapes and dtypes
and is reused across dtypes and shapes. ``p_*`` kernels work at tile level on a PARTIAL tile: a
[16, 64] load with ``valid_shape=[VR, VC]``, the op, then a store of the valid region only.
The cast kernels (one per destination dtype and rounding mode) are written out below because the
destination dtype and the mode are compile-time attributes.
"""
import pypto.language as pl

TILE = [16, 64]
VR, VC = 13, 37  # the valid region of the p_* kernels (literal in their bodies)

@pl.jit
def t_add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def t_adds(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, s)
    return out


@pl.jit
def p_add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.add(ta, tb), [0, 0], out)
    return out


@pl.jit
def p_adds(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.add(ta, s), [0, 0], out)
    return out

@pl.jit
def t_sub(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.sub(a, b)
    return out


@pl.jit
def t_subs(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.sub(a, s)
    return out


@pl.jit
def p_sub(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.sub(ta, tb), [0, 0], out)
    return out


@pl.jit
def p_subs(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.sub(ta, s), [0, 0], out)
    return out

@pl.jit
def t_mul(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, b)
    return out


@pl.jit
def t_muls(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, s)
    return out


@pl.jit
def p_mul(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.mul(ta, tb), [0, 0], out)
    return out


@pl.jit
def p_muls(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.mul(ta, s), [0, 0], out)
    return out

@pl.jit
def t_div(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.div(a, b)
    return out


@pl.jit
def t_divs(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.div(a, s)
    return out


@pl.jit
def p_div(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.div(ta, tb), [0, 0], out)
    return out


@pl.jit
def p_divs(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.div(ta, s), [0, 0], out)
    return out

@pl.jit
def t_exp(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a)
    return out


@pl.jit
def p_exp(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.exp(ta), [0, 0], out)
    return out

@pl.jit
def t_neg(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.neg(a)
    return out


@pl.jit
def p_neg(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.neg(ta), [0, 0], out)
    return out

@pl.jit
def t_abs(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.abs(a)
    return out


@pl.jit
def p_abs(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.abs(ta), [0, 0], out)
    return out

@pl.jit
def t_cast_fp16_none(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.FP16, mode="none")
    return out


@pl.jit
def p_cast_fp16_none(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cast(ta, pl.FP16, mode="none"), [0, 0], out)
    return out

@pl.jit
def t_cast_fp16_rint(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.FP16, mode="rint")
    return out


@pl.jit
def p_cast_fp16_rint(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cast(ta, pl.FP16, mode="rint"), [0, 0], out)
    return out

@pl.jit
def t_cast_fp16_round(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.FP16, mode="round")
    return out


@pl.jit
def p_cast_fp16_round(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cast(ta, pl.FP16, mode="round"), [0, 0], out)
    return out

@pl.jit
def t_cast_fp16_floor(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.FP16, mode="floor")
    return out


@pl.jit
def p_cast_fp16_floor(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cast(ta, pl.FP16, mode="floor"), [0, 0], out)
    return out

@pl.jit
def t_cast_fp16_ceil(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.FP16, mode="ceil")
    return out


@pl.jit
def p_cast_fp16_ceil(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cast(ta, pl.FP16, mode="ceil"), [0, 0], out)
    return out

@pl.jit
def t_cast_fp16_trunc(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.FP16, mode="trunc")
    return out


@pl.jit
def p_cast_fp16_trunc(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cast(ta, pl.FP16, mode="trunc"), [0, 0], out)
    return out

@pl.jit
def t_cast_fp16_odd(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.FP16, mode="odd")
    return out


@pl.jit
def p_cast_fp16_odd(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cast(ta, pl.FP16, mode="odd"), [0, 0], out)
    return out

@pl.jit
def t_cast_bf16_none(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.BF16, mode="none")
    return out


@pl.jit
def p_cast_bf16_none(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cast(ta, pl.BF16, mode="none"), [0, 0], out)
    return out

@pl.jit
def t_cast_bf16_rint(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.BF16, mode="rint")
    return out


@pl.jit
def p_cast_bf16_rint(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cast(ta, pl.BF16, mode="rint"), [0, 0], out)
    return out

@pl.jit
def t_cast_bf16_round(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.BF16, mode="round")
    return out


@pl.jit
def p_cast_bf16_round(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cast(ta, pl.BF16, mode="round"), [0, 0], out)
    return out

@pl.jit
def t_cast_bf16_floor(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.BF16, mode="floor")
    return out


@pl.jit
def p_cast_bf16_floor(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cast(ta, pl.BF16, mode="floor"), [0, 0], out)
    return out

@pl.jit
def t_cast_bf16_ceil(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.BF16, mode="ceil")
    return out


@pl.jit
def p_cast_bf16_ceil(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cast(ta, pl.BF16, mode="ceil"), [0, 0], out)
    return out

@pl.jit
def t_cast_bf16_trunc(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.BF16, mode="trunc")
    return out


@pl.jit
def p_cast_bf16_trunc(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cast(ta, pl.BF16, mode="trunc"), [0, 0], out)
    return out

@pl.jit
def t_cast_bf16_odd(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.BF16, mode="odd")
    return out


@pl.jit
def p_cast_bf16_odd(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.cast(ta, pl.BF16, mode="odd"), [0, 0], out)
    return out


def cast_kernel(level: str, dst: str, mode: str):
    """The ``t_`` (tensor level) or ``p_`` (partial tile) cast kernel for ``dst`` ("fp16"/"bf16")."""
    return globals()[f"{level}_cast_{dst}_{mode}"]


MODES = ('none', 'rint', 'round', 'floor', 'ceil', 'trunc', 'odd')


# -- memory ops ---------------------------------------------------------------------------------

@pl.jit
def m_pad(a: pl.Tensor, b: pl.Tensor, z: pl.Tensor, out1: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
    # The full tile of a is dead once stored, so its (non-zero) bytes are reused by the partial tile
    # of b (the memory planner reuses addresses). The padding of b's tile is made visible by adding
    # it to a full tile of zeros (the sum's valid shape is the lhs's: the whole tile), so the store
    # writes padding and all.
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64])
        out1 = pl.store(ta, [0, 0], out1)
        tb = pl.load(b, [0, 0], [16, 64], valid_shape=[13, 37])
        tz = pl.load(z, [0, 0], [16, 64])
        out = pl.store(pl.add(tz, tb), [0, 0], out)
    return out


@pl.jit
def m_store_offset(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    # a [16, 64] tile with valid [13, 37] stored at [8, 16] of a [32, 96] tensor
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(t, [8, 16], out)
    return out


@pl.jit
def m_load_offset(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    # a [16, 64] region at [5, 7] of a [32, 96] tensor, stored at [0, 0] of a [16, 64] tensor
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [5, 7], [16, 64])
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def m_load_oob(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [8, 3], [16, 64])
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def m_store_oob(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(t, [4, 40], out)
    return out


@pl.jit
def m_create_tile(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.create_tile([16, 64], pl.FP32)
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.add(pl.mul(c, 0.0), t), [0, 0], out)
    return out


@pl.jit
def m_move(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37], target_memory=pl.Mem.Mat)
        v = pl.move(t, target_memory=pl.Mem.Vec)
        out = pl.store(v, [0, 0], out)
    return out


@pl.jit
def m_create_tensor(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    tmp = pl.create_tensor([16, 64], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP):
        tmp[:] = pl.add(a, a)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(tmp, 3.0)
    return out


# INT32 tensors take an INT32 scalar: a pl.FP32 scalar would promote the result to FP32.


@pl.jit
def t_adds_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, s)
    return out


@pl.jit
def p_adds_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.add(ta, s), [0, 0], out)
    return out


@pl.jit
def t_subs_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.sub(a, s)
    return out


@pl.jit
def p_subs_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.sub(ta, s), [0, 0], out)
    return out


@pl.jit
def t_muls_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, s)
    return out


@pl.jit
def p_muls_i32(a: pl.Tensor, s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.mul(ta, s), [0, 0], out)
    return out
