"""Kernels for the tests of the math, compare, broadcast and layout ops (tests/ops/test_math.py,
test_compare.py, test_broadcast.py, test_layout.py), generated from two templates (CONTRIBUTING.md,
"Test kernels from templates"): ``t_*`` are tensor-level kernels (the whole tensor is one tile),
``p_*`` work at tile level on a PARTIAL tile (a [16, 64] load with ``valid_shape=[13, 37]``, the op,
a store of the valid region). Compile-time attributes (cmp_type, shapes, dtypes) are written out per
kernel. The two atomic-assemble kernels at the end are written by hand (an InOut output, a loop).
"""
import pypto.language as pl
from ops_templates import COL_V, PARTIAL, ROW_V
from ops_templates import tensor_level as _t
from ops_templates import tile_level as _p

# ---------------------------------------------------------------- unary math
for _op in ("log", "sqrt", "rsqrt", "recip", "relu"):
    _t(f"t_{_op}", f"pl.{_op}(a)")
    _p(f"p_{_op}", f"pl.{_op}(ta)")

# ---------------------------------------------------------------- maximum / minimum: tensors, scalars, a constant
for _op in ("maximum", "minimum"):
    _t(f"t_{_op}", f"pl.{_op}(a, b)", "a b")
    _p(f"p_{_op}", f"pl.{_op}(ta, tb)", "a b")
    for _sfx, _dt in (("s", "FP32"), ("s_i32", "INT32")):
        _t(f"t_{_op}{_sfx}", f"pl.{_op}(a, s)", f"a s:{_dt}")
        _p(f"p_{_op}{_sfx}", f"pl.{_op}(ta, s)", f"a s:{_dt}")
    _t(f"t_{_op}_const", f"pl.{_op}(a, 2.0)")

# ---------------------------------------------------------------- compare: cmp / cmps per cmp_type, sel / sels
for _k in range(6):
    _t(f"t_cmp{_k}", f"pl.cmp(a, b, cmp_type={_k})", "a b")
    _p(f"p_cmp{_k}", f"pl.cmp(ta, tb, cmp_type={_k})", "a b")
    for _sfx, _dt in (("", "FP32"), ("_i32", "INT32")):
        _t(f"t_cmps{_k}{_sfx}", f"pl.cmps(a, s, cmp_type={_k})", f"a s:{_dt}")
        _p(f"p_cmps{_k}{_sfx}", f"pl.cmps(ta, s, cmp_type={_k})", f"a s:{_dt}")
_t("t_sel", "pl.sel(pl.cmp(a, b, cmp_type=2), a, b)", "a b")
_p("p_sel", "pl.sel(pl.cmp(ta, tb, cmp_type=4), ta, tb)", "a b")
for _sfx, _dt in (("", "FP32"), ("_i32", "INT32")):
    _t(f"t_sels{_sfx}", "pl.sels(pl.cmps(a, s, cmp_type=3), a, s)", f"a s:{_dt}")
    _p(f"p_sels{_sfx}", "pl.sels(pl.cmps(ta, s, cmp_type=5), ta, s)", f"a s:{_dt}")

# ---------------------------------------------------------------- broadcast: row / col expand, expands, full
for _kind, _v in (("row", ROW_V), ("col", COL_V)):
    for _sfx in ("", "_add", "_sub", "_mul", "_div", "_max", "_min", "_expdif"):
        _t(f"t_{_kind}_expand{_sfx}", f"pl.{_kind}_expand{_sfx}(a, w)", "a w")
        _p(f"p_{_kind}_expand{_sfx}", f"pl.{_kind}_expand{_sfx}(ta, tv)", "a w",
           loads={"ta": f"a {PARTIAL}", "tv": f"w {_v}"})
for _sfx, _dt in (("", "FP32"), ("_i32", "INT32")):
    _t(f"t_expands{_sfx}", "pl.expands(a, s)", f"a s:{_dt}")
    _p(f"p_expands{_sfx}", "pl.expands(ta, s)", f"a s:{_dt}")
for _sfx, _dt, _value in (("fp32", "FP32", 0.1), ("fp16", "FP16", 0.1), ("bf16", "BF16", 0.1), ("i32", "INT32", 7)):
    _t(f"t_full_{_sfx}", f"pl.full([16, 64], pl.{_dt}, {_value})", "")
    _p(f"p_full_{_sfx}", f"pl.tile.full([16, 64], pl.{_dt}, {_value})", "")

# ---------------------------------------------------------------- layout
_t("t_reshape", "pl.reshape(a, [32, 32])")
_p("p_reshape", "pl.reshape(ta, [64, 16])", loads={"ta": "a [16, 64]"})
_p("p_reshape_partial", "pl.reshape(ta, [64, 16])")
_t("t_transpose", "pl.transpose(a, 0, 1)")
_p("p_transpose", "pl.transpose(ta, -2, -1)")
_t("t_concat", "pl.concat(a, b)", "a b")
_p("p_concat", "pl.concat(ta, tb)", "a b", loads={"ta": "a [16, 32]", "tb": "b [16, 32], valid_shape=[13, 20]"})
# tensor.slice of a kernel parameter: lowered to a tile.load of the region
_t("t_slice", "pl.slice(a, [8, 32], [4, 16])")
# tensor.slice of a value computed in the kernel: lowered to a tile.slice
_t("t_slice_onchip", "pl.slice(b, [8, 32], [4, 16])", pre="b = pl.add(a, a)")
# tensor.slice in orchestration: a view of the global tensor passed to the kernel
_t("t_slice_orch", "pl.mul(s, 2.0)", orch="s = pl.slice(a, [8, 32], [4, 16])")
# a [8, 32] sub-tile at [4, 16] of a [16, 64] tile valid [13, 37]: valid [8, 21]
_p("p_slice", "pl.slice(ta, [8, 32], [4, 16])")
_p("p_slice_valid", "pl.slice(ta, [8, 32], [8, 32], valid_shape=[5, 7])", loads={"ta": "a [16, 64]"})
_t("t_read", "pl.add(a, s)", pre="s = pl.read(a, [3, 5])")
_p("p_read", "pl.mul(ta, s)", pre="s = pl.read(ta, [12, 36])")
_t("t_read_orch", "pl.add(a, s)", orch="s = pl.read(a, [1, 2])")
_p("p_assemble", "pl.assemble(ta, tb, [4, 16])", "a b", loads={"ta": "a [16, 64]", "tb": "b [8, 32]"})


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
