"""Walking and rebuilding IR.

* :func:`iter_stmts` / :func:`iter_exprs` walk statements and expressions (pre-order).
* :class:`Mutator` rebuilds a tree bottom-up; subclasses override ``visit_<Node>`` for the nodes
  they change. It keeps a Var substitution map, so a pass that retypes a Var (e.g. to give a tile a
  memory space) defines the new Var once and every later use follows.
"""
from __future__ import annotations

from dataclasses import fields
from typing import Any, Iterator

from pypto.language.enums import TASK_TYPES
from pypto.ir.nodes import (
    AssignStmt, Expr, ForStmt, FuncCall, Function, IfStmt, Node, Program, ScopeStmt, Stmt, Var,
)
from pypto.ir.nodes import Call, EvalStmt, ReturnStmt, WhileStmt, YieldStmt


def child_stmts(s: Stmt) -> list[tuple[Stmt, ...]]:
    """The statement lists nested in ``s`` (loop body, if branches, scope body)."""
    if isinstance(s, (ForStmt, WhileStmt)):
        return [s.body]
    if isinstance(s, IfStmt):
        return [s.then_body, s.else_body]
    if isinstance(s, ScopeStmt):
        return [s.body]
    return []


def iter_stmts(stmts) -> Iterator[Stmt]:
    """Every statement, nested ones included, in pre-order."""
    for s in stmts:
        yield s
        for body in child_stmts(s):
            yield from iter_stmts(body)


def use_exprs(s: Stmt) -> list[Expr]:
    """The expressions a statement reads (not the Vars it defines, not nested statements)."""
    if isinstance(s, AssignStmt):
        return [s.value]
    if isinstance(s, ForStmt):
        return [s.start, s.stop, s.step, *s.init_values]
    if isinstance(s, WhileStmt):
        # (the condition reads the iter_args: listed with the uses, it is evaluated every iteration)
        return [*s.init_values, s.cond]
    if isinstance(s, IfStmt):
        return [s.cond]
    if isinstance(s, (ReturnStmt, YieldStmt)):
        return list(s.values)
    if isinstance(s, EvalStmt):
        return [s.expr]
    if isinstance(s, ScopeStmt):
        return [*s.deps, *s.no_dep_args, *s.dumps, *s.predicate[2:],
                *((s.block_num,) if s.block_num is not None else ())]
    return []


def iter_exprs(stmts) -> Iterator[Expr]:
    """Every expression (nested sub-expressions included) of every statement, pre-order."""
    for s in iter_stmts(stmts):
        for e in use_exprs(s):
            yield from _walk_expr(e)


# expression class -> the names of its fields that hold sub-expressions (or tuples of them)
_EXPR_FIELDS: dict[type, tuple[str, ...]] = {}


def _expr_fields(cls: type) -> tuple[str, ...]:
    names = _EXPR_FIELDS.get(cls)
    if names is None:
        # task_id_var is a definition (res, tid = pl.submit(...)), not a use
        names = _EXPR_FIELDS[cls] = tuple(f.name for f in fields(cls) if f.name not in ("type", "span", "task_id_var"))
    return names


def _walk_expr(e: Any) -> Iterator[Expr]:
    """``e`` and its sub-expressions, pre-order (fields in declaration order, tuple fields element by
    element; a tuple nested in a tuple is not entered). An explicit stack instead of recursive
    generators, and each class's fields looked up once: every verifier check after every pass walks
    the whole program through here, and the recursive form was a fifth of a compile."""
    if not isinstance(e, Expr):
        return
    stack = [e]
    pop, push = stack.pop, stack.append
    fields_of = _EXPR_FIELDS.get
    while stack:
        e = pop()
        yield e
        if isinstance(e, Var):
            continue
        cls = e.__class__
        names = fields_of(cls) or _expr_fields(cls)
        kids = []
        for name in names:
            v = getattr(e, name)
            if isinstance(v, tuple):
                kids.extend(x for x in v if isinstance(x, Expr))
            elif isinstance(v, Expr):
                kids.append(v)
        kids.reverse()
        stack.extend(kids)


def uses(stmts) -> set[int]:
    """ids of every Var read somewhere in ``stmts`` (definitions excluded)."""
    return {id(x) for x in iter_exprs(stmts) if isinstance(x, Var)}


def iter_calls(stmts) -> Iterator[tuple[Stmt, Any]]:
    """Every op call (``Call``) read by every statement, nested statements included: ``(stmt, call)``."""
    for s in iter_stmts(stmts):
        for e in use_exprs(s):
            for c in _walk_expr(e):
                if isinstance(c, Call):
                    yield s, c


def walk_expr(e: Any) -> Iterator[Expr]:
    """``e`` and all its sub-expressions, pre-order."""
    return _walk_expr(e)


def defined_vars(stmts) -> list[Var]:
    """Vars defined in ``stmts`` (assignments, loop vars, iter_args, return_vars), in order."""
    out: list[Var] = []
    for s in iter_stmts(stmts):
        if isinstance(s, AssignStmt):
            out.append(s.var)
            if getattr(s.value, "task_id_var", None) is not None:
                out.append(s.value.task_id_var)
        elif isinstance(s, ScopeStmt) and s.task_id is not None:
            out.append(s.task_id)
        elif isinstance(s, ForStmt):
            out.extend((s.loop_var, *s.iter_args, *s.return_vars))
        elif isinstance(s, WhileStmt):
            out.extend((*s.iter_args, *s.return_vars))
        elif isinstance(s, IfStmt):
            out.extend(s.return_vars)
    return out


class Mutator:
    """Rebuilds IR bottom-up with a Var substitution map (``self.subst``: id(old) -> new Var)."""

    def __init__(self):
        self.subst: dict[int, Var] = {}

    # -- vars
    def var(self, v: Var) -> Var:
        """The current replacement of ``v`` (itself if none)."""
        return self.subst.get(id(v), v)

    def redefine(self, old: Var, new: Var) -> Var:
        """Make every later use of ``old`` read ``new``."""
        self.subst[id(old)] = new
        return new

    # -- generic dispatch
    def expr(self, e: Any) -> Any:
        if isinstance(e, Var):
            return self.var(e)
        if not isinstance(e, Expr):
            return e
        method = getattr(self, f"visit_{type(e).__name__}", None)
        if method is not None:
            return method(e)
        return self.rebuild(e)

    def rebuild(self, node: Node) -> Node:
        """``node`` with its expression children mutated (no change -> the same object)."""
        changes = {}
        cls = node.__class__
        names = _REBUILD_FIELDS.get(cls)
        if names is None:
            names = _REBUILD_FIELDS[cls] = tuple(
                f.name for f in fields(cls) if f.name not in ("type", "span", "body", "then_body", "else_body"))
        for name in names:
            v = getattr(node, name)
            if isinstance(v, tuple):
                nv = tuple(self.expr(x) for x in v)
                if any(a is not b for a, b in zip(v, nv)):
                    changes[name] = nv
            elif isinstance(v, Expr):
                nv = self.expr(v)
                if nv is not v:
                    changes[name] = nv
        return node.replace(**changes) if changes else node

    def stmts(self, stmts) -> tuple[Stmt, ...]:
        """The mutated statement list; the same tuple when every statement came back unchanged."""
        out: list[Stmt] = []
        same = True
        for s in stmts:
            r = self.stmt(s)
            if r is s:
                out.append(r)
                continue
            same = False
            if r is None:
                continue
            if isinstance(r, (list, tuple)):
                out.extend(r)
            else:
                out.append(r)
        return stmts if same and isinstance(stmts, tuple) else tuple(out)

    def stmt(self, s: Stmt):
        """Return a statement, a list of statements, or None to delete it."""
        method = getattr(self, f"visit_{type(s).__name__}", None)
        if method is not None:
            return method(s)
        return self.default_stmt(s)

    def default_stmt(self, s: Stmt):
        new = self.rebuild(s)
        nested = {}
        for name in ("body", "then_body", "else_body"):
            if hasattr(s, name):
                old = getattr(s, name)
                body = self.stmts(old)
                if body is not old:
                    nested[name] = body
        return new.replace(**nested) if nested else new

    # Unchanged IR comes back as the same objects (a statement, a body, a function, the program):
    # passes that touch one function leave the others identical, and the verifier does not check a
    # function again that it accepted earlier in the compile (pypto.ir.verifier.verify).
    def function(self, f: Function) -> Function:
        self.subst = {}
        params = tuple(self.var(p) for p in f.params)
        body = self.stmts(f.body)
        if body is f.body and all(a is b for a, b in zip(params, f.params)):
            return f
        return f.replace(params=params, body=body)

    def program(self, p: Program) -> Program:
        functions = tuple(self.function(f) for f in p.functions)
        if all(a is b for a, b in zip(functions, p.functions)) and len(functions) == len(p.functions):
            return p
        return p.replace(functions=functions)


# node class -> the fields Mutator.rebuild mutates (not type, span or the nested statement lists)
_REBUILD_FIELDS: dict[type, tuple[str, ...]] = {}


def retype_var(v: Var, new_type) -> Var:
    """A fresh Var with the same name and span and another type."""
    return Var(v.name, new_type, v.span)




class Renewer(Mutator):
    """Copies a statement list giving every Var it defines a fresh identity (same name and type).

    Used when statements move into another function or are duplicated (inlining, unrolling): Vars
    must not be shared between functions or copies. ``subst`` may pre-map free Vars (e.g. outer
    values to the new function's parameters). One original Var gets one copy, however often it is
    defined, so pre-SSA input (a Var assigned several times) stays pre-SSA with the same meaning;
    use :meth:`renew` to copy such statements.
    """

    def __init__(self):
        super().__init__()
        self.renewed: dict[int, Var] = {}   # id(original) -> the Var its definitions define in the copy

    def fresh(self, v: Var) -> Var:
        """The copy of ``v`` at one of its definitions (the same copy for every definition)."""
        new = self.renewed.get(id(v))
        if new is None:
            new = self.renewed[id(v)] = Var(v.name, self.retype(v.type), v.span)
        return self.redefine(v, new)

    def retype(self, t):
        """``t`` with the scalars of a runtime valid shape read through the substitution (a tile
        whose valid extents are values of the code being copied, or outer values that became
        parameters)."""
        from pypto.ir.types import runtime_valid

        if not runtime_valid(t):
            return t
        return t.with_(valid_shape=tuple(d if isinstance(d, int) else self.expr(d) for d in t.valid_shape))

    def keep(self, v: Var, new: Var) -> None:
        """Make the definitions of ``v`` in the copy define ``new`` (e.g. ``v`` itself, for a Var the
        copied statements re-assign but that lives on outside them) and its uses read ``new``."""
        self.renewed[id(v)] = new
        self.redefine(v, new)

    def renew(self, stmts) -> tuple[Stmt, ...]:
        """Copy ``stmts``. Every Var they define is mapped to its copy before the walk, so that a use
        reached before a re-definition (in pre-SSA form, a loop body reading what its previous
        iteration assigned) reads the copy too."""
        for v in defined_vars(stmts):
            if id(v) not in self.renewed:
                self.fresh(v)
        return self.stmts(stmts)

    def visit_AssignStmt(self, s):
        value = self.expr(s.value)
        tid = getattr(value, "task_id_var", None)
        if tid is not None:   # ``res, tid = pl.submit(...)`` defines the TaskId too
            value = value.replace(task_id_var=self.fresh(s.value.task_id_var))
        return s.replace(value=value, var=self.fresh(s.var))

    def visit_ScopeStmt(self, s):
        deps, no_dep, dumps = (tuple(self.expr(x) for x in xs) for xs in (s.deps, s.no_dep_args, s.dumps))
        pred = tuple(self.expr(x) for x in s.predicate)
        blocks = self.expr(s.block_num)
        body = self.stmts(s.body)
        tid = self.fresh(s.task_id) if s.task_id is not None else None   # defined after the body
        return s.replace(deps=deps, no_dep_args=no_dep, dumps=dumps, body=body, task_id=tid, predicate=pred,
                         block_num=blocks)

    def visit_ForStmt(self, s):
        start, stop, step = self.expr(s.start), self.expr(s.stop), self.expr(s.step)
        inits = tuple(self.expr(v) for v in s.init_values)
        lv = self.fresh(s.loop_var)
        its = tuple(self.fresh(v) for v in s.iter_args)
        body = self.stmts(s.body)
        rvs = tuple(self.fresh(v) for v in s.return_vars)
        return s.replace(start=start, stop=stop, step=step, init_values=inits, loop_var=lv, iter_args=its,
                         body=body, return_vars=rvs)

    def visit_WhileStmt(self, s):
        inits = tuple(self.expr(v) for v in s.init_values)
        its = tuple(self.fresh(v) for v in s.iter_args)
        cond = self.expr(s.cond)
        body = self.stmts(s.body)
        rvs = tuple(self.fresh(v) for v in s.return_vars)
        return s.replace(init_values=inits, iter_args=its, cond=cond, body=body, return_vars=rvs)

    def visit_IfStmt(self, s):
        cond = self.expr(s.cond)
        tb, eb = self.stmts(s.then_body), self.stmts(s.else_body)
        return s.replace(cond=cond, then_body=tb, else_body=eb, return_vars=tuple(self.fresh(v) for v in s.return_vars))


class Visitor:
    """Walks IR read-only, pre-order; subclasses override ``visit_<Node>`` (call :meth:`generic_visit`
    from there to keep descending). ``visit(node)`` takes a Program, Function, statement or expression."""

    def visit(self, node: Any) -> None:
        if isinstance(node, (list, tuple)):
            for x in node:
                self.visit(x)
            return
        if not isinstance(node, Node):
            return
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is not None:
            method(node)
        else:
            self.generic_visit(node)

    def generic_visit(self, node: Node) -> None:
        """Visit every child node (expressions, statements, functions) of ``node``."""
        for f in fields(node):
            if f.name in ("type", "span"):
                continue
            v = getattr(node, f.name)
            if isinstance(v, (Node, list, tuple)):
                self.visit(v)


def task_sites(f: Function, funcs: dict) -> dict[int, int]:
    """``id(FuncCall) -> site``: the ordinal of each InCore call of orchestration ``f`` in pre-order
    (the order codegen, the verifier and AutoDeriveTaskDependencies all walk)."""
    sites: dict[int, int] = {}
    for s in iter_stmts(f.body):
        for e in use_exprs(s):
            for c in walk_expr(e):
                if isinstance(c, FuncCall) and id(c) not in sites:
                    g = funcs.get(c.func)
                    if g is not None and g.func_type in TASK_TYPES:
                        sites[id(c)] = len(sites)
    return sites
