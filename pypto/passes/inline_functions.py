"""InlineFunctions: every call of an ``Inline`` function (``@pl.jit.inline``) is replaced by a copy
of the callee's body, and the Inline functions leave the program.

Requires: nothing (it runs on the frontend's pre-SSA IR, before ConvertToSSA). Produces:
NoInlineFunctions — no function of kind Inline remains.

* The copy's parameters read the call's arguments; every Var the body defines is cloned per call
  site (:class:`pypto.ir.visit.Renewer`), so two call sites never share a Var. A parameter the body
  re-assigns (pre-SSA) is first copied into a fresh Var, so the caller's value is left alone.
* The callee's final ``return`` becomes the value of the call: the call's result Var (or each Var
  bound to a ``TupleGetItem`` part of a multi-value result) is assigned the returned value — a copy
  ConvertToSSA folds away — and a call nested in an expression is replaced by the returned value,
  with the copy's statements placed before the statement holding it.
* Inline functions calling Inline functions are expanded transitively (the frontend rejects
  recursion).
* An ``Opaque`` function (``@pl.jit.opaque``) that another function calls is spliced the same way:
  its orchestration loops and ``pl.at`` scopes join the caller's orchestration (the runtime has no
  orchestration-to-orchestration call). An Opaque function nobody calls (an entry) stays.
"""
from __future__ import annotations

from pypto.errors import UnsupportedFeatureError
from pypto.ir.nodes import (
    AssignStmt,
    EvalStmt,
    FuncCall,
    Function,
    Program,
    ReturnStmt,
    TupleGetItem,
    Var,
)
from pypto.ir.visit import Mutator, Renewer, defined_vars, iter_exprs, iter_stmts
from pypto.language.enums import FunctionType
from pypto.passes.context import PassContext

NAME = "InlineFunctions"
REQUIRES = ()
PRODUCES = ("NoInlineFunctions",)  # (a property name only; the verifier has no check for it yet)


def run(program: Program, ctx: PassContext) -> Program:
    called = {e.func for f in program.functions for e in iter_exprs(f.body) if isinstance(e, FuncCall)}
    inline = {f.name: f for f in program.functions
              if f.func_type == FunctionType.Inline or (f.func_type == FunctionType.Opaque and f.name in called)}
    if not inline:
        return program
    funcs = tuple(_Inliner(inline).function(f) for f in program.functions if f.name not in inline)
    return program.replace(functions=funcs)


class _Inliner(Mutator):
    def __init__(self, inline: dict[str, Function]):
        super().__init__()
        self.inline = inline
        self.tuples: dict[int, tuple] = {}   # id(result Var of an inlined call) -> returned values
        self.pending: list = []              # copies of calls nested in the statement being rebuilt

    def function(self, f: Function) -> Function:
        self.tuples = {}
        return super().function(f)

    def stmt(self, s):
        saved, self.pending = self.pending, []
        try:
            r = super().stmt(s)
            if not self.pending:
                return r
            rs = [] if r is None else list(r) if isinstance(r, (list, tuple)) else [r]
            return [*self.pending, *rs]
        finally:
            self.pending = saved

    def splice(self, call: FuncCall) -> tuple[list, tuple]:
        """The statements of one inlined copy of ``call``'s callee, and the values it returns."""
        callee = self.inline[call.func]
        ren = Renewer()
        body = list(callee.body)
        for s in iter_stmts(body[:-1] if body and isinstance(body[-1], ReturnStmt) else body):
            if isinstance(s, ReturnStmt):
                raise UnsupportedFeatureError(f"inline function '{callee.name}' may return only at its end", s.span)
        values: tuple = ()
        if body and isinstance(body[-1], ReturnStmt):
            values = body[-1].values
            body = body[:-1]
        assigned = {id(v) for v in defined_vars(body)}
        stmts: list = []
        for p, a in zip(callee.params, call.args):
            arg = self.expr(a)
            if id(p) in assigned:
                # the body re-assigns the parameter (pre-SSA): give it a Var of its own
                local = Var(p.name, p.type, p.span)
                stmts.append(AssignStmt(local, arg, call.span))
                ren.keep(p, local)
            else:
                ren.subst[id(p)] = arg
        stmts.extend(ren.renew(body))
        values = tuple(ren.expr(v) for v in values)
        # nested inline calls inside the copy (fresh Vars; the outer substitution still applies)
        stmts = list(self.stmts(stmts))
        values = tuple(self.expr(v) for v in values)
        return stmts, values

    def visit_AssignStmt(self, s: AssignStmt):
        if isinstance(s.value, FuncCall) and s.value.func in self.inline:
            stmts, values = self.splice(s.value)
            if len(values) == 1:
                # an assignment, not a substitution: in pre-SSA form the Var may be re-assigned
                # (e.g. carried through a loop), so it must hold the value where it is defined
                stmts.append(AssignStmt(self.var(s.var), values[0], s.span))
            else:
                self.tuples[id(s.var)] = values
            return stmts
        if isinstance(s.value, TupleGetItem) and isinstance(s.value.value, Var) and id(s.value.value) in self.tuples:
            return AssignStmt(self.var(s.var), self.tuples[id(s.value.value)][s.value.index], s.span)
        return self.default_stmt(s)

    def visit_EvalStmt(self, s: EvalStmt):
        if isinstance(s.expr, FuncCall) and s.expr.func in self.inline:
            return self.splice(s.expr)[0]
        return self.default_stmt(s)

    def visit_FuncCall(self, e: FuncCall):
        # a call nested in an expression: its copy runs before the statement, the value replaces it
        if e.func in self.inline:
            stmts, values = self.splice(e)
            self.pending.extend(stmts)
            if len(values) != 1:
                raise UnsupportedFeatureError(f"the {len(values)} results of inline function '{e.func}' must be "
                                              "unpacked ('a, b = f(...)') before they are used", e.span)
            return values[0]
        return self.rebuild(e)

    def visit_TupleGetItem(self, e: TupleGetItem):
        if isinstance(e.value, Var) and id(e.value) in self.tuples:
            return self.tuples[id(e.value)][e.index]
        if isinstance(e.value, FuncCall) and e.value.func in self.inline:
            stmts, values = self.splice(e.value)
            self.pending.extend(stmts)
            return values[e.index]
        return self.rebuild(e)
