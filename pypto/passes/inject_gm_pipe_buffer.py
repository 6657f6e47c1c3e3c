"""InjectGMPipeBuffer: on a2a3, where the cube and the vector cores share no on-chip buffer and a
cross-core pipe's slots live in global memory, every function that sets up a pipe gets the GM
workspace those slots live in as a parameter (the reference's pass of the same name, split out
of ExpandMixedKernel).

Requires: MixedKernelExpanded. Produces: GMPipeBufferInjected.

* A function whose body has ``tile.aic_initialize_pipe`` / ``tile.aiv_initialize_pipe`` (an AIC /
  AIV member of a mixed kernel, expanded or hand-written) gets a last parameter
  ``__gm_pipe_buffer: pl.Out[pl.Tensor[[n], pl.FP32]]``.
* The parameter travels up the call graph: a non-orchestration caller of such a function (the
  Group) gets it too and passes its own to the callee.
* An orchestration caller creates one workspace per call site (``tensor.create`` right before the
  call) and passes it: each dispatch of a mixed kernel has its own slots, so two dispatches never
  share one and no dependency arises between them through the workspace.

``n`` is the workspace in FP32 words: the largest ``slot_size * slot_num`` of the pipes the
callee sets up (``slot_num`` left out: 8 slots one-way, 4 per direction both ways, as
``tile.*_initialize_pipe`` defaults it), rounded up to whole words. The reference leaves the size
to its code generator (a ``[1]`` placeholder in the IR); here the IR states it, so the
orchestration allocates the real footprint.

The simulator's pipes keep their slots in the cluster executor (:mod:`pypto.runtime.cross_core`,
which charges each transfer its GM round trip on a2a3): the workspace is allocated and passed,
and nothing reads or writes its elements. On a5 (pipes through on-chip paths) the pass changes
nothing.
"""
from __future__ import annotations

from pypto.ir.nodes import AssignStmt, Call, FuncCall, Function, Var
from pypto.ir.types import TensorType
from pypto.ir.visit import Mutator, iter_exprs, iter_stmts
from pypto.language.dtypes import FP32
from pypto.language.enums import FunctionType, ParamDirection
from pypto.ops.builder import build
from pypto.passes.context import PassContext

NAME = "InjectGMPipeBuffer"
REQUIRES = ("MixedKernelExpanded",)
PRODUCES = ("GMPipeBufferInjected",)

PARAM = "__gm_pipe_buffer"
_INIT = ("tile.aic_initialize_pipe", "tile.aiv_initialize_pipe")
_GM_PIPE_ARCHS = ("a2a3",)   # the platforms whose cross-core pipes run through GM


def _workspace_words(f: Function) -> int:
    """The FP32 words of ``f``'s pipe slots (0: ``f`` sets up no pipe)."""
    most = 0
    for s in iter_stmts(f.body):
        c = getattr(s, "expr", None)
        if isinstance(c, Call) and c.op in _INIT:
            a = dict(zip(("c2v", "v2c", "dir_mask", "slot_size", "slot_num", "local_slot_num", "id"), c.args))
            slots = a["slot_num"] if isinstance(a["slot_num"], int) else (4 if a["dir_mask"] == 3 else 8)
            per_dir = 2 if a["dir_mask"] == 3 else 1
            most = max(most, a["slot_size"] * slots * per_dir)
    return -(-most // 4)


def _callees(f: Function) -> set:
    return {e.func for e in iter_exprs(f.body) if isinstance(e, FuncCall)}


class _Forward(Mutator):
    """Append the workspace argument to each call of a function that takes one; in orchestration
    code each such call gets a freshly created workspace right before it."""

    def __init__(self, needs: dict, own: Var | None):
        super().__init__()
        self.needs, self.own = needs, own

    def _call(self, c):
        if not (isinstance(c, FuncCall) and c.func in self.needs):
            return c, None
        if self.own is not None:
            return c.replace(args=c.args + (self.own,)), None
        create = build("tensor.create", c.span, shape=[self.needs[c.func]], dtype=FP32)
        buf = Var("gm_pipe_buffer", create.type, c.span)
        return c.replace(args=c.args + (buf,)), AssignStmt(buf, create, c.span)

    def visit_AssignStmt(self, s):
        value = self.expr(s.value)
        value, pre = self._call(value)
        new = s.replace(value=value) if value is not s.value else s
        return [pre, new] if pre is not None else new

    def visit_EvalStmt(self, s):
        expr = self.expr(s.expr)
        expr, pre = self._call(expr)
        new = s.replace(expr=expr) if expr is not s.expr else s
        return [pre, new] if pre is not None else new


def run(program, ctx: PassContext):
    if ctx.platform.arch not in _GM_PIPE_ARCHS:
        return program
    funcs = {f.name: f for f in program.functions}
    needs = {n: w for n, f in funcs.items() if (w := _workspace_words(f))}
    # up the call graph: a kernel-side caller forwards its own (sized for its largest callee)
    changed = True
    while changed:
        changed = False
        for n, f in funcs.items():
            if f.func_type == FunctionType.Orchestration or f.func_type == FunctionType.Opaque:
                continue
            w = max((needs[c] for c in _callees(f) if c in needs), default=0)
            if w and needs.get(n, 0) < w:
                needs[n] = w
                changed = True
    if not needs:
        return program
    out = []
    for f in program.functions:
        own = None
        if f.name in needs:
            own = Var(PARAM, TensorType((needs[f.name],), FP32), f.span)
            f = f.replace(params=f.params + (own,), directions=f.directions + (ParamDirection.Out,))
        if any(c in needs for c in _callees(f)):
            m = _Forward(needs, own)
            f = f.replace(body=m.stmts(f.body))
        out.append(f)
    return program.replace(functions=tuple(out))
