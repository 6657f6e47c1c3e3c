"""SSA form, one call per statement, well-typed statements, outlined scopes: the properties of
the front half of the pipeline."""
from __future__ import annotations

from pypto.errors import PyptoError
from pypto.ir.nodes import (
    AssignStmt, BinOp, Call, EvalStmt, ForStmt, FuncCall, Function, IfStmt, Program, ScopeStmt, UnaryOp, Var, WhileStmt
)
from pypto.ir.types import describe, ScalarType, TensorType, TileType
from pypto.ir.visit import child_stmts, iter_calls, iter_stmts, use_exprs, walk_expr
from pypto.language.enums import FunctionType
from pypto.ir.verifier.registry import function_prop


@function_prop("SSA")
def _ssa(f: Function, program: Program, ctx) -> list:
    bad = []
    defined: set[int] = {id(p) for p in f.params}

    def walk(stmts, visible: set[int]):
        for s in stmts:
            # a while condition reads the iter_args: checked with them visible, below
            for e in (s.init_values if isinstance(s, WhileStmt) else use_exprs(s)):
                for x in walk_expr(e):
                    if isinstance(x, Var) and id(x) not in visible:
                        bad.append((f, s, f"'{x.name}' is used before it is defined"))
            defs = []
            if isinstance(s, AssignStmt):
                defs = [s.var]
                if getattr(s.value, "task_id_var", None) is not None:
                    defs.append(s.value.task_id_var)
            inner = set(visible)
            if isinstance(s, ForStmt):
                inner |= {id(s.loop_var)} | {id(v) for v in s.iter_args}
                defs = list(s.return_vars)
            elif isinstance(s, WhileStmt):
                inner |= {id(v) for v in s.iter_args}
                defs = list(s.return_vars)
                for x in walk_expr(s.cond):
                    if isinstance(x, Var) and id(x) not in inner:
                        bad.append((f, s, f"'{x.name}' is used before it is defined"))
            elif isinstance(s, IfStmt):
                defs = list(s.return_vars)
            for b in child_stmts(s):
                # each branch sees what precedes the if, not the other branch's definitions
                walk(b, set(inner) if not isinstance(s, ScopeStmt) else visible)
            if isinstance(s, ScopeStmt) and s.task_id is not None:
                defs.append(s.task_id)
            for v in defs:
                if id(v) in defined:
                    bad.append((f, s, f"'{v.name}' is defined more than once"))
                defined.add(id(v))
                visible.add(id(v))

    walk(f.body, set(defined))
    return bad


@function_prop("NoNestedCalls")
def _no_nested_calls(f: Function, program: Program, ctx) -> list:
    """An op or function call appears only as the whole value of an AssignStmt or EvalStmt (not in
    another call's arguments, a scalar expression, an if condition, loop bounds, a yield or return)."""
    def name(c) -> str:
        return c.op if isinstance(c, Call) else f"self.{c.func}"

    def nested(e, where: str):
        """(call, description) of the first call in ``e`` (``e`` itself included)."""
        if isinstance(e, (Call, FuncCall)):
            return e, where
        if isinstance(e, (BinOp, UnaryOp)):
            where = "a scalar expression"
        for x in walk_expr(e):
            if x is not e and isinstance(x, (Call, FuncCall)):
                return x, where
        return None

    bad = []
    for s in iter_stmts(f.body):
        found = None
        if isinstance(s, (AssignStmt, EvalStmt)):
            top = s.value if isinstance(s, AssignStmt) else s.expr
            if isinstance(top, (Call, FuncCall)):
                for a in top.args:
                    found = found or nested(a, f"the arguments of {name(top)}")
            else:
                found = nested(top, "an expression")
        else:
            what = {"ForStmt": "loop bounds / init values", "WhileStmt": "a while condition / init values", "IfStmt": "an if condition", "ReturnStmt": "a return",
                    "YieldStmt": "a yield", "ScopeStmt": "a pl.at scope's task attributes"}.get(type(s).__name__,
                                                                                                type(s).__name__)
            for e in use_exprs(s):
                found = found or nested(e, what)
        if found is not None:
            c, where = found
            bad.append((f, s, f"call {name(c)} nested in {where}"))
    return bad


@function_prop("TypeChecked")
def _types(f: Function, program: Program, ctx) -> list:
    """Every op call's operands have the kinds its schema asks for, and re-applying the op's type
    rule gives the call's shape and dtype (passes may only add placement: space, address)."""
    from pypto.ops.registry import get_op

    kinds = {"tensor": TensorType, "tile": TileType, "scalar": ScalarType}
    bad = []
    typed = getattr(ctx, "typed_calls", None)
    if typed is None:
        typed = {}
    for s, c in iter_calls(f.body):
        if typed.get(id(c)) is c:
            continue   # this very (frozen) call passed after an earlier pass of this compile
        op = get_op(c.op)
        nbad = len(bad)
        for p, a in zip(op.params, c.args):
            want = kinds.get(p.kind)
            if a is None and p.default is None:
                continue  # an omitted optional operand (e.g. a reduction's tmp_tile)
            if want is not None and not isinstance(getattr(a, "type", None), want):
                bad.append((f, s, f"{c.op}: argument '{p.name}' must be a {p.kind}, got "
                                  f"{describe(a.type) if hasattr(a, 'type') else repr(a)}"))
        try:
            t = op.infer_type(c.args, c.span)
        except PyptoError as err:
            bad.append((f, s, f"{c.op}: type rule rejects the call: {err.message}"))
            continue
        same = type(t) is type(c.type) and getattr(t, "shape", None) == getattr(c.type, "shape", None) \
            and getattr(t, "dtype", None) == getattr(c.type, "dtype", None)
        if not same:
            bad.append((f, s, f"{c.op}: result type {describe(c.type)} but the type rule gives "
                              f"{describe(t)}"))
        elif len(bad) == nbad:
            typed[id(c)] = c
    return bad


@function_prop("SplitIncoreOrch")
def _split(f: Function, program: Program, ctx) -> list:
    from pypto.ops.registry import get_op

    bad = []
    for s in iter_stmts(f.body):
        if isinstance(s, ScopeStmt):
            bad.append((f, s, "a pl.at scope remains after outlining"))
        if f.func_type == FunctionType.Orchestration and isinstance(s, AssignStmt) \
                and isinstance(s.value, Call) and get_op(s.value.op).level == "tile":
            bad.append((f, s, f"tile op '{s.value.op}' in an orchestration function"))
    return bad
