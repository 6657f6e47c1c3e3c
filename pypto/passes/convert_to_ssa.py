"""ConvertToSSA: the frontend's imperative (pre-SSA) IR becomes SSA.

Requires: nothing. Produces: SSA — every Var is defined once, before its uses.

The frontend (:mod:`pypto.frontend.parser`) re-assigns one Var for a name re-bound with the same
type, writes loops without ``init_values`` as plain loops whose body re-assigns outer Vars, and
``if`` statements without ``pl.yield_`` as branches that assign Vars. This pass builds structured
SSA from that form, function by function, in one walk that keeps the current version of every Var:

* **Versions.** The first definition of a Var keeps it; every further definition (an AssignStmt, a
  ``pl.submit`` TaskId, a ``pl.at ... as tid`` TaskId, a loop variable, iter_arg or result defined
  again) gets a fresh Var with the same name hint (the printer makes printed names unique), and
  later uses read the newest version.
* **Copies.** ``y = x`` (the frontend writes one so that re-assigning ``y`` leaves ``x`` alone)
  emits nothing: ``y`` reads ``x``'s current version from there on.
* **Loops.** A Var defined before a loop and (re-)defined anywhere in its body becomes a carried
  value: an iter_arg initialised with its version before the loop, a yield of its version at the end
  of the body and a return var that later uses read. Carried values are appended after the loop's
  explicit iter_args (existing ``init_values`` / ``pl.yield_`` stay as written); the loop body's
  other definitions are not visible after the loop.
* **Ifs.** A Var defined in a branch and also defined before the ``if`` (or in both branches)
  becomes a phi: a return var with a yield of its version in each branch (an empty else branch
  gets one that yields the version from before), appended after the explicit return vars.
* **pl.at scopes** are transparent: a scope body shares the enclosing versions; the scope's TaskId
  is defined after its body.

Already-SSA input (every pass dump after this pass) is returned unchanged, so the pass is
idempotent. A use of a Var that is not defined on every path to it raises
:class:`~pypto.errors.SSAViolationError` with the span of the expression that uses it; so does an
assignment that gives a carried value or phi a value of another type (kind, shape or dtype), with the
assignment's span. (The frontend reports both cases at parse time already; these errors catch IR
built by hand or by a pass.)
"""
from __future__ import annotations

from pypto.errors import Span, SSAViolationError
from pypto.ir.nodes import (
    AssignStmt,
    Expr,
    ForStmt,
    FuncCall,
    Function,
    IfStmt,
    Program,
    ScopeStmt,
    Stmt,
    Var,
    WhileStmt,
    YieldStmt,
)
from pypto.ir.types import describe
from pypto.ir.visit import Mutator, defined_vars, iter_stmts
from pypto.passes.context import PassContext

NAME = "ConvertToSSA"
REQUIRES = ()
PRODUCES = ("SSA",)


def run(program: Program, ctx: PassContext | None = None) -> Program:
    funcs = tuple(_SSABuilder(f).function() for f in program.functions)
    if all(a is b for a, b in zip(funcs, program.functions)):
        return program
    return program.replace(functions=funcs)


class _Renamer(Mutator):
    """Rewrites the uses of an expression to the current versions (``env``: id(Var) -> Var)."""

    def __init__(self):
        super().__init__()
        self.env: dict[int, Var] = {}
        self.where: Span = Span.unknown()   # span of the innermost enclosing expression / statement

    def var(self, v: Var) -> Var:
        cur = self.env.get(id(v))
        if cur is None:
            raise SSAViolationError(f"'{v.name}' is used here but is not defined on every path to this use",
                                    self.where, "define it before the loop / if, or on every branch")
        return cur

    def expr(self, e):
        if not isinstance(e, Expr) or isinstance(e, Var):
            return super().expr(e)
        span = getattr(e, "span", None)
        saved = self.where
        if span is not None and not span.is_unknown():
            self.where = span
        try:
            return super().expr(e)
        finally:
            self.where = saved

    def visit_FuncCall(self, e: FuncCall):
        # task_id_var is a definition (``res, tid = pl.submit(...)``), versioned by the AssignStmt
        if e.task_id_var is None:
            return self.rebuild(e)
        bare = e.replace(task_id_var=None)
        new = self.rebuild(bare)
        return e if new is bare else new.replace(task_id_var=e.task_id_var)


class _SSABuilder:
    """SSA construction for one function (see the module docstring)."""

    def __init__(self, f: Function):
        self.f = f
        self.defined: set[int] = {id(p) for p in f.params}   # Vars already defined in the output
        self.ren = _Renamer()

    def function(self) -> Function:
        env = {id(p): p for p in self.f.params}
        body = self.block(self.f.body, env)
        return self.f if _same(body, self.f.body) else self.f.replace(body=body)

    # ---------------------------------------------------------------- helpers
    def version(self, v: Var) -> Var:
        """The Var a definition of ``v`` defines: ``v`` itself the first time, a fresh one after."""
        if id(v) not in self.defined:
            self.defined.add(id(v))
            return v
        nv = Var(v.name, v.type, v.span)
        self.defined.add(id(nv))
        return nv

    def use(self, e, env: dict, span: Span):
        self.ren.env = env
        self.ren.where = span
        return self.ren.expr(e)

    def uses(self, es, env: dict, span: Span) -> tuple:
        return tuple(self.use(e, env, span) for e in es)

    # ---------------------------------------------------------------- statements
    def block(self, stmts, env: dict) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for s in stmts:
            self.stmt(s, env, out)
        return tuple(out)

    def stmt(self, s: Stmt, env: dict, out: list) -> None:
        if isinstance(s, AssignStmt):
            value = self.use(s.value, env, s.span)
            if isinstance(s.value, Var) and value.type == s.var.type:
                env[id(s.var)] = value   # a copy: later uses read the copied version directly
                return
            tid = getattr(value, "task_id_var", None)
            if tid is not None:
                ntid = self.version(tid)
                env[id(tid)] = ntid
                if ntid is not tid:
                    value = value.replace(task_id_var=ntid)
            var = self.version(s.var)
            env[id(s.var)] = var
            out.append(s if var is s.var and value is s.value else s.replace(var=var, value=value))
        elif isinstance(s, ForStmt):
            out.append(self.for_stmt(s, env))
        elif isinstance(s, WhileStmt):
            out.append(self.while_stmt(s, env))
        elif isinstance(s, IfStmt):
            out.append(self.if_stmt(s, env))
        elif isinstance(s, ScopeStmt):
            deps, no_dep, dumps = (self.uses(x, env, s.span) for x in (s.deps, s.no_dep_args, s.dumps))
            pred = s.predicate[:2] + self.uses(s.predicate[2:], env, s.span) if s.predicate else s.predicate
            blocks = self.uses((s.block_num,), env, s.span)[0] if s.block_num is not None else None
            body = self.block(s.body, env)   # transparent: definitions inside stay visible after it
            tid = s.task_id
            if tid is not None:
                tid = self.version(s.task_id)
                env[id(s.task_id)] = tid
            changed = tid is not s.task_id or not _same(body, s.body) or blocks is not s.block_num or \
                any(not _same(a, b) for a, b in ((deps, s.deps), (no_dep, s.no_dep_args), (dumps, s.dumps),
                                                 (pred, s.predicate)))
            out.append(s.replace(body=body, task_id=tid, deps=deps, no_dep_args=no_dep, dumps=dumps,
                                 predicate=pred, block_num=blocks)
                       if changed else s)
        else:
            # EvalStmt, ReturnStmt, a stray YieldStmt: uses only
            self.ren.env = env
            self.ren.where = s.span
            out.append(self.ren.default_stmt(s))

    def for_stmt(self, s: ForStmt, env: dict) -> ForStmt:
        start, stop, step = self.uses((s.start, s.stop, s.step), env, s.span)
        inits = self.uses(s.init_values, env, s.span)
        # values defined before the loop and re-defined in it are carried through it
        carried = self._carried(s, env, {id(s.loop_var), *map(id, s.iter_args)})
        benv = dict(env)
        loop_var = self.version(s.loop_var)
        benv[id(s.loop_var)] = loop_var
        _, iter_args, inits, body, rvs = self._loop(s, env, benv, inits, carried)
        new = {"loop_var": loop_var, "start": start, "stop": stop, "step": step, "iter_args": iter_args,
               "init_values": inits, "body": body, "return_vars": rvs}
        return s if all(_same(new[k], getattr(s, k)) for k in new) else s.replace(**new)

    def while_stmt(self, s: WhileStmt, env: dict) -> WhileStmt:
        """As a loop: a Var defined before the loop and re-defined in its body is carried; the
        condition reads the iter_args (it is evaluated before every iteration)."""
        inits = self.uses(s.init_values, env, s.span)
        carried = self._carried(s, env, set(map(id, s.iter_args)))
        cond, iter_args, inits, body, rvs = self._loop(s, env, dict(env), inits, carried,
                                                       lambda benv: self.use(s.cond, benv, s.span))
        new = {"cond": cond, "iter_args": iter_args, "init_values": inits, "body": body, "return_vars": rvs}
        return s if all(_same(new[k], getattr(s, k)) for k in new) else s.replace(**new)

    @staticmethod
    def _carried(s, env: dict, own: set) -> list:
        """The Vars defined before loop ``s`` and re-defined in its body (carried through it)."""
        return [v for v in _unique(defined_vars(s.body)) if id(v) in env and id(v) not in own]

    def _loop(self, s, env: dict, benv: dict, inits, carried, head=None):
        """The SSA parts a for and a while loop share: versioned iter_args (the explicit ones, then
        one per carried Var, starting from its value before the loop), the body renamed in ``benv``
        and ending in a yield of every carried value, and the return vars (which ``env`` maps the
        carried Vars to after the loop). ``head(benv)``, run once the iter_args are bound and before
        the body, gives the while's condition. Returns (head, iter_args, init_values, body, return_vars)."""
        iter_args = []
        for it in s.iter_args:
            benv[id(it)] = nit = self.version(it)
            iter_args.append(nit)
        new_its, new_inits = [], []
        for c in carried:
            _check_assigned_types(c, s.body, "loop-carried value")
            new_inits.append(env[id(c)])
            benv[id(c)] = it = Var(c.name, c.type, s.span)
            self.defined.add(id(it))
            new_its.append(it)
        first = head(benv) if head is not None else None
        body_in = list(s.body)
        yld = body_in.pop() if body_in and isinstance(body_in[-1], YieldStmt) else None
        body = list(self.block(body_in, benv))
        if yld is not None or carried:
            ys = self.uses(yld.values, benv, yld.span) if yld is not None else ()
            extra = tuple(benv[id(c)] for c in carried)
            if yld is not None and not extra and _same(ys, yld.values):
                body.append(yld)
            else:
                body.append(YieldStmt(ys + extra, yld.span if yld is not None else s.span))
        rvs = []
        for rv in s.return_vars:
            env[id(rv)] = nrv = self.version(rv)
            rvs.append(nrv)
        for c in carried:
            env[id(c)] = rv = Var(c.name, c.type, s.span)
            self.defined.add(id(rv))
            rvs.append(rv)
        return first, (*iter_args, *new_its), (*inits, *new_inits), tuple(body), tuple(rvs)

    def if_stmt(self, s: IfStmt, env: dict) -> IfStmt:
        cond = self.use(s.cond, env, s.span)
        branches = []
        for stmts in (s.then_body, s.else_body):
            stmts = list(stmts)
            yld = stmts.pop() if stmts and isinstance(stmts[-1], YieldStmt) else None
            benv = dict(env)
            body = list(self.block(stmts, benv))
            ys = self.uses(yld.values, benv, yld.span) if yld is not None else None
            branches.append((body, benv, yld, ys))
        (tb, tenv, ty, tys), (eb, eenv, ey, eys) = branches
        own = set(map(id, s.return_vars))
        phis = []
        for v in _unique([*defined_vars(s.then_body), *defined_vars(s.else_body)]):
            if id(v) in own or id(v) not in tenv or id(v) not in eenv:
                continue   # defined in one branch only: not visible after the if
            if tenv[id(v)] is eenv[id(v)]:
                env[id(v)] = tenv[id(v)]   # (both branches end with the same version: no phi)
                continue
            _check_assigned_types(v, (*s.then_body, *s.else_body), "value assigned in an if")
            phis.append(v)
        rvs = []
        for rv in s.return_vars:
            env[id(rv)] = nrv = self.version(rv)
            rvs.append(nrv)
        for v in phis:
            env[id(v)] = rv = Var(v.name, v.type, s.span)
            self.defined.add(id(rv))
            rvs.append(rv)
        for body, benv, yld, ys in ((tb, tenv, ty, tys), (eb, eenv, ey, eys)):
            extra = tuple(benv[id(v)] for v in phis)
            if yld is not None and not extra and _same(ys, yld.values):
                body.append(yld)
            elif yld is not None or extra:
                body.append(YieldStmt((ys or ()) + extra, yld.span if yld is not None else s.span))
        new = {"cond": cond, "then_body": tuple(tb), "else_body": tuple(eb), "return_vars": tuple(rvs)}
        return s if all(_same(new[k], getattr(s, k)) for k in new) else s.replace(**new)


def _check_assigned_types(v: Var, stmts, what: str) -> None:
    """Every assignment of ``v`` in ``stmts`` gives it a value of ``v``'s type (kind, shape, dtype;
    placement may differ): the versions of a carried value or phi share one type."""
    for st in iter_stmts(stmts):
        if isinstance(st, AssignStmt) and st.var is v and not _same_value_type(st.value.type, v.type):
            raise SSAViolationError(f"{what} '{v.name}' has type {describe(v.type)} but is assigned a value of type "
                                    f"{describe(st.value.type)} here", st.span,
                                    "a carried value keeps its type; use a new name for a value of another type")


def _same_value_type(a, b) -> bool:
    from pypto.ir.scalar_compat import same_representation

    if same_representation(a, b):   # INT64 and INDEX: one 64-bit representation (the reference's rule)
        return True
    return type(a) is type(b) and getattr(a, "shape", None) == getattr(b, "shape", None) \
        and getattr(a, "dtype", None) == getattr(b, "dtype", None)


def _unique(vs) -> list[Var]:
    seen: set[int] = set()
    out = []
    for v in vs:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def _same(a, b) -> bool:
    """Element-wise identity of two sequences (or identity of two nodes)."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))
    return a is b
