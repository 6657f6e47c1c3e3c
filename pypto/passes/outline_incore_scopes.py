"""OutlineIncoreScopes: each ``with pl.at(level=CORE_GROUP)`` scope becomes an InCore function and
the scope is replaced by one call of it (one task per execution).

Requires: SSA. Produces: SplitIncoreOrch — compute lives in InCore functions, orchestration only
calls them; and CallDirections — every call's arguments fit the callee's parameter directions.

* Parameters are the scope's live-in values, in order of first use.
* A captured tensor that the scope writes (``out[...] = e``, ``pl.store``) becomes an ``Out``
  parameter, or ``InOut`` if the scope also reads it; the function returns its final version and
  the call's result replaces that version in the caller. A write whose result is not bound
  (``pl.store(t, [0, 0], out)`` as a statement, the reference's usual form) writes the parameter just
  the same: it makes it ``Out`` / ``InOut`` (so the task's runtime tag orders it against the other
  tasks touching the tensor), with no version to return.
* A tensor value computed in the scope and used after it is materialised: the caller allocates it
  (``tensor.create``) and passes it as an extra ``Out`` parameter ``ret<k>_out``.
* The enclosing function becomes an Orchestration function.
* The scope's task attributes move to the call: ``deps`` (TaskId expressions), ``no_dep_args`` and
  ``dumps`` (captured tensors -> argument indices), ``manual`` and the TaskId Var ``as tid`` binds
  (``FuncCall.task_id_var``, defined by the call's AssignStmt).
* A declared ``In`` tensor parameter that its function writes becomes ``InOut`` first
  (:mod:`pypto.passes.param_writes`: the reference writes it in place; warning PTO-W007); the
  kernels outlined here get their directions from use.
"""
from __future__ import annotations

from pypto.errors import PassError, UnsupportedFeatureError
from pypto.language.enums import AtomicType
from pypto.ir.nodes import (
    AssignStmt, Call, ConstInt, EvalStmt, ForStmt, FuncCall, Function, MakeTuple, Program, ReturnStmt, ScopeStmt,
    WhileStmt,
    TupleGetItem, Var, YieldStmt,
)
from pypto.ir.types import ArrayType, TensorType, TupleType
from pypto.ir.visit import Mutator, Renewer, child_stmts, defined_vars, iter_stmts, use_exprs, walk_expr
from pypto.language.enums import FunctionType, ParamDirection
from pypto.ops.builder import build
from pypto.ops.registry import get_op, op_trait, write_targets
from pypto.ops.traits import ViewOf
from pypto.passes import param_writes
from pypto.passes.context import PassContext

NAME = "OutlineIncoreScopes"
REQUIRES = ("SSA",)
PRODUCES = ("SplitIncoreOrch", "CallDirections")



def run(program: Program, ctx: PassContext) -> Program:
    # the directions this pass establishes (CallDirections) start from the declared ones, with each
    # written In tensor parameter inferred InOut (the reference writes it in place; PTO-W007 warns)
    program = param_writes.promote_written_in_params(program)
    out_funcs: list[Function] = []
    taken = {f.name for f in program.functions}
    for f in program.functions:
        if f.func_type not in (FunctionType.Orchestration, FunctionType.Opaque) or not _has_scope(f.body):
            out_funcs.append(f)
            continue
        o = _Outliner(f, taken)
        body = o.stmts(f.body)
        out_funcs.extend(o.outlined)
        out_funcs.append(f.replace(body=body, func_type=FunctionType.Orchestration))
    return program.replace(functions=tuple(out_funcs))


def _has_scope(stmts) -> bool:
    return any(isinstance(s, ScopeStmt) for s in iter_stmts(stmts))


class _Outliner(Mutator):
    def __init__(self, func: Function, taken: set[str]):
        super().__init__()
        self.func = func
        self.taken = taken
        self.outlined: list[Function] = []
        self.counter = 0

    def _name(self, hint: str) -> str:
        base = hint or f"{self.func.name}_incore_{self.counter}"
        self.counter += 1
        name, k = base, 1
        while name in self.taken:
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name

    def visit_ScopeStmt(self, s: ScopeStmt):
        body = s.body
        inside_defs = {id(v) for v in defined_vars(body)}
        used_outside = _uses_outside(self.func.body, s)
        # live-ins in order of first use
        live_in: list[Var] = []
        seen: set[int] = set()
        for st in iter_stmts(body):
            for e in use_exprs(st):
                for x in walk_expr(e):
                    if isinstance(x, Var) and id(x) not in inside_defs and id(x) not in seen:
                        seen.add(id(x))
                        live_in.append(x)
        # parameters follow the enclosing function's order of definition (its params first)
        order = {id(p): i for i, p in enumerate(self.func.params)}
        for v in defined_vars(self.func.body):
            order.setdefault(id(v), len(order))
        live_in.sort(key=lambda v: order.get(id(v), len(order)))
        for v in live_in:
            if isinstance(v.type, ArrayType):   # the scalar unit's stack of one kernel: never a parameter
                raise PassError(f"the pl.Array '{v.name}' is made outside this pl.at scope and used inside it; "
                                "an on-core array lives in one kernel", _first_use(body, v) or s.span,
                                f"create '{v.name}' with pl.array.create inside the scope")
        root, reads, bare = _roots(body, {id(v) for v in live_in})
        written = []  # outer tensors written in the scope, in order
        for st in body:
            for v in _top_defs(st):
                r = root.get(id(v))
                if r is not None and r not in written:
                    written.append(r)
        # written by a store whose result is not bound: a write all the same (a task that stores into
        # a tensor tagged INPUT would race with every other task on it), but no version to return
        for r in bare:
            if not any(r is w for w in written):
                written.append(r)
        final = {}
        for st in body:
            for v in _top_defs(st):
                if id(v) in root:
                    final[id(root[id(v)])] = v
        fresh_outs = [v for v in defined_vars(body) if id(v) in used_outside and id(v) not in root]
        for v in fresh_outs:
            if not isinstance(v.type, TensorType):
                raise UnsupportedFeatureError(
                    f"'{v.name}' ({type(v.type).__name__}) is computed inside a pl.at scope and used after it; "
                    "only tensors can flow out of a scope", v.span)
        for v in defined_vars(body):
            if id(v) in used_outside and id(v) in root and final.get(id(root[id(v)])) is not v:
                raise UnsupportedFeatureError(
                    f"an intermediate version of '{v.name}' is used after the scope; only the final one can be",
                    v.span)

        name = self._name(s.name_hint)
        params, dirs, args = [], [], []
        ren = Renewer()
        for v in live_in:
            p = Var(v.name, v.type, v.span)
            ren.subst[id(v)] = p
            params.append(p)
            args.append(self.var(v))
            if any(v is w for w in written):
                dirs.append(ParamDirection.InOut if id(v) in reads else ParamDirection.Out)
            else:
                dirs.append(ParamDirection.In)
        pre = []
        ret_params = []
        for k, v in enumerate(fresh_outs):
            buf = Var(f"ret{k}_out", v.type, v.span)
            create = build("tensor.create", v.span, shape=list(v.type.shape), dtype=v.type.dtype)
            pre.append(AssignStmt(buf, create, v.span))
            p = Var(f"ret{k}_out", v.type, v.span)
            params.append(p)
            dirs.append(ParamDirection.Out)
            args.append(buf)
            ret_params.append(p)
        new_body = list(ren.stmts(body))
        returned = [w for w in written if id(w) in final]
        returns = [ren.var(final[id(w)]) for w in returned]
        for v, p in zip(fresh_outs, ret_params):
            nv = ren.var(v)
            assemble = build("tensor.assemble", v.span, target=p, src=nv, offsets=[0] * len(v.type.shape))
            stored = Var(v.name + "_out", assemble.type, v.span)
            new_body.append(AssignStmt(stored, assemble, v.span))
            returns.append(stored)
        new_body.append(ReturnStmt(tuple(returns), s.span))
        rtypes = tuple(r.type for r in returns)
        self.outlined.append(Function(name, tuple(params), tuple(dirs), rtypes, tuple(new_body),
                                      FunctionType.InCore, None, s.span,
                                      attrs=((("split", s.split),) if s.split is not None else ())
                                      + ((("slot_num", s.slot_num),) if s.slot_num is not None else ())))

        # the call site: results rebind the outer values that escape the scope
        results = [final[id(w)] for w in returned] + fresh_outs
        call_type = rtypes[0] if len(rtypes) == 1 else TupleType(rtypes)
        def indices(vals, what):
            out = []
            for t in vals:
                idx = [i for i, v in enumerate(live_in) if v is t]
                if not idx:
                    raise UnsupportedFeatureError(
                        f"{what}=[{t.name}]: '{t.name}' is not used inside this pl.at scope, so it is not an "
                        "argument of the task", t.span if t.span.line else s.span)
                out.extend(idx)
            return tuple(sorted(set(out)))

        call = FuncCall(name, tuple(args), call_type, s.span, tuple(self.expr(d) for d in s.deps),
                        indices(s.no_dep_args, "no_dep_args"), indices(s.dumps, "dumps"), s.manual, s.task_id,
                        predicate=tuple(self.expr(x) for x in s.predicate),
                        block_num=self.expr(s.block_num))   # with pl.spmd(n): one task of n blocks
        out = list(pre)
        if len(results) == 1:
            out.append(AssignStmt(results[0], call, s.span))
        else:
            holder = Var(f"{name}_ret", call_type, s.span)
            out.append(AssignStmt(holder, call, s.span))
            for i, v in enumerate(results):
                out.append(AssignStmt(v, TupleGetItem(holder, i, v.type, s.span), s.span))
        return out


def _first_use(body, v: Var):
    """The span of the first statement of ``body`` that reads ``v`` (None if none has a span)."""
    for st in iter_stmts(body):
        if any(x is v for e in use_exprs(st) for x in walk_expr(e)):
            return st.span
    return None


def _top_defs(st) -> list[Var]:
    if isinstance(st, AssignStmt):
        return [st.var]
    if isinstance(st, ForStmt):
        return list(st.return_vars)
    return list(getattr(st, "return_vars", ()))


def _roots(body, outer_ids: set[int]) -> tuple[dict[int, Var], set[int], list[Var]]:
    """Map each tensor version written in ``body`` to the outer tensor it is a version of, find
    which outer tensors are read (any use other than as the destination of a write), and list the
    outer tensors written by a store whose result is not bound (``pl.store(t, offs, out)``)."""
    root: dict[int, Var] = {}
    reads: set[int] = set()
    bare: list[Var] = []

    views: dict[int, Var] = {}   # id(view made in the body) -> the outer tensor it is a view of

    def root_of(v) -> Var | None:
        if isinstance(v, Var):
            if id(v) in root:
                return root[id(v)]
            if id(v) in outer_ids:
                return v
            if id(v) in views:
                return views[id(v)]
        return None

    write_target = write_targets()  # op -> index of the argument that is written, not read

    def visit(stmts):
        for st in stmts:
            if isinstance(st, AssignStmt) and isinstance(st.value, Call) and st.value.op in write_target:
                tgt = st.value.args[write_target[st.value.op]]
                r = root_of(tgt)
                if r is not None:
                    root[id(st.var)] = r
                for i, a in enumerate(st.value.args):
                    if i != write_target[st.value.op]:
                        _note_reads(a, root_of, reads)
                continue
            if isinstance(st, EvalStmt) and isinstance(st.expr, Call) and st.expr.op in write_target:
                k = write_target[st.expr.op]
                r = root_of(st.expr.args[k])
                if r is not None and not any(r is b for b in bare):
                    bare.append(r)
                for i, a in enumerate(st.expr.args):
                    if i != k:
                        _note_reads(a, root_of, reads)
                continue
            src = _view_source(st)
            if src is not None and (root_of(src) is not None or id(src) in views):
                # a view of an outer tensor (``ob = out[b]``): a write through it writes that tensor;
                # making it reads nothing (a load of it, or its use as a value, does)
                views[id(st.var)] = root_of(src) or views[id(src)]
                for a in st.value.args:
                    if a is not src:
                        _note_reads(a, root_of, reads)
                continue
            if isinstance(st, (ForStmt, WhileStmt)):
                for it, init, rv in zip(st.iter_args, st.init_values, st.return_vars):
                    r = root_of(init)
                    if r is not None:
                        root[id(it)] = r
                        root[id(rv)] = r
                for e in ((st.start, st.stop, st.step) if isinstance(st, ForStmt) else (st.cond,)):
                    _note_reads(e, root_of, reads)
                visit(st.body)
                continue
            if child_stmts(st):
                for e in use_exprs(st):
                    _note_reads(e, root_of, reads)
                for b in child_stmts(st):
                    visit(b)
                continue
            if isinstance(st, YieldStmt):
                continue  # carrying a version is not reading it
            for e in use_exprs(st):
                _note_reads(e, root_of, reads)

    visit(body)
    return root, reads, bare


def _view_source(st):
    """The operand whose view ``st`` assigns (an op with the ViewOf trait), or None."""
    if not (isinstance(st, AssignStmt) and isinstance(st.value, Call)):
        return None
    view = op_trait(st.value.op, ViewOf)
    if view is None:
        return None
    names = [p.name for p in get_op(st.value.op).params]
    return st.value.args[names.index(view.param)]


def _note_reads(e, root_of, reads: set[int]) -> None:
    for x in walk_expr(e):
        r = root_of(x)
        if r is not None:
            reads.add(id(r))


def _uses_outside(stmts, scope: ScopeStmt) -> set[int]:
    """ids of Vars used anywhere in the function except inside ``scope``."""
    out: set[int] = set()
    for st in stmts:
        if st is scope:
            continue
        for e in use_exprs(st):
            out |= {id(x) for x in walk_expr(e) if isinstance(x, Var)}
        for b in child_stmts(st):
            out |= _uses_outside(b, scope)
    return out
