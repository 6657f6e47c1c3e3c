"""The ``In`` contract: a function never writes a tensor parameter it declares ``In``.

Decision (issue 13, item 4). A tensor parameter without ``pl.Out`` / ``pl.InOut`` is ``In``:
read-only. A function whose body writes one (``x[...] = e``, ``pl.store(t, offs, x)``,
``pl.assemble(x, ...)``, or passing ``x`` — or a slice of it — to a callee's ``Out`` / ``InOut``
parameter) is rejected at compile time with the span of the write and the fix.

Why an error and not a silent rule. The reference keeps the same invariant in its IR (its
CallDirectionsResolved verifier never lets an ``In`` parameter receive a writing tag); where it
*infers* directions — the InCore functions its outliner creates — it upgrades a written ``In`` to
``Out`` / ``InOut``, and this compiler does the same for the kernels it outlines from ``pl.at``
scopes. A *declared* signature is different: it is the caller's contract. Whether the caller's
tensor changes must not depend on the executor (the simulator used to give the device its own copy
of an ``In`` tensor and drop the write, ``torch_codegen`` wrote the caller's tensor), and guessing
``Out`` vs ``InOut`` for the user would change which arguments a call needs. Naming the missing
``pl.Out`` at the line that writes is what the user needs in practice (the usual cause is a
forgotten ``pl.Out[...]`` around an output's annotation).

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
    """A function writes a tensor parameter it declares ``In`` (read-only)."""


def check_program(program: Program) -> None:
    """Raise :class:`InParamWriteError` at the first write of an ``In`` tensor parameter."""
    funcs = {f.name: f for f in program.functions}
    targets = write_targets()   # op -> index of the argument it writes (its result is a new version of it)
    for f in program.functions:
        _check_function(f, funcs, targets)


def _check_function(f: Function, funcs: dict, targets: dict) -> None:
    ins = {id(p): p for p, d in zip(f.params, f.directions) if d == ParamDirection.In and isinstance(p.type, TensorType)}
    if not ins:
        return
    root: dict[int, Var] = dict(ins)                # id(Var) -> the In parameter it is a version/view of
    tuple_root: dict[int, list] = {}                # id(tuple Var) -> per element: In parameter or None

    def of(e):
        if isinstance(e, TupleGetItem) and isinstance(e.value, Var):
            roots = tuple_root.get(id(e.value))
            return roots[e.index] if roots and e.index < len(roots) else None
        return root.get(id(e)) if isinstance(e, Var) else None

    def fail(p: Var, span: Span, how: str):
        where = f"'{f.name}'"
        raise InParamWriteError(
            f"{where} writes its In parameter '{p.name}' ({how}); an In tensor is read-only, and whether the "
            f"caller's tensor changes must not depend on the executor",
            span, hint=f"declare it pl.Out[...] in the signature of {where} if the function only writes "
                       f"'{p.name}', or pl.InOut[...] if it also reads it")

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
