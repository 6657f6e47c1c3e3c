"""Broadcast ops at tensor and tile level (2-D operands).

* ``row_expand(target, vec[M,1])`` / ``col_expand(target, vec[1,N])``: ``vec`` broadcast to the
  target's shape (the target provides only the shape, dtype check and valid shape).
* ``row_expand_<op>(t, v[M,1])``: ``t[i,:] <op> v[i,0]``; ``col_expand_<op>(t, v[1,N])``:
  ``t[:,j] <op> v[0,j]``, for op in add sub mul div max min expdif.
* ``expands(target, scalar)``: the scalar (converted to the target's dtype) in every element.

``t`` and ``v`` must have the same dtype (the vector unit has no mixed-dtype broadcast). div and
expdif are float only. Numerics: add/sub/mul/div/max/min round once (FP16/BF16 computed in FP32,
as :mod:`pypto.ops.elementwise`). ``expdif`` is defined as the two vector instructions it is on
the device: ``d = t - v`` rounded to the dtype, then ``exp(d)`` computed in FP32 and rounded once
(``_pto.expdif``): in FP16/BF16 that is two roundings, not a fused ``exp(t - v)``.
The result has the shape and valid shape of ``t`` / ``target``.
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.rules import VEC_SPACES, arith_dtype, expect, with_dtype
from pypto.ops.traits import InPlaceSafe, Lockstep
from pypto.ir.types import describe

_FNS = {"add": "torch.add", "sub": "torch.sub", "mul": "torch.mul", "div": "torch.div",
        "max": "torch.maximum", "min": "torch.minimum", "expdif": "_pto.expdif"}
_FLOAT_ONLY = {"div", "expdif"}


def packed_cols(dtype) -> int:
    """Columns of a *packed* row vector: one 32-byte block per row (8 FP32, 16 FP16, ...)."""
    return 32 // dtype.itemsize if getattr(dtype, "itemsize", 0) else 0


def _vec_rule(op: str, axis: str, float_only: bool, packed: bool = False):
    """``axis`` "row": vec is [M,1]; "col": vec is [1,N]. ``packed`` (tile row_expand_<op>): the
    row vector may also be the device's packed carrier [M, 32 bytes / element size], whose whole
    32-byte block repeats across the target's columns (``out[i, j] = t[i, j] op v[i, j % C]``)."""
    def infer(a: OpArgs, span: Span):
        t, v = a.target.type, a.vec.type
        expect(len(t.shape) == 2 and len(v.shape) == 2, op,
               f"needs 2-D operands, got {describe(t)} and {describe(v)}", span)
        m, n = t.shape
        want = (m, 1) if axis == "row" else (1, n)
        if packed and t.dtype == v.dtype and tuple(v.shape) == (m, packed_cols(v.dtype)) and v.shape[1] > 1:
            want = tuple(v.shape)
        expect(tuple(v.shape) == want, op,
               f"the {axis} vector must have shape {list(want)} for a target of shape {list(t.shape)}, "
               f"got {list(v.shape)}", span)
        expect(t.dtype == v.dtype, op, f"operand dtypes differ: {t.dtype.name} vs {v.dtype.name}", span,
               "cast one operand with pl.cast(x, ...)")
        if not op.endswith("_expand"):   # (the plain broadcast is a copy: any dtype)
            arith_dtype(op, t.dtype, span)
        if float_only:
            expect(t.dtype.is_float(), op, f"needs float operands, got {t.dtype.name}", span,
                   "cast the operands with pl.cast(x, pl.FP32)")
        return with_dtype(t, t.dtype)
    return infer


def _vec_src(a: OpArgs, packed: bool) -> str:
    """The row vector's source; a packed carrier is tiled across the target's columns."""
    if packed and a.vec.type is not None and a.vec.type.shape[-1] > 1:
        return f"_pto.packed_rows({a.vec}, {a.target}.shape[-1])"
    return str(a.vec)


def _register(name: str, level: str, params, infer, ref, sim, kinds, doc: str) -> None:
    tile = level == "tile"
    register(OpDef(
        name=f"{level}.{name}", params=params, infer=infer, ref=ref,
        sim=sim if tile else None, dsl=name, operand_kinds=kinds,

        lowers_to=None if tile else f"tile.{name}",
        traits=(InPlaceSafe(), Lockstep.ROWS, VEC_SPACES) if tile else (InPlaceSafe(),), doc=doc,
    ))


for _level in ("tensor", "tile"):
    _vp = (Param("target", _level, aliases=("tile", "tensor", "lhs")), Param("vec", _level, aliases=("row_vec", "col_vec", "rhs")))
    for _axis in ("row", "col"):
        _name = f"{_axis}_expand"
        _register(_name, _level, _vp, _vec_rule(f"{_level}.{_name}", _axis, False),
                  lambda a: f"{a.vec}.expand({a.target}.shape).clone()",
                  lambda a, dst: f"{dst}.copy_({a.vec}.expand({dst}.shape))",
                  (_level, _level), f"broadcast a {_axis} vector to the target's shape")
        for _op, _fn in _FNS.items():
            _name = f"{_axis}_expand_{_op}"
            _packed = _axis == "row" and _level == "tile"
            # tile level: the reference's optional ``tmp`` (the device's scratch for the
            # broadcast; the simulators need none: an operand never read)
            _register(_name, _level, _vp + ((Param("tmp", "tile", None),) if _level == "tile" else ()),
                      _vec_rule(f"{_level}.{_name}", _axis, _op in _FLOAT_ONLY, _packed),
                      lambda a, f=_fn, p=_packed: f"{f}({a.target}, {_vec_src(a, p)})",
                      lambda a, dst, f=_fn, p=_packed: f"{f}({a.target}, {_vec_src(a, p)}, out={dst})",
                      (_level, _level), f"t {_op} a broadcast {_axis} vector")

    def _expands_infer(a: OpArgs, span: Span):
        return with_dtype(a.target.type, a.target.type.dtype)

    _register("expands", _level, (Param("target", _level), Param("scalar", "scalar")), _expands_infer,
              lambda a: f"_pto.fill(torch.empty_like({a.target}), {a.scalar})",
              lambda a, dst: f"_pto.fill({dst}, {a.scalar})",
              (_level, "scalar"), "a scalar broadcast to the target's shape")
