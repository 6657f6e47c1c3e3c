"""UnrollLoops: every ``pl.unroll`` loop (ForKind.Unroll) is replaced by one copy of its body per
iteration (docs/language.md, "Loops: `pl.range`, carried values"). ``pl.pipeline`` loops stay
loops here: :mod:`pypto.passes.lower_pipeline_loops` copies their bodies after AutoTileMatmulL0, as
the reference's LowerPipelineLoops does, so the passes in between (and the pass dumps) see the
loop the user wrote and AutoTileMatmulL0 can add pipelined K loops of its own.

Requires: nothing (it runs on the frontend's pre-SSA IR, before ConvertToSSA; the explicit SSA
form with ``init_values`` works too). Produces: NoUnrollLoops — no ForStmt of kind Unroll remains.

* Bounds are compile-time ints (the frontend checks it); the loop variable becomes the literal
  ``ConstInt`` of each iteration.
* Every Var local to the body is cloned per copy (:class:`pypto.ir.visit.Renewer`), so copies
  share no local Var. A Var defined before the loop that the body re-assigns (the pre-SSA form of
  a carried value) stays itself: each copy re-assigns it in turn, and ConvertToSSA versions it.
* Explicit loop-carried values thread through the copies: copy k reads what copy k-1 yielded, and
  the loop's return vars read what the last copy yielded (the init values for an empty loop).
* Nested unroll loops are expanded too.
* Limits (compile time grows with every copy, ~5 ms each through the pipeline): one ``pl.unroll``
  loop expands to at most :data:`MAX_UNROLL` (1024, the reference compiler's
  ``kMaxUnrollIterations``) copies and ``pl.pipeline``'s ``stage`` is at most that too; nested
  unroll loops of one function expand to at most :data:`MAX_COPIES` body copies in all. Beyond
  either, a located error suggests ``pl.range`` (a loop at run time) or ``pl.pipeline``.
* Scalar arithmetic on constants folds in each copy (``i * 64`` becomes ``64`` in copy 1), and an
  ``if`` whose condition folds keeps only its taken branch — the same forms the frontend builds
  from constants, so every stage prints and parses back unchanged.
"""
from __future__ import annotations

from pypto.errors import InternalError, PassError
from pypto.ir.nodes import (
    BinOp,
    Var,
    ConstBool,
    ConstFloat,
    ConstInt,
    ForStmt,
    IfStmt,
    WhileStmt,
    Program,
    UnaryOp,
    YieldStmt,
)
from pypto.ir.visit import Mutator, Renewer, defined_vars
from pypto.ir.types import ScalarType
from pypto.language.dtypes import FP32, INDEX
from pypto.language.enums import ForKind
from pypto.passes.context import PassContext
from pypto.ir.visit import child_stmts

NAME = "UnrollLoops"
REQUIRES = ()
PRODUCES = ("NoUnrollLoops",)


MAX_UNROLL = 1024      # copies of one loop's body (the reference's kMaxUnrollIterations)
MAX_COPIES = 16384     # body copies of all the (nested) unroll loops of one function


def run(program: Program, ctx: PassContext) -> Program:
    return _Unroller().program(program)


def _nested_copies(stmts) -> int:
    """Body copies the unroll loops nested in ``stmts`` will make, as far as their bounds are literal
    already (a bound depending on an outer loop variable is known only once that is substituted)."""
    n = 0
    for st in stmts:
        if isinstance(st, ForStmt) and st.kind == ForKind.Unroll and all(
                isinstance(b, ConstInt) for b in (st.start, st.stop, st.step)) and st.step.value != 0:
            n += _trips(st.start.value, st.stop.value, st.step.value) * (1 + _nested_copies(st.body))
        else:
            for body in child_stmts(st):
                n += _nested_copies(body)
    return n


def _trips(start: int, stop: int, step: int) -> int:
    if step > 0:
        return max(0, (stop - start + step - 1) // step)
    return max(0, (start - stop - step - 1) // -step)


class _Unroller(Mutator):
    def __init__(self):
        super().__init__()
        self.seen: set[int] = set()   # Vars defined so far in the function (originals and copies)

    def function(self, f):
        self.seen = {id(p) for p in f.params}
        self.copies = 0
        return super().function(f)

    def _count(self, n: int, s: ForStmt, what: str) -> None:
        """Account ``n`` more body copies; refuse past the limits (before copying anything)."""
        if n > MAX_UNROLL:
            raise PassError(
                f"{what} would copy the loop body {n} times; the limit is {MAX_UNROLL} copies per loop "
                "(compile time grows with every copy)", s.span,
                "use pl.range for a loop that runs on the device, or pl.pipeline(n, stage=F) to copy the body "
                "only F times")
        self.copies += n
        total = self.copies + n * _nested_copies(s.body)   # known before expanding: fail fast
        if total > MAX_COPIES:
            self.copies = total
            raise PassError(
                f"the pl.unroll loops of this function would copy their bodies {self.copies} times in all (nested "
                f"loops multiply); the limit is {MAX_COPIES}", s.span,
                "turn the outer pl.unroll into pl.range")

    def stmt(self, s):
        if isinstance(s, ForStmt):   # visible in the body
            self.seen.update(id(v) for v in (s.loop_var, *s.iter_args))
        elif isinstance(s, WhileStmt):
            self.seen.update(id(v) for v in s.iter_args)
        r = super().stmt(s)
        self.seen.update(id(v) for v in defined_vars(r if isinstance(r, (list, tuple)) else [r] if r else []))
        return r

    def visit_ForStmt(self, s: ForStmt):
        if s.kind != ForKind.Unroll:
            return self.default_stmt(s)
        bounds = [self.expr(x) for x in (s.start, s.stop, s.step)]
        if not all(isinstance(b, ConstInt) for b in bounds):
            raise InternalError("pl.unroll bounds must be compile-time ints", s.span)
        start, stop, step = (b.value for b in bounds)
        if step == 0:
            raise PassError("pl.unroll step must not be 0", s.span)
        self._count(_trips(start, stop, step), s, f"pl.unroll({start}, {stop}, {step})")
        carried = [self.expr(v) for v in s.init_values]
        out = []
        for i in range(start, stop, step):
            copy, carried = self.body_copy(s, ConstInt(i, INDEX, s.loop_var.span), carried)
            out.extend(self.stmts(copy))   # nested unroll loops and folded ifs of this copy
            carried = [self.expr(v) for v in carried]
        for rv, v in zip(s.return_vars, carried):
            self.redefine(rv, v)
        return out

    def body_copy(self, s: ForStmt, i, carried) -> tuple[list, list]:
        """One copy of ``s``'s body for loop-variable value ``i`` reading the carried values
        ``carried`` (its final yield dropped): ``(statements, the values it yields)``. Vars local to
        the body are fresh; a Var defined before the loop that the body re-assigns stays itself."""
        ren = _FoldingRenewer()
        ren.subst = dict(self.subst)
        ren.subst[id(s.loop_var)] = i
        for it, v in zip(s.iter_args, carried):
            ren.subst[id(it)] = v
        body = list(s.body)
        yld = body.pop() if body and isinstance(body[-1], YieldStmt) else None
        for v in defined_vars(body):
            if id(v) in self.seen or id(self.var(v)) in self.seen:
                ren.keep(v, self.var(v))   # defined before the loop: re-assigned by every copy
        copy = list(ren.renew(body))
        return copy, ([ren.expr(v) for v in yld.values] if yld is not None else carried)

    def visit_IfStmt(self, s: IfStmt):
        cond = self.expr(s.cond)
        if not isinstance(cond, ConstBool):
            return self.default_stmt(s)
        body = list(s.then_body if cond.value else s.else_body)
        yld = body.pop() if body and isinstance(body[-1], YieldStmt) else None
        out = list(self.stmts(body))
        if yld is not None:
            for rv, v in zip(s.return_vars, yld.values):
                self.redefine(rv, self.expr(v))
        return out


_INT_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
            "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b, "min": min, "max": max}
_CMP_OPS = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
            "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


class _FoldingRenewer(Renewer):
    """A Renewer that folds scalar arithmetic on INDEX literals, as the frontend does."""

    def visit_BinOp(self, e: BinOp):
        e = self.rebuild(e)
        a, b = e.lhs, e.rhs
        if not (isinstance(a, ConstInt) and isinstance(b, ConstInt) and a.dtype == INDEX and b.dtype == INDEX):
            return e
        try:
            if e.op in _INT_OPS:
                return ConstInt(_INT_OPS[e.op](a.value, b.value), INDEX, e.span)
            if e.op in _CMP_OPS:
                return ConstBool(_CMP_OPS[e.op](a.value, b.value), e.span)
            if e.op == "truediv":
                return ConstFloat(a.value / b.value, FP32, e.span)
        except ZeroDivisionError:
            return e
        return e

    def visit_UnaryOp(self, e: UnaryOp):
        e = self.rebuild(e)
        if e.op == "neg" and isinstance(e.operand, ConstInt) and e.operand.dtype == INDEX:
            return ConstInt(-e.operand.value, INDEX, e.span)
        return e
