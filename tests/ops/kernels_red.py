"""Kernels of tests/ops/test_reduction.py and test_padding.py (module level: kernel source is read
with inspect). Annotations are bare so each kernel specialises on its arguments' shapes and dtypes.

Per reduction op ``<op>``:

* ``t_<op>``: tensor level (``out[:] = pl.<op>(a)``): sequential order, any shape.
* ``tree_<op>`` / ``ptree_<op>``: tile level with a tmp tile (binary tree) on a full [16, 64] tile /
  a partial one (``valid_shape=[13, 37]``, literal). The tmp tile is loaded from the scratch tensor
  ``s`` so that it has the input's dtype whatever that is (``s`` may be larger than [16, 64]).
* ``seq_<op>`` / ``pseq_<op>``: tile level without tmp (sequential), written ``pl.tile.<op>(t)``
  (``pl.row_*(tile)`` requires a tmp tile).

Partial kernels store only the valid region of the result ([13, 1] for rows, [1, 37] for columns).
"""
import math

import pypto.language as pl

TILE = [16, 64]
VR, VC = 13, 37

@pl.jit
def t_row_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_sum(a)
    return out


@pl.jit
def tree_row_sum(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        tmp = pl.load(s, [0, 0], [16, 64])
        out = pl.store(pl.row_sum(t, tmp), [0, 0], out)
    return out


@pl.jit
def ptree_row_sum(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.load(s, [0, 0], [16, 64])
        out = pl.store(pl.row_sum(t, tmp), [0, 0], out)
    return out


@pl.jit
def seq_row_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.tile.row_sum(t), [0, 0], out)
    return out


@pl.jit
def pseq_row_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.row_sum(t), [0, 0], out)
    return out

@pl.jit
def t_row_max(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_max(a)
    return out


@pl.jit
def tree_row_max(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        tmp = pl.load(s, [0, 0], [16, 64])
        out = pl.store(pl.row_max(t, tmp), [0, 0], out)
    return out


@pl.jit
def ptree_row_max(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.load(s, [0, 0], [16, 64])
        out = pl.store(pl.row_max(t, tmp), [0, 0], out)
    return out


@pl.jit
def seq_row_max(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.tile.row_max(t), [0, 0], out)
    return out


@pl.jit
def pseq_row_max(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.row_max(t), [0, 0], out)
    return out

@pl.jit
def t_row_min(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_min(a)
    return out


@pl.jit
def tree_row_min(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        tmp = pl.load(s, [0, 0], [16, 64])
        out = pl.store(pl.row_min(t, tmp), [0, 0], out)
    return out


@pl.jit
def ptree_row_min(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.load(s, [0, 0], [16, 64])
        out = pl.store(pl.row_min(t, tmp), [0, 0], out)
    return out


@pl.jit
def seq_row_min(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.tile.row_min(t), [0, 0], out)
    return out


@pl.jit
def pseq_row_min(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.row_min(t), [0, 0], out)
    return out

@pl.jit
def t_col_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_sum(a)
    return out


@pl.jit
def tree_col_sum(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        tmp = pl.load(s, [0, 0], [16, 64])
        out = pl.store(pl.col_sum(t, tmp), [0, 0], out)
    return out


@pl.jit
def ptree_col_sum(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.load(s, [0, 0], [16, 64])
        out = pl.store(pl.col_sum(t, tmp), [0, 0], out)
    return out


@pl.jit
def seq_col_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.tile.col_sum(t), [0, 0], out)
    return out


@pl.jit
def pseq_col_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.col_sum(t), [0, 0], out)
    return out

@pl.jit
def t_col_max(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_max(a)
    return out


@pl.jit
def tree_col_max(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        tmp = pl.load(s, [0, 0], [16, 64])
        out = pl.store(pl.col_max(t, tmp), [0, 0], out)
    return out


@pl.jit
def ptree_col_max(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.load(s, [0, 0], [16, 64])
        out = pl.store(pl.col_max(t, tmp), [0, 0], out)
    return out


@pl.jit
def seq_col_max(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.tile.col_max(t), [0, 0], out)
    return out


@pl.jit
def pseq_col_max(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.col_max(t), [0, 0], out)
    return out

@pl.jit
def t_col_min(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_min(a)
    return out


@pl.jit
def tree_col_min(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        tmp = pl.load(s, [0, 0], [16, 64])
        out = pl.store(pl.col_min(t, tmp), [0, 0], out)
    return out


@pl.jit
def ptree_col_min(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        tmp = pl.load(s, [0, 0], [16, 64])
        out = pl.store(pl.col_min(t, tmp), [0, 0], out)
    return out


@pl.jit
def seq_col_min(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.tile.col_min(t), [0, 0], out)
    return out


@pl.jit
def pseq_col_min(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.col_min(t), [0, 0], out)
    return out


# -- larger scratch tile: tmp [32, 128] for a [16, 64] input (tree order, same result)
@pl.jit
def big_tmp_row_sum(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        tmp = pl.load(s, [0, 0], [32, 128])
        out = pl.store(pl.row_sum(t, tmp), [0, 0], out)
    return out


# -- 4096-wide FP32 row sums, tree vs sequential ([4, 4096] FP32 = 64 KB per tile)
@pl.jit
def wide_tree_row_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [4, 4096])
        tmp = pl.create_tile([4, 4096], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.row_sum(t, tmp), [0, 0], out)
    return out


@pl.jit
def wide_seq_row_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [4, 4096])
        out = pl.store(pl.tile.row_sum(t), [0, 0], out)
    return out


# -- the padding pitfall: row_max over a [64, 64] load whose valid width is 40
@pl.jit
def padded_row_max(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64], valid_shape=[64, 40])
        tmp = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.row_max(t, tmp), [0, 0], out)
    return out


@pl.jit
def fillpad_row_max(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64], valid_shape=[64, 40])
        f = pl.fillpad(t, pl.PadValue.min)
        tmp = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.row_max(f, tmp), [0, 0], out)
    return out


@pl.jit
def full_row_max(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        tmp = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.row_max(t, tmp), [0, 0], out)
    return out


@pl.jit
def full_fillpad_row_max(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        f = pl.fillpad(t, pl.PadValue.min)
        tmp = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.row_max(f, tmp), [0, 0], out)
    return out


# -- fillpad: the whole [16, 64] tile after padding a [13, 37] valid region is stored
@pl.jit
def fillpad_zero(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.fillpad(t), [0, 0], out)
    return out


@pl.jit
def fillpad_max(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.fillpad(t, pad_value=pl.PadValue.max), [0, 0], out)
    return out


@pl.jit
def fillpad_min(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.tile.fillpad(t, pl.PadValue.min), [0, 0], out)
    return out


@pl.jit
def fillpad_sugar_inf(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.fillpad(t, math.inf), [0, 0], out)
    return out


@pl.jit
def fillpad_sugar_neginf(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.fillpad(t, -math.inf), [0, 0], out)
    return out


@pl.jit
def fillpad_sugar_zero(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.fillpad(t, 0.0), [0, 0], out)
    return out


@pl.jit
def t_fillpad(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.fillpad(a, pl.PadValue.max)
    return out


# -- errors (parsed only by the error tests)
@pl.jit
def err_row_sum_no_tmp(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.row_sum(t), [0, 0], out)
    return out


@pl.jit
def err_row_max_no_tmp(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.row_max(t), [0, 0], out)
    return out


@pl.jit
def err_row_min_no_tmp(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.row_min(t), [0, 0], out)
    return out


@pl.jit
def err_row_sum_kw_none(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.row_sum(t, tmp_tile=None), [0, 0], out)
    return out


@pl.jit
def err_small_tmp(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        tmp = pl.load(s, [0, 0], [16, 32])
        out = pl.store(pl.row_sum(t, tmp), [0, 0], out)
    return out


@pl.jit
def err_small_tmp_explicit_col(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        tmp = pl.load(s, [0, 0], [8, 64])
        out = pl.store(pl.tile.col_max(t, tmp), [0, 0], out)
    return out


@pl.jit
def err_tmp_dtype(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        tmp = pl.create_tile([16, 64], dtype=pl.FP16, target_memory=pl.Mem.Vec)
        out = pl.store(pl.row_max(t, tmp), [0, 0], out)
    return out


@pl.jit
def err_tmp_rank(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        tmp = pl.load(s, [0], [1024])
        out = pl.store(pl.row_min(t, tmp), [0, 0], out)
    return out


@pl.jit
def err_tensor_tmp(a: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_sum(a, s)
    return out


@pl.jit
def err_fillpad_null(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.fillpad(t, pl.PadValue.null), [0, 0], out)
    return out


@pl.jit
def err_fillpad_number(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64], valid_shape=[13, 37])
        out = pl.store(pl.fillpad(t, 1.0), [0, 0], out)
    return out


# -- odd widths in the tree: 40 -> 20 -> 10 -> 5 -> 3 -> 2 -> 1 (the middle element is carried twice)
@pl.jit
def odd_tree_row_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 40])
        tmp = pl.create_tile([8, 40], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.row_sum(t, tmp), [0, 0], out)
    return out


@pl.jit
def odd_tree_col_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [40, 8])
        tmp = pl.create_tile([40, 8], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.col_sum(t, tmp), [0, 0], out)
    return out
