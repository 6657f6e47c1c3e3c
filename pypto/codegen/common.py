"""Pieces shared by the code generators (simulator kernels, orchestration, torch reference)."""
from __future__ import annotations

from typing import Any

import torch

from pypto.ir.nodes import (
    BinOp, ConstBool, ConstFloat, ConstInt, Expr, ForStmt, IfStmt, MakeTuple, ReturnStmt, TupleGetItem, UnaryOp,
    WhileStmt,
    Var, YieldStmt,
)
from pypto.ir.pysource import Namer, py_literal
from pypto.ops.support.scalars import sround
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
        return py_binop(e, _float_operand(e.lhs, names), _float_operand(e.rhs, names))
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


# floating-point scalar operations whose result is rounded to the operation's dtype, and the helper
# computing the ones Python would refuse on a zero divisor (pypto.ops.support.scalars: the device
# rounds every FP32 scalar operation, and divides by zero as IEEE 754 says)
_ROUNDED = frozenset({"add", "sub", "mul", "truediv", "floordiv", "mod"})
_DIVISIONS = {"truediv": "sdiv", "floordiv": "sfloordiv", "mod": "smod"}


def _float_dtype(e):
    t = getattr(e, "type", None)
    dt = getattr(t, "dtype", None)
    return dt if dt is not None and dt.is_float() and dt.torch in (torch.float32, torch.float16, torch.bfloat16) \
        else None


def _float_operand(e, names) -> str:
    """An operand of a scalar operation; a floating-point literal is written as the value of its
    dtype (an FP32 ``0.1`` is the FP32 number nearest 0.1, as the device's constant is)."""
    if isinstance(e, ConstFloat):
        dt = _float_dtype(e)
        if dt is not None:
            return py_literal(sround(float(e.value), dt.torch))
    return py_expr(e, names)


def py_binop(e: BinOp, a: str, b: str) -> str:
    """Python source of the scalar operation ``e`` on operand sources ``a`` and ``b``. A
    floating-point ``+ - * / // %`` is rounded to its dtype (FP32 ``a * b + c`` rounds twice, as
    on the device, not once from float64), and a division by zero gives IEEE's infinity / NaN."""
    if e.op in ("min", "max"):
        return f"{e.op}({a}, {b})"
    dt = _float_dtype(e) if e.op in _ROUNDED else None
    if dt is None:
        return f"({a} {_PY_BINOP[e.op]} {b})"
    tdt = py_literal(dt)
    if e.op in _DIVISIONS:
        return f"_pto.{_DIVISIONS[e.op]}({a}, {b}, {tdt})"
    if dt.torch is torch.float32:   # (the common case, one call)
        return f"_pto.f32({a} {_PY_BINOP[e.op]} {b})"
    return f"_pto.sround({a} {_PY_BINOP[e.op]} {b}, {tdt})"


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
    """The one statement walker of the code generators: Python source for returns, yields into
    loop-carried / phi names, ``for`` loops over ``range`` and ``while`` loops with their carried
    values, and ``if`` / ``else`` with their phis. Its subclasses are the orchestration module
    (:mod:`pypto.codegen.orchestration`), the reference executor (:mod:`pypto.debug.torch_codegen`)
    and the simulator kernel in its task and gang modes (:mod:`pypto.codegen.kernel`). A subclass
    emits assignments, evaluated calls and whatever else it knows, and may override:

    * :meth:`expr` — the source of an operand (default: :func:`py_expr`);
    * :meth:`emit` — a line of output (torch_codegen appends the source line as a comment);
    * :meth:`head` — a control line (``for`` / ``while`` / ``if`` / ``else``; the kernel's gang
      mode writes it to both of its streams);
    * :meth:`loop_head`, :meth:`loop_body`, :meth:`loop_exit` — a loop's header, how its body is
      entered (the orchestration opens an AUTO scope), the carried values read after it;
    * :meth:`carry` — a value moved into a loop-carried / phi destination;
    * :meth:`ret` — a return;
    * :meth:`streams` — the line lists an empty block fills with ``pass``.
    """

    def __init__(self):
        self.names = PyNames()
        self.lines: list[str] = []

    def emit(self, depth: int, text: str, span=None) -> None:
        self.lines.append("    " * depth + text)

    def expr(self, e) -> str:
        return py_expr(e, self.names)

    def streams(self) -> list[list[str]]:
        """The line lists statements are written to (each gets ``pass`` where a block left it empty)."""
        return [self.lines]

    def block(self, stmts, depth: int, yield_into) -> None:
        """``stmts`` at ``depth`` (``pass`` where they emit nothing); a yield among them assigns
        ``yield_into`` (the loop's iter_args or the if's return vars)."""
        marks = [(out, len(out)) for out in self.streams()]
        for s in stmts:
            self.stmt(s, depth, yield_into)
        for out, n in marks:
            if len(out) == n:
                out.append("    " * depth + "pass")

    def stmt(self, s, depth: int, yield_into) -> None:
        raise NotImplementedError

    def head(self, depth: int, text: str, span=None) -> None:
        self.emit(depth, text, span)

    def loop_head(self, s, depth: int, text: str) -> None:
        self.head(depth, text, s.span)

    def loop_body(self, s, depth: int) -> None:
        self.block(s.body, depth + 1, s.iter_args)

    def loop_exit(self, s, depth: int) -> None:
        for rv, it in zip(s.return_vars, s.iter_args):
            self.emit(depth, f"{self.names.define(rv)} = {self.names.use(it)}")

    def carry(self, depth: int, dst, value, span) -> None:
        self.emit(depth, f"{self.names.define(dst)} = {self.expr(value)}", span)

    def ret(self, s, depth: int) -> None:
        self.emit(depth, "return " + (", ".join(self.expr(v) for v in s.values) or "None"), s.span)

    def control(self, s, depth: int, yield_into) -> bool:
        """Emit ``s`` if it is a return, yield, ``for``, ``while`` or ``if``; False for any other
        statement."""
        if isinstance(s, ReturnStmt):
            self.ret(s, depth)
        elif isinstance(s, YieldStmt):
            for dst, v in zip(yield_into, s.values):
                self.carry(depth, dst, v, s.span)
        elif isinstance(s, ForStmt):
            for it, init in zip(s.iter_args, s.init_values):
                self.carry(depth, it, init, s.span)
            rng = ", ".join(self.expr(x) for x in (s.start, s.stop, s.step))
            self.loop_head(s, depth, f"for {self.names.define(s.loop_var)} in range({rng}):")
            self.loop_body(s, depth)
            self.loop_exit(s, depth)
        elif isinstance(s, WhileStmt):
            for it, init in zip(s.iter_args, s.init_values):
                self.carry(depth, it, init, s.span)
            count = while_counter(self.names)
            self.emit(depth, f"{count} = 0")
            self.loop_head(s, depth, f"while {self.expr(s.cond)}:")
            # the first line of the body counts the iteration (pypto.ops.support.while_step: a
            # located error past RunConfig.max_while_iterations)
            self.emit(depth + 1, f"{count} = _pto.while_step({count}, {span_tuple(s.span)!r})", s.span)
            self.loop_body(s, depth)
            self.loop_exit(s, depth)
        elif isinstance(s, IfStmt):
            for rv in s.return_vars:
                self.names.define(rv)   # named before the branches assign them
            self.head(depth, f"if {self.expr(s.cond)}:", s.span)
            self.block(s.then_body, depth + 1, s.return_vars)
            self.head(depth, "else:")
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
