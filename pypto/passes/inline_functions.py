"""InlineFunctions: every call of an ``Inline`` function (``@pl.jit.inline``) is replaced by a copy
of the callee's body, and the Inline functions leave the program.

Requires: SSA. Produces: NoInlineFunctions — no function of kind Inline remains.

* The copy's parameters read the call's arguments; every Var the body defines is cloned per call
  site (:class:`pypto.ir.visit.Renewer`), so two call sites never share a Var.
* The callee's final ``return`` becomes the value of the call: uses of the call's result (or of the
  ``TupleGetItem`` parts of a multi-value result) read the returned values directly.
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
from pypto.ir.visit import Mutator, Renewer, iter_exprs, iter_stmts
from pypto.language.enums import FunctionType
from pypto.passes.context import PassContext

NAME = "InlineFunctions"
REQUIRES = ("SSA",)
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

    def function(self, f: Function) -> Function:
        self.tuples = {}
        return super().function(f)

    def splice(self, call: FuncCall) -> tuple[list, tuple]:
        """The statements of one inlined copy of ``call``'s callee, and the values it returns."""
        callee = self.inline[call.func]
        ren = Renewer()
        for p, a in zip(callee.params, call.args):
            ren.subst[id(p)] = self.expr(a)
        body = list(callee.body)
        for s in iter_stmts(body[:-1] if body and isinstance(body[-1], ReturnStmt) else body):
            if isinstance(s, ReturnStmt):
                raise UnsupportedFeatureError(f"inline function '{callee.name}' may return only at its end", s.span)
        values: tuple = ()
        if body and isinstance(body[-1], ReturnStmt):
            values = body[-1].values
            body = body[:-1]
        stmts = list(ren.stmts(body))
        values = tuple(ren.expr(v) for v in values)
        # nested inline calls inside the copy (fresh Vars; the outer substitution still applies)
        stmts = list(self.stmts(stmts))
        values = tuple(self.expr(v) for v in values)
        return stmts, values

    def visit_AssignStmt(self, s: AssignStmt):
        if isinstance(s.value, FuncCall) and s.value.func in self.inline:
            stmts, values = self.splice(s.value)
            if len(values) == 1:
                self.redefine(s.var, values[0])
            else:
                self.tuples[id(s.var)] = values
            return stmts
        if isinstance(s.value, TupleGetItem) and isinstance(s.value.value, Var) and id(s.value.value) in self.tuples:
            self.redefine(s.var, self.tuples[id(s.value.value)][s.value.index])
            return None
        return self.default_stmt(s)

    def visit_EvalStmt(self, s: EvalStmt):
        if isinstance(s.expr, FuncCall) and s.expr.func in self.inline:
            return self.splice(s.expr)[0]
        return self.default_stmt(s)

    def visit_TupleGetItem(self, e: TupleGetItem):
        if isinstance(e.value, Var) and id(e.value) in self.tuples:
            return self.tuples[id(e.value)][e.index]
        return self.rebuild(e)
