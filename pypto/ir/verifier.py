"""IR properties and their checks. The pass manager checks, after each pass, the properties that
pass produces (and keeps checking those already established), at ``VerificationLevel.BASIC``.

A failure raises :class:`VerificationError` naming the pass, the property, the offending statement
printed as IR, and its source span.
"""
from __future__ import annotations

from typing import Callable

from pypto.errors import VerificationError
from pypto.ir.nodes import AssignStmt, Call, ForStmt, Function, IfStmt, Program, ScopeStmt, Stmt, Var
from pypto.ir.types import TileType
from pypto.ir.visit import child_stmts, iter_stmts, use_exprs, walk_expr
from pypto.language.enums import FunctionType

Check = Callable[[Program, object], list[tuple[Function, Stmt | None, str]]]
PROPERTIES: dict[str, Check] = {}


def prop(name: str):
    """Register a property check ``(program, ctx) -> [(function, stmt, message)]``."""
    def deco(fn: Check) -> Check:
        PROPERTIES[name] = fn
        return fn
    return deco


@prop("SSA")
def _ssa(program: Program, ctx) -> list:
    bad = []
    for f in program.functions:
        defined: set[int] = {id(p) for p in f.params}

        def walk(stmts, visible: set[int]):
            for s in stmts:
                for e in use_exprs(s):
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
                elif isinstance(s, IfStmt):
                    defs = list(s.return_vars)
                for b in child_stmts(s):
                    walk(b, inner if not isinstance(s, ScopeStmt) else visible)
                if isinstance(s, ScopeStmt) and s.task_id is not None:
                    defs.append(s.task_id)
                for v in defs:
                    if id(v) in defined:
                        bad.append((f, s, f"'{v.name}' is defined more than once"))
                    defined.add(id(v))
                    visible.add(id(v))

        walk(f.body, set(defined))
    return bad


@prop("TypeChecked")
def _types(program: Program, ctx) -> list:
    """Every op call's operands have the kinds its schema asks for, and re-applying the op's type
    rule gives the call's shape and dtype (passes may only add placement: space, address)."""
    from pypto.errors import PyptoError
    from pypto.ir.types import ScalarType, TensorType, TileType, describe
    from pypto.ops.registry import get_op

    kinds = {"tensor": TensorType, "tile": TileType, "scalar": ScalarType}
    bad = []
    for f in program.functions:
        for s in iter_stmts(f.body):
            for e in use_exprs(s):
                for c in walk_expr(e):
                    if not isinstance(c, Call):
                        continue
                    op = get_op(c.op)
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
    return bad


@prop("SplitIncoreOrch")
def _split(program: Program, ctx) -> list:
    from pypto.ops.registry import get_op

    bad = []
    for f in program.functions:
        for s in iter_stmts(f.body):
            if isinstance(s, ScopeStmt):
                bad.append((f, s, "a pl.at scope remains after outlining"))
            if f.func_type == FunctionType.Orchestration and isinstance(s, AssignStmt) \
                    and isinstance(s.value, Call) and get_op(s.value.op).level == "tile":
                bad.append((f, s, f"tile op '{s.value.op}' in an orchestration function"))
    return bad


@prop("IncoreTileOps")
def _tile_ops(program: Program, ctx) -> list:
    bad = []
    for f in program.functions:
        if f.func_type != FunctionType.InCore:
            continue
        for s in iter_stmts(f.body):
            if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op.startswith("tensor."):
                bad.append((f, s, f"tensor op '{s.value.op}' left in an InCore function"))
    return bad


def _tile_vars(f: Function):
    for s in iter_stmts(f.body):
        vs = [s.var] if isinstance(s, AssignStmt) else list(getattr(s, "iter_args", ())) + \
            list(getattr(s, "return_vars", ()))
        for v in vs:
            if isinstance(v.type, TileType):
                yield s, v


@prop("TileMemoryInferred")
def _spaces(program: Program, ctx) -> list:
    return [(f, s, f"tile '{v.name}' has no memory space") for f in program.functions
            if f.func_type == FunctionType.InCore for s, v in _tile_vars(f) if v.type.memory_space is None]


@prop("AllocatedMemoryAddr")
def _addresses(program: Program, ctx) -> list:
    bad = []
    platform = getattr(ctx, "platform", None)
    for f in program.functions:
        if f.func_type != FunctionType.InCore:
            continue
        for s, v in _tile_vars(f):
            m = v.type.memref
            if m is None:
                bad.append((f, s, f"tile '{v.name}' has no address"))
            elif platform is not None and m.addr + m.size > platform.capacity(v.type.memory_space):
                bad.append((f, s, f"tile '{v.name}' at {m.addr}+{m.size} exceeds {v.type.memory_space.name} "
                                  f"capacity {platform.capacity(v.type.memory_space)}"))
    return bad


def verify(program: Program, properties, ctx, pass_name: str) -> None:
    """Check ``properties``; raise :class:`VerificationError` on the first failure."""
    from pypto.ir.printer import _Printer

    for name in properties:
        check = PROPERTIES.get(name)
        if check is None:
            continue
        bad = check(program, ctx)
        if bad:
            f, s, msg = bad[0]
            text = ""
            if s is not None:
                p = _Printer()
                try:
                    p.stmt(s, 1)
                    text = "\n".join(p.lines[:3])
                except Exception:  # printing a malformed statement must not hide the report
                    text = f"    {type(s).__name__}"
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            raise VerificationError(
                f"Verification failed after '{pass_name}' for property {name} in function '{f.name}': "
                f"{msg}{more}\n  offending statement:\n{text}", getattr(s, "span", None))
