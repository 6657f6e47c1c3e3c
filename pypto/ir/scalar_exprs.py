"""The reference's scalar expression constructors (``ir.Add(lhs, rhs, dtype, span)``, ``ir.Lt``,
``ir.Neg`` ...), as functions building our :class:`~pypto.ir.nodes.BinOp` / ``UnaryOp``.

They let code written for the reference's IR builder (``pypto.ir.IRBuilder``) build the same scalar
arithmetic here. Differences: they are functions, not node classes (``isinstance(e, ir.Add)`` does
not work: test ``e.op == "add"``); a comparison or logical operator (``Eq`` ... ``Ge``, ``And``,
``Or``) is a ``BOOL`` scalar whatever ``dtype`` says (the reference types it with ``dtype``; our
conditions are ``BOOL``); ``Pow`` and the logical ``Xor`` have no scalar form here and are not
provided. Python ints / floats / bools are accepted as operands (``INDEX`` / ``FP32`` / ``BOOL``
literals).
"""
from __future__ import annotations

from typing import Any, Optional

from pypto.errors import Span
from pypto.ir.nodes import BinOp, ConstBool, ConstFloat, ConstInt, Expr, UnaryOp
from pypto.ir.types import ScalarType
from pypto.language.dtypes import BOOL, FP32, INDEX, DataType

_BOOL_RESULT = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "and", "or"})


def _operand(v: Any, span: Span) -> Expr:
    if isinstance(v, Expr):
        return v
    if isinstance(v, bool):
        return ConstBool(v, span)
    if isinstance(v, int):
        return ConstInt(v, INDEX, span)
    if isinstance(v, float):
        return ConstFloat(v, FP32, span)
    raise TypeError(f"cannot use {type(v).__name__} {v!r} as a scalar operand: expected an IR expression, an int, "
                    "a float or a bool")


def _binary(op: str, name: str):
    def make(lhs: Any, rhs: Any, dtype: DataType, span: Optional[Span] = None) -> BinOp:
        span = span or Span.unknown()
        t = ScalarType(BOOL if op in _BOOL_RESULT else dtype)
        return BinOp(op, _operand(lhs, span), _operand(rhs, span), t, span)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = f"``ir.{name}(lhs, rhs, dtype, span)``: the scalar ``{op}`` of ``lhs`` and ``rhs`` (a BinOp)."
    return make


def _unary(op: str, name: str):
    def make(operand: Any, dtype: DataType, span: Optional[Span] = None) -> UnaryOp:
        span = span or Span.unknown()
        return UnaryOp(op, _operand(operand, span), ScalarType(BOOL if op == "not" else dtype), span)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = f"``ir.{name}(operand, dtype, span)``: the scalar ``{op}`` of ``operand`` (a UnaryOp)."
    return make


Add, Sub, Mul = _binary("add", "Add"), _binary("sub", "Sub"), _binary("mul", "Mul")
FloorDiv, FloorMod = _binary("floordiv", "FloorDiv"), _binary("mod", "FloorMod")
FloatDiv = _binary("truediv", "FloatDiv")
Min, Max = _binary("min", "Min"), _binary("max", "Max")
Eq, Ne, Lt, Le, Gt, Ge = (_binary(o, n) for o, n in (("eq", "Eq"), ("ne", "Ne"), ("lt", "Lt"), ("le", "Le"),
                                                       ("gt", "Gt"), ("ge", "Ge")))
And, Or = _binary("and", "And"), _binary("or", "Or")
BitAnd, BitOr, BitXor = _binary("bitand", "BitAnd"), _binary("bitor", "BitOr"), _binary("bitxor", "BitXor")
BitShiftLeft, BitShiftRight = _binary("lshift", "BitShiftLeft"), _binary("rshift", "BitShiftRight")
Neg, Not, Abs = _unary("neg", "Neg"), _unary("not", "Not"), _unary("abs", "Abs")

__all__ = ["Add", "Sub", "Mul", "FloorDiv", "FloorMod", "FloatDiv", "Min", "Max", "Eq", "Ne", "Lt", "Le", "Gt", "Ge",
           "And", "Or", "BitAnd", "BitOr", "BitXor", "BitShiftLeft", "BitShiftRight", "Neg", "Not", "Abs"]
