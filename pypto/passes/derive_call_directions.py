"""DeriveCallDirections: every task dispatch of an orchestration function gets its per-argument
runtime tags (docs/compiler.md, "The pipeline"), stored in ``FuncCall.arg_directions``.

Requires: SplitIncoreOrch, CallDirections. Produces: CallDirectionsResolved (checked by the verifier:
one tag per argument, a tensor gets a tensor tag, a scalar ``SCALAR``, an ``In`` parameter never a
writing tag).

For each call of an InCore function from an Orchestration function, argument ``i`` gets

* ``SCALAR`` when the callee's parameter is a scalar (the runtime ignores scalar tags);
* ``NO_DEP`` when ``i`` is in the call's ``no_dep_args`` (``pl.no_dep(t)`` / ``no_dep_args=[t]``);
* ``INPUT`` for an ``In`` parameter, ``INOUT`` for an ``InOut`` one;
* for an ``Out`` parameter ``OUTPUT_EXISTING``, *promoted* to ``INOUT`` (the task then waits for the
  earlier writers: WAW edges exist only through this promotion) when

  - **R-seq** the call is inside a sequential loop (any ``for`` but ``pl.parallel``);
  - **R-prior** an earlier statement of the same scope — or, conservatively, of an enclosing scope —
    wrote the same root buffer (the parameter or ``tensor.create`` result the argument is a version
    or a slice of);
  - **R-enclosing** the argument is rooted at an ``InOut`` parameter of the orchestration function.

A call's writes (its ``Out`` / ``InOut`` arguments' roots) count as prior writes for the later
statements of its scope; a nested scope (loop body, if branch) starts with its own set of prior
writes, and its writes join the enclosing scope's when it ends. Orchestration code generation emits
these tags verbatim (``rt.submit(kernel, args, tags, ...)``); nothing else changes.
"""
from __future__ import annotations

from pypto.ir.nodes import (
    AssignStmt, Call, EvalStmt, ForStmt, FuncCall, Function, IfStmt, Program, Stmt, TupleGetItem, Var, WhileStmt,
    YieldStmt,
)
# the one definition of the tags (re-exported here under the names they had)
from pypto.ir.tags import INOUT, INPUT, NO_DEP, OUTPUT_EXISTING, SCALAR, TENSOR_TAGS, WRITING_TAGS  # noqa: F401
from pypto.ir.types import ScalarType
from pypto.language.enums import TASK_TYPES, ForKind, FunctionType, ParamDirection
from pypto.passes.context import PassContext
from pypto.passes.param_writes import returned_params

NAME = "DeriveCallDirections"
REQUIRES = ("SplitIncoreOrch", "CallDirections")
PRODUCES = ("CallDirectionsResolved",)


def run(program: Program, ctx: PassContext) -> Program:
    funcs = tuple(_Derive(f, program).function() if f.func_type == FunctionType.Orchestration else f
                  for f in program.functions)
    return program.replace(functions=funcs)


def _returned_params(callee: Function) -> list[int]:
    return returned_params(callee)


class _Derive:
    """One orchestration function: walks it in program order tracking root buffers and prior writes
    (the same walk orchestration codegen makes when it emits the statements)."""

    def __init__(self, f: Function, program: Program):
        self.f = f
        self.funcs = {g.name: g for g in program.functions}
        self.root: dict[int, object] = {id(p): id(p) for p in f.params}  # id(Var) -> root key
        self.tuple_root: dict[int, list] = {}        # id(tuple Var) -> roots of its elements
        self.inout_roots = {id(p) for p, d in zip(f.params, f.directions) if d == ParamDirection.InOut}
        self.seq_depth = 0                           # enclosing sequential loops
        self.written: list[set] = [set()]            # roots written by earlier statements, per scope

    def function(self) -> Function:
        return self.f.replace(body=self.stmts(self.f.body, ()))

    def stmts(self, stmts, yield_into) -> tuple[Stmt, ...]:
        return tuple(self.stmt(s, yield_into) for s in stmts)

    def nested(self, stmts, yield_into) -> tuple[Stmt, ...]:
        """A nested scope: its own set of prior writes; its writes count for the enclosing scope."""
        self.written.append(set())
        out = self.stmts(stmts, yield_into)
        inner = self.written.pop()
        self.written[-1] |= inner
        return out

    def stmt(self, s: Stmt, yield_into) -> Stmt:
        if isinstance(s, AssignStmt):
            value = self.call(s.value)
            self.track_assign(s.var, value)
            return s if value is s.value else s.replace(value=value)
        if isinstance(s, EvalStmt):
            value = self.call(s.expr)
            return s if value is s.expr else s.replace(expr=value)
        if isinstance(s, YieldStmt):
            for dst, v in zip(yield_into, s.values):
                if id(dst) not in self.root:
                    self.alias(dst, v)
            return s
        if isinstance(s, ForStmt):
            for it, init in zip(s.iter_args, s.init_values):
                self.alias(it, init)
            seq = s.kind != ForKind.Parallel
            self.seq_depth += seq
            body = self.nested(s.body, s.iter_args)
            self.seq_depth -= seq
            for rv, it in zip(s.return_vars, s.iter_args):
                self.alias(rv, it)
            return s.replace(body=body)
        if isinstance(s, WhileStmt):   # a sequential loop
            for it, init in zip(s.iter_args, s.init_values):
                self.alias(it, init)
            self.seq_depth += 1
            body = self.nested(s.body, s.iter_args)
            self.seq_depth -= 1
            for rv, it in zip(s.return_vars, s.iter_args):
                self.alias(rv, it)
            return s.replace(body=body)
        if isinstance(s, IfStmt):
            then_body = self.nested(s.then_body, s.return_vars)
            else_body = self.nested(s.else_body, s.return_vars)
            return s.replace(then_body=then_body, else_body=else_body)
        return s

    # ------------------------------------------------------------------ roots
    def root_of(self, e):
        if isinstance(e, TupleGetItem) and isinstance(e.value, Var):
            roots = self.tuple_root.get(id(e.value))
            return roots[e.index] if roots and e.index < len(roots) else None
        return self.root.get(id(e)) if isinstance(e, Var) else None

    def alias(self, dst: Var, src) -> None:
        r = self.root_of(src)
        if r is not None:
            self.root[id(dst)] = r
        elif isinstance(src, Var) and id(src) in self.tuple_root:
            self.tuple_root[id(dst)] = self.tuple_root[id(src)]

    def track_assign(self, var: Var, v) -> None:
        if isinstance(v, FuncCall):
            callee = self.funcs.get(v.func)
            if callee is None:
                return
            rets = _returned_params(callee)
            roots = [self.root_of(v.args[i]) if i >= 0 else None for i in rets]
            if len(roots) == 1:
                if roots[0] is not None:
                    self.root[id(var)] = roots[0]
            else:
                self.tuple_root[id(var)] = roots
        elif isinstance(v, Call):
            if v.op == "tensor.create":
                self.root[id(var)] = id(var)
            elif v.args and self.root_of(v.args[0]) is not None:
                self.root[id(var)] = self.root_of(v.args[0])  # a view (slice) of its first operand
        else:
            self.alias(var, v)

    # ------------------------------------------------------------------ tags
    def call(self, e):
        if not isinstance(e, FuncCall):
            return e
        callee = self.funcs.get(e.func)
        if callee is None or callee.func_type not in TASK_TYPES:
            return e  # not a task dispatch (codegen rejects it)
        no_dep = set(e.no_dep_args)
        tags = []
        writes = []
        for i, (a, p, d) in enumerate(zip(e.args, callee.params, callee.directions)):
            r = self.root_of(a)
            if isinstance(p.type, ScalarType):
                tag = SCALAR
            elif i in no_dep:
                tag = NO_DEP
            elif d == ParamDirection.In:
                tag = INPUT
            elif d == ParamDirection.InOut:
                tag = INOUT
            elif (self.seq_depth > 0 or (r is not None and any(r in w for w in self.written))
                  or (r is not None and r in self.inout_roots)):
                tag = INOUT  # promoted Out (R-seq / R-prior / R-enclosing)
            else:
                tag = OUTPUT_EXISTING
            if d != ParamDirection.In and r is not None:
                writes.append(r)
            tags.append(tag)
        self.written[-1].update(writes)
        tags = tuple(tags)
        return e if e.arg_directions == tags else e.replace(arg_directions=tags)
