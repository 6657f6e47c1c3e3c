"""Kernels for tests/ops/test_int_arith.py: wide unsigned wrap-around arithmetic, integer
division (A5) and subs keeping an integer array's dtype. One line a kernel where they share a shape
(tests/ops/ops_templates.py); the tensor-level subs / muls and assemble ones are written by hand."""
import pypto.language as pl
from ops_templates import tensor_level as _t
from ops_templates import tile_level as _p

_A, _B = "pl.load(a, [0, 0], [8, 64])", "pl.load(b, [0, 0], [8, 64])"   # the operands, loaded in the call

for _name, _op in (("u_add", "add"), ("u_sub", "sub"), ("u_mul", "mul"), ("u_max", "maximum"), ("i_div", "div")):
    _p(_name, f"pl.tile.{_op}({_A}, {_B})", "a b", loads={})
_t("u_min", "pl.minimum(a, b)", "a b")          # tensor level, lowered to tile.minimum
_p("u_adds_refused", f"pl.tile.adds({_A}, 1)", loads={})
_p("i_div_partial", "pl.tile.div(ta, tb)", "a b",
   loads={"ta": "a [8, 64], valid_shape=[5, 37]", "tb": "b [8, 64], valid_shape=[5, 37]"})
# Tile-level scalar ops on an integer tile keep its dtype; the float scalar -2.75 becomes -2.
for _name, _op in (("i_adds_f", "adds"), ("i_muls_f", "muls"), ("i_maxs_f", "maximums"), ("i_mins_f", "minimums"),
                   ("i_divs_f", "divs")):
    _p(_name, f"pl.tile.{_op}({_A}, -2.75)", loads={})
_p("i_divs_0", f"pl.tile.divs({_A}, 0.5)", loads={})


@pl.jit
def i16_subs_f32(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        r = pl.tensor.subs(a, pl.const(2.75, pl.FP32))
        out = pl.assemble(out, r, [0, 0])
    return out


@pl.jit
def i_muls_tensor(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        r = pl.tensor.muls(a, -2.75)      # tensor level promotes: FP32 result
        out = pl.assemble(out, r, [0, 0])
    return out
