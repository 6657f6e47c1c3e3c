"""Integer bitwise ops at tensor and tile level: ``and_ or_ xor`` (array rhs), ``ands ors xors``
(scalar rhs), ``not_``, ``shl shr`` (array shift amounts), ``shls shrs`` (scalar amounts).

``pl.and_(x, y)`` dispatches on the right operand like ``pl.add``: a tile/tensor gives ``and_``,
a scalar gives ``ands`` (the reference's unified ``pl.and_`` does the same); the explicit forms
are ``pl.tile.and_`` / ``pl.tile.ands`` / ``pl.tensor.ands`` ...

Op names carry the Python spelling (``tile.and_``, ``tile.or_``, ``tile.not_``): the reference's
IR names ``tile.and`` / ``tile.or`` / ``tile.not`` are Python keywords, and every printed program
must parse back (``pl.tile.and_(...)``).

Type rules (the reference's): operands of any integer dtype (INT8..INT64, UINT8..UINT64; not BOOL,
not float: cast first). ``and_ or_ xor``: equal shapes, result dtype = the promotion of the two
(torch's lattice, as for ``pl.add``). The scalar forms and the shifts keep the dtype of the left
operand; their scalar must be an integer (a float is refused). A negative *constant* shift amount
is refused when the op is built; see :mod:`pypto.numerics.intops` for run-time amounts (negative:
an error; >= the bit width: the mathematical limit) and for the arithmetic (signed) / logical
(unsigned) right shift.

``tile.xor`` / ``tile.xors`` take the hardware's scratch tile ``tmp`` (as in the reference); it may
be omitted here (the simulator needs no scratch) and its contents after the op are unspecified
(the simulator leaves it untouched). The tensor forms take none (lowering needs none either).
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.types import describe
from pypto.ir.pysource import py_literal
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.traits import Elementwise, InPlaceSafe, Lockstep
from pypto.ops.rules import VEC_SPACES, expect, promote, same_shape, scalar_dtype, with_dtype
from pypto.ir.nodes import ConstInt

_HINT = "bitwise ops take integer operands; cast with pl.cast(x, pl.INT32)"


def _int_operand(op: str, what: str, t, span: Span) -> None:
    expect(t.dtype.is_int(), op, f"needs an integer {what}, got {t.dtype.name} ({describe(t)})", span, _HINT)


def _int_scalar(op: str, a: OpArgs, span: Span) -> None:
    st = scalar_dtype(a.rhs.type)
    expect(st.is_int(), op, f"the scalar operand must be an integer, got {st.name}", span,
           "pass an int (bitwise ops and shift amounts are integers)")


def _no_tmp_on_tensor(op: str, a: OpArgs, span: Span) -> None:
    expect(getattr(a, "tmp", None) is None, op, "tmp is not supported for Tensor operands", span,
           "the tensor form needs no scratch tile; pass tmp only to pl.tile.xor / pl.tile.xors")


def _array_rule(op: str, level: str):
    def infer(a: OpArgs, span: Span):
        lhs, rhs = a.lhs.type, a.rhs.type
        _int_operand(op, "left operand", lhs, span)
        _int_operand(op, "right operand", rhs, span)
        same_shape(op, lhs, rhs, span)
        if level == "tensor":
            _no_tmp_on_tensor(op, a, span)
        return with_dtype(lhs, promote(lhs.dtype, rhs.dtype))
    return infer


def _scalar_rule(op: str, level: str, shift: bool):
    def infer(a: OpArgs, span: Span):
        _int_operand(op, "operand", a.lhs.type, span)
        _int_scalar(op, a, span)
        if shift and isinstance(a.rhs, ConstInt):
            expect(a.rhs.value >= 0, op, f"the shift amount must be >= 0, got {a.rhs.value}", span,
                   "negative shifts are undefined on the device; use the other shift direction")
        if level == "tensor":
            _no_tmp_on_tensor(op, a, span)
        return with_dtype(a.lhs.type, a.lhs.type.dtype)
    return infer


def _shift_rule(op: str):
    def infer(a: OpArgs, span: Span):
        lhs, rhs = a.lhs.type, a.rhs.type
        _int_operand(op, "operand", lhs, span)
        _int_operand(op, "shift-amount operand", rhs, span)
        same_shape(op, lhs, rhs, span)
        return with_dtype(lhs, lhs.dtype)
    return infer


def _not_rule(op: str):
    def infer(a: OpArgs, span: Span):
        _int_operand(op, "operand", a.x.type, span)
        return with_dtype(a.x.type, a.x.type.dtype)
    return infer


def _dtype_src(a: OpArgs, rule) -> str:
    return py_literal(rule(a, None).dtype)


def _register(name: str, level: str, params, infer, ref, sim, kinds, dsl: str, doc: str,
              inplace_safe: bool = True) -> None:
    tile = level == "tile"
    register(OpDef(
        name=f"{level}.{name}", params=params, infer=infer, ref=ref,
        sim=sim if tile else None, dsl=dsl, operand_kinds=kinds,
        lowers_to=None if tile else f"tile.{name}",
        traits=((Elementwise(), Lockstep.ROWS, VEC_SPACES) if tile else (Elementwise(),))
        + ((InPlaceSafe(),) if inplace_safe else ()), doc=doc,
    ))


def _define_logic(base: str, kind: str, scratch: bool) -> None:
    """``<base>`` (array rhs, e.g. ``and_``) and ``<kind>s`` (scalar rhs, e.g. ``ands``)."""
    scalar_name = f"{kind}s"
    for level in ("tensor", "tile"):
        tmp = (Param("tmp", level, None),) if scratch else ()
        rule = _array_rule(f"{level}.{base}", level)
        _register(base, level, (Param("lhs", level), Param("rhs", level)) + tmp, rule,
                  lambda a, k=kind, r=rule: f"_pto.bitwise({k!r}, {a.lhs}, {a.rhs}, {_dtype_src(a, r)})",
                  lambda a, dst, k=kind, r=rule: f"_pto.bitwise({k!r}, {a.lhs}, {a.rhs}, {_dtype_src(a, r)}, out={dst})",
                  (level, level), base, f"elementwise bitwise {kind} (array rhs)", inplace_safe=not scratch)
        srule = _scalar_rule(f"{level}.{scalar_name}", level, False)
        # the reference marks tands/tors/txors as not in-place safe (a device constraint we keep)
        _register(scalar_name, level, (Param("lhs", level), Param("rhs", "scalar")) + tmp, srule,
                  lambda a, k=kind: f"_pto.bitwise({k!r}, {a.lhs}, {a.rhs}, {a.lhs}.dtype)",
                  lambda a, dst, k=kind: f"_pto.bitwise({k!r}, {a.lhs}, {a.rhs}, {a.lhs}.dtype, out={dst})",
                  (level, "scalar"), base, f"elementwise bitwise {kind} with an integer scalar",
                  inplace_safe=False)


def _define_shift(kind: str) -> None:
    for level in ("tensor", "tile"):
        _register(kind, level, (Param("lhs", level), Param("rhs", level)), _shift_rule(f"{level}.{kind}"),
                  lambda a, k=kind: f"_pto.shift({k!r}, {a.lhs}, {a.rhs})",
                  lambda a, dst, k=kind: f"_pto.shift({k!r}, {a.lhs}, {a.rhs}, out={dst})",
                  (level, level), kind, f"elementwise {kind} by an array of amounts")
        _register(f"{kind}s", level, (Param("lhs", level), Param("rhs", "scalar")),
                  _scalar_rule(f"{level}.{kind}s", level, True),
                  lambda a, k=kind: f"_pto.shift({k!r}, {a.lhs}, {a.rhs})",
                  lambda a, dst, k=kind: f"_pto.shift({k!r}, {a.lhs}, {a.rhs}, out={dst})",
                  (level, "scalar"), kind, f"elementwise {kind} by a scalar amount")


_define_logic("and_", "and", scratch=False)
_define_logic("or_", "or", scratch=False)
_define_logic("xor", "xor", scratch=True)
_define_shift("shl")
_define_shift("shr")
for _level in ("tensor", "tile"):
    _register("not_", _level, (Param("x", _level),), _not_rule(f"{_level}.not_"),
              lambda a: f"_pto.bitwise_not({a.x})",
              lambda a, dst: f"_pto.bitwise_not({a.x}, out={dst})",
              (_level,), "not_", "elementwise bitwise not")
