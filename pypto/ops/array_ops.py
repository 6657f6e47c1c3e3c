"""On-core scalar arrays (the reference's ``pl.Array`` / ``pl.array.*``): ``array.create``,
``array.get_element``, ``array.update_element``.

An array is a kernel-local list of ``extent`` integer (or BOOL) scalars on the scalar unit's stack
(:class:`pypto.ir.types.ArrayType`); it never crosses a kernel boundary (the parser refuses one
captured by a ``pl.at`` scope or passed to a call). ``update_element`` is functional in the IR (a new
version, so SSA and the passes treat it as a value) and in place at run time, as the device's
``local_array_set``: every version names one array, so a read of an older version after a write
sees the write, on the device as in both executors here. Elements start at 0 (the device's are
unspecified; zero keeps runs reproducible). An index outside ``[0, extent)`` is a located
``SimulationError``. (TaskId arrays, ``pl.array.create(n, pl.TASK_ID)``, are orchestration values:
:mod:`pypto.ops.task_ops`.)
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.types import ArrayType, ScalarType
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.rules import expect


def _elem_ok(dtype) -> bool:
    return dtype.is_int() or dtype.name == "BOOL"


def _create_infer(a: OpArgs, span: Span) -> ArrayType:
    n = a.extent
    expect(isinstance(n, int) and not isinstance(n, bool) and n > 0, "array.create",
           f"the extent must be a positive int literal, got {n!r}", span)
    expect(_elem_ok(a.dtype), "array.create", f"array elements are integers or BOOL, got {a.dtype!r}", span)
    return ArrayType(n, a.dtype)


def _array_of(a: OpArgs, op: str, span: Span) -> ArrayType:
    t = getattr(a.array, "type", None)
    expect(isinstance(t, ArrayType), op, "the first operand must be a pl.Array (made by pl.array.create)", span)
    it = getattr(a.index, "type", None)
    expect(isinstance(it, ScalarType) and it.dtype.is_int(), op, "the index must be an integer scalar", span)
    return t


def _get_infer(a: OpArgs, span: Span) -> ScalarType:
    return ScalarType(_array_of(a, "array.get_element", span).dtype)


def _update_infer(a: OpArgs, span: Span) -> ArrayType:
    t = _array_of(a, "array.update_element", span)
    vt = getattr(a.value, "type", None)
    # INDEX (the machine word of loop variables and addresses) goes into any integer array and any
    # integer into an INDEX array, as in the reference: ``counts[e] = counts[e] + 1`` (an INT32 plus
    # an int literal is INDEX) stores the value converted to the element type (truncated, as the
    # device's index_cast; pypto.ops.support.while_loops.IntArray)
    word = vt is not None and isinstance(vt, ScalarType) and t.dtype.name != "BOOL" and vt.dtype.is_int() \
        and "INDEX" in (vt.dtype.name, t.dtype.name)
    expect(vt == ScalarType(t.dtype) or word, "array.update_element",
           f"the value must be a {t.dtype.name} scalar (the array's element type), got "
           f"{getattr(vt, 'dtype', vt)!r}", span, f"pl.cast(v, {t.dtype!r})")
    return t


_create_src = lambda a: f"_pto.array_new({a.extent}, {a.dtype})"   # noqa: E731  (the one source of both executors)
_get_src = lambda a: f"_pto.array_get({a.array}, {a.index})"   # noqa: E731
_set_src = lambda a: f"_pto.array_set({a.array}, {a.index}, {a.value})"   # noqa: E731

register(OpDef(
    name="array.create",
    params=(Param("extent", "str"), Param("dtype", "dtype")),
    infer=_create_infer, ref=_create_src, sim=lambda a, dst: _create_src(a),
    doc="pl.array.create(n, dtype): an on-core array of n integer scalars (all 0)",
))

register(OpDef(
    name="array.get_element",
    params=(Param("array", "any"), Param("index", "scalar")),
    infer=_get_infer, ref=_get_src, sim=lambda a, dst: _get_src(a),
    doc="pl.array.get_element(arr, i) / arr[i]: one element",
))

register(OpDef(
    name="array.update_element",
    params=(Param("array", "any"), Param("index", "scalar"), Param("value", "scalar")),
    infer=_update_infer, ref=_set_src, sim=lambda a, dst: _set_src(a),
    doc="arr = pl.array.update_element(arr, i, v) / arr[i] = v: write one element (in place at run time)",
))
