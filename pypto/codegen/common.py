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
             "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "and": "and", "or": "or",
             "lshift": "<<", "rshift": ">>", "bitand": "&", "bitor": "|", "bitxor": "^"}


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
        if e.op.startswith("cast:"):
            return f"_pto.scalar_cast({x}, {py_literal(e.type.dtype)}, {e.op[5:]!r})"
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
    from pypto.ops.registry import write_targets

    targets = write_targets()
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


class StmtEmitter:
    """Python source for the structured statements both host-side generators share — the
    orchestration module (:mod:`pypto.codegen.orchestration`) and the reference executor
    (:mod:`pypto.debug.torch_codegen`): returns, yields into loop-carried / phi names, ``for`` loops
    over ``range`` with their carried values, and ``if`` / ``else`` with their phis. A subclass
    emits assignments, evaluated calls and whatever else it knows, and may override:

    * :meth:`expr` — the source of an operand (default: :func:`py_expr`);
    * :meth:`loop_body` — how a loop body is entered (the orchestration opens an AUTO scope);
    * :meth:`emit` — a line of output (torch_codegen appends the source line as a comment).
    """

    def __init__(self):
        self.names = PyNames()
        self.lines: list[str] = []

    def emit(self, depth: int, text: str, span=None) -> None:
        self.lines.append("    " * depth + text)

    def expr(self, e) -> str:
        return py_expr(e, self.names)

    def block(self, stmts, depth: int, yield_into) -> None:
        """``stmts`` at ``depth`` (``pass`` when they emit nothing); a yield among them assigns
        ``yield_into`` (the loop's iter_args or the if's return vars)."""
        n = len(self.lines)
        for s in stmts:
            self.stmt(s, depth, yield_into)
        if len(self.lines) == n:
            self.emit(depth, "pass")

    def stmt(self, s, depth: int, yield_into) -> None:
        raise NotImplementedError

    def loop_body(self, s, depth: int) -> None:
        self.block(s.body, depth + 1, s.iter_args)

    def control(self, s, depth: int, yield_into) -> bool:
        """Emit ``s`` if it is a return, yield, ``for`` or ``if``; False for any other statement."""
        from pypto.ir.nodes import ForStmt, IfStmt, ReturnStmt, YieldStmt

        if isinstance(s, ReturnStmt):
            self.emit(depth, "return " + (", ".join(self.expr(v) for v in s.values) or "None"), s.span)
        elif isinstance(s, YieldStmt):
            for dst, v in zip(yield_into, s.values):
                self.emit(depth, f"{self.names.use(dst)} = {self.expr(v)}", s.span)
        elif isinstance(s, ForStmt):
            for it, init in zip(s.iter_args, s.init_values):
                self.emit(depth, f"{self.names.define(it)} = {self.expr(init)}", s.span)
            rng = ", ".join(self.expr(x) for x in (s.start, s.stop, s.step))
            self.emit(depth, f"for {self.names.define(s.loop_var)} in range({rng}):", s.span)
            self.loop_body(s, depth)
            for rv, it in zip(s.return_vars, s.iter_args):
                self.emit(depth, f"{self.names.define(rv)} = {self.names.use(it)}")
        elif isinstance(s, IfStmt):
            for rv in s.return_vars:
                self.names.define(rv)   # named before the branches assign them
            self.emit(depth, f"if {self.expr(s.cond)}:", s.span)
            self.block(s.then_body, depth + 1, s.return_vars)
            self.emit(depth, "else:")
            self.block(s.else_body, depth + 1, s.return_vars)
        else:
            return False
        return True
