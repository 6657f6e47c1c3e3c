"""FuseCreateAssembleToView: an orchestration ``tensor.create`` that a kernel fills and a
``tensor.assemble`` then copies into a bigger tensor becomes a view of that tensor's region, which
the kernel writes in place (the reference's FuseCreateAssembleToSlice).

Requires: SplitIncoreOrch. Produces: nothing new. In an Orchestration function, within one block::

    c  = tensor.create(shape, dtype)             # no init_value
    c2 = kernel(..., c, ...)                     # c an Out (or InOut) parameter the kernel returns
    t2 = tensor.assemble(t, c2, offsets)         # not atomic, same dtype

becomes ``c = tensor.slice(t, [1, ..., *shape], offsets)`` (plus a ``tensor.view`` dropping the
leading 1s when ``c`` has a lower rank than ``t``: a view, since only size-1 dims go), the kernel
call, and ``t2`` replaced by ``t``. The view is built where the create was, so it applies only when
``t`` and every Var of ``offsets`` are defined before the create, nothing between the create and the
assemble reads or writes ``t``, and ``c`` / ``c2`` have no other use. The elements of ``c`` the kernel
does not write were unspecified before (a created tensor's contents are) and stay so.

Without it an orchestration ``tensor.assemble`` has no host form (orchestration code only submits
tasks; a host copy would race with them) and is the "Misplaced tensor op" error.
"""
from __future__ import annotations

from pypto.ir.nodes import AssignStmt, Call, ConstInt, FuncCall, MakeTuple, Program, Var
from pypto.ir.types import TensorType
from pypto.ir.visit import Mutator, defined_vars, iter_stmts, use_exprs, walk_expr
from pypto.language.enums import AtomicType, FunctionType, ParamDirection
from pypto.ops.registry import get_op
from pypto.passes.context import PassContext
from pypto.passes.param_writes import returned_params

NAME = "FuseCreateAssembleToView"
REQUIRES = ("SplitIncoreOrch",)
PRODUCES = ()


def run(program: Program, ctx: PassContext) -> Program:
    funcs = {f.name: f for f in program.functions}
    out = []
    for f in program.functions:
        if f.func_type == FunctionType.Orchestration:
            f = _Fuse(funcs, _use_counts(f.body)).function(f)
        out.append(f)
    return program.replace(functions=tuple(out))


def _uses(s) -> list[Var]:
    return [e for x in use_exprs(s) for e in walk_expr(x) if isinstance(e, Var)]


def _use_counts(body) -> dict[int, int]:
    n: dict[int, int] = {}
    for s in iter_stmts(body):
        for v in _uses(s):
            n[id(v)] = n.get(id(v), 0) + 1
    return n


def _call(s, op: str):
    return s.value if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == op else None


class _Fuse(Mutator):
    def __init__(self, funcs, counts):
        super().__init__()
        self.funcs, self.counts = funcs, counts

    def stmts(self, stmts):
        stmts = list(stmts)
        plans = {}
        for i, s in enumerate(stmts):
            p = self._match(stmts, i)
            if p is not None:
                plans[i] = p
        drop = {p[2] for p in plans.values()}
        out = []
        for i, s in enumerate(stmts):
            if i in plans:
                out.extend(self._view(s, *plans[i][:2]))
            elif i in drop:
                a = stmts[i]
                self.redefine(a.var, self.var(a.value.args[0]))
            else:
                r = self.stmt(s)
                if isinstance(r, (list, tuple)):
                    out.extend(r)
                elif r is not None:
                    out.append(r)
        return tuple(out)

    def _match(self, stmts, i):
        create = _call(stmts[i], "tensor.create")
        if create is None or create.args[3] is not None:
            return None
        c = stmts[i].var
        if self.counts.get(id(c)) != 1:
            return None
        j = next((k for k in range(i + 1, len(stmts)) if any(v is c for v in _uses(stmts[k]))), None)
        if j is None or not isinstance(stmts[j], AssignStmt) or not isinstance(stmts[j].value, FuncCall):
            return None
        fc, c2 = stmts[j].value, stmts[j].var
        callee = self.funcs.get(fc.func)
        pos = [n for n, a in enumerate(fc.args) if a is c]
        # InOut as well as Out: a create without init_value has unspecified contents, so a kernel
        # that reads them (the frontend's ``gm_buf`` for a pl.create_tensor in a pl.at scope, carried
        # through a loop, is InOut) may as well read the region's current ones
        if callee is None or len(pos) != 1 \
                or callee.directions[pos[0]] not in (ParamDirection.Out, ParamDirection.InOut) \
                or returned_params(callee) != [pos[0]] or self.counts.get(id(c2)) != 1:
            return None
        k = next((m for m in range(j + 1, len(stmts)) if any(v is c2 for v in _uses(stmts[m]))), None)
        asm = _call(stmts[k], "tensor.assemble") if k is not None else None
        if asm is None or asm.args[1] is not c2 or asm.args[3] not in (None, AtomicType.None_):
            return None
        target, offsets = asm.args[0], asm.args[2]
        tt, ct = target.type, c.type
        if not (isinstance(tt, TensorType) and isinstance(ct, TensorType)) or tt.dtype != ct.dtype \
                or len(ct.shape) > len(tt.shape) or not isinstance(offsets, MakeTuple):
            return None
        between = stmts[i + 1:k]
        later = {id(v) for v in defined_vars(stmts[i:k])}
        needed = [target] + [e for x in offsets.elements for e in walk_expr(x) if isinstance(e, Var)]
        if any(id(v) in later for v in needed):
            return None
        if any(v is target for s in between for v in _uses(s)) or \
                any(v is target for v in defined_vars(between)):
            return None
        return (target, offsets, k)

    def _view(self, s: AssignStmt, target: Var, offsets: MakeTuple):
        c = s.var
        shape = tuple(c.type.shape)
        pad = (1,) * (len(target.type.shape) - len(shape)) + shape
        offsets = self.expr(offsets)
        sl = get_op("tensor.slice")
        args = (self.var(target), MakeTuple(tuple(ConstInt(d) for d in pad)), offsets, None)
        t = sl.infer_type(args, s.span)
        if pad == shape:
            return [AssignStmt(c, Call("tensor.slice", args, t, s.span), s.span)]
        region = Var(f"{c.name}_region", t, c.span)
        vw = get_op("tensor.view")
        vargs = (region, MakeTuple(tuple(ConstInt(d) for d in shape)), None, None)
        vt = vw.infer_type(vargs, s.span)
        return [AssignStmt(region, Call("tensor.slice", args, t, s.span), s.span),
                AssignStmt(c, Call("tensor.view", vargs, vt, s.span), s.span)]
