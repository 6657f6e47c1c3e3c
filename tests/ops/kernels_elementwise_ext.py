"""Kernels for tests/ops/test_elementwise_ext.py: ``t_*`` tensor level (dispatching ``pl.<name>``),
``p_*`` tile level on PARTIAL tiles ([16, 64] loads with ``valid_shape=[13, 37]``). One line a
kernel (tests/ops/ops_templates.py); ``scalar_min_max`` is written by hand."""
import pypto.language as pl
from ops_templates import PARTIAL
from ops_templates import tensor_level as _t
from ops_templates import tile_level as _p

_TMP = "tmp = pl.create_tile([16, 64], dtype=ta.dtype, target_memory=pl.Mem.Vec)"

_t("t_fmod", "pl.fmod(a, b)", "a b")
_t("t_fmods", "pl.fmods(a, s)", "a s:FP32")
_p("p_fmod", "pl.tile.fmod(ta, tb)", "a b")
_p("p_fmods", "pl.tile.fmods(ta, s)", "a s:FP32")
_p("p_rem", "pl.rem(ta, tb, tmp)", "a b", pre=_TMP)
_p("p_rems_i", "pl.tile.rems(ta, s, tmp)", "a s:INT32", pre=_TMP)
_p("p_rems_f", "pl.rems(ta, s, tmp)", "a s:FP32", pre=_TMP)
for _op in ("sin", "cos"):
    _t(f"t_{_op}", f"pl.{_op}(a)")
    _p(f"p_{_op}", f"pl.tile.{_op}(ta)")
_p("p_prelu", "pl.tile.prelu(ta, tb, tmp)", "a b", pre=_TMP)
_p("p_lrelu", "pl.lrelu(ta, s)", "a s:FP32")
_p("p_addc", "pl.tile.addc(ta, tb, tc)", "a b c")
_p("p_subc", "pl.tile.subc(ta, tb, tc)", "a b c")
_p("p_addsc", "pl.addsc(ta, s, tc)", "a s:FP32 c")
_p("p_addsc_i", "pl.tile.addsc(ta, s, tc)", "a s:INT32 c")
_p("p_subsc", "pl.subsc(ta, s, tc)", "a s:FP32 c")
_p("p_subsc_i", "pl.tile.subsc(ta, s, tc)", "a s:INT32 c")
# the part ops: b's valid region [16, 20] differs from a's [13, 37]
for _op in ("part_add", "part_mul", "part_max", "part_min"):
    _t(f"t_{_op}", f"pl.{_op}(a, b)", "a b")
    _p(f"p_{_op}", f"pl.tile.{_op}(ta, tb)", "a b",
       loads={"ta": f"a {PARTIAL}", "tb": "b [16, 64], valid_shape=[16, 20]"})


@pl.jit
def scalar_min_max(a: pl.Tensor, n: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        k = pl.max(pl.min(n, 48), 16)
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.adds(t, k), [0, 0], out)
    return out
