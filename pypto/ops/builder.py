"""``ops.build(name, span, **kwargs)``: an op call built by the compiler, bound by parameter name.

Passes and lowerings that create calls use this instead of ``Call(name, (positional args), type,
span)``: the arguments are bound by their schema names (a schema that gains a parameter, or reorders
its attributes, no longer silently shifts every positional call), omitted ones take their schema
defaults, plain Python values are converted to IR (``offsets=[0, 0]`` -> a ``MakeTuple`` of
``ConstInt``), and the result type comes from the op's type rule, so a hand-written type cannot
disagree with what the parser would infer. A wrong name or a missing argument is a bug in the
compiler, raised as :class:`~pypto.errors.InternalError` naming the op; a type rule that rejects
the operands raises its own located error as it would for user code.
"""
from __future__ import annotations

from typing import Any

from pypto.errors import InternalError, Span
from pypto.ir.nodes import Call, ConstFloat, ConstInt, Expr, MakeTuple
from pypto.ops.registry import VALUE_KINDS, get_op


def _ints(v: Any, span: Span) -> Any:
    if v is None or isinstance(v, MakeTuple):
        return v
    return MakeTuple(tuple(x if isinstance(x, Expr) else ConstInt(int(x), span=span) for x in v), span)


def _value(v: Any, span: Span) -> Any:
    if isinstance(v, bool) or v is None or isinstance(v, Expr):
        return v
    if isinstance(v, int):
        return ConstInt(v, span=span)
    if isinstance(v, float):
        return ConstFloat(v, span=span)
    return v


def bind(name: str, span: Span | None = None, **kwargs: Any) -> tuple:
    """The arguments of a call of op ``name`` in schema order (see the module docstring)."""
    span = span or Span.unknown()
    op = get_op(name, span)
    by_alias = {a: p.name for p in op.params for a in p.aliases}
    given = {by_alias.get(k, k): v for k, v in kwargs.items()}
    unknown = set(given) - {p.name for p in op.params}
    if unknown:
        raise InternalError(f"ops.build({name!r}): no parameter {sorted(unknown)}; the schema has "
                            f"{[p.name for p in op.params]}", span)
    values = []
    for p in op.params:
        if p.name in given:
            v = given[p.name]
        elif p.required:
            raise InternalError(f"ops.build({name!r}): missing argument '{p.name}'", span)
        else:
            v = p.default
        if p.kind == "ints":
            v = _ints(v, span)
        elif p.kind in VALUE_KINDS:
            v = _value(v, span)
        values.append(v)
    return tuple(values)


def build(name: str, span: Span | None = None, **kwargs: Any) -> Call:
    """A ``Call`` of op ``name`` with arguments bound by name and its type from the op's type rule."""
    span = span or Span.unknown()
    values = bind(name, span, **kwargs)
    return Call(name, values, get_op(name, span).infer_type(values, span), span)
