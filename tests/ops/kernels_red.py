"""Kernels of tests/ops/test_reduction.py and test_padding.py, generated from two templates (one
line a kernel; CONTRIBUTING.md, "Test kernels from templates"). Annotations are bare so each kernel
specialises on its arguments' shapes and dtypes.

Per reduction op ``<op>``:

* ``t_<op>``: tensor level (``out[:] = pl.<op>(a)``): sequential order, any shape.
* ``tree_<op>`` / ``ptree_<op>``: tile level with a tmp tile (binary tree) on a full [16, 64] tile /
  a partial one (``valid_shape=[13, 37]``, literal). The tmp tile is loaded from the scratch tensor
  ``s`` so that it has the input's dtype whatever that is (``s`` may be larger than [16, 64]).
* ``seq_<op>`` / ``pseq_<op>``: tile level without tmp (sequential), written ``pl.tile.<op>(t)``
  (``pl.row_*(tile)`` requires a tmp tile).

Partial kernels store only the valid region of the result ([13, 1] for rows, [1, 37] for columns).
"""
from kernel_templates import HEADER, kernels

TILE = [16, 64]
VR, VC = 13, 37

# the tensor level: ``out[:] = EXPR`` of the tensor ``a`` (and ``s`` where EXPR names it)
_TENSOR = '''
@pl.jit
def $name(a: pl.Tensor, ${s}out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = $expr
    return out
'''
# the tile level: the tile t of a (``shape``, ``valid`` its valid_shape), the ``tmp`` statements
# (a scratch tile; ``s`` is a parameter where they load it), ``out`` the stored ``result``
_TILE = '''
@pl.jit
def $name(a: pl.Tensor, ${s}out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], $shape$valid)
        $tmp
        out = pl.store($result, [0, 0], out)
    return out
'''
_HEADER = HEADER + "import math\n"   # the fillpad sugar kernels write math.inf


def _tensor(name, expr):
    s = "s: pl.Tensor, " if "s)" in expr else ""
    globals()[name] = getattr(kernels(name, _TENSOR, header=_HEADER, expr=expr, s=s), name)


def _tile(name, result, tmp="", shape="[16, 64]", valid=None):
    s = "s: pl.Tensor, " if "pl.load(s," in tmp else ""
    valid = f", valid_shape={valid}" if valid else ""
    globals()[name] = getattr(kernels(name, _TILE, header=_HEADER, result=result, tmp=tmp, shape=shape,
                                      valid=valid, s=s), name)


def _create(shape, dtype="FP32"):
    return f"tmp = pl.create_tile({shape}, dtype=pl.{dtype}, target_memory=pl.Mem.Vec)"


_S = "tmp = pl.load(s, [0, 0], [16, 64])"
_VALID = "[13, 37]"

for _op in ("row_sum", "row_max", "row_min", "col_sum", "col_max", "col_min"):
    _tensor(f"t_{_op}", f"pl.{_op}(a)")
    _tile(f"tree_{_op}", f"pl.{_op}(t, tmp)", _S)
    _tile(f"ptree_{_op}", f"pl.{_op}(t, tmp)", _S, valid=_VALID)
    _tile(f"seq_{_op}", f"pl.tile.{_op}(t)")
    _tile(f"pseq_{_op}", f"pl.tile.{_op}(t)", valid=_VALID)

# -- larger scratch tile: tmp [32, 128] for a [16, 64] input (tree order, same result)
_tile("big_tmp_row_sum", "pl.row_sum(t, tmp)", "tmp = pl.load(s, [0, 0], [32, 128])")

# -- 4096-wide FP32 row sums, tree vs sequential ([4, 4096] FP32 = 64 KB per tile)
_tile("wide_tree_row_sum", "pl.row_sum(t, tmp)", _create("[4, 4096]"), shape="[4, 4096]")
_tile("wide_seq_row_sum", "pl.tile.row_sum(t)", shape="[4, 4096]")

# -- the padding pitfall: row_max over a [64, 64] load whose valid width is 40
_FILL_MIN = "f = pl.fillpad(t, pl.PadValue.min)\n"
_tile("padded_row_max", "pl.row_max(t, tmp)", _create("[64, 64]"), shape="[64, 64]", valid="[64, 40]")
_tile("fillpad_row_max", "pl.row_max(f, tmp)", _FILL_MIN + _create("[64, 64]"), shape="[64, 64]", valid="[64, 40]")
_tile("full_row_max", "pl.row_max(t, tmp)", _create("[64, 64]"), shape="[64, 64]")
_tile("full_fillpad_row_max", "pl.row_max(f, tmp)", _FILL_MIN + _create("[64, 64]"), shape="[64, 64]")

# -- fillpad: the whole [16, 64] tile after padding a [13, 37] valid region is stored
_tile("fillpad_zero", "pl.fillpad(t)", valid=_VALID)
_tile("fillpad_max", "pl.fillpad(t, pad_value=pl.PadValue.max)", valid=_VALID)
_tile("fillpad_min", "pl.tile.fillpad(t, pl.PadValue.min)", valid=_VALID)
_tile("fillpad_sugar_inf", "pl.fillpad(t, math.inf)", valid=_VALID)
_tile("fillpad_sugar_neginf", "pl.fillpad(t, -math.inf)", valid=_VALID)
_tile("fillpad_sugar_zero", "pl.fillpad(t, 0.0)", valid=_VALID)
_tensor("t_fillpad", "pl.fillpad(a, pl.PadValue.max)")

# -- errors (parsed only by the error tests)
_tile("err_row_sum_no_tmp", "pl.row_sum(t)")
_tile("err_row_max_no_tmp", "pl.row_max(t)")
_tile("err_row_min_no_tmp", "pl.row_min(t)")
_tile("err_row_sum_kw_none", "pl.row_sum(t, tmp_tile=None)")
_tile("err_small_tmp", "pl.row_sum(t, tmp)", "tmp = pl.load(s, [0, 0], [16, 32])")
_tile("err_small_tmp_explicit_col", "pl.tile.col_max(t, tmp)", "tmp = pl.load(s, [0, 0], [8, 64])")
_tile("err_tmp_dtype", "pl.row_max(t, tmp)", _create("[16, 64]", "FP16"))
_tile("err_tmp_rank", "pl.row_min(t, tmp)", "tmp = pl.load(s, [0], [1024])")
_tensor("err_tensor_tmp", "pl.row_sum(a, s)")
_tile("err_fillpad_null", "pl.fillpad(t, pl.PadValue.null)", valid=_VALID)
_tile("err_fillpad_number", "pl.fillpad(t, 1.0)", valid=_VALID)

# -- odd widths in the tree: 40 -> 20 -> 10 -> 5 -> 3 -> 2 -> 1 (the middle element is carried twice)
_tile("odd_tree_row_sum", "pl.row_sum(t, tmp)", _create("[8, 40]"), shape="[8, 40]")
_tile("odd_tree_col_sum", "pl.col_sum(t, tmp)", _create("[40, 8]"), shape="[40, 8]")
