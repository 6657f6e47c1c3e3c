"""Simplify: scalar constant folding and propagation, dead-branch and trivial-loop removal, scalar DCE.

Requires: nothing. Produces: nothing (it only makes the program smaller; every established property
still holds). It runs twice: after ConvertToSSA (so the orchestration and the kernels outlined from it
see folded offsets and bounds) and as the final pass.

* **Folding.** A ``BinOp`` / ``UnaryOp`` whose operands are literals becomes a literal, wherever it
  appears (offsets lists, loop bounds, if conditions, op arguments): ``INDEX`` integer arithmetic
  (``+ - * // % min max``, ``//`` and ``%`` only for a non-zero divisor), comparisons of ``INDEX``
  integers, and ``and`` / ``or`` / ``not`` of booleans. Floating-point and fixed-width integer
  arithmetic is left alone (its rounding and wrapping belong to the target, not to Python).
* **Propagation.** A scalar assignment whose value is (or folds to) a literal of the variable's own
  type is removed and the literal replaces every use (not as an argument of a function call: a
  kernel argument stays a variable).
* **Dead branches.** An ``if`` whose condition folds to a literal is replaced by the live branch;
  its return vars are bound to that branch's yielded values.
* **Trivial loops.** A sequential loop with literal bounds and 0 trips is removed (return vars =
  init values); with 1 trip its body is inlined with the loop variable = start, the iter_args = the
  init values, and the return vars = the yielded values.
* **Scalar DCE.** A scalar assignment whose value contains no op or function call and whose
  variable is never used is removed (repeated to a fixed point).

From InitMemRef on a tile's buffer is part of its type, so rebinding a tile return var to another
tile (a dead branch's yield, a removed loop's init) would make later reads look in a buffer the
memory passes may have given to another tile: branch and loop removal is skipped there when a
rebound var is a tile with a MemRef.
"""
from __future__ import annotations

from pypto.ir.nodes import (
    AssignStmt, BinOp, Call, ConstBool, ConstFloat, ConstInt, Expr, ForStmt, FuncCall, Function, IfStmt, Program,
    WhileStmt,
    UnaryOp, Var, YieldStmt,
)
from pypto.ir.types import ScalarType, TileType, runtime_valid
from pypto.ir.visit import Mutator, iter_exprs, walk_expr
from pypto.language.dtypes import INDEX
from pypto.language.enums import ForKind
from pypto.passes.context import PassContext

NAME = "Simplify"
REQUIRES = ()
PRODUCES = ()

_INT = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
        "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b, "min": min, "max": max,
        "bitand": lambda a, b: a & b, "bitor": lambda a, b: a | b, "bitxor": lambda a, b: a ^ b}
_CMP = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
        "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}

_LITERALS = (ConstInt, ConstFloat, ConstBool)


def run(program: Program, ctx: PassContext) -> Program:
    return program.replace(functions=tuple(_simplify(f) for f in program.functions))


def fold(e: Expr) -> Expr:
    """``e`` with constant scalar sub-expressions folded (the folding rules of this pass)."""
    return _Simplifier().expr(e)


def _simplify(f: Function) -> Function:
    s = _Simplifier()
    s.pinned = _call_args(f.body)
    f = s.function(f)
    return f.replace(body=_dce(f.body))


def _call_args(body) -> set[int]:
    return {id(a) for e in iter_exprs(body) if isinstance(e, FuncCall) for a in e.args if isinstance(a, Var)}


def _is_int(e) -> bool:
    return isinstance(e, ConstInt) and e.dtype == INDEX


def _has_memref(v: Var) -> bool:
    return isinstance(v.type, TileType) and v.type.memref is not None


class _Simplifier(Mutator):
    pinned: set[int] = set()

    # ---------------------------------------------------------------- expressions
    def visit_BinOp(self, e: BinOp):
        e = self.rebuild(e)
        a, b = e.lhs, e.rhs
        if _is_int(a) and _is_int(b):
            if e.op in _INT:
                if e.op in ("floordiv", "mod") and b.value == 0:
                    return e
                return ConstInt(_INT[e.op](a.value, b.value), INDEX, e.span)
            if e.op in _CMP:
                return ConstBool(_CMP[e.op](a.value, b.value), e.span)
        if isinstance(a, ConstBool) and isinstance(b, ConstBool) and e.op in ("and", "or", "eq", "ne"):
            v = {"and": a.value and b.value, "or": a.value or b.value, "eq": a.value == b.value,
                 "ne": a.value != b.value}[e.op]
            return ConstBool(v, e.span)
        return e

    def visit_UnaryOp(self, e: UnaryOp):
        e = self.rebuild(e)
        x = e.operand
        if e.op == "neg" and _is_int(x):
            return ConstInt(-x.value, INDEX, e.span)
        if e.op == "abs" and _is_int(x):
            return ConstInt(abs(x.value), INDEX, e.span)
        if e.op == "not" and isinstance(x, ConstBool):
            return ConstBool(not x.value, e.span)
        return e

    def visit_Call(self, e: Call):
        """A call whose operands folded to constants is checked by its type rule again: a region the
        parser could not check (``pl.load(a, [i * 64, 0], ...)`` with ``i`` now known) may leave the
        tensor, and that is the user's located error at the call, not a VerificationError of this
        pass (issue 13: the fuzzer's one internal failure over 12,000 mutants)."""
        new = self.rebuild(e)
        if new is not e:
            from pypto.errors import InternalError, PyptoError, VerificationError
            from pypto.ops.registry import get_op

            try:
                get_op(new.op).infer_type(new.args, new.span)
            except PyptoError as err:
                if not isinstance(err, (InternalError, VerificationError)):
                    raise
        return new

    # ---------------------------------------------------------------- statements
    def visit_AssignStmt(self, s: AssignStmt):
        value = self.expr(s.value)
        if isinstance(value, _LITERALS) and isinstance(s.var.type, ScalarType) and value.type == s.var.type \
                and id(s.var) not in self.pinned and getattr(s.value, "task_id_var", None) is None:
            self.redefine(s.var, value)
            return None
        out = s.replace(value=value) if value is not s.value else s
        t = s.var.type
        if runtime_valid(t):
            t = _folded_valid(t.with_(valid_shape=tuple(d if isinstance(d, int) else self.expr(d)
                                                        for d in t.valid_shape)))
        if t != s.var.type:
            # a tile whose run-time valid extents folded to constants (a one-trip loop inlined): its
            # type must not keep the scalars, whose definitions are gone (issue 17: NameError 'valid')
            nv = Var(s.var.name, t, s.var.span)
            self.redefine(s.var, nv)
            out = out.replace(var=nv)
        return out

    def _inline(self, body, return_vars):
        body = list(body)
        yld = body.pop() if body and isinstance(body[-1], YieldStmt) else None
        out = list(self.stmts(body))
        if yld is not None:
            for rv, v in zip(return_vars, yld.values):
                self.redefine(rv, self.expr(v))
        return out

    def visit_IfStmt(self, s: IfStmt):
        cond = self.expr(s.cond)
        if isinstance(cond, ConstBool) and not any(_has_memref(v) for v in s.return_vars):
            return self._inline(s.then_body if cond.value else s.else_body, s.return_vars)
        return s.replace(cond=cond, then_body=self.stmts(s.then_body), else_body=self.stmts(s.else_body))

    def visit_WhileStmt(self, s: WhileStmt):
        inits = tuple(self.expr(v) for v in s.init_values)
        cond = self.expr(s.cond)
        if isinstance(cond, ConstBool) and not cond.value and not any(_has_memref(v) for v in s.return_vars):
            # (the condition is read before the first iteration: false there, the loop never runs)
            for rv, v in zip(s.return_vars, inits):
                self.redefine(rv, v)
            return None
        return s.replace(cond=cond, init_values=inits, body=self.stmts(s.body))

    def visit_ForStmt(self, s: ForStmt):
        start, stop, step = self.expr(s.start), self.expr(s.stop), self.expr(s.step)
        inits = tuple(self.expr(v) for v in s.init_values)
        if s.kind == ForKind.Sequential and all(_is_int(x) for x in (start, stop, step)) and step.value != 0 \
                and not any(_has_memref(v) for v in (*s.iter_args, *s.return_vars)):
            trips = len(range(start.value, stop.value, step.value))
            if trips == 0:
                for rv, v in zip(s.return_vars, inits):
                    self.redefine(rv, v)
                return None
            if trips == 1:
                self.subst[id(s.loop_var)] = ConstInt(start.value, s.loop_var.type.dtype
                                                      if isinstance(s.loop_var.type, ScalarType) else INDEX,
                                                      s.loop_var.span)
                for it, v in zip(s.iter_args, inits):
                    self.subst[id(it)] = v
                return self._inline(s.body, s.return_vars)
        return s.replace(start=start, stop=stop, step=step, init_values=inits, body=self.stmts(s.body))


def _folded_valid(t):
    """``t`` with constant valid extents as plain ints (what a static valid shape holds)."""
    if isinstance(t, TileType) and t.valid_shape is not None and any(isinstance(d, ConstInt) for d in t.valid_shape):
        return t.with_(valid_shape=tuple(d.value if isinstance(d, ConstInt) else d for d in t.valid_shape))
    return t


# ---------------------------------------------------------------- scalar DCE


def _pure_scalar(s) -> bool:
    return isinstance(s, AssignStmt) and isinstance(s.var.type, ScalarType) \
        and not any(isinstance(x, (Call, FuncCall)) for x in walk_expr(s.value))


def _dce(body):
    while True:
        used = {id(x) for x in iter_exprs(body) if isinstance(x, Var)}
        dead = False

        class _Drop(Mutator):
            def visit_AssignStmt(self, s):
                nonlocal dead
                if _pure_scalar(s) and id(s.var) not in used:
                    dead = True
                    return None
                return s

        body = _Drop().stmts(body)
        if not dead:
            return body
