"""Kernels for tests/ops/test_bitwise.py. ``t_*``: tensor level (the whole tensor is one tile; the
dispatching ``pl.<name>``); ``p_*``: tile level on a PARTIAL tile (a [16, 64] load with
``valid_shape=[13, 37]``, the explicit ``pl.tile.<name>``, a store of the valid region). One line a kernel
(tests/ops/ops_templates.py); ``tensor_explicit`` is written by hand."""
import pypto.language as pl
from ops_templates import tensor_level as _t
from ops_templates import tile_level as _p

# xor / xors take a scratch tile at tile level
_TMP = "tmp = pl.create_tile([16, 64], dtype=ta.dtype, target_memory=pl.Mem.Vec)"

for _op, _tile_tmp in (("and", ""), ("or", ""), ("xor", _TMP), ("shl", ""), ("shr", "")):
    _fn = _op + "_" if _op in ("and", "or") else _op        # the Python keywords take a trailing _
    _tmp_arg = ", tmp" if _tile_tmp else ""
    _t(f"t_{_op}", f"pl.{_fn}(a, b)", "a b")
    _t(f"t_{_op}s", f"pl.{_fn}(a, s)", "a s:INT32")
    _p(f"p_{_op}", f"pl.tile.{_fn}(ta, tb{_tmp_arg})", "a b", pre=_tile_tmp)
    _p(f"p_{_op}s", f"pl.tile.{_op}s(ta, s{_tmp_arg})", "a s:INT32", pre=_tile_tmp)
_t("t_not", "pl.not_(a)")
_p("p_not", "pl.tile.not_(ta)")


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
