"""Parsing of on-core scalar arrays (``pl.Array``): ``pl.array.create(n, dtype)``, ``arr[i]``,
``arr[i] = v``, ``pl.array.get_element`` / ``update_element`` and ``pl.Array[n, dtype]`` annotations.

The ops are :mod:`pypto.ops.array_ops`; TaskId arrays (``pl.array.create(n, pl.TASK_ID)``) stay
with the task surfaces of the function parser. The array operand has no DSL kind of its own, so the
calls are built here directly (the type rule still checks every operand).
"""
from __future__ import annotations

import ast

from pypto.errors import ParserTypeError
from pypto.ir.nodes import Call, ConstBool, ConstInt, Expr
from pypto.ir.types import ArrayType, ScalarType
from pypto.ops.registry import get_op


def _call(op: str, args: tuple, span) -> Call:
    return Call(op, args, get_op(op, span).infer_type(args, span), span)


def _index(fp, node: ast.expr):
    from pypto.frontend import parser as P

    v = fp.expr(node)
    if P.kind_of(v) != "scalar" or isinstance(v, (float, bool)):
        raise ParserTypeError(f"an array index must be an integer scalar, got {P._describe_static(v)}", fp.span(node))
    return P.to_expr(v, fp.span(node))


def _value(fp, arr: Expr, node: ast.expr) -> Expr:
    """The stored value as a scalar of the array's element type (an int literal takes it)."""
    from pypto.frontend import parser as P

    v = fp.expr(node)
    dt = arr.type.dtype
    if isinstance(v, bool):
        return ConstBool(v, fp.span(node)) if dt.name == "BOOL" else ConstInt(int(v), dt, fp.span(node))
    if isinstance(v, int):
        return ConstInt(v, dt, fp.span(node))
    if not (isinstance(v, Expr) and isinstance(v.type, ScalarType)):
        raise ParserTypeError(f"a pl.Array element is a scalar, got {P._describe_static(v)}", fp.span(node))
    return v


def array_create(fp, node: ast.Call, span) -> Call:
    """``pl.array.create(n, dtype)`` with an integer / BOOL dtype."""
    args = [fp.expr(a) for a in node.args]
    if len(args) != 2 or node.keywords or not isinstance(args[0], int) or isinstance(args[0], bool):
        raise ParserTypeError("pl.array.create(n, dtype) needs a constant size and a dtype", span,
                              "arr = pl.array.create(16, pl.INT32)")
    return _call("array.create", (args[0], args[1]), span)


def array_read(fp, arr: Expr, node: ast.Subscript) -> Call:
    """``arr[i]``."""
    if isinstance(node.slice, (ast.Slice, ast.Tuple)):
        raise ParserTypeError("a pl.Array takes one scalar index: arr[i]", fp.span(node))
    return _call("array.get_element", (arr, _index(fp, node.slice)), fp.span(node))


def array_write(fp, arr: Expr, target: ast.Subscript, value_node: ast.expr, node: ast.AST) -> Call:
    """``arr[i] = v``: the new version of ``arr`` (the caller re-binds the name)."""
    if isinstance(target.slice, (ast.Slice, ast.Tuple)):
        raise ParserTypeError("a pl.Array takes one scalar index: arr[i] = v", fp.span(target))
    return _call("array.update_element", (arr, _index(fp, target.slice), _value(fp, arr, value_node)),
                 fp.span(node))


def array_element(fp, which: str, node: ast.Call, span) -> Call:
    """``pl.array.get_element(arr, i)`` / ``pl.array.update_element(arr, i, v)`` on a pl.Array."""
    n = 2 if which == "array_get_element" else 3
    if len(node.args) != n or node.keywords:
        raise ParserTypeError(f"pl.array.{which[6:]} takes {n} positional arguments", span)
    arr = fp.expr(node.args[0])
    idx = _index(fp, node.args[1])
    if n == 2:
        return _call("array.get_element", (arr, idx), span)
    return _call("array.update_element", (arr, idx, _value(fp, arr, node.args[2])), span)


def array_annotation(node, resolve, src, what: str, slice_items, dtype_of) -> ArrayType:
    """``pl.Array[n, dtype]``."""
    items = slice_items(node.slice) if isinstance(node, ast.Subscript) else []
    if len(items) != 2:
        raise ParserTypeError(f"{what}: pl.Array needs [extent, dtype]", src.span(node), "pl.Array[16, pl.INT32]")
    n = resolve(items[0])
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ParserTypeError(f"{what}: a pl.Array extent is a positive int literal", src.span(items[0]))
    return ArrayType(n, dtype_of(items[1], resolve, src, what))
