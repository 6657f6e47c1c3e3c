"""Writes into tensor parameters declared ``In``: found, reported, and inferred as ``InOut``.

Decision (issue 14, item 2; it replaces issue 13's compile error). A tensor parameter without
``pl.Out`` / ``pl.InOut`` is ``In``. A function whose body writes one (``x[...] = e``,
``pl.store(t, offs, x)``, ``pl.assemble(x, ...)``, or passing ``x`` — or a view of it — to a
callee's ``Out`` / ``InOut`` parameter) runs as in the reference: tensors are passed by reference,
so the write lands in the caller's tensor (the reference's programs rely on it: an Opaque ``main``
that ``pl.assemble``-s into its plain ``c`` and a harness that reads ``c`` back). What the reference
leaves implicit we make explicit, so that no executor and no dependency analysis can see the
parameter as read-only: :func:`promote_written_in_params` turns each written ``In`` into ``InOut``
(not ``Out``: the write may be partial and the function may read the old contents first, and
``InOut`` orders the tasks against earlier readers *and* writers), to a fixed point across calls (a
function passing its ``In`` parameter to a callee's written parameter writes it too). From then on
the program is an ordinary one with an ``InOut`` parameter: DeriveCallDirections tags its tasks
``INOUT``, the runtime orders a later reader after the write, both executors write the caller's
tensor in place. The warning PTO-W007 (:func:`find_writes`, a PRE_PIPELINE diagnostic) names each
such write at its line with the fix (declare ``pl.InOut`` / ``pl.Out``); ``disabled_diagnostics``
silences it.

Runs on SSA form (a version of a parameter is a distinct Var), before OutlineIncoreScopes.
"""
from __future__ import annotations

from pypto.errors import PyptoError, Span
from pypto.ir.nodes import (
    AssignStmt, Call, ForStmt, FuncCall, Function, IfStmt, Program, ReturnStmt, ScopeStmt, TupleGetItem, Var, WhileStmt,
    YieldStmt,
)
from pypto.ir.visit import child_stmts, iter_stmts
from pypto.ir.types import TensorType
from pypto.language.enums import ParamDirection
from pypto.ops.registry import get_op, op_trait, write_targets
from pypto.ops.traits import ViewOf



class InParamWriteError(PyptoError):
    """A function writes a tensor parameter it declares ``In``: raised by :func:`check_program`
    (the strict form, for tools that want the declared signature enforced)."""


def find_writes(program: Program) -> list[tuple[Function, Var, Span, str]]:
    """Every tensor parameter declared ``In`` that its function writes, directly or through a callee
    (after the callee's own written ``In`` parameters count as written): ``(function, parameter,
    span of the first write, how)``, in program order."""
    found, _ = _fixed_point(program)
    return found


def promote_written_in_params(program: Program) -> Program:
    """``program`` with each written ``In`` tensor parameter declared ``InOut`` (see the module
    docstring); the program itself when there is none."""
    found, funcs = _fixed_point(program)
    if not found:
        return program
    return program.replace(functions=tuple(funcs[f.name] for f in program.functions))


def check_program(program: Program) -> None:
    """Raise :class:`InParamWriteError` at the first write of an ``In`` tensor parameter."""
    found = find_writes(program)
    if found:
        f, p, span, how = found[0]
        where = f"'{f.name}'"
        raise InParamWriteError(
            f"{where} writes its In parameter '{p.name}' ({how}); declare it pl.InOut (or pl.Out)",
            span, hint=f"declare it pl.Out[...] in the signature of {where} if the function only writes "
                       f"'{p.name}', or pl.InOut[...] if it also reads it")


def _fixed_point(program: Program):
    """Promote written In tensor parameters to InOut until no function changes (a promotion can
    make a caller's argument a write). Returns the findings (against the declared signatures) and
    the functions by name with their final directions."""
    funcs = {f.name: f for f in program.functions}
    targets = write_targets()   # op -> index of the argument it writes (its result is a new version of it)
    found: list = []
    changed = True
    while changed:
        changed = False
        for name in list(funcs):
            f = funcs[name]
            writes = _in_writes(f, funcs, targets)
            if not writes:
                continue
            by_param = {id(p): (span, how) for p, span, how in writes}
            dirs = tuple(ParamDirection.InOut if id(p) in by_param else d for p, d in zip(f.params, f.directions))
            found.extend((f, p, *by_param[id(p)]) for p in f.params if id(p) in by_param)
            funcs[name] = f.replace(directions=dirs)
            changed = True
    order = {f.name: i for i, f in enumerate(program.functions)}
    found.sort(key=lambda x: (order[x[0].name], x[2].line, x[2].col))
    return found, funcs


def _in_writes(f: Function, funcs: dict, targets: dict) -> list[tuple[Var, Span, str]]:
    """The In tensor parameters ``f`` writes: (parameter, span of its first write, how)."""
    writes: dict[int, tuple] = {}
    ins = {id(p): p for p, d in zip(f.params, f.directions) if d == ParamDirection.In and isinstance(p.type, TensorType)}
    if not ins:
        return []
    root: dict[int, Var] = dict(ins)                # id(Var) -> the In parameter it is a version/view of
    tuple_root: dict[int, list] = {}                # id(tuple Var) -> per element: In parameter or None

    def of(e):
        if isinstance(e, TupleGetItem) and isinstance(e.value, Var):
            roots = tuple_root.get(id(e.value))
            return roots[e.index] if roots and e.index < len(roots) else None
        return root.get(id(e)) if isinstance(e, Var) else None

    def fail(p: Var, span: Span, how: str):
        writes.setdefault(id(p), (p, span, how))

    def bind(var: Var, r) -> None:
        if r is not None:
            root[id(var)] = r

    def walk(stmts) -> None:
        for s in stmts:
            if isinstance(s, AssignStmt):
                v = s.value
                if isinstance(v, Call) and v.op in targets:
                    r = of(v.args[targets[v.op]])
                    if r is not None:
                        fail(r, v.span if v.span.line else s.span, f"{v.op} into it")
                elif isinstance(v, Call) and op_trait(v.op, ViewOf) is not None:
                    # the result is a view of an operand: a write to it writes that operand
                    view = op_trait(v.op, ViewOf)
                    bind(s.var, of(v.args[[p.name for p in get_op(v.op).params].index(view.param)]))
                elif isinstance(v, FuncCall):
                    call(s, v)
                elif isinstance(v, (Var, TupleGetItem)):
                    bind(s.var, of(v))
            elif isinstance(s, (ForStmt, WhileStmt)):
                for it, init, rv in zip(s.iter_args, s.init_values, s.return_vars):
                    bind(it, of(init))
                    bind(rv, of(init))
                walk(s.body)
            elif isinstance(s, IfStmt):
                walk(s.then_body)
                walk(s.else_body)
                for body in (s.then_body, s.else_body):
                    if body and isinstance(body[-1], YieldStmt):
                        for rv, y in zip(s.return_vars, body[-1].values):
                            bind(rv, of(y))
            elif isinstance(s, ScopeStmt):
                walk(s.body)
            elif hasattr(s, "expr") and isinstance(getattr(s, "expr"), FuncCall):
                call(None, s.expr)

    def call(s, c: FuncCall) -> None:
        g = funcs.get(c.func)
        if g is None:
            return
        for a, d, p in zip(c.args, g.directions, g.params):
            r = of(a)
            if r is not None and d in (ParamDirection.Out, ParamDirection.InOut):
                fail(r, c.span, f"passed to parameter '{p.name}' of '{g.name}', which is "
                                f"{'pl.Out' if d == ParamDirection.Out else 'pl.InOut'}")

    walk(f.body)
    return list(writes.values())


def returned_params(f: Function) -> list[int]:
    """For each value ``f`` returns, the index of the parameter it is a version of (writes into
    ``out`` return ``out``'s new version). ``-1`` when a return value is not a parameter version.
    (DeriveCallDirections, AutoDeriveTaskDependencies, the orchestration generator and the
    reference executor use it; also importable from :mod:`pypto.codegen.common`.)"""
    root: dict[int, int] = {id(p): i for i, p in enumerate(f.params)}
    targets = write_targets()
    rets = []

    def walk(stmts) -> None:
        for s in stmts:
            if isinstance(s, AssignStmt):
                v = s.value
                if isinstance(v, Call) and v.op in targets and id(v.args[targets[v.op]]) in root:
                    root[id(s.var)] = root[id(v.args[targets[v.op]])]
                elif isinstance(v, Var) and id(v) in root:
                    root[id(s.var)] = root[id(v)]
            elif isinstance(s, (ForStmt, WhileStmt)):
                for it, init, rv in zip(s.iter_args, s.init_values, s.return_vars):
                    if id(init) in root:
                        root[id(it)] = root[id(rv)] = root[id(init)]
            elif isinstance(s, ReturnStmt):
                rets.append(s)
            for body in child_stmts(s):
                walk(body)
            if isinstance(s, IfStmt) and s.return_vars:
                # a phi is a version of a parameter when both branches yield versions of it
                # (`if is_first: mi_out = pl.store(.., mi) else: mi_out = pl.store(.., mi)`)
                ys = [b[-1] if b and isinstance(b[-1], YieldStmt) else None for b in (s.then_body, s.else_body)]
                if all(ys):
                    for k, rv in enumerate(s.return_vars):
                        src = {root.get(id(y.values[k]), -1) if isinstance(y.values[k], Var) else -1 for y in ys}
                        if len(src) == 1 and -1 not in src:
                            root[id(rv)] = src.pop()

    walk(f.body)
    ret = rets[-1] if rets else None
    if ret is None:
        return []

    def source(v) -> int:
        if isinstance(v, Var):
            return root.get(id(v), -1)
        # ``return pl.store(t, offs, out)`` before the passes name the store's result
        if isinstance(v, Call) and v.op in targets and isinstance(v.args[targets[v.op]], Var):
            return root.get(id(v.args[targets[v.op]]), -1)
        return -1
    return [source(v) for v in ret.values]
