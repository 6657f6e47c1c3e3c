"""FlattenCallExpr: every call nested in another expression is bound to a temporary first.

Requires: SSA. Produces: SSA, NoNestedCalls — an op call (``Call``) or function call (``FuncCall``)
appears only as the whole value of an AssignStmt or EvalStmt.

The frontend keeps ``pl.mul(pl.add(a, b), 2.0)`` nested (and a scalar read inside arithmetic, e.g.
``t[0, 0] + 1``); the later passes and the code generators read one call per statement. This pass
hoists each call found in the arguments of a call (also inside an offsets / shape list), in a
binary or unary scalar expression, a ``TupleGetItem``, an if condition, loop bounds and init
values, a yield or return, or the task attributes of a scope into
``AssignStmt(<op>__tmp_v<N>, call)`` right before the statement, innermost first and arguments left
to right — the order the calls are evaluated in. ``N`` counts per function; the printer makes the
printed names unique. Each temporary is a fresh Var defined once, so SSA is kept; a program
without nested calls is returned unchanged.
"""
from __future__ import annotations

from dataclasses import fields

from pypto.ir.nodes import (
    AssignStmt,
    Call,
    EvalStmt,
    Expr,
    ForStmt,
    FuncCall,
    Function,
    IfStmt,
    WhileStmt,
    Program,
    ReturnStmt,
    ScopeStmt,
    Stmt,
    Var,
    YieldStmt,
)
from pypto.ir.visit import Mutator
from pypto.passes.context import PassContext

NAME = "FlattenCallExpr"
REQUIRES = ("SSA",)
PRODUCES = ("SSA", "NoNestedCalls")

# the use fields of each statement kind whose expressions may not be calls at all
_HEADER_FIELDS = {
    ForStmt: ("start", "stop", "step", "init_values"),
    IfStmt: ("cond",),
    # (not the condition: it is evaluated every iteration, a call hoisted before the loop would run
    # once; the parser refuses a call there and NoNestedCalls reports one a pass put there)
    WhileStmt: ("init_values",),
    ReturnStmt: ("values",),
    YieldStmt: ("values",),
    ScopeStmt: ("deps", "no_dep_args", "dumps"),
}


def run(program: Program, ctx: PassContext | None = None) -> Program:
    funcs = tuple(_Flattener().function(f) for f in program.functions)
    if all(a is b for a, b in zip(funcs, program.functions)):
        return program
    return program.replace(functions=funcs)


class _Flattener(Mutator):
    def __init__(self):
        super().__init__()
        self.count = 0

    def function(self, f: Function) -> Function:
        self.count = 0
        body = self.stmts(f.body)
        return f if _same(body, f.body) else f.replace(body=body)

    # ---------------------------------------------------------------- expressions
    def hoist(self, e, pre: list):
        """``e`` as a call-free expression: each call in it (``e`` itself included) is bound to a
        temporary appended to ``pre``, innermost first."""
        if isinstance(e, (Call, FuncCall)):
            e = self.children(e, pre)
            base = e.op.split(".")[-1] if isinstance(e, Call) else e.func
            tmp = Var(f"{base}__tmp_v{self.count}", e.type, e.span)
            self.count += 1
            pre.append(AssignStmt(tmp, e, e.span))
            return tmp
        return self.children(e, pre)

    def children(self, e, pre: list):
        """``e`` with every call *below* it hoisted (``e`` itself stays what it is)."""
        if not isinstance(e, Expr) or isinstance(e, Var):
            return e
        changes = {}
        for f in fields(e):
            if f.name in ("type", "span", "task_id_var"):   # task_id_var is a definition
                continue
            v = getattr(e, f.name)
            if isinstance(v, tuple):
                nv = tuple(self.hoist(x, pre) for x in v)
                if not _same(nv, v):
                    changes[f.name] = nv
            elif isinstance(v, Expr):
                nv = self.hoist(v, pre)
                if nv is not v:
                    changes[f.name] = nv
        return e.replace(**changes) if changes else e

    # ---------------------------------------------------------------- statements
    def stmt(self, s: Stmt):
        pre: list[Stmt] = []
        if isinstance(s, AssignStmt):
            value = self.children(s.value, pre)
            new = s if value is s.value else s.replace(value=value)
        elif isinstance(s, EvalStmt):
            value = self.children(s.expr, pre)
            new = s if value is s.expr else s.replace(expr=value)
        else:
            changes = {}
            for name in _HEADER_FIELDS.get(type(s), ()):
                v = getattr(s, name)
                nv = tuple(self.hoist(x, pre) for x in v) if isinstance(v, tuple) else self.hoist(v, pre)
                if not _same(nv, v):
                    changes[name] = nv
            for name in ("body", "then_body", "else_body"):
                if hasattr(s, name):
                    body = self.stmts(getattr(s, name))
                    if not _same(body, getattr(s, name)):
                        changes[name] = body
            new = s.replace(**changes) if changes else s
        return [*pre, new] if pre else new


def _same(a, b) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))
    return a is b
