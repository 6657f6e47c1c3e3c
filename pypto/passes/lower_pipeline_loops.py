"""LowerPipelineLoops: every ``pl.pipeline(start, stop, step, stage=F)`` loop (ForKind.Pipeline) becomes
a loop of stride ``F * step`` whose body is ``F`` copies of the original body (for ``i``,
``i + step``, ...), followed by a sequential tail loop for the last ``(stop - start) mod (F * step)``
iterations. The iterations run in the same order, so the lowered loop computes what the
``pl.range`` loop computes; the copies give the memory planner and the scheduler F iterations'
worth of independent instructions, as the reference's double-buffered stages do on the device.

Requires: SSA (it runs after AutoTileMatmulL0, whose K loops are ``pl.pipeline(0, K, k, stage=2)``
loops, and before InferTileMemorySpace and the memory passes, which plan the copies' buffers).
Produces: NoPipelineLoops — no ForStmt of kind Pipeline remains.

* ``stage=1`` is a plain sequential loop.
* Every Var local to the body is fresh in each copy; the loop-carried values thread through the
  copies (copy k reads what copy k-1 yielded), as :mod:`pypto.passes.unroll_loops` does for a
  ``pl.unroll`` loop.
* Constant bounds fold: a main loop of no trip and a provably empty tail are not emitted. A main
  loop of one trip stays a loop (FinalSimplify unrolls it once tiles are placed: inlined here, a
  carried value would take its init's type, e.g. an Acc placeholder's, where the body was typed
  with the unplaced carried one).
* ``stage`` is at most :data:`pypto.passes.unroll_loops.MAX_UNROLL` (1024) copies.
* Loop attributes (``attrs``) stay on the main loop; the tail loop is a plain sequential loop.
"""
from __future__ import annotations

from pypto.errors import InternalError
from pypto.ir.nodes import BinOp, ConstInt, ForStmt, Program, Var, YieldStmt
from pypto.ir.types import ScalarType
from pypto.language.dtypes import INDEX
from pypto.language.enums import ForKind
from pypto.ir.visit import Mutator
from pypto.passes.context import PassContext
from pypto.passes.unroll_loops import _FoldingRenewer, _Unroller

NAME = "LowerPipelineLoops"
REQUIRES = ("SSA",)
PRODUCES = ("NoPipelineLoops",)


def run(program: Program, ctx: PassContext) -> Program:
    return _Lowerer().program(program)


class _Lowerer(_Unroller):
    """UnrollLoops' body copier (fresh locals per copy, carried values threaded), applied to
    Pipeline loops only (no Unroll loop is left by now)."""

    def __init__(self):
        super().__init__()
        # every body copy made, kept alive for the whole pass: the substitution maps are keyed by
        # id(), and a copy dropped by a folded ``if`` must not free Vars whose ids a later Var reuses
        self.alive: list = []

    def body_copy(self, s: ForStmt, i, carried):
        copy, out = super().body_copy(s, i, carried)
        self.alive.append((copy, out))
        return copy, out

    def stmt(self, s):
        # SSA: no Var defined before a loop is re-assigned in it, so UnrollLoops' bookkeeping of the
        # Vars seen so far (which keeps such Vars un-renewed in the copies) is not wanted here
        return Mutator.stmt(self, s)

    def visit_ForStmt(self, s: ForStmt):
        if s.kind != ForKind.Pipeline:
            return self.default_stmt(s)
        start, stop, step = (self.expr(x) for x in (s.start, s.stop, s.step))
        f = s.stage
        if not isinstance(step, ConstInt) or step.value <= 0:
            raise InternalError("pl.pipeline step must be a literal int > 0", s.span)
        if f == 1:
            return self.default_stmt(s.replace(kind=ForKind.Sequential, stage=1))
        self._count(f, s, f"pl.pipeline(..., stage={f})")
        span = s.span
        stride = ConstInt(f * step.value, INDEX, span)
        # main_end = start + max((stop - start) // stride, 0) * stride, folded when constant
        ren = _FoldingRenewer()
        idx = ScalarType(INDEX)
        trips = ren.expr(BinOp("max", BinOp("floordiv", BinOp("sub", stop, start, idx, span), stride, idx, span),
                               ConstInt(0, INDEX, span), idx, span))
        main_end = ren.expr(BinOp("add", start, BinOp("mul", trips, stride, idx, span), idx, span))
        inits = [self.expr(v) for v in s.init_values]
        out: list = []
        if isinstance(trips, ConstInt) and trips.value == 0:  # all iterations are the tail's
            main_rvs = inits
        else:
            j = Var(s.loop_var.name, s.loop_var.type, s.loop_var.span)
            new_iters = tuple(Var(v.name, v.type, v.span) for v in s.iter_args)
            carried = list(new_iters)
            body: list = []
            for k in range(f):
                i = j if k == 0 else BinOp("add", j, ConstInt(k * step.value, INDEX, span), idx, span)
                copy, carried = self.body_copy(s, i, carried)
                body.extend(copy)
            if s.iter_args:
                body.append(YieldStmt(tuple(carried), span))
            rvs = tuple(Var(v.name, v.type, v.span) for v in s.return_vars)
            out.append(self.default_stmt(ForStmt(j, start, main_end, stride, new_iters, tuple(inits), tuple(body),
                                                 rvs, ForKind.Sequential, span, attrs=s.attrs)))
            main_rvs = list(rvs)
        if isinstance(main_end, ConstInt) and isinstance(stop, ConstInt) and main_end.value >= stop.value:
            for rv, v in zip(s.return_vars, main_rvs):
                self.redefine(rv, v)
            return out
        tail = ForStmt(s.loop_var, main_end, stop, s.step, s.iter_args, tuple(main_rvs), s.body, s.return_vars,
                       ForKind.Sequential, span)
        out.append(self.default_stmt(tail))
        return out
