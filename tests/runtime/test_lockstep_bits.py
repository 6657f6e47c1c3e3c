"""Lockstep gangs (pypto.codegen.gang, pypto.runtime.gangs) must not change a single bit.

Every kernel below has many independent tasks (``pl.parallel``), each on its own rows, so the
scheduler forms gangs. Each is run with ``RunConfig(sim_lockstep=False)`` and ``True`` under the
same ``sim_seed`` and the outputs are compared bit for bit (floats as their integer bit patterns),
with torch running on one and on two threads (two threads split large gang calls into chunks).
Inputs mix ordinary values with +-0, NaNs of several payloads, +-inf, subnormals and extremes.
Each kernel also gets a loose check against torch, so it is known to compute something sensible.
Shapes, dtypes and counts are specialised scalars (``n``, ``r``, ``c``), so one kernel serves many cases.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

import lockstep_record
import pypto.language as pl
from pypto.runtime import simulator as S
from pypto.runtime.gangs import GRAIN
from pypto.runtime.config import RunConfig

# the gang record and its check run in one process (pytest-xdist: --dist loadgroup, scripts/test.sh);
# the autouse fixture notes each test as run (tests/runtime/lockstep_record.py)
pytestmark = pytest.mark.xdist_group("lockstep_record")
from lockstep_record import lockstep_recorder_ran  # noqa: E402,F401

FP32, FP16, BF16 = torch.float32, torch.float16, torch.bfloat16
I32, I16, I8 = torch.int32, torch.int16, torch.int8
FLOATS = (FP32, FP16, BF16)

# tile shapes [r, c]: 8x48 (whole vectors), 9x120 (1080 elements: a vector tail per tile, and a gang
# of 48 is > GRAIN elements, so two threads split the calls), 4x200, 3x40 (120 elements, odd tail)
SHAPES = ((8, 48), (9, 120), (4, 200), (3, 40))
N = 64            # tasks per kernel (more than the 48 vector cores: several gangs, some left over)


# ================================================================== kernels
@pl.jit
def k_binary(a: pl.Tensor, b: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
             o_add: pl.Out[pl.Tensor], o_sub: pl.Out[pl.Tensor], o_mul: pl.Out[pl.Tensor],
             o_max: pl.Out[pl.Tensor], o_min: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            y = pl.load(b, [i * r, 0], [r, c])
            o_add = pl.store(pl.add(x, y), [i * r, 0], o_add)
            o_sub = pl.store(pl.sub(x, y), [i * r, 0], o_sub)
            o_mul = pl.store(pl.mul(x, y), [i * r, 0], o_mul)
            o_max = pl.store(pl.maximum(x, y), [i * r, 0], o_max)
            o_min = pl.store(pl.minimum(x, y), [i * r, 0], o_min)
    return o_add, o_sub, o_mul, o_max, o_min


@pl.jit
def k_div(a: pl.Tensor, b: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
          o_div: pl.Out[pl.Tensor], o_divs: pl.Out[pl.Tensor], o_div0: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            y = pl.load(b, [i * r, 0], [r, c])
            o_div = pl.store(pl.div(x, y), [i * r, 0], o_div)
            o_divs = pl.store(pl.div(x, 3.0), [i * r, 0], o_divs)
            o_div0 = pl.store(pl.div(x, 0.0), [i * r, 0], o_div0)
    return o_div, o_divs, o_div0


@pl.jit
def k_scalar_f(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
               o_add: pl.Out[pl.Tensor], o_sub: pl.Out[pl.Tensor], o_mul: pl.Out[pl.Tensor],
               o_max: pl.Out[pl.Tensor], o_min: pl.Out[pl.Tensor], o_tiny: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o_add = pl.store(pl.add(x, 1.5), [i * r, 0], o_add)
            o_sub = pl.store(pl.sub(x, 0.1), [i * r, 0], o_sub)
            o_mul = pl.store(pl.mul(x, -2.5), [i * r, 0], o_mul)
            o_max = pl.store(pl.maximum(x, 0.0), [i * r, 0], o_max)
            o_min = pl.store(pl.minimum(x, 0.0), [i * r, 0], o_min)
            o_tiny = pl.store(pl.mul(x, 1e-30), [i * r, 0], o_tiny)
    return o_add, o_sub, o_mul, o_max, o_min, o_tiny


@pl.jit
def k_scalar_i(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
               o_add: pl.Out[pl.Tensor], o_sub: pl.Out[pl.Tensor], o_mul: pl.Out[pl.Tensor],
               o_max: pl.Out[pl.Tensor], o_min: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o_add = pl.store(pl.add(x, 3), [i * r, 0], o_add)
            o_sub = pl.store(pl.sub(x, 7), [i * r, 0], o_sub)
            o_mul = pl.store(pl.mul(x, -3), [i * r, 0], o_mul)
            o_max = pl.store(pl.maximum(x, 0), [i * r, 0], o_max)
            o_min = pl.store(pl.minimum(x, -5), [i * r, 0], o_min)
    return o_add, o_sub, o_mul, o_max, o_min


@pl.jit
def k_unary_f(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
              o_exp: pl.Out[pl.Tensor], o_log: pl.Out[pl.Tensor], o_sqrt: pl.Out[pl.Tensor],
              o_rsqrt: pl.Out[pl.Tensor], o_recip: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o_exp = pl.store(pl.exp(x), [i * r, 0], o_exp)
            o_log = pl.store(pl.log(x), [i * r, 0], o_log)
            o_sqrt = pl.store(pl.sqrt(x), [i * r, 0], o_sqrt)
            o_rsqrt = pl.store(pl.rsqrt(x), [i * r, 0], o_rsqrt)
            o_recip = pl.store(pl.recip(x), [i * r, 0], o_recip)
    return o_exp, o_log, o_sqrt, o_rsqrt, o_recip


@pl.jit
def k_unary_any(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
                o_neg: pl.Out[pl.Tensor], o_abs: pl.Out[pl.Tensor], o_relu: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o_neg = pl.store(pl.neg(x), [i * r, 0], o_neg)
            o_abs = pl.store(pl.abs(x), [i * r, 0], o_abs)
            o_relu = pl.store(pl.relu(x), [i * r, 0], o_relu)
    return o_neg, o_abs, o_relu


@pl.jit
def k_rowred(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
             o_sum: pl.Out[pl.Tensor], o_max: pl.Out[pl.Tensor], o_min: pl.Out[pl.Tensor]):
    """Tree row reductions; the tmp tile is dead afterwards (clobber=False fast paths)."""
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            tmp = pl.create_tile([r, c], dtype=x.dtype, target_memory=pl.Mem.Vec)
            o_sum = pl.store(pl.row_sum(x, tmp), [i * r, 0], o_sum)
            o_max = pl.store(pl.row_max(x, tmp), [i * r, 0], o_max)
            o_min = pl.store(pl.row_min(x, tmp), [i * r, 0], o_min)
    return o_sum, o_max, o_min


@pl.jit
def k_rowred_live_tmp(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
                      o_sum: pl.Out[pl.Tensor], o_t1: pl.Out[pl.Tensor], o_max: pl.Out[pl.Tensor],
                      o_t2: pl.Out[pl.Tensor]):
    """The tmp tile is read after each reduction: the tree really clobbers it (clobber=True)."""
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            tmp = pl.create_tile([r, c], dtype=x.dtype, target_memory=pl.Mem.Vec)
            s = pl.row_sum(x, tmp)
            o_t1 = pl.store(tmp, [i * r, 0], o_t1)
            m = pl.row_max(x, tmp)
            o_t2 = pl.store(tmp, [i * r, 0], o_t2)
            o_sum = pl.store(s, [i * r, 0], o_sum)
            o_max = pl.store(m, [i * r, 0], o_max)
    return o_sum, o_t1, o_max, o_t2


@pl.jit
def k_colred(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
             o_sum: pl.Out[pl.Tensor], o_max: pl.Out[pl.Tensor], o_min: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            tmp = pl.create_tile([r, c], dtype=x.dtype, target_memory=pl.Mem.Vec)
            o_sum = pl.store(pl.col_sum(x, tmp), [i, 0], o_sum)
            o_max = pl.store(pl.col_max(x, tmp), [i, 0], o_max)
            o_min = pl.store(pl.col_min(x, tmp), [i, 0], o_min)
    return o_sum, o_max, o_min


@pl.jit
def k_seqred(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
             o_rsum: pl.Out[pl.Tensor], o_rmax: pl.Out[pl.Tensor], o_rmin: pl.Out[pl.Tensor],
             o_csum: pl.Out[pl.Tensor], o_cmax: pl.Out[pl.Tensor], o_cmin: pl.Out[pl.Tensor]):
    """The sequential forms (no tmp tile)."""
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o_rsum = pl.store(pl.tile.row_sum(x), [i * r, 0], o_rsum)
            o_rmax = pl.store(pl.tile.row_max(x), [i * r, 0], o_rmax)
            o_rmin = pl.store(pl.tile.row_min(x), [i * r, 0], o_rmin)
            o_csum = pl.store(pl.col_sum(x), [i, 0], o_csum)
            o_cmax = pl.store(pl.col_max(x), [i, 0], o_cmax)
            o_cmin = pl.store(pl.col_min(x), [i, 0], o_cmin)
    return o_rsum, o_rmax, o_rmin, o_csum, o_cmax, o_cmin


@pl.jit
def k_rowexp(a: pl.Tensor, v: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
             o_exp: pl.Out[pl.Tensor], o_add: pl.Out[pl.Tensor], o_sub: pl.Out[pl.Tensor],
             o_mul: pl.Out[pl.Tensor], o_max: pl.Out[pl.Tensor], o_min: pl.Out[pl.Tensor],
             o_fill: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            w = pl.load(v, [i * r, 0], [r, 1])
            o_exp = pl.store(pl.row_expand(x, w), [i * r, 0], o_exp)
            o_add = pl.store(pl.row_expand_add(x, w), [i * r, 0], o_add)
            o_sub = pl.store(pl.row_expand_sub(x, w), [i * r, 0], o_sub)
            o_mul = pl.store(pl.row_expand_mul(x, w), [i * r, 0], o_mul)
            o_max = pl.store(pl.row_expand_max(x, w), [i * r, 0], o_max)
            o_min = pl.store(pl.row_expand_min(x, w), [i * r, 0], o_min)
            o_fill = pl.store(pl.expands(x, 3), [i * r, 0], o_fill)
    return o_exp, o_add, o_sub, o_mul, o_max, o_min, o_fill


@pl.jit
def k_rowexp_f(a: pl.Tensor, v: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
               o_div: pl.Out[pl.Tensor], o_expdif: pl.Out[pl.Tensor], o_fill: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            w = pl.load(v, [i * r, 0], [r, 1])
            o_div = pl.store(pl.row_expand_div(x, w), [i * r, 0], o_div)
            o_expdif = pl.store(pl.row_expand_expdif(x, w), [i * r, 0], o_expdif)
            o_fill = pl.store(pl.expands(x, 2.75), [i * r, 0], o_fill)
    return o_div, o_expdif, o_fill


@pl.jit
def k_colexp(a: pl.Tensor, v: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
             o_exp: pl.Out[pl.Tensor], o_add: pl.Out[pl.Tensor], o_sub: pl.Out[pl.Tensor],
             o_mul: pl.Out[pl.Tensor], o_max: pl.Out[pl.Tensor], o_min: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            w = pl.load(v, [i, 0], [1, c])
            o_exp = pl.store(pl.col_expand(x, w), [i * r, 0], o_exp)
            o_add = pl.store(pl.col_expand_add(x, w), [i * r, 0], o_add)
            o_sub = pl.store(pl.col_expand_sub(x, w), [i * r, 0], o_sub)
            o_mul = pl.store(pl.col_expand_mul(x, w), [i * r, 0], o_mul)
            o_max = pl.store(pl.col_expand_max(x, w), [i * r, 0], o_max)
            o_min = pl.store(pl.col_expand_min(x, w), [i * r, 0], o_min)
    return o_exp, o_add, o_sub, o_mul, o_max, o_min


@pl.jit
def k_colexp_f(a: pl.Tensor, v: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
               o_div: pl.Out[pl.Tensor], o_expdif: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            w = pl.load(v, [i, 0], [1, c])
            o_div = pl.store(pl.col_expand_div(x, w), [i * r, 0], o_div)
            o_expdif = pl.store(pl.col_expand_expdif(x, w), [i * r, 0], o_expdif)
    return o_div, o_expdif


@pl.jit
def k_cmp(a: pl.Tensor, b: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
          o_eq: pl.Out[pl.Tensor], o_ne: pl.Out[pl.Tensor], o_lt: pl.Out[pl.Tensor],
          o_ge: pl.Out[pl.Tensor], o_gts: pl.Out[pl.Tensor], o_les: pl.Out[pl.Tensor],
          o_sel: pl.Out[pl.Tensor], o_sels: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            y = pl.load(b, [i * r, 0], [r, c])
            o_eq = pl.store(pl.cmp(x, y, cmp_type=0), [i * r, 0], o_eq)
            o_ne = pl.store(pl.cmp(x, y, cmp_type=1), [i * r, 0], o_ne)
            m = pl.cmp(x, y, cmp_type=2)
            o_lt = pl.store(m, [i * r, 0], o_lt)
            o_ge = pl.store(pl.cmp(x, y, cmp_type=5), [i * r, 0], o_ge)
            ms = pl.cmps(x, 0, cmp_type=4)
            o_gts = pl.store(ms, [i * r, 0], o_gts)
            o_les = pl.store(pl.cmps(x, 1, cmp_type=3), [i * r, 0], o_les)
            o_sel = pl.store(pl.sel(m, x, y), [i * r, 0], o_sel)
            o_sels = pl.store(pl.sels(ms, y, 0), [i * r, 0], o_sels)
    return o_eq, o_ne, o_lt, o_ge, o_gts, o_les, o_sel, o_sels


MODES = ("round", "rint", "floor", "ceil", "trunc", "odd", "none")


@pl.jit
def k_cast_fp16(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
                o0: pl.Out[pl.Tensor], o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor], o3: pl.Out[pl.Tensor],
                o4: pl.Out[pl.Tensor], o5: pl.Out[pl.Tensor], o6: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o0 = pl.store(pl.cast(x, pl.FP16, mode="round"), [i * r, 0], o0)
            o1 = pl.store(pl.cast(x, pl.FP16, mode="rint"), [i * r, 0], o1)
            o2 = pl.store(pl.cast(x, pl.FP16, mode="floor"), [i * r, 0], o2)
            o3 = pl.store(pl.cast(x, pl.FP16, mode="ceil"), [i * r, 0], o3)
            o4 = pl.store(pl.cast(x, pl.FP16, mode="trunc"), [i * r, 0], o4)
            o5 = pl.store(pl.cast(x, pl.FP16, mode="odd"), [i * r, 0], o5)
            o6 = pl.store(pl.cast(x, pl.FP16, mode="none"), [i * r, 0], o6)
    return o0, o1, o2, o3, o4, o5, o6


@pl.jit
def k_cast_bf16(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
                o0: pl.Out[pl.Tensor], o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor], o3: pl.Out[pl.Tensor],
                o4: pl.Out[pl.Tensor], o5: pl.Out[pl.Tensor], o6: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o0 = pl.store(pl.cast(x, pl.BF16, mode="round"), [i * r, 0], o0)
            o1 = pl.store(pl.cast(x, pl.BF16, mode="rint"), [i * r, 0], o1)
            o2 = pl.store(pl.cast(x, pl.BF16, mode="floor"), [i * r, 0], o2)
            o3 = pl.store(pl.cast(x, pl.BF16, mode="ceil"), [i * r, 0], o3)
            o4 = pl.store(pl.cast(x, pl.BF16, mode="trunc"), [i * r, 0], o4)
            o5 = pl.store(pl.cast(x, pl.BF16, mode="odd"), [i * r, 0], o5)
            o6 = pl.store(pl.cast(x, pl.BF16, mode="none"), [i * r, 0], o6)
    return o0, o1, o2, o3, o4, o5, o6


@pl.jit
def k_cast_fp32(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
                o0: pl.Out[pl.Tensor], o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor], o3: pl.Out[pl.Tensor],
                o4: pl.Out[pl.Tensor], o5: pl.Out[pl.Tensor], o6: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o0 = pl.store(pl.cast(x, pl.FP32, mode="round"), [i * r, 0], o0)
            o1 = pl.store(pl.cast(x, pl.FP32, mode="rint"), [i * r, 0], o1)
            o2 = pl.store(pl.cast(x, pl.FP32, mode="floor"), [i * r, 0], o2)
            o3 = pl.store(pl.cast(x, pl.FP32, mode="ceil"), [i * r, 0], o3)
            o4 = pl.store(pl.cast(x, pl.FP32, mode="trunc"), [i * r, 0], o4)
            o5 = pl.store(pl.cast(x, pl.FP32, mode="odd"), [i * r, 0], o5)
            o6 = pl.store(pl.cast(x, pl.FP32, mode="none"), [i * r, 0], o6)
    return o0, o1, o2, o3, o4, o5, o6


@pl.jit
def k_cast_i32(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
               o0: pl.Out[pl.Tensor], o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor], o3: pl.Out[pl.Tensor],
               o4: pl.Out[pl.Tensor], o5: pl.Out[pl.Tensor], o6: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o0 = pl.store(pl.cast(x, pl.INT32, mode="round"), [i * r, 0], o0)
            o1 = pl.store(pl.cast(x, pl.INT32, mode="rint"), [i * r, 0], o1)
            o2 = pl.store(pl.cast(x, pl.INT32, mode="floor"), [i * r, 0], o2)
            o3 = pl.store(pl.cast(x, pl.INT32, mode="ceil"), [i * r, 0], o3)
            o4 = pl.store(pl.cast(x, pl.INT32, mode="trunc"), [i * r, 0], o4)
            o5 = pl.store(pl.cast(x, pl.INT32, mode="odd"), [i * r, 0], o5)
            o6 = pl.store(pl.cast(x, pl.INT32, mode="none"), [i * r, 0], o6)
    return o0, o1, o2, o3, o4, o5, o6


@pl.jit
def k_cast_i16(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
               o0: pl.Out[pl.Tensor], o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor], o3: pl.Out[pl.Tensor],
               o4: pl.Out[pl.Tensor], o5: pl.Out[pl.Tensor], o6: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o0 = pl.store(pl.cast(x, pl.INT16, mode="round"), [i * r, 0], o0)
            o1 = pl.store(pl.cast(x, pl.INT16, mode="rint"), [i * r, 0], o1)
            o2 = pl.store(pl.cast(x, pl.INT16, mode="floor"), [i * r, 0], o2)
            o3 = pl.store(pl.cast(x, pl.INT16, mode="ceil"), [i * r, 0], o3)
            o4 = pl.store(pl.cast(x, pl.INT16, mode="trunc"), [i * r, 0], o4)
            o5 = pl.store(pl.cast(x, pl.INT16, mode="odd"), [i * r, 0], o5)
            o6 = pl.store(pl.cast(x, pl.INT16, mode="none"), [i * r, 0], o6)
    return o0, o1, o2, o3, o4, o5, o6


CAST_KERNELS = {FP16: k_cast_fp16, BF16: k_cast_bf16, FP32: k_cast_fp32, I32: k_cast_i32, I16: k_cast_i16}


@pl.jit
def k_full_move(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
                o_full: pl.Out[pl.Tensor], o_move: pl.Out[pl.Tensor], o_chain: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            f = pl.tile.full([r, c], dtype=x.dtype, value=2.5)
            o_full = pl.store(pl.add(x, f), [i * r, 0], o_full)
            m = pl.move(x, target_memory=pl.Mem.Vec)
            o_move = pl.store(m, [i * r, 0], o_move)
            t = pl.create_tile([r, c], dtype=x.dtype, target_memory=pl.Mem.Vec)
            t = pl.mul(m, f)
            o_chain = pl.store(pl.maximum(t, m), [i * r, 0], o_chain)
    return o_full, o_move, o_chain


@pl.jit
def k_reshape_transpose(a: pl.Tensor, a3: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
                        o_re: pl.Out[pl.Tensor], o_tv: pl.Out[pl.Tensor], o_tv3: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o_re = pl.store(pl.add(pl.reshape(x, [1, r * c]), 1), [0, i * r * c], o_re)
            o_tv = pl.store(pl.tile.transpose_view(x), [i * c, 0], o_tv)
            x3 = pl.load(a3, [i * 2, 0, 0], [2, r, c])
            o_tv3 = pl.store(pl.tile.transpose_view(x3), [i * 2, 0, 0], o_tv3)
    return o_re, o_tv, o_tv3


@pl.jit
def k_partial(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX, vc: pl.INDEX,
              o_add: pl.Out[pl.Tensor], o_sum: pl.Out[pl.Tensor]):
    """valid_shape loads (zero padding, read by the reduction) and partial stores: per-task gang access."""
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c], valid_shape=[r, vc])
            tmp = pl.create_tile([r, c], dtype=x.dtype, target_memory=pl.Mem.Vec)
            o_sum = pl.store(pl.row_sum(x, tmp), [i * r, 0], o_sum)
            o_add = pl.store(pl.add(x, 1.0), [i * r, 0], o_add)
    return o_add, o_sum


@pl.jit
def k_scattered(a: pl.Tensor, b: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX, h: pl.INDEX,
                o: pl.Out[pl.Tensor]):
    """Gang members whose regions are not evenly spaced (2-D task grid: the row of blocks wraps)
    and overlapping reads (``b``: windows of ``r`` rows every ``h < r`` rows)."""
    for i in pl.parallel(n):
        for j in pl.parallel(4):
            with pl.at(level=pl.Level.CORE_GROUP):
                x = pl.load(a, [i * r, j * c], [r, c])
                y = pl.load(b, [(i * 4 + j) * h, 0], [r, c])
                o = pl.store(pl.maximum(pl.sub(x, y), x), [i * r, j * c], o)
    return o


@pl.jit
def k_large(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX, o: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o = pl.store(pl.exp(pl.maximum(x, 0.0)), [i * r, 0], o)
    return o


@pl.jit
def k_matmul(a: pl.Tensor, b: pl.Tensor, ni: pl.INDEX, nj: pl.INDEX, m: pl.INDEX, k: pl.INDEX, w: pl.INDEX,
             out: pl.Out[pl.Tensor]):
    for i in pl.parallel(ni):
        for j in pl.parallel(nj):
            with pl.at(level=pl.Level.CORE_GROUP):
                a0 = pl.load(a, [i * m, 0], [m, k], target_memory=pl.Mem.Mat)
                b0 = pl.load(b, [0, j * w], [k, w], target_memory=pl.Mem.Mat)
                acc = pl.matmul(pl.move(a0, target_memory=pl.Mem.Left), pl.move(b0, target_memory=pl.Mem.Right))
                a1 = pl.load(a, [i * m, k], [m, k], target_memory=pl.Mem.Mat)
                b1 = pl.load(b, [k, j * w], [k, w], target_memory=pl.Mem.Mat)
                acc = pl.matmul_acc(acc, pl.move(a1, target_memory=pl.Mem.Left),
                                    pl.move(b1, target_memory=pl.Mem.Right))
                out = pl.store(acc, [i * m, j * w], out)
    return out


@pl.jit
def k_matmul_rows(a: pl.Tensor, b: pl.Tensor, n: pl.INDEX, m: pl.INDEX, k: pl.INDEX, w: pl.INDEX,
                  out: pl.Out[pl.Tensor]):
    """Row blocks of ``a`` times all of ``b``: evenly spaced loads and stores (one strided copy per gang)."""
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            a0 = pl.load(a, [i * m, 0], [m, k], target_memory=pl.Mem.Mat)
            b0 = pl.load(b, [0, 0], [k, w], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(a0, target_memory=pl.Mem.Left), pl.move(b0, target_memory=pl.Mem.Right))
            out = pl.store(acc, [i * m, 0], out)
    return out


@pl.jit
def k_two_stage(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX, mid: pl.Out[pl.Tensor],
                out: pl.Out[pl.Tensor]):
    """Softmax in two kernels per iteration (RAW through ``mid``): gangs of either kernel form while
    tasks of the other run."""
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            tmp = pl.create_tile([r, c], dtype=x.dtype, target_memory=pl.Mem.Vec)
            m = pl.row_max(x, tmp)
            mid = pl.store(pl.row_expand_expdif(x, m), [i * r, 0], mid)
        with pl.at(level=pl.Level.CORE_GROUP):
            e = pl.load(mid, [i * r, 0], [r, c])
            tmp2 = pl.create_tile([r, c], dtype=e.dtype, target_memory=pl.Mem.Vec)
            s = pl.row_sum(e, tmp2)
            out = pl.store(pl.row_expand_div(e, s), [i * r, 0], out)
    return mid, out


# ---------------------------------------------------------------- negative cases
@pl.jit
def k_overlap_waw(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX, h: pl.INDEX, o: pl.InOut[pl.Tensor]):
    """Task i writes rows [i*h, i*h + r) with h < r: overlapping writes. ``o`` is InOut, so each
    task looks up the earlier writers (an Out argument only registers: no WAW edge, a race)."""
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o = pl.store(pl.add(x, 1.0), [i * h, 0], o)
    return o


@pl.jit
def k_overlap_nodep(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX, h: pl.INDEX, o: pl.Out[pl.Tensor]):
    """The same overlapping writes with no inferred edges: all tasks ready at once, footprints conflict."""
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[o]):
            x = pl.load(a, [i * r, 0], [r, c])
            o = pl.store(pl.add(x, 1.0), [i * h, 0], o)
    return o


@pl.jit
def k_per_task_scalar(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX, o: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o = pl.store(pl.mul(x, i), [i * r, 0], o)
    return o


@pl.jit
def k_inner_loop(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX, o: pl.Out[pl.Tensor]):
    # the loop's bound depends on the task: each task runs its own number of instructions
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            for k in pl.range(i % 3 + 1):
                x = pl.add(x, 1.0)
            o = pl.store(x, [i * r, 0], o)
    return o


# ================================================================== helpers
def fast_first(shapes):
    """Parameters of a shape sweep: the first shape in the fast tier, the others marked slow (CI and
    ``scripts/test.sh`` run them all; see CONTRIBUTING.md, "Test tiers")."""
    return [pytest.param(s, id=f"{s[0]}x{s[1]}", marks=() if k == 0 else pytest.mark.slow)
            for k, s in enumerate(shapes)]


# two torch threads (gang calls split in chunks) only in the slow tier: the fast tier keeps one thread
@pytest.fixture(params=[1, pytest.param(2, marks=pytest.mark.slow)], ids=["threads1", "threads2"])
def threads(request):
    shape = getattr(getattr(request.node, "callspec", None), "params", {}).get("shape")
    if request.param > 1 and shape is not None and N * shape[0] * shape[1] < GRAIN:
        # a call over all N tasks' tiles is below torch's GRAIN: torch runs it on one thread, so this
        # case would repeat threads1's run exactly (8x48 and 3x40; 9x120 and 4x200 do split)
        pytest.skip(f"{N} tiles of {shape[0]}x{shape[1]} are < GRAIN={GRAIN} elements: torch does not split "
                    "the calls, the same run as threads1")
    old = torch.get_num_threads()
    torch.set_num_threads(request.param)
    try:
        yield request.param
    finally:
        torch.set_num_threads(old)


def _signed(v: int, bits: int) -> int:
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


# bit patterns: +0 -0, NaNs (quiet, signalling, negative, payloads, all ones), +-inf, subnormals,
# largest finite, smallest normal, 1, and values at conversion boundaries
_SPECIAL = {
    FP32: (torch.int32, 32, [0x00000000, 0x80000000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FC00123,
                             0x7FBFFFFF, 0xFFFFFFFF, 0x7F800000, 0xFF800000, 0x00000001, 0x807FFFFF,
                             0x00400000, 0x7F7FFFFF, 0xFF7FFFFF, 0x00800000, 0x3F800000, 0x4F000000,
                             0xCF000000, 0x477FE000, 0x477FF000, 0x47800000, 0x33800000, 0x3F000000,
                             0x45001000, 0xC5001800]),
    FP16: (torch.int16, 16, [0x0000, 0x8000, 0x7E00, 0xFE00, 0x7C01, 0x7E55, 0x7DFF, 0xFFFF, 0x7C00, 0xFC00,
                             0x0001, 0x83FF, 0x0200, 0x7BFF, 0xFBFF, 0x0400, 0x3C00, 0x3800, 0x6801, 0xE803]),
    BF16: (torch.int16, 16, [0x0000, 0x8000, 0x7FC0, 0xFFC0, 0x7F81, 0x7FC5, 0x7FBF, 0xFFFF, 0x7F80, 0xFF80,
                             0x0001, 0x807F, 0x0040, 0x7F7F, 0xFF7F, 0x0080, 0x3F80, 0x3F00, 0x4B01, 0xCB03]),
}


def specials(dtype) -> torch.Tensor:
    if dtype.is_floating_point:
        iv, bits, vals = _SPECIAL[dtype]
        return torch.tensor([_signed(v, bits) for v in vals], dtype=iv).view(dtype)
    info = torch.iinfo(dtype)
    return torch.tensor([0, -1, 1, info.max, info.min, info.max - 1, info.min + 1, 100, -100], dtype=dtype)


def data(shape, dtype, seed: int, flavor: str = "special") -> torch.Tensor:
    """``normal``: finite nonzero values of mixed magnitude; ``special``: ~30% special values;
    ``zeros``: non-positive rows whose max is +0.0 or -0.0 in some tasks' rows, NaN rows in others
    (max/min take the exact tree path there, the amax shortcut elsewhere)."""
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        mag = torch.randint(-3, 4, shape, generator=g).to(torch.float64)
        x = (torch.randn(shape, generator=g, dtype=torch.float64) * 10.0 ** mag).to(dtype)
        x = torch.where(x == 0, torch.ones((), dtype=dtype), x)
    else:
        lim = 100 if dtype == I8 else 1000
        x = torch.randint(-lim, lim, shape, generator=g).to(dtype)
    if flavor == "special":
        sp = specials(dtype)
        pick = torch.randint(0, len(sp), shape, generator=g)
        mask = torch.rand(shape, generator=g) < 0.3
        x = torch.where(mask, sp[pick], x)
    elif flavor == "zeros":
        x = -x.abs() if dtype.is_floating_point else -(x.abs())
        rows = shape[0]
        for k in range(0, rows, 3):         # every third row: a zero extreme of either sign
            x[k, k % shape[1]] = 0.0
            x[k, (k * 7 + 1) % shape[1]] = -0.0 if k % 2 else 0.0
        if dtype.is_floating_point:
            nan = specials(dtype)[2:6]
            for k in range(1, rows, 5):     # some rows: NaNs of different payloads
                x[k, k % shape[1]] = nan[k % 4]
                x[k, (k * 3 + 2) % shape[1]] = nan[(k + 1) % 4]
    return x.contiguous()


def _int_view(t: torch.Tensor) -> torch.Tensor:
    if t.dtype.is_floating_point:
        return t.view({4: torch.int32, 2: torch.int16, 8: torch.int64}[t.element_size()])
    return t


def assert_same_bits(x: torch.Tensor, y: torch.Tensor, what: str = "") -> None:
    assert x.dtype == y.dtype and x.shape == y.shape, what
    xi, yi = _int_view(x), _int_view(y)
    if not torch.equal(xi, yi):
        bad = (xi != yi).nonzero()
        k = tuple(bad[0].tolist())
        raise AssertionError(f"{what}: {len(bad)} elements differ with lockstep on/off, first at {k}: "
                             f"off={x[k].item()!r} (bits {xi[k].item():#x}), on={y[k].item()!r} "
                             f"(bits {yi[k].item():#x})")


def run_both(call, seed: int = 0, expect_gangs: bool = True):
    """``call(config)`` runs the kernel on fresh outputs and returns them. Runs lockstep off and on
    under one seed, asserts equal bits; returns (lockstep outputs, its gangs, its runtime)."""
    res = {}
    for lock in (False, True):
        res[lock] = call(RunConfig(sim_seed=seed, sim_lockstep=lock))
        rt = S._LAST_RUNTIME[0]
        if not lock:
            assert rt.gangs == []
    gangs = list(rt.gangs)
    if expect_gangs:
        assert len(gangs) > 0, "no gang formed: the comparison could not fail"
        assert max(len(g) for g in gangs) >= 2
    for k, (x, y) in enumerate(zip(res[False], res[True])):
        assert_same_bits(x, y, f"output {k}")
    if gangs:   # compared: the ops of its gangs count as bit-tested (tests/runtime/lockstep_record.py)
        lockstep_record.record(rt, call.__globals__)   # the kernels of the module the call is in
    return res[True], gangs, rt


def close(got: torch.Tensor, want: torch.Tensor, tol: float = 1e-2) -> None:
    """Loose check against torch (NaN where torch has NaN, same infinities)."""
    if got.dtype.is_floating_point:
        torch.testing.assert_close(got.double(), want.double(), rtol=tol, atol=tol, equal_nan=True)
    else:
        assert torch.equal(got, want.to(got.dtype))


def zeros(shape, dtype):
    return torch.zeros(shape, dtype=dtype)


def tiled_rows(x: torch.Tensor, r: int) -> torch.Tensor:
    """[n*r, c] -> [n, r, c] (one tile per task)."""
    return x.reshape(-1, r, x.shape[-1])


# ================================================================== elementwise
BIN_DTYPES = (FP32, FP16, BF16, I32, I16, I8)


@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", BIN_DTYPES, ids=str)
def test_binary_array(threads, dtype, shape):
    r, c = shape
    a, b = data((N * r, c), dtype, 1), data((N * r, c), dtype, 2)

    def call(cfg):
        outs = [zeros(a.shape, dtype) for _ in range(5)]
        k_binary(a, b, N, r, c, *outs, config=cfg)
        return outs

    (o_add, o_sub, o_mul, o_max, o_min), _, _ = run_both(call)
    if dtype.is_floating_point:
        close(o_add, a + b)
        close(o_sub, a - b)
        close(o_mul, a * b)
    else:
        close(o_add, a + b)
        close(o_mul, a * b)
    close(o_max, torch.maximum(a, b), 0)
    close(o_min, torch.minimum(a, b), 0)


@pytest.mark.parametrize("shape", fast_first(SHAPES[:3]))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_div(threads, dtype, shape):
    r, c = shape
    a, b = data((N * r, c), dtype, 3), data((N * r, c), dtype, 4)

    def call(cfg):
        outs = [zeros(a.shape, dtype) for _ in range(3)]
        k_div(a, b, N, r, c, *outs, config=cfg)
        return outs

    (o_div, o_divs, o_div0), _, _ = run_both(call)
    close(o_div, a / b)
    close(o_divs, a / 3.0)
    close(o_div0, a / 0.0)


@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", (FP32, FP16, BF16, I32, I16), ids=str)
def test_scalar_float_literals(threads, dtype, shape):
    r, c = shape
    a = data((N * r, c), dtype, 5)
    # tile-level scalar ops keep the tile's dtype (the reference's rule); on an integer tile the float
    # scalar is converted toward zero first: 1.5 -> 1, 0.1 -> 0, -2.5 -> -2

    def call(cfg):
        outs = [zeros(a.shape, dtype) for _ in range(6)]
        k_scalar_f(a, N, r, c, *outs, config=cfg)
        return outs

    (o_add, o_sub, o_mul, o_max, o_min, o_tiny), _, _ = run_both(call)
    fl = dtype.is_floating_point
    close(o_add, a + 1.5 if fl else a + 1)
    close(o_sub, a - 0.1 if fl else a)
    close(o_mul, a * -2.5 if fl else a * -2)
    close(o_max, torch.maximum(a, torch.zeros((), dtype=dtype)), 0)
    close(o_min, torch.minimum(a, torch.zeros((), dtype=dtype)), 0)
    if not fl:
        close(o_tiny, torch.zeros_like(a), 0)                    # 1e-30 -> 0


@pytest.mark.parametrize("shape", fast_first(SHAPES[:2]))
@pytest.mark.parametrize("dtype", (FP32, FP16, BF16, I32, I16, I8), ids=str)
def test_scalar_int_literals(threads, dtype, shape):
    r, c = shape
    a = data((N * r, c), dtype, 6)

    def call(cfg):
        outs = [zeros(a.shape, dtype) for _ in range(5)]
        k_scalar_i(a, N, r, c, *outs, config=cfg)
        return outs

    (o_add, o_sub, o_mul, o_max, o_min), _, _ = run_both(call)
    close(o_add, a + 3)
    close(o_sub, a - 7)
    close(o_max, torch.maximum(a, torch.zeros((), dtype=dtype)), 0)


@pytest.mark.parametrize("flavor", ("special", "normal"))
@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_unary_float(threads, dtype, shape, flavor):
    r, c = shape
    a = data((N * r, c), dtype, 7, flavor)
    if flavor == "normal":
        a = a.abs()       # the domain of log / sqrt

    def call(cfg):
        outs = [zeros(a.shape, dtype) for _ in range(5)]
        k_unary_f(a, N, r, c, *outs, config=cfg)
        return outs

    (o_exp, o_log, o_sqrt, o_rsqrt, o_recip), _, _ = run_both(call)
    x = a.float()
    close(o_exp, torch.exp(x).to(dtype))
    close(o_log, torch.log(x).to(dtype))
    close(o_sqrt, torch.sqrt(x).to(dtype))
    close(o_rsqrt, torch.rsqrt(x).to(dtype))
    close(o_recip, torch.reciprocal(x).to(dtype))


@pytest.mark.parametrize("shape", fast_first(SHAPES[:3]))
@pytest.mark.parametrize("dtype", (FP32, FP16, BF16, I32, I16, I8), ids=str)
def test_unary_any(threads, dtype, shape):
    r, c = shape
    a = data((N * r, c), dtype, 8)

    def call(cfg):
        outs = [zeros(a.shape, dtype) for _ in range(3)]
        k_unary_any(a, N, r, c, *outs, config=cfg)
        return outs

    (o_neg, o_abs, o_relu), _, _ = run_both(call)
    close(o_neg, -a, 0)
    close(o_abs, a.abs(), 0)
    close(o_relu, torch.clamp_min(a, 0), 0)


# ================================================================== reductions
RED_DTYPES = (FP32, FP16, BF16, I32, I16)


@pytest.mark.parametrize("flavor", ("normal", "special", "zeros"))
@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", RED_DTYPES, ids=str)
def test_row_reductions_tree(threads, dtype, shape, flavor):
    r, c = shape
    a = data((N * r, c), dtype, 9, flavor)

    def call(cfg):
        outs = [zeros((N * r, 1), dtype) for _ in range(3)]
        k_rowred(a, N, r, c, *outs, config=cfg)
        return outs

    (o_sum, o_max, o_min), _, _ = run_both(call)
    close(o_max, a.amax(1, keepdim=True) if flavor != "special" else o_max, 0)
    close(o_min, a.amin(1, keepdim=True) if flavor != "special" else o_min, 0)
    if flavor == "normal":
        tol = 1e-3 if dtype == FP32 else 0.1
        if dtype.is_floating_point:
            torch.testing.assert_close(o_sum.double(), a.double().sum(1, keepdim=True), rtol=tol,
                                       atol=tol * a.double().abs().sum(1, keepdim=True).max().item())
        else:
            close(o_sum, a.sum(1, keepdim=True))


@pytest.mark.parametrize("flavor", ("special", "zeros"))
@pytest.mark.parametrize("shape", fast_first(SHAPES[:2]))
@pytest.mark.parametrize("dtype", (FP32, FP16, I32), ids=str)
def test_row_reductions_live_tmp(threads, dtype, shape, flavor):
    r, c = shape
    a = data((N * r, c), dtype, 10, flavor)

    def call(cfg):
        outs = [zeros((N * r, 1), dtype), zeros((N * r, c), dtype), zeros((N * r, 1), dtype),
                zeros((N * r, c), dtype)]
        k_rowred_live_tmp(a, N, r, c, *outs, config=cfg)
        return outs

    (o_sum, o_t1, o_max, o_t2), _, _ = run_both(call)
    close(o_t1[:, :1], o_sum, 0)     # the tree leaves the sum in the first column of tmp
    close(o_t2[:, :1], o_max, 0)


@pytest.mark.parametrize("flavor", ("normal", "special", "zeros"))
@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", RED_DTYPES, ids=str)
def test_col_reductions_tree(threads, dtype, shape, flavor):
    r, c = shape
    a = data((N * r, c), dtype, 11, flavor)

    def call(cfg):
        outs = [zeros((N, c), dtype) for _ in range(3)]
        k_colred(a, N, r, c, *outs, config=cfg)
        return outs

    (o_sum, o_max, o_min), _, _ = run_both(call)
    t = tiled_rows(a, r)
    if flavor == "normal":
        close(o_max, t.amax(1), 0)
        close(o_min, t.amin(1), 0)
        if not dtype.is_floating_point:
            close(o_sum, t.sum(1))
        else:
            torch.testing.assert_close(o_sum.double(), t.double().sum(1), rtol=0.05,
                                       atol=0.05 * t.double().abs().sum(1).max().item())


@pytest.mark.parametrize("flavor", ("normal", "special", "zeros"))
@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", RED_DTYPES, ids=str)
def test_sequential_reductions(threads, dtype, shape, flavor):
    r, c = shape
    a = data((N * r, c), dtype, 12, flavor)

    def call(cfg):
        outs = [zeros((N * r, 1), dtype) for _ in range(3)] + [zeros((N, c), dtype) for _ in range(3)]
        k_seqred(a, N, r, c, *outs, config=cfg)
        return outs

    (o_rsum, o_rmax, o_rmin, o_csum, o_cmax, o_cmin), _, _ = run_both(call)
    if flavor != "special":
        close(o_rmax, a.amax(1, keepdim=True), 0)
        close(o_rmin, a.amin(1, keepdim=True), 0)
        close(o_cmax, tiled_rows(a, r).amax(1), 0)
        close(o_cmin, tiled_rows(a, r).amin(1), 0)
    if flavor == "normal" and not dtype.is_floating_point:
        close(o_rsum, a.sum(1, keepdim=True))
        close(o_csum, tiled_rows(a, r).sum(1))


# ================================================================== broadcast
@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", (FP32, FP16, BF16, I32, I16), ids=str)
def test_row_expand(threads, dtype, shape):
    r, c = shape
    a, v = data((N * r, c), dtype, 13), data((N * r, 1), dtype, 14)

    def call(cfg):
        outs = [zeros(a.shape, dtype) for _ in range(7)]
        k_rowexp(a, v, N, r, c, *outs, config=cfg)
        return outs

    (o_exp, o_add, o_sub, o_mul, o_max, o_min, o_fill), _, _ = run_both(call)
    close(o_exp, v.expand(a.shape), 0)
    close(o_add, a + v)
    close(o_max, torch.maximum(a, v), 0)
    close(o_min, torch.minimum(a, v), 0)
    close(o_fill, torch.full(a.shape, 3, dtype=dtype), 0)


@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_row_expand_float_only(threads, dtype, shape):
    r, c = shape
    a, v = data((N * r, c), dtype, 15), data((N * r, 1), dtype, 16)

    def call(cfg):
        outs = [zeros(a.shape, dtype) for _ in range(3)]
        k_rowexp_f(a, v, N, r, c, *outs, config=cfg)
        return outs

    (o_div, o_expdif, o_fill), _, _ = run_both(call)
    close(o_div, a / v)
    close(o_expdif, torch.exp((a - v).float()).to(dtype))
    close(o_fill, torch.full(a.shape, 2.75, dtype=dtype), 0)


@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", (FP32, FP16, BF16, I32, I16), ids=str)
def test_col_expand(threads, dtype, shape):
    r, c = shape
    a, v = data((N * r, c), dtype, 17), data((N, c), dtype, 18)

    def call(cfg):
        outs = [zeros(a.shape, dtype) for _ in range(6)]
        k_colexp(a, v, N, r, c, *outs, config=cfg)
        return outs

    (o_exp, o_add, o_sub, o_mul, o_max, o_min), _, _ = run_both(call)
    t, w = tiled_rows(a, r), v[:, None, :]
    close(tiled_rows(o_exp, r), w.expand(t.shape), 0)
    close(tiled_rows(o_add, r), t + w)
    close(tiled_rows(o_max, r), torch.maximum(t, w), 0)
    close(tiled_rows(o_min, r), torch.minimum(t, w), 0)


@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_col_expand_float_only(threads, dtype, shape):
    r, c = shape
    a, v = data((N * r, c), dtype, 19), data((N, c), dtype, 20)

    def call(cfg):
        outs = [zeros(a.shape, dtype) for _ in range(2)]
        k_colexp_f(a, v, N, r, c, *outs, config=cfg)
        return outs

    (o_div, o_expdif), _, _ = run_both(call)
    t, w = tiled_rows(a, r), v[:, None, :]
    close(tiled_rows(o_div, r), t / w)
    close(tiled_rows(o_expdif, r), torch.exp((t - w).float()).to(dtype))


# ================================================================== compare / select
@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", (FP32, FP16, BF16, I32, I16, I8), ids=str)
def test_compare_select(threads, dtype, shape):
    r, c = shape
    a = data((N * r, c), dtype, 21)
    b = torch.where(torch.rand(a.shape) < 0.3, a, data((N * r, c), dtype, 22))   # many equal pairs

    def call(cfg):
        outs = [zeros(a.shape, torch.bool) for _ in range(6)] + [zeros(a.shape, dtype) for _ in range(2)]
        k_cmp(a, b, N, r, c, *outs, config=cfg)
        return outs

    (o_eq, o_ne, o_lt, o_ge, o_gts, o_les, o_sel, o_sels), _, _ = run_both(call)
    close(o_eq, a == b)
    close(o_ne, a != b)
    close(o_lt, a < b)
    close(o_ge, a >= b)
    close(o_gts, a > 0)
    close(o_les, a <= 1)
    close(o_sel, torch.where(a < b, a, b), 0)
    close(o_sels, torch.where(a > 0, b, torch.zeros((), dtype=dtype)), 0)


# ================================================================== cast
CAST_PAIRS = [(FP32, FP16), (FP32, BF16), (FP32, I32), (FP32, I16), (FP16, FP32), (BF16, FP32),
              (FP16, BF16), (BF16, FP16), (FP16, I32), (BF16, I16), (I32, FP16), (I32, BF16), (I32, FP32),
              (I32, I16), (I16, FP16)]


@pytest.mark.parametrize("shape", fast_first(SHAPES[1:3]))
@pytest.mark.parametrize("pair", CAST_PAIRS, ids=lambda p: f"{p[0]}-{p[1]}".replace("torch.", ""))
def test_cast(threads, pair, shape):
    src, dst = pair
    r, c = shape
    a = data((N * r, c), src, 23)
    if src == I32:   # large integers that FP16 / BF16 / FP32 must round
        a = a * torch.tensor(4099, dtype=I32) + torch.randint(-3, 4, a.shape, dtype=I32)

    def call(cfg):
        outs = [zeros(a.shape, dst) for _ in MODES]
        CAST_KERNELS[dst](a, N, r, c, *outs, config=cfg)
        return outs

    outs, _, _ = run_both(call)
    finite = torch.isfinite(a) if src.is_floating_point else torch.ones(a.shape, dtype=torch.bool)
    for o in outs:
        if dst.is_floating_point:
            want = a.double().to(dst)
            ok = finite & torch.isfinite(want)
            torch.testing.assert_close(o[ok].double(), want[ok].double(), rtol=0.02, atol=torch.finfo(dst).tiny)
        else:
            info = torch.iinfo(dst)
            want = a.double().clamp(info.min, info.max)
            assert (o.double()[finite] - want[finite]).abs().max() <= 1


# ================================================================== full / create_tile / move
@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", (FP32, FP16, BF16), ids=str)
def test_full_create_move(threads, dtype, shape):
    r, c = shape
    a = data((N * r, c), dtype, 24)

    def call(cfg):
        outs = [zeros(a.shape, dtype) for _ in range(3)]
        k_full_move(a, N, r, c, *outs, config=cfg)
        return outs

    (o_full, o_move, o_chain), _, _ = run_both(call)
    close(o_full, a + 2.5)
    assert torch.equal(_int_view(o_move), _int_view(a))
    close(o_chain, torch.maximum(a * 2.5, a), 0)


@pytest.mark.parametrize("shape", fast_first(((8, 16), (4, 40))))
@pytest.mark.parametrize("dtype", (FP32, BF16, I16), ids=str)
def test_reshape_and_transpose_view(threads, dtype, shape):
    """tile.reshape and tile.transpose_view (2-D, and the flattened N-D form with nd_shape) on gang
    views: the same bytes as task by task, and the layout torch gives."""
    r, c = shape
    a = data((N * r, c), dtype, 31)
    a3 = data((N * 2, r, c), dtype, 32)

    def call(cfg):
        outs = [zeros((1, N * r * c), dtype), zeros((N * c, r), dtype), zeros((N * 2, c, r), dtype)]
        k_reshape_transpose(a, a3, N, r, c, *outs, config=cfg)
        return outs

    (o_re, o_tv, o_tv3), gangs, _ = run_both(call)
    close(o_re, (a + 1).reshape(1, -1), 0.0 if dtype == FP32 else 1e-2)
    assert torch.equal(_int_view(o_tv), _int_view(tiled_rows(a, r).transpose(1, 2).reshape(N * c, r)))
    assert torch.equal(_int_view(o_tv3), _int_view(a3.transpose(1, 2)))


@pytest.mark.parametrize("dtype", (FP32, FP16), ids=str)
def test_partial_tiles(threads, dtype):
    r, c, vc = 8, 48, 45
    a = data((N * r, c), dtype, 25)

    def call(cfg):
        outs = [zeros(a.shape, dtype), zeros((N * r, 1), dtype)]
        k_partial(a, N, r, c, vc, *outs, config=cfg)
        return outs

    (o_add, o_sum), _, _ = run_both(call)
    close(o_add[:, :vc], a[:, :vc] + 1.0)
    assert not o_add[:, vc:].any()      # a partial store leaves the rest alone


@pytest.mark.parametrize("dtype", (FP32, BF16), ids=str)
def test_unevenly_spaced_and_overlapping_regions(threads, dtype):
    n, r, c, h = 16, 8, 48, 3
    a = data((n * r, 4 * c), dtype, 26)
    b = data(((n * 4 - 1) * h + r, c), dtype, 27)

    def call(cfg):
        o = zeros(a.shape, dtype)
        k_scattered(a, b, n, r, c, h, o, config=cfg)
        return [o]

    (o,), _, _ = run_both(call)
    want = torch.empty_like(a)
    for i in range(n):
        for j in range(4):
            x = a[i * r:(i + 1) * r, j * c:(j + 1) * c]
            y = b[(i * 4 + j) * h:(i * 4 + j) * h + r]
            want[i * r:(i + 1) * r, j * c:(j + 1) * c] = torch.maximum(x - y, x)
    close(o, want, 0)


def test_large_tiles_gang_only_single_threaded(threads):
    # 64 x 512 FP32 = 32768 elements per tile (= torch's GRAIN): a single task's call is split over
    # threads inside the tile, so with two threads the kernel must not be ganged at all
    n, r, c = 8, 64, 512
    a = data((n * r, c), FP32, 28)

    def call(cfg):
        o = zeros(a.shape, FP32)
        k_large(a, n, r, c, o, config=cfg)
        return [o]

    (o,), gangs, _ = run_both(call, expect_gangs=threads == 1)
    if threads > 1:
        assert gangs == []
    close(o, torch.exp(torch.maximum(a, torch.zeros(()))))


# ================================================================== matmul ("each")
@pytest.mark.parametrize("dtype", (FP16, BF16, FP32), ids=str)
def test_matmul(threads, dtype):
    ni, nj, m, k, w = 8, 8, 16, 32, 16
    g = torch.Generator().manual_seed(29)
    a = torch.randn(ni * m, 2 * k, generator=g).to(dtype)
    b = torch.randn(2 * k, nj * w, generator=g).to(dtype)
    a[3, 5] = float("nan")
    a[17, 0] = float("inf")
    b[7, 9] = -0.0

    def call(cfg):
        o = zeros((ni * m, nj * w), FP32)
        k_matmul(a, b, ni, nj, m, k, w, o, config=cfg)
        return [o]

    (o,), _, _ = run_both(call)
    close(o, a.float() @ b.float(), 1e-3)


@pytest.mark.parametrize("dtype", (FP16, FP32), ids=str)
def test_matmul_row_blocks(threads, dtype):
    n, m, k, w = 32, 16, 64, 32
    g = torch.Generator().manual_seed(30)
    a = torch.randn(n * m, k, generator=g).to(dtype)
    b = torch.randn(k, w, generator=g).to(dtype)

    def call(cfg):
        o = zeros((n * m, w), FP32)
        k_matmul_rows(a, b, n, m, k, w, o, config=cfg)
        return [o]

    (o,), _, _ = run_both(call)
    close(o, a.float() @ b.float(), 1e-3)


# ================================================================== two kernels
@pytest.mark.parametrize("flavor", ("normal", "zeros"))
@pytest.mark.parametrize("dtype", (FP32, FP16), ids=str)
def test_two_stage_softmax(threads, dtype, flavor):
    r, c = 9, 120
    a = data((N * r, c), dtype, 34, flavor)

    def call(cfg):
        outs = [zeros(a.shape, dtype), zeros(a.shape, dtype)]
        k_two_stage(a, N, r, c, *outs, config=cfg)
        return outs

    (mid, out), gangs, rt = run_both(call)
    kinds = {rt.tasks[g[0]].kernel for g in gangs}
    assert len(kinds) == 2, kinds                     # both kernels ran as gangs
    if flavor == "normal":
        close(out, torch.softmax(a.float(), -1).to(dtype), 1e-2)


# ================================================================== negative checks
def _modules(rt):
    return list(rt.kernels.values())


def test_overlapping_writes_with_inferred_edges_form_no_gang(threads):
    n, r, c, h = 32, 8, 48, 5
    a = data((n * r, c), FP32, 31, "normal")

    def call(cfg):
        o = zeros(((n - 1) * h + r, c), FP32)
        k_overlap_waw(a, n, r, c, h, o, config=cfg)
        return [o]

    (o,), gangs, rt = run_both(call, seed=3, expect_gangs=False)
    assert gangs == []
    assert all(m.GANG for m in _modules(rt))        # the kernel itself could be ganged
    want = torch.zeros_like(o)
    for i in range(n):                               # WAW edges: task order, the last writer wins
        want[i * h:i * h + r] = a[i * r:(i + 1) * r] + 1.0
    assert torch.equal(o, want)


def _racy_overlap(seed: int):
    n, r, c, h = 32, 8, 48, 5
    a = data((n * r, c), FP32, 32, "normal")
    res = {}
    for lock in (False, True):
        o = zeros(((n - 1) * h + r, c), FP32)
        k_overlap_nodep(a, n, r, c, h, o, config=RunConfig(sim_seed=seed, sim_lockstep=lock))
        res[lock] = (o, S._LAST_RUNTIME[0])
    return res


@pytest.mark.parametrize("seed", (0, 1))
def test_overlapping_writes_without_edges_form_no_gang(threads, seed):
    res = _racy_overlap(seed)
    for o, rt in res.values():
        assert rt.gangs == []                          # the footprints conflict: never ganged
        assert all(m.GANG for m in _modules(rt))       # although the kernel has a lockstep form


# a refused gang (conflicting footprints) leaves the ready list exactly as lockstep off does, so the
# seeded schedule is the same and even a racy program gives the same bits
def test_overlapping_writes_without_edges_same_result_as_lockstep_off(threads):
    res = _racy_overlap(0)
    assert res[True][1].gangs == []
    assert_same_bits(res[False][0], res[True][0], "racy overlapping writes")


def _compiled_kernel_sources(kernel, *args):
    cp = kernel.compile(*args, config=RunConfig(sim_seed=0))
    return [Path(cp.output_dir, p).read_text() for p in cp.meta["kernels"].values()]


@pytest.mark.parametrize("kernel, why", [(k_per_task_scalar, "per-task value"), (k_inner_loop, "ForStmt")],
                         ids=["per_task_scalar", "inner_for_loop"])
def test_task_dependent_streams_have_no_gang_form(threads, kernel, why):
    n, r, c = 32, 8, 48
    a = data((n * r, c), FP32, 33, "normal")
    srcs = _compiled_kernel_sources(kernel, a, n, r, c, zeros(a.shape, FP32))
    assert len(srcs) == 1
    assert "GANG = False" in srcs[0] and "GANG_WHY" in srcs[0] and "def kernel_gang" not in srcs[0]

    def call(cfg):
        o = zeros(a.shape, FP32)
        kernel(a, n, r, c, o, config=cfg)
        return [o]

    (o,), gangs, rt = run_both(call, expect_gangs=False)
    assert gangs == []
    (mod,) = _modules(rt)
    assert mod.GANG is False and why in mod.GANG_WHY
    if kernel is k_per_task_scalar:
        want = tiled_rows(a, r) * torch.arange(n, dtype=FP32)[:, None, None]
        close(o, want.reshape(a.shape), 1e-6)
    else:
        want = tiled_rows(a, r) + (torch.arange(n, dtype=FP32) % 3 + 1)[:, None, None]
        close(o, want.reshape(a.shape), 1e-6)


# ================================================================== the catalogue's further ops (issue 15)
@pl.jit
def k_bitwise(a: pl.Tensor, b: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
              o_and: pl.Out[pl.Tensor], o_or: pl.Out[pl.Tensor], o_xor: pl.Out[pl.Tensor],
              o_not: pl.Out[pl.Tensor], o_shl: pl.Out[pl.Tensor], o_shr: pl.Out[pl.Tensor],
              o_ands: pl.Out[pl.Tensor], o_xors: pl.Out[pl.Tensor], o_shrs: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            y = pl.load(b, [i * r, 0], [r, c])
            tmp = pl.create_tile([r, c], dtype=x.dtype, target_memory=pl.Mem.Vec)
            o_and = pl.store(pl.and_(x, y), [i * r, 0], o_and)
            o_or = pl.store(pl.or_(x, y), [i * r, 0], o_or)
            o_xor = pl.store(pl.xor(x, y, tmp), [i * r, 0], o_xor)
            o_not = pl.store(pl.not_(x), [i * r, 0], o_not)
            k = pl.and_(y, 7)
            o_shl = pl.store(pl.shl(x, k), [i * r, 0], o_shl)
            o_shr = pl.store(pl.shr(x, k), [i * r, 0], o_shr)
            o_ands = pl.store(pl.and_(x, 0x3C), [i * r, 0], o_ands)
            o_xors = pl.store(pl.tile.xors(x, -1, tmp), [i * r, 0], o_xors)
            o_shrs = pl.store(pl.shr(x, 3), [i * r, 0], o_shrs)
    return o_and, o_or, o_xor, o_not, o_shl, o_shr, o_ands, o_xors, o_shrs


@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", (I32, I16, I8, torch.uint8, torch.int64), ids=str)
def test_bitwise(threads, dtype, shape):
    r, c = shape
    a = data((N * r, c), dtype if dtype != torch.uint8 else I8, 41).view(dtype)
    b = data((N * r, c), dtype if dtype != torch.uint8 else I8, 42).view(dtype)

    def call(cfg):
        outs = [zeros(a.shape, dtype) for _ in range(9)]
        k_bitwise(a, b, N, r, c, *outs, config=cfg)
        return outs

    (o_and, o_or, o_xor, o_not, o_shl, o_shr, o_ands, o_xors, o_shrs), _, _ = run_both(call)
    if dtype != torch.uint8:    # torch has the ops on signed dtypes: a loose check of the meaning
        close(o_and, a & b)
        close(o_xor, a ^ b)
        close(o_not, ~a)
        close(o_shr, a >> (b & 7))
        close(o_shrs, a >> 3)
        close(o_xors, ~a)


@pl.jit
def k_prod_arg(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
               o_rprod: pl.Out[pl.Tensor], o_rseq: pl.Out[pl.Tensor], o_cprod: pl.Out[pl.Tensor],
               o_ramax: pl.Out[pl.Tensor], o_ramin: pl.Out[pl.Tensor], o_camax: pl.Out[pl.Tensor],
               o_camin: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            tmp = pl.create_tile([r, c], dtype=x.dtype, target_memory=pl.Mem.Vec)
            o_rprod = pl.store(pl.row_prod(x, tmp), [i * r, 0], o_rprod)
            o_rseq = pl.store(pl.tile.row_prod(x), [i * r, 0], o_rseq)
            o_cprod = pl.store(pl.col_prod(x), [i, 0], o_cprod)
            o_ramax = pl.store(pl.row_argmax(x, tmp), [i * r, 0], o_ramax)
            o_ramin = pl.store(pl.row_argmin(x, tmp), [i * r, 0], o_ramin)
            o_camax = pl.store(pl.col_argmax(x, tmp), [i, 0], o_camax)
            o_camin = pl.store(pl.col_argmin(x, tmp), [i, 0], o_camin)
    return o_rprod, o_rseq, o_cprod, o_ramax, o_ramin, o_camax, o_camin


@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", (FP32, FP16, BF16, I32, I16), ids=str)
def test_prod_and_arg_reductions(threads, dtype, shape):
    r, c = shape
    a = data((N * r, c), dtype, 43)
    if dtype.is_floating_point:   # keep some products finite
        a = torch.where(a.abs() > 4, a.sign(), a)

    def call(cfg):
        outs = [zeros((N * r, 1), dtype), zeros((N * r, 1), dtype), zeros((N, c), dtype),
                zeros((N * r, 1), I32), zeros((N * r, 1), I32), zeros((N, c), I32), zeros((N, c), I32)]
        k_prod_arg(a, N, r, c, *outs, config=cfg)
        return outs

    (o_rprod, o_rseq, o_cprod, o_ramax, o_ramin, o_camax, o_camin), _, _ = run_both(call)
    t = tiled_rows(a, r)
    if not dtype.is_floating_point:
        close(o_ramax, t.argmax(-1).reshape(-1, 1))
        close(o_camin, t.argmin(-2).reshape(N, c))
        close(o_rseq, t.prod(-1).reshape(-1, 1))


@pl.jit
def k_elementwise_ext(a: pl.Tensor, b: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
                      o_fmod: pl.Out[pl.Tensor], o_fmods: pl.Out[pl.Tensor], o_rem: pl.Out[pl.Tensor],
                      o_sin: pl.Out[pl.Tensor], o_cos: pl.Out[pl.Tensor], o_prelu: pl.Out[pl.Tensor],
                      o_lrelu: pl.Out[pl.Tensor], o_addc: pl.Out[pl.Tensor], o_subsc: pl.Out[pl.Tensor],
                      o_part: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            y = pl.load(b, [i * r, 0], [r, c])
            tmp = pl.create_tile([r, c], dtype=x.dtype, target_memory=pl.Mem.Vec)
            o_fmod = pl.store(pl.fmod(x, y), [i * r, 0], o_fmod)
            o_fmods = pl.store(pl.fmod(x, 0.75), [i * r, 0], o_fmods)
            o_rem = pl.store(pl.rem(x, y, tmp), [i * r, 0], o_rem)
            o_sin = pl.store(pl.sin(x), [i * r, 0], o_sin)
            o_cos = pl.store(pl.cos(x), [i * r, 0], o_cos)
            o_prelu = pl.store(pl.prelu(x, y, tmp), [i * r, 0], o_prelu)
            o_lrelu = pl.store(pl.lrelu(x, 0.1), [i * r, 0], o_lrelu)
            o_addc = pl.store(pl.addc(x, y, x), [i * r, 0], o_addc)
            o_subsc = pl.store(pl.subsc(x, 1.5, y), [i * r, 0], o_subsc)
            o_part = pl.store(pl.part_max(x, y), [i * r, 0], o_part)
    return o_fmod, o_fmods, o_rem, o_sin, o_cos, o_prelu, o_lrelu, o_addc, o_subsc, o_part


@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", (FP32, FP16), ids=str)
def test_elementwise_ext(threads, dtype, shape):
    r, c = shape
    a, b = data((N * r, c), dtype, 44), data((N * r, c), dtype, 45)

    def call(cfg):
        outs = [zeros(a.shape, dtype) for _ in range(10)]
        k_elementwise_ext(a, b, N, r, c, *outs, config=cfg)
        return outs

    outs, _, _ = run_both(call)
    close(outs[3], torch.sin(a.double()).to(dtype))
    close(outs[9], torch.maximum(a, b), 0)


@pl.jit
def k_rest_float(a: pl.Tensor, b: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
                 o_padd: pl.Out[pl.Tensor], o_pmin: pl.Out[pl.Tensor], o_pmul: pl.Out[pl.Tensor],
                 o_subc: pl.Out[pl.Tensor], o_addsc: pl.Out[pl.Tensor], o_rems: pl.Out[pl.Tensor]):
    # the lockstep forms no kernel above used (found by the coverage test below)
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            y = pl.load(b, [i * r, 0], [r, c])
            tmp = pl.create_tile([r, c], dtype=x.dtype, target_memory=pl.Mem.Vec)
            o_padd = pl.store(pl.part_add(x, y), [i * r, 0], o_padd)
            o_pmin = pl.store(pl.part_min(x, y), [i * r, 0], o_pmin)
            o_pmul = pl.store(pl.part_mul(x, y), [i * r, 0], o_pmul)
            o_subc = pl.store(pl.subc(x, y, x), [i * r, 0], o_subc)
            o_addsc = pl.store(pl.addsc(x, 1.5, y), [i * r, 0], o_addsc)
            o_rems = pl.store(pl.rem(x, 0.75, tmp), [i * r, 0], o_rems)
    return o_padd, o_pmin, o_pmul, o_subc, o_addsc, o_rems


@pl.jit
def k_rest_int(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
               o_ors: pl.Out[pl.Tensor], o_shls: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o_ors = pl.store(pl.or_(x, 0x5A), [i * r, 0], o_ors)
            o_shls = pl.store(pl.shl(x, 2), [i * r, 0], o_shls)
    return o_ors, o_shls


@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", (FP32, FP16), ids=str)
def test_rest_float(threads, dtype, shape):
    r, c = shape
    a, b = data((N * r, c), dtype, 46), data((N * r, c), dtype, 47)

    def call(cfg):
        outs = [zeros(a.shape, dtype) for _ in range(6)]
        k_rest_float(a, b, N, r, c, *outs, config=cfg)
        return outs

    outs, _, _ = run_both(call)
    close(outs[0], a + b, 0)                # equal shapes: the part ops are elementwise
    close(outs[1], torch.minimum(a, b), 0)
    close(outs[2], a * b, 0)


@pytest.mark.parametrize("shape", fast_first(SHAPES))
@pytest.mark.parametrize("dtype", (I32, I16), ids=str)
def test_rest_int(threads, dtype, shape):
    r, c = shape
    a = data((N * r, c), dtype, 48)

    def call(cfg):
        outs = [zeros(a.shape, dtype) for _ in range(2)]
        k_rest_int(a, N, r, c, *outs, config=cfg)
        return outs

    (o_ors, o_shls), _, _ = run_both(call)
    close(o_ors, a | 0x5A)
    close(o_shls, a << 2)

@pl.jit
def k_views(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX,
            o_rv: pl.Out[pl.Tensor], o_vs: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * r, 0], [r, c])
            o_rv = pl.store(pl.reinterpret_view(x, pl.INT32), [i * r, 0], o_rv)
            o_vs = pl.store(pl.tile.set_validshape(x, 3, 5), [i * r, 0], o_vs)
    return o_rv, o_vs


@pytest.mark.parametrize("shape", fast_first(SHAPES))
def test_views(threads, shape):
    r, c = shape
    a = data((N * r, c), FP32, 49)

    def call(cfg):
        outs = [zeros(a.shape, torch.int32), torch.full(a.shape, 7.0)]
        k_views(a, N, r, c, *outs, config=cfg)
        return outs

    (o_rv, o_vs), _, _ = run_both(call)
    assert torch.equal(o_rv, a.view(torch.int32))
    for i in range(N):   # only each block's valid [3, 5] corner is stored
        blk = o_vs[i * r:(i + 1) * r]
        assert torch.equal(blk[:3, :5].view(torch.int32), a[i * r:i * r + 3, :5].view(torch.int32))
        assert bool((blk[3:] == 7.0).all()) and bool((blk[:, 5:] == 7.0).all())


@pl.jit
def k_block_ids(a: pl.Tensor, n: pl.INDEX, r: pl.INDEX, c: pl.INDEX, o: pl.Out[pl.Tensor]):
    """The block index and count in addresses (a use a gang allows): 0 and 1 in a one-block task."""
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            row = (i * pl.tile.get_block_num() + pl.tile.get_block_idx()) * r
            x = pl.load(a, [row, 0], [r, c])
            o = pl.store(pl.add(x, 1.0), [row, 0], o)
    return o


def test_block_index_and_count(threads):
    r, c = SHAPES[0]
    a = data((N * r, c), FP32, 50)

    def call(cfg):
        out = zeros(a.shape, FP32)
        k_block_ids(a, N, r, c, out, config=cfg)
        return [out]

    (o,), _, rt = run_both(call)
    assert_same_bits(o, a + 1.0, "block ids in addresses")
    # the gang really ran them (tile.get_block_num as a data operand would make the kernel refuse)
    assert {"tile.get_block_idx", "tile.get_block_num"} <= lockstep_record.ganged_ops(rt, globals())
