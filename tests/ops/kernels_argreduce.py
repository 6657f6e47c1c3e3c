"""Kernels for tests/ops/test_argreduce.py: ``t_*`` tensor level (dispatching ``pl.<name>``), ``p_*``
tile level on a PARTIAL tile (a [16, 64] load with ``valid_shape=[13, 37]``). One line a
kernel (tests/ops/ops_templates.py)."""
import pypto.language as pl
from ops_templates import PARTIAL
from ops_templates import tensor_level as _t
from ops_templates import tile_level as _p

_T = {"t": f"a {PARTIAL}"}               # the tile-level kernels load the PARTIAL tile as ``t``
_FULL = {"t": "a [16, 64]"}
_TMP = "tmp = pl.create_tile([16, 64], dtype=t.dtype, target_memory=pl.Mem.Vec)"

for _op in ("row_prod", "row_argmax", "row_argmin", "col_prod", "col_argmax", "col_argmin"):
    _t(f"t_{_op}", f"pl.{_op}(a)")
    # with the scratch tile (prod: the binary-tree order); col_prod takes none (its tmp is unused)
    _p(f"p_{_op}", f"pl.tile.{_op}(t)" if _op == "col_prod" else f"pl.tile.{_op}(t, tmp)", loads=_T, pre=_TMP)
# without a scratch tile: the sequential order
_p("p_row_prod_seq", "pl.tile.row_prod(t)", loads=_T)
_p("p_col_prod_seq", "pl.tile.col_prod(t)", loads=_T)
# errors
_p("row_argmax_no_tmp", "pl.row_argmax(t)", loads=_FULL)
_p("row_argmax_bad_tmp", "pl.row_argmax(t, tmp)", loads=_FULL,
   pre="tmp = pl.create_tile([16, 128], dtype=t.dtype, target_memory=pl.Mem.Vec)")
_p("row_prod_no_tmp", "pl.row_prod(t)", loads=_FULL)
