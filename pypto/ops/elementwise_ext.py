"""Further elementwise ops of the reference's catalogue (helpers: :mod:`pypto.ops.support.elementwise`).

* ``fmod(lhs, rhs)`` / ``fmods(lhs, scalar)`` (tensor and tile): ``a - trunc(a / b) * b`` as the
  device's four instructions, each rounded (not C's exact fmod). Float operands.
* ``rem(lhs, rhs, tmp=None)`` / ``rems(lhs, scalar, tmp=None)`` (tile only, as in the reference):
  the remainder with the sign of the divisor (Python's ``%``); integers exact (a zero divisor is a
  run-time error), floats ``a - floor(a / b) * b`` instruction by instruction. ``tmp`` is the
  device's scratch tile, optional here, contents afterwards unspecified (left untouched).
* ``sin`` / ``cos`` (tensor and tile): float; FP16/BF16 computed in FP32 and rounded once.
* ``prelu(x, slope, tmp=None)`` (tile): ``x > 0 ? x : x * slope`` with a slope tile of ``x``'s
  shape and dtype (FP16/FP32, rank 2, as the reference); ``lrelu(x, slope)`` (tile): the same with a
  scalar slope (float dtypes).
* ``addc(a, b, c)`` / ``subc`` (tile): ``(a + b) + c`` / ``(a - b) - c``, two roundings;
  ``addsc(a, s, c)`` / ``subsc``: the same with a scalar ``s``. The result dtype is the promotion
  of the three.
* ``part_add part_mul part_max part_min(src0, src1)`` (tensor and tile): the op where both operands
  are valid, a copy of the one valid operand where only one is; the result's valid shape is
  ``src0``'s (the reference's). On tensors (always fully valid) the plain op.

``pl.fmod(t, 2.0)`` dispatches to ``fmods`` as ``pl.add`` does to ``adds``; ``pl.fmods`` (and every
other scalar-form name: ``pl.maximums``, ``pl.ands`` ...) is accepted as a spelling of the
dispatching name (:mod:`pypto.language`).
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.types import describe
from pypto.language.dtypes import FP16, FP32
from pypto.ir.pysource import py_literal
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.traits import Elementwise, InPlaceSafe, Lockstep
from pypto.ops.rules import VEC_SPACES, expect, promote, promote_scalar, same_shape, scalar_dtype, with_dtype

_FLOAT_HINT = "cast the operand with pl.cast(x, pl.FP32)"


def _py_dtype(dtype) -> str:
    return py_literal(dtype)


def _reg(name: str, level: str, params, infer, ref, sim, kinds, dsl: str, doc: str,
         inplace_safe: bool = True, tensor_too: bool = True) -> None:
    tile = level == "tile"
    register(OpDef(
        name=f"{level}.{name}", params=params, infer=infer, ref=ref,
        sim=sim if tile else None, dsl=dsl, operand_kinds=kinds,
        lowers_to=None if tile else f"tile.{name}",
        traits=((Elementwise(), Lockstep.ROWS, VEC_SPACES) if tile else (Elementwise(),))
        + ((InPlaceSafe(),) if inplace_safe else ()), doc=doc,
    ))


def _float(op: str, t, span: Span, what: str = "operand") -> None:
    expect(t.dtype.is_float(), op, f"needs a float {what}, got {t.dtype.name}", span, _FLOAT_HINT)


def _valid_src(x) -> str:
    if getattr(x, "valid", None) is not None:   # a run-time valid shape: its scalar source (codegen.common)
        return x.valid
    v = getattr(x.type, "valid_shape", None)
    return "None" if v is None else repr(list(v))


# ------------------------------------------------------------------ fmod / fmods
def _fmod_rule(op: str, scalar: bool):
    def infer(a: OpArgs, span: Span):
        lhs = a.lhs.type
        if scalar:
            _float(op, lhs, span)
            return with_dtype(lhs, lhs.dtype)
        rhs = a.rhs.type
        same_shape(op, lhs, rhs, span)
        dtype = promote(lhs.dtype, rhs.dtype)
        expect(dtype.is_float(), op, f"needs float operands, got {lhs.dtype.name} and {rhs.dtype.name}", span,
               _FLOAT_HINT)
        return with_dtype(lhs, dtype)
    return infer


for _level in ("tensor", "tile"):
    for _sfx, _rk in (("", _level), ("s", "scalar")):
        _rule = _fmod_rule(f"{_level}.fmod{_sfx}", bool(_sfx))
        # not in-place safe: the device writes a / b into dst before it reads a again (reference)
        _reg(f"fmod{_sfx}", _level, (Param("lhs", _level), Param("rhs", _rk)), _rule,
             lambda a, r=_rule: f"_pto.fmod({a.lhs}, {a.rhs}, {_py_dtype(r(a, None).dtype)})",
             lambda a, dst, r=_rule: f"_pto.fmod({a.lhs}, {a.rhs}, {_py_dtype(r(a, None).dtype)}, out={dst})",
             (_level, _rk), "fmod", f"a - trunc(a / b) * b ({'scalar' if _sfx else 'array'} b), each step rounded",
             inplace_safe=False)


# ------------------------------------------------------------------ rem / rems (tile only)
def _rem_rule(op: str, scalar: bool):
    def infer(a: OpArgs, span: Span):
        lhs = a.lhs.type
        if scalar:
            sd = scalar_dtype(a.rhs.type)
            expect(lhs.dtype.is_float() or lhs.dtype.is_int(), op, f"needs a numeric operand, got {lhs.dtype.name}",
                   span)
            expect(lhs.dtype.is_float() or sd.is_int(), op,
                   f"an integer tile takes an integer divisor, got a {sd.name} scalar", span,
                   "cast the tile to a float dtype for a float divisor")
            return with_dtype(lhs, lhs.dtype)
        rhs = a.rhs.type
        same_shape(op, lhs, rhs, span)
        dtype = promote(lhs.dtype, rhs.dtype)
        expect(dtype.is_float() or dtype.is_int(), op, f"needs numeric operands, got {dtype.name}", span)
        return with_dtype(lhs, dtype)
    return infer


for _sfx, _rk in (("", "tile"), ("s", "scalar")):
    _rule = _rem_rule(f"tile.rem{_sfx}", bool(_sfx))
    _reg(f"rem{_sfx}", "tile", (Param("lhs", "tile"), Param("rhs", _rk), Param("tmp", "tile", None)), _rule,
         lambda a, r=_rule: f"_pto.rem({a.lhs}, {a.rhs}, {_py_dtype(r(a, None).dtype)}, {_valid_src(a.lhs)})",
         lambda a, dst, r=_rule: (f"_pto.rem({a.lhs}, {a.rhs}, {_py_dtype(r(a, None).dtype)}, {_valid_src(a.lhs)}, "
                                  f"out={dst})"),
         ("tile", _rk), "rem", f"remainder with the divisor's sign ({'scalar' if _sfx else 'array'} divisor)",
         inplace_safe=False)


# ------------------------------------------------------------------ sin / cos
def _trig_rule(op: str):
    def infer(a: OpArgs, span: Span):
        _float(op, a.x.type, span)
        return with_dtype(a.x.type, a.x.type.dtype)
    return infer


for _level in ("tensor", "tile"):
    for _fn in ("sin", "cos"):
        _reg(_fn, _level, (Param("x", _level),), _trig_rule(f"{_level}.{_fn}"),
             lambda a, f=_fn: f"_pto.unary_f32({f!r}, {a.x})",
             lambda a, dst, f=_fn: f"_pto.unary_f32({f!r}, {a.x}, out={dst})",
             (_level,), _fn, f"elementwise {_fn} (FP16/BF16 computed in FP32, rounded once)")


# ------------------------------------------------------------------ prelu / lrelu (tile only)
def _prelu_rule(a: OpArgs, span: Span):
    op = "tile.prelu"
    x, s = a.x.type, a.slope.type
    expect(x.dtype in (FP16, FP32), op, f"needs an FP16 or FP32 operand, got {x.dtype.name}", span, _FLOAT_HINT)
    expect(s.dtype == x.dtype, op, f"slope dtype {s.dtype.name} differs from the operand's {x.dtype.name}", span)
    expect(len(x.shape) == 2, op, f"needs a rank-2 tile, got {describe(x)}", span)
    expect(tuple(s.shape) == tuple(x.shape), op, f"slope shape {list(s.shape)} differs from the operand's "
           f"{list(x.shape)}", span)
    return with_dtype(x, x.dtype)


_reg("prelu", "tile", (Param("x", "tile"), Param("slope", "tile"), Param("tmp", "tile", None)), _prelu_rule,
     lambda a: f"_pto.prelu({a.x}, {a.slope})", lambda a, dst: f"_pto.prelu({a.x}, {a.slope}, out={dst})",
     ("tile", "tile"), "prelu", "x > 0 ? x : x * slope (slope tile)", inplace_safe=False)


def _lrelu_rule(a: OpArgs, span: Span):
    _float("tile.lrelu", a.x.type, span)
    return with_dtype(a.x.type, a.x.type.dtype)


_reg("lrelu", "tile", (Param("x", "tile"), Param("slope", "scalar")), _lrelu_rule,
     lambda a: f"_pto.lrelu({a.x}, {a.slope})", lambda a, dst: f"_pto.lrelu({a.x}, {a.slope}, out={dst})",
     ("tile", "scalar"), "lrelu", "x > 0 ? x : x * slope (scalar slope)")


# ------------------------------------------------------------------ addc / subc / addsc / subsc (tile)
def _c3_rule(op: str, scalar: bool):
    def infer(a: OpArgs, span: Span):
        x, c = a.lhs.type, a.rhs2.type
        same_shape(op, x, c, span)
        if scalar:
            dtype = promote(promote_scalar(x.dtype, scalar_dtype(a.rhs.type)), c.dtype)
        else:
            same_shape(op, x, a.rhs.type, span)
            dtype = promote(promote(x.dtype, a.rhs.type.dtype), c.dtype)
        expect(not dtype.is_bool(), op, "needs numeric operands, got BOOL", span)
        return with_dtype(x, dtype)
    return infer


for _kind in ("add", "sub"):
    for _sfx, _rk in (("c", "tile"), ("sc", "scalar")):
        _name = f"{_kind}{_sfx}"
        _rule = _c3_rule(f"tile.{_name}", _sfx == "sc")
        _reg(_name, "tile", (Param("lhs", "tile"), Param("rhs", _rk), Param("rhs2", "tile")), _rule,
             lambda a, k=_kind, r=_rule: f"_pto.add3({k!r}, {a.lhs}, {a.rhs}, {a.rhs2}, {_py_dtype(r(a, None).dtype)})",
             lambda a, dst, k=_kind, r=_rule: (f"_pto.add3({k!r}, {a.lhs}, {a.rhs}, {a.rhs2}, "
                                               f"{_py_dtype(r(a, None).dtype)}, out={dst})"),
             ("tile", _rk, "tile"), _name, f"(a {'+' if _kind == 'add' else '-'} b) "
             f"{'+' if _kind == 'add' else '-'} c, two roundings")


# ------------------------------------------------------------------ part_add / part_mul / part_max / part_min
def _part_rule(op: str):
    def infer(a: OpArgs, span: Span):
        x, y = a.lhs.type, a.rhs.type
        same_shape(op, x, y, span)
        return with_dtype(x, promote(x.dtype, y.dtype))
    return infer


for _level in ("tensor", "tile"):
    for _kind in ("add", "mul", "max", "min"):
        _rule = _part_rule(f"{_level}.part_{_kind}")
        _reg(f"part_{_kind}", _level, (Param("lhs", _level), Param("rhs", _level)), _rule,
             lambda a, k=_kind, r=_rule: (f"_pto.part({k!r}, {a.lhs}, {a.rhs}, {_valid_src(a.lhs)}, "
                                          f"{_valid_src(a.rhs)}, {_py_dtype(r(a, None).dtype)})"),
             lambda a, dst, k=_kind, r=_rule: (f"_pto.part({k!r}, {a.lhs}, {a.rhs}, {_valid_src(a.lhs)}, "
                                               f"{_valid_src(a.rhs)}, {_py_dtype(r(a, None).dtype)}, out={dst})"),
             (_level, _level), f"part_{_kind}",
             f"{_kind} where both are valid, the valid operand where only one is")
