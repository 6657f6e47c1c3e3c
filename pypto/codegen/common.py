"""Pieces shared by the code generators (simulator kernels, orchestration, torch reference)."""
from __future__ import annotations

import enum
import math
from typing import Any

from pypto.ir.nodes import (
    BinOp, ConstBool, ConstFloat, ConstInt, Expr, ForStmt, Function, MakeTuple, TupleGetItem, UnaryOp, Var,
)
from pypto.ir.printer import _Namer
from pypto.language.dtypes import DataType

_PY_BINOP = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "lt": "<",
             "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "and": "and", "or": "or"}


class PyNames(_Namer):
    """Printable, unique Python identifiers for the Vars of one generated function. Names the
    generated modules use themselves (the tile-view list ``v``, the runtime ``_rt``, the support
    module ``_pto``, builtins the code calls) are never given to a Var."""

    RESERVED = frozenset({"v", "_rt", "_pto", "torch", "range", "min", "max", "abs", "float", "int", "len",
                          "None", "True", "False"})

    def __init__(self):
        super().__init__()
        self.used |= self.RESERVED


def py_literal(v: Any) -> str:
    """Python source for an attribute value in generated code (dtype -> torch dtype)."""
    if isinstance(v, DataType):
        return f"torch.{str(v.torch).split('.')[-1]}"
    if isinstance(v, enum.Enum):
        return repr(v)
    if isinstance(v, float):
        if math.isnan(v):
            return 'float("nan")'
        if math.isinf(v):
            return 'float("inf")' if v > 0 else '-float("inf")'
    return repr(v)


def py_expr(e: Any, names: PyNames) -> str:
    """Python source of a scalar / index expression (or a Var reference)."""
    if isinstance(e, Var):
        return names.use(e)
    if isinstance(e, ConstInt):
        return str(e.value)
    if isinstance(e, ConstFloat):
        return py_literal(float(e.value))
    if isinstance(e, ConstBool):
        return repr(e.value)
    if isinstance(e, MakeTuple):
        return "[" + ", ".join(py_expr(x, names) for x in e.elements) + "]"
    if isinstance(e, BinOp):
        a, b = py_expr(e.lhs, names), py_expr(e.rhs, names)
        if e.op in ("min", "max"):
            return f"{e.op}({a}, {b})"
        return f"({a} {_PY_BINOP[e.op]} {b})"
    if isinstance(e, UnaryOp):
        x = py_expr(e.operand, names)
        return {"neg": f"(-{x})", "not": f"(not {x})", "abs": f"abs({x})"}[e.op]
    if isinstance(e, TupleGetItem):
        return f"{py_expr(e.value, names)}[{e.index}]"
    if e is None:
        return "None"
    if isinstance(e, Expr):
        raise TypeError(f"not a scalar expression: {type(e).__name__}")
    return py_literal(e)


def returned_params(f: Function) -> list[int]:
    """For each value ``f`` returns, the index of the parameter it is a version of (writes into
    ``out`` return ``out``'s new version). ``-1`` when a return value is not a parameter version."""
    from pypto.ir.nodes import AssignStmt, Call, ReturnStmt
    from pypto.ir.visit import iter_stmts

    root: dict[int, int] = {id(p): i for i, p in enumerate(f.params)}
    targets = {"tensor.assemble": 0, "tile.store": 2}
    ret = None
    for s in iter_stmts(f.body):
        if isinstance(s, AssignStmt):
            v = s.value
            if isinstance(v, Call) and v.op in targets and id(v.args[targets[v.op]]) in root:
                root[id(s.var)] = root[id(v.args[targets[v.op]])]
            elif isinstance(v, Var) and id(v) in root:
                root[id(s.var)] = root[id(v)]
        elif isinstance(s, ForStmt):
            for it, init, rv in zip(s.iter_args, s.init_values, s.return_vars):
                if id(init) in root:
                    root[id(it)] = root[id(rv)] = root[id(init)]
        elif hasattr(s, "return_vars"):
            pass
        if isinstance(s, ReturnStmt):
            ret = s
    if ret is None:
        return []
    return [root.get(id(v), -1) if isinstance(v, Var) else -1 for v in ret.values]
