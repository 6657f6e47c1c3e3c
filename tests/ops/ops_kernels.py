"""Kernels shared by the tests in tests/ops: the elementwise and cast ones from the two templates of
ops_templates.py (one line a kernel), the memory ones written by hand.

Annotations are bare (``pl.Tensor``) so each kernel specialises on its arguments' shapes and dtypes
and is reused across dtypes and shapes. ``p_*`` kernels work at tile level on a PARTIAL tile: a
[16, 64] load with ``valid_shape=[VR, VC]``, the op, then a store of the valid region only.
The cast kernels are one per destination dtype and rounding mode because the destination dtype and
the mode are compile-time attributes.
"""
import pypto.language as pl
from ops_templates import tensor_level as _t
from ops_templates import tile_level as _p

TILE = [16, 64]
VR, VC = 13, 37  # the valid region of the p_* kernels (literal in their bodies)

for _op in ("add", "sub", "mul", "div"):
    _t(f"t_{_op}", f"pl.{_op}(a, b)", "a b")
    _t(f"t_{_op}s", f"pl.{_op}(a, s)", "a s:FP32")
    _p(f"p_{_op}", f"pl.{_op}(ta, tb)", "a b")
    _p(f"p_{_op}s", f"pl.{_op}(ta, s)", "a s:FP32")
for _op in ("exp", "neg", "abs"):
    _t(f"t_{_op}", f"pl.{_op}(a)")
    _p(f"p_{_op}", f"pl.{_op}(ta)")

MODES = ('none', 'rint', 'round', 'floor', 'ceil', 'trunc', 'odd')
for _dst in ("fp16", "bf16"):
    for _mode in MODES:
        _t(f"t_cast_{_dst}_{_mode}", f'pl.cast(a, pl.{_dst.upper()}, mode="{_mode}")')
        _p(f"p_cast_{_dst}_{_mode}", f'pl.cast(ta, pl.{_dst.upper()}, mode="{_mode}")')


def cast_kernel(level: str, dst: str, mode: str):
    """The ``t_`` (tensor level) or ``p_`` (partial tile) cast kernel for ``dst`` ("fp16"/"bf16")."""
    return globals()[f"{level}_cast_{dst}_{mode}"]



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
for _op in ("add", "sub", "mul"):
    _t(f"t_{_op}s_i32", f"pl.{_op}(a, s)", "a s:INT32")
    _p(f"p_{_op}s_i32", f"pl.{_op}(ta, s)", "a s:INT32")
