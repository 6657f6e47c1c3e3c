"""Pieces shared by the code generators (simulator kernels, orchestration, torch reference)."""
from __future__ import annotations

from typing import Any

from pypto.ir.nodes import (
    BinOp, ConstBool, ConstFloat, ConstInt, Expr, ForStmt, IfStmt, MakeTuple, ReturnStmt, TupleGetItem, UnaryOp,
    WhileStmt,
    Var, YieldStmt,
)
from pypto.ir.pysource import Namer, py_literal
from pypto.passes.param_writes import returned_params  # noqa: F401  (re-exported: an IR analysis, in passes)

_PY_BINOP = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "lt": "<",
             "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "and": "and", "or": "or",
             "lshift": "<<", "rshift": ">>", "bitand": "&", "bitor": "|", "bitxor": "^"}


class PyNames(Namer):
    """Printable, unique Python identifiers for the Vars of one generated function. Names the
    generated modules use themselves (the tile-view list ``v``, the runtime ``_rt``, the support
    module ``_pto``, builtins the code calls) are never given to a Var."""

    RESERVED = frozenset({"v", "_rt", "_pto", "torch", "range", "min", "max", "abs", "float", "int", "len",
                          "None", "True", "False"})

    def __init__(self):
        super().__init__()
        self.used |= self.RESERVED


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


def span_tuple(span) -> tuple | None:
    """``span`` as the plain tuple generated code passes to the runtime (None when unknown)."""
    if span is None or span.is_unknown():
        return None
    return (span.file, span.line, span.col, span.end_line, span.end_col)


def while_counter(names: "PyNames") -> str:
    """A fresh local name for a ``while`` loop's iteration count (never a Var's name)."""
    n = 0
    while f"_wc{n}" in names.used:
        n += 1
    names.used.add(f"_wc{n}")
    return f"_wc{n}"


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
        elif isinstance(s, WhileStmt):
            for it, init in zip(s.iter_args, s.init_values):
                self.emit(depth, f"{self.names.define(it)} = {self.expr(init)}", s.span)
            count = while_counter(self.names)
            self.emit(depth, f"{count} = 0")
            self.emit(depth, f"while {self.expr(s.cond)}:", s.span)
            self.emit(depth + 1, f"{count} = _pto.while_step({count}, {span_tuple(s.span)!r})", s.span)
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


def operand_src(text: str, e, expr_text) -> "Src":
    """The :class:`~pypto.ops.registry.Src` of an op operand; a tile with a runtime valid shape also
    carries that shape's source as ``.valid`` (``expr_text`` renders one scalar expression), which
    the ops that honour the valid region (``tile.store``) read instead of the static extents."""
    from pypto.ir.types import runtime_valid
    from pypto.ops.registry import Src

    t = getattr(e, "type", None)
    src = Src(text, t)
    if runtime_valid(t):
        src.valid = "[" + ", ".join(str(d) if isinstance(d, int) else expr_text(d) for d in t.valid_shape) + "]"
    return src
