"""SplitVectorKernel: an AIV function with ``attrs={"split": pl.SplitMode.UP_DOWN | LEFT_RIGHT}``
written at full tile shapes becomes its per-lane form, run on both vector cores of its cluster (the
reference's pass of the same name, its path for hand-written AIV / AIC functions).

Requires: MixedKernelExpanded. Produces: VectorKernelSplit.

Which functions: an AIV or AIC function whose ``split`` attr is UP_DOWN or LEFT_RIGHT, or, without
the attr, whose cross-core push / pop ops carry a split code (1 / 3: UP_DOWN, 2 / 4: LEFT_RIGHT; all
of them must agree). A function marked ``split_aiv`` is already in per-lane form (its author or
LowerAutoVectorSplit halved it): it only gets the attrs stamped below; an AIV function with
``dual_aiv_dispatch=True`` and no ``split`` attr is per-lane too and stays as written.

The AIV function is rewritten by :class:`pypto.passes.split_axis.Halver` (its module docstring lists
the per-op rules: the lane index first, pops / loads / stores / creations halved on the split axis,
valid extents shared out per lane, halved pushes) and refused with a located PassError where the
per-lane form would compute something else (a reduction over the split axis, an odd extent,
``tile.ci`` / ``tile.random``, a shape-taking op on a halved tile): write those kernels in the
per-lane form (``attrs={"split_aiv": True}``, tiles and offsets per lane).

The members of a mixed kernel ExpandMixedKernel made from an InCore function with a split
(``pl.at(..., optimizations=[pl.split(mode)])``) or with ``pl.split_aiv`` regions arrive in per-lane
form already (LowerAutoVectorSplit halves the vector side before the expansion, marking the kernel
``split_aiv``): they only get the attrs. The per-lane rewriting of one function body
(:class:`pypto.passes.split_axis.Halver`) is shared with LowerAutoVectorSplit.

The AIC function keeps its tiles whole: its ``tpush_to_aiv`` / ``tpop_from_aiv`` get the mode's
split code (the pipe hands each lane its half, and joins the halves the lanes push).

Both get ``split`` (the mode) and the AIV function ``dual_aiv_dispatch=True`` (both lanes run it;
:mod:`pypto.codegen.group`).
"""
from __future__ import annotations

from pypto.errors import PassError
from pypto.ir.nodes import AssignStmt, Call, Function
from pypto.ir.visit import Mutator, iter_stmts
from pypto.language.enums import FunctionType, SplitMode
from pypto.ops.registry import get_op
from pypto.passes.context import PassContext
from pypto.passes.split_axis import CODE, Halver, index_of, mode_of

NAME = "SplitVectorKernel"
REQUIRES = ("MixedKernelExpanded",)
PRODUCES = ("VectorKernelSplit",)

_MODE_OF_CODE = {1: SplitMode.UP_DOWN, 3: SplitMode.UP_DOWN, 2: SplitMode.LEFT_RIGHT, 4: SplitMode.LEFT_RIGHT}
_PIPE_OPS = ("tile.tpush_to_aiv", "tile.tpush_to_aic", "tile.tpop_from_aiv", "tile.tpop_from_aic")


def split_mode(f: Function):
    """The split mode SplitVectorKernel applies to ``f``: its ``split`` attr, else the split code of
    its pipe ops (all must agree; a located PassError otherwise); None for no split."""
    m = mode_of(f.attr("split"))
    if m is not None:
        return None if m == SplitMode.NONE else m
    if f.attr("dual_aiv_dispatch"):
        return None   # written for both lanes already: its split pipe ops pop / push a lane's part
    found = None
    for s in iter_stmts(f.body):
        c = getattr(s, "value", None) if isinstance(s, AssignStmt) else getattr(s, "expr", None)
        if isinstance(c, Call) and c.op in _PIPE_OPS:
            code = c.args[index_of(get_op(c.op), "split")]
            mode = _MODE_OF_CODE.get(code)
            if mode is None:
                continue
            if found is not None and mode != found[0]:
                raise PassError(f"{NAME}: the pipe ops of '{f.name}' disagree on the split mode ({found[0].name} at "
                                f"line {found[1].line}, {mode.name} here)", c.span,
                                "give every push / pop of a function the same split (or set attrs={'split': ...})")
            found = (mode, c.span)
    return found[0] if found else None


def _stamp(f: Function, mode: SplitMode, aiv: bool) -> tuple:
    attrs = tuple((k, v) for k, v in f.attrs if k not in ("split", "dual_aiv_dispatch"))
    attrs += (("split", mode),)
    if aiv:
        attrs += (("dual_aiv_dispatch", True),)
    return attrs


def _cube(f: Function, mode: SplitMode) -> Function:
    code = CODE[mode]

    class _Codes(Mutator):
        def call(self, c):
            if isinstance(c, Call) and c.op in ("tile.tpush_to_aiv", "tile.tpop_from_aiv"):
                op = get_op(c.op)
                i = index_of(op, "split")
                if c.args[i] == 0:
                    return c.replace(args=c.args[:i] + (code,) + c.args[i + 1:])
            return c

        def visit_AssignStmt(self, s):
            return s.replace(value=self.call(s.value))

        def visit_EvalStmt(self, s):
            return s.replace(expr=self.call(s.expr))

    return _Codes().function(f).replace(attrs=_stamp(f, mode, False))


def run(program, ctx: PassContext):
    funcs = []
    for f in program.functions:
        if f.func_type not in (FunctionType.AIV, FunctionType.AIC):
            funcs.append(f)
            continue
        mode = split_mode(f)
        if f.attr("split_aiv"):
            # already per lane (hand-written, or LowerAutoVectorSplit's output): only the attrs
            if f.func_type == FunctionType.AIV:
                attrs = tuple((k, v) for k, v in f.attrs if k != "dual_aiv_dispatch") + (("dual_aiv_dispatch", True),)
                f = f.replace(attrs=attrs)
            funcs.append(f)
            continue
        if mode is None:
            funcs.append(f)
        elif f.func_type == FunctionType.AIC:
            funcs.append(_cube(f, mode))
        else:
            funcs.append(Halver(f, mode).function(f).replace(attrs=_stamp(f, mode, True)))
    return program.replace(functions=tuple(funcs))
