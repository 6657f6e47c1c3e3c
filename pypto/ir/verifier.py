"""IR properties and their checks. The pass manager checks, after each pass, the properties that
pass produces (and keeps checking those already established), at ``VerificationLevel.BASIC``.

A failure raises :class:`VerificationError` naming the pass, the property, the offending statement
printed as IR, and its source span.
"""
from __future__ import annotations

from typing import Callable

from pypto.errors import VerificationError
from pypto.ir.nodes import AssignStmt, Call, ForStmt, Function, IfStmt, Program, ScopeStmt, Stmt, Var, WhileStmt
from pypto.ir.types import TileType
from pypto.ir.visit import child_stmts, iter_calls, iter_stmts, use_exprs, walk_expr
from pypto.language.enums import KERNEL_TYPES, TASK_TYPES, FunctionType
from pypto.errors import PyptoError
from pypto.ir.nodes import BinOp, EvalStmt, FuncCall, ReturnStmt, UnaryOp, YieldStmt
from pypto.ir.printer import _Printer
from pypto.ir.tags import NO_DEP, SCALAR, TENSOR_TAGS, WRITING_TAGS
from pypto.ir.types import ScalarType, TensorType, describe
from pypto.ir.visit import task_sites
from pypto.language.enums import ParamDirection

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


@prop("NoNestedCalls")
def _no_nested_calls(program: Program, ctx) -> list:
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
    for f in program.functions:
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


@prop("TypeChecked")
def _types(program: Program, ctx) -> list:
    """Every op call's operands have the kinds its schema asks for, and re-applying the op's type
    rule gives the call's shape and dtype (passes may only add placement: space, address)."""
    from pypto.ops.registry import get_op

    kinds = {"tensor": TensorType, "tile": TileType, "scalar": ScalarType}
    bad = []
    typed = getattr(ctx, "typed_calls", None)
    if typed is None:
        typed = {}
    for f in program.functions:
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
        if f.func_type not in KERNEL_TYPES:
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
            if f.func_type in KERNEL_TYPES for s, v in _tile_vars(f) if v.type.memory_space is None]


@prop("HasMemRefs")
def _memrefs(program: Program, ctx) -> list:
    """Every InCore tile names a buffer (``MemRef``) whose ``size`` is the tile's bytes; a buffer
    holds tiles of one memory space and has one address (or none yet); a loop's result is in the
    buffer of its carried value (the generated kernel reads it from there)."""
    bad = []
    for f in program.functions:
        if f.func_type not in KERNEL_TYPES:
            continue
        first: dict[str, Var] = {}
        for s, v in _tile_vars(f):
            m, t = v.type.memref, v.type
            if m is None:
                bad.append((f, s, f"tile '{v.name}' has no MemRef (buffer)"))
                continue
            if m.size != t.nbytes:
                bad.append((f, s, f"tile '{v.name}' has {t.nbytes} bytes but its MemRef says {m.size}"))
            w = first.setdefault(m.base, v)
            if w.type.memory_space != t.memory_space:
                bad.append((f, s, f"buffer '{m.base}' holds tiles of two memory spaces: '{w.name}' "
                                  f"({w.type.memory_space.name}) and '{v.name}' ({t.memory_space.name})"))
            elif w.type.memref.addr != m.addr:
                bad.append((f, s, f"buffer '{m.base}' has two addresses: {w.type.memref.addr} ('{w.name}') and "
                                  f"{m.addr} ('{v.name}')"))
            it = next((a for a, r in zip(s.iter_args, s.return_vars) if r is v), None) \
                if isinstance(s, (ForStmt, WhileStmt)) else None
            if it is not None:
                if it.type.memref != m:
                    bad.append((f, s, f"loop result '{v.name}' is not in the buffer of its carried value "
                                      f"'{it.name}'"))
    return bad


@prop("AllocatedMemoryAddr")
def _addresses(program: Program, ctx) -> list:
    bad = []
    platform = getattr(ctx, "platform", None)
    for f in program.functions:
        if f.func_type not in KERNEL_TYPES:
            continue
        for s, v in _tile_vars(f):
            m = v.type.memref
            if m is None or m.addr is None:
                bad.append((f, s, f"tile '{v.name}' has no address"))
            elif platform is not None and m.addr + m.end > platform.capacity(v.type.memory_space):
                bad.append((f, s, f"tile '{v.name}' at {m.addr}+{m.offset}+{m.size} (buffer '{m.base}') exceeds "
                                  f"{v.type.memory_space.name} capacity {platform.capacity(v.type.memory_space)}"))
    return bad


@prop("TileOps2D")
def _tiles_2d(program: Program, ctx) -> list:
    """Every tile of an InCore function has rank 2 (FlattenTileNdTo2D)."""
    return [(f, s, f"tile '{v.name}' has rank {len(v.type.shape)} ({list(v.type.shape)}), not 2")
            for f in program.functions if f.func_type in KERNEL_TYPES
            for s, v in _tile_vars(f) if len(v.type.shape) != 2]


# ----------------------------------------------------------------------------- ReturnParamsExplicit


def return_roots(f: Function) -> list:
    """For each value ``f`` returns, the Out/InOut parameter it is a version of (or ``None``).

    A version of a tensor parameter ``p`` is ``p`` itself, the result of ``tile.store(..., p)`` /
    ``tensor.assemble(p, ...)`` of a version, a loop's iter_arg / return var initialised from a
    version, or an if's return var whose yields are versions of the same parameter.
    """
    root: dict[int, Var] = {id(p): p for p, d in zip(f.params, f.directions)
                            if d in (ParamDirection.Out, ParamDirection.InOut)}
    from pypto.ops.registry import write_targets

    target = write_targets()

    def of(v):
        return root.get(id(v)) if isinstance(v, Var) else None

    def walk(stmts):
        for s in stmts:
            if isinstance(s, AssignStmt):
                if isinstance(s.value, Call) and s.value.op in target:
                    r = of(s.value.args[target[s.value.op]])
                    if r is not None:
                        root[id(s.var)] = r
                elif isinstance(s.value, Var) and of(s.value) is not None:
                    root[id(s.var)] = of(s.value)
            elif isinstance(s, (ForStmt, WhileStmt)):
                for it, init, rv in zip(s.iter_args, s.init_values, s.return_vars):
                    if of(init) is not None:
                        root[id(it)] = root[id(rv)] = of(init)
                walk(s.body)
            elif isinstance(s, IfStmt):
                walk(s.then_body)
                walk(s.else_body)
                ty = s.then_body[-1] if s.then_body and isinstance(s.then_body[-1], YieldStmt) else None
                ey = s.else_body[-1] if s.else_body and isinstance(s.else_body[-1], YieldStmt) else None
                if ty is not None and ey is not None:
                    for rv, a, b in zip(s.return_vars, ty.values, ey.values):
                        if of(a) is not None and of(a) is of(b):
                            root[id(rv)] = of(a)
            elif isinstance(s, ScopeStmt):
                walk(s.body)

    walk(f.body)
    rets = [s for s in f.body if isinstance(s, ReturnStmt)]
    return [of(v) for v in rets[-1].values] if rets else []


@prop("ReturnParamsExplicit")
def _return_params(program: Program, ctx) -> list:
    """In an InCore function the i-th returned value is a version of the i-th Out/InOut parameter
    (in parameter order), and every Out/InOut parameter is returned."""
    bad = []
    for f in program.functions:
        if f.func_type != FunctionType.InCore:  # AIC / AIV group members write Out params the group returns
            continue
        outs = [p for p, d in zip(f.params, f.directions) if d in (ParamDirection.Out, ParamDirection.InOut)]
        roots = return_roots(f)
        ret = next((s for s in reversed(f.body) if isinstance(s, ReturnStmt)), None)
        if len(roots) != len(outs) or any(r is not p for r, p in zip(roots, outs)):
            want = ", ".join(p.name for p in outs) or "nothing"
            got = ", ".join(r.name if r is not None else "?" for r in roots) or "nothing"
            bad.append((f, ret, f"returns versions of ({got}) but its Out/InOut parameters are ({want})"))
    return bad


# ----------------------------------------------------------------------------- CallDirections


@prop("CallDirections")
def _call_directions(program: Program, ctx) -> list:
    """Every function call passes as many arguments as the callee has parameters; an Out/InOut
    parameter receives a tensor; a scalar goes only to a scalar parameter (and a tensor or tile
    only to a parameter of its own kind)."""
    funcs = {f.name: f for f in program.functions}
    bad = []
    for f in program.functions:
        for s in iter_stmts(f.body):
            for e in use_exprs(s):
                for c in walk_expr(e):
                    if not isinstance(c, FuncCall) or c.func not in funcs:
                        continue
                    g = funcs[c.func]
                    if len(c.args) != len(g.params):
                        bad.append((f, s, f"call of '{g.name}' passes {len(c.args)} arguments for "
                                          f"{len(g.params)} parameters"))
                        continue
                    for a, p, d in zip(c.args, g.params, g.directions):
                        at = getattr(a, "type", None)
                        if d in (ParamDirection.Out, ParamDirection.InOut) and not isinstance(at, TensorType):
                            bad.append((f, s, f"call of '{g.name}': {d.name} parameter '{p.name}' receives "
                                              f"{describe(at) if at is not None else repr(a)}, not a tensor"))
                        elif isinstance(at, ScalarType) != isinstance(p.type, ScalarType) or \
                                isinstance(at, TensorType) != isinstance(p.type, TensorType):
                            bad.append((f, s, f"call of '{g.name}': parameter '{p.name}' "
                                              f"({describe(p.type)}) receives {describe(at)}"))
    return bad


@prop("CallDirectionsResolved")
def _call_directions_resolved(program: Program, ctx) -> list:
    """Every call of an InCore function from an Orchestration function carries its runtime tags
    (``FuncCall.arg_directions``, DeriveCallDirections): one per argument; a scalar parameter gets
    ``SCALAR``; a tensor one ``INPUT`` / ``INOUT`` / ``OUTPUT_EXISTING`` / ``NO_DEP``, ``NO_DEP``
    exactly for the ``no_dep_args``; an ``In`` parameter never a writing tag (``INOUT`` /
    ``OUTPUT_EXISTING``), an ``Out`` / ``InOut`` one never ``INPUT`` (nor ``InOut`` ``OUTPUT_EXISTING``).
    An argument carrying compiler edges (``compiler_dep_edges``, AutoDeriveTaskDependencies) had its
    lookup replaced: it is ``NO_DEP`` for an ``In`` parameter and ``OUTPUT_EXISTING`` otherwise."""
    funcs = {f.name: f for f in program.functions}
    bad = []
    for f in program.functions:
        if f.func_type != FunctionType.Orchestration:
            continue
        for s in iter_stmts(f.body):
            for e in use_exprs(s):
                for c in walk_expr(e):
                    g = funcs.get(c.func) if isinstance(c, FuncCall) else None
                    if g is None or g.func_type not in TASK_TYPES:
                        continue
                    tags = c.arg_directions
                    if len(tags) != len(c.args):
                        bad.append((f, s, f"call of '{g.name}' has {len(tags)} runtime tags for {len(c.args)} "
                                          f"arguments"))
                        continue
                    derived = {i for i, _ in c.compiler_dep_edges}
                    for i, (t, p, d) in enumerate(zip(tags, g.params, g.directions)):
                        where = f"call of '{g.name}': argument {i} ('{p.name}', {d.name})"
                        if i in derived and not isinstance(p.type, ScalarType):
                            want = NO_DEP if d == ParamDirection.In else "OUTPUT_EXISTING"
                            if t != want or i in c.no_dep_args:
                                bad.append((f, s, f"{where} carries compiler edges, so its tag must be {want} "
                                                  f"(and it is not a no_dep argument), got {t}"))
                        elif isinstance(p.type, ScalarType):
                            if t != SCALAR:
                                bad.append((f, s, f"{where} is a scalar but tagged {t}, not SCALAR"))
                        elif t not in TENSOR_TAGS:
                            bad.append((f, s, f"{where} is a tensor but tagged {t!r}"))
                        elif (t == NO_DEP) != (i in c.no_dep_args):
                            bad.append((f, s, f"{where} tagged {t} but it is "
                                              f"{'' if i in c.no_dep_args else 'not '}a no_dep argument"))
                        elif d == ParamDirection.In and t in WRITING_TAGS:
                            bad.append((f, s, f"{where} is only read but tagged {t}"))
                        elif d != ParamDirection.In and t == "INPUT":
                            bad.append((f, s, f"{where} is written but tagged INPUT"))
                        elif d == ParamDirection.InOut and t == "OUTPUT_EXISTING":
                            bad.append((f, s, f"{where} is read and written but tagged OUTPUT_EXISTING"))
    return bad


@prop("TaskDependenciesDerived")
def _task_dependencies_derived(program: Program, ctx) -> list:
    """Every compiler edge (``FuncCall.compiler_dep_edges``, AutoDeriveTaskDependencies) of an
    orchestration task call names a tensor argument of the call (each at most once) and producer
    sites of the *same* orchestration function that are earlier task calls, not manual, and always
    submitted before the consumer: in the consumer's statement list or an enclosing one, before the
    statement holding the consumer (a call in another branch, or in a loop the consumer is not in,
    may not have run, or may have run several times). Manual calls carry no edges."""
    funcs = {f.name: f for f in program.functions}
    bad: list = []
    for f in program.functions:
        if f.func_type == FunctionType.Orchestration:
            _check_dep_edges(f, f.body, task_sites(f, funcs), funcs, set(), set(), bad)
    return bad


def _check_dep_edges(f: Function, stmts, sites: dict, funcs: dict, visible: set, manual_sites: set,
                     bad: list) -> None:
    """One statement list of :func:`_task_dependencies_derived`; ``visible`` holds the sites
    submitted (once) before it on every path, ``manual_sites`` the manual calls seen so far."""
    visible = set(visible)
    for s in stmts:
        calls = [c for e in use_exprs(s) for c in walk_expr(e) if isinstance(c, FuncCall) and id(c) in sites]
        for c in calls:
            site = sites[id(c)]
            if c.manual:
                manual_sites.add(site)
                if c.compiler_dep_edges:
                    bad.append((f, s, f"manual call of '{c.func}' carries compiler edges"))
            params = funcs[c.func].params
            seen_args: set = set()
            for i, producers in c.compiler_dep_edges:
                if not 0 <= i < len(c.args) or i in seen_args or isinstance(params[i].type, ScalarType):
                    bad.append((f, s, f"call of '{c.func}' (site {site}): compiler edge on argument {i}, "
                                      f"which is not a distinct tensor argument"))
                seen_args.add(i)
                for k in producers:
                    if k >= site or k not in visible or k in manual_sites:
                        bad.append((f, s, f"call of '{c.func}' (site {site}): compiler edge on argument {i} to "
                                          f"site {k}, which is not an earlier non-manual task always submitted "
                                          f"before it"))
        for body in child_stmts(s):
            _check_dep_edges(f, body, sites, funcs, visible, manual_sites, bad)
        visible.update(sites[id(c)] for c in calls)


# ----------------------------------------------------------------------------- NoLiveOverlap


@prop("NoLiveOverlap")
def _no_live_overlap(program: Program, ctx) -> list:
    """No two simultaneously live tiles of an InCore function share bytes.

    Tiles share bytes when they are in the same buffer at overlapping offsets (``MemRef.base``,
    before addresses exist) or, once AllocateMemoryAddr has run, when their address ranges
    ``addr + offset .. + size`` overlap in the same memory space.

    An independent liveness computation (not the memory passes'): statements are numbered in
    program order; a tile is live from its definition to its last use; a value defined before a
    loop and used in it stays live to the loop's end; a loop's iter_args and return vars are one
    buffer, live over the whole loop; an if's return vars are live over the whole if. Two tiles
    with identical MemRefs may meet at one statement only as a hand-off: the op is ``inplace_safe``
    and the operand dies there, or the loop's carried value is initialised from a tile that dies
    at the loop.
    """
    bad = []
    for f in program.functions:
        if f.func_type in KERNEL_TYPES:
            bad.extend(_overlaps(f))
    return bad


def _overlaps(f: Function) -> list:
    from pypto.ops.registry import get_op
    from pypto.ops.traits import InPlaceSafe

    start: dict[int, int] = {}
    end: dict[int, int] = {}
    var: dict[int, Var] = {}
    site: dict[int, Stmt] = {}
    group: dict[int, int] = {}            # return var / iter_arg id -> id of the loop's first iter_arg
    inplace: dict[int, set] = {}          # result id -> operand ids it may share with
    entry: dict[int, int] = {}            # iter_arg id -> id of the tile initialising it
    pos = 0

    def define(v: Var, s: Stmt, at: int) -> None:
        if isinstance(v.type, TileType) and v.type.memref is not None:
            var[id(v)], site[id(v)] = v, s
            start[id(v)] = at
            end[id(v)] = max(end.get(id(v), at), at)

    def use(e, at: int) -> set:
        seen = set()
        for x in walk_expr(e):
            if isinstance(x, Var) and id(x) in var:
                end[id(x)] = max(end[id(x)], at)
                seen.add(id(x))
        return seen

    def block(stmts) -> set:
        nonlocal pos
        used: set = set()
        for s in stmts:
            pos += 1
            here = pos
            for e in use_exprs(s):
                used |= use(e, here)
            if isinstance(s, AssignStmt):
                define(s.var, s, here)
                if isinstance(s.value, Call) and get_op(s.value.op).has(InPlaceSafe):
                    inplace[id(s.var)] = {id(a) for a in s.value.args if isinstance(a, Var)}
            elif isinstance(s, (ForStmt, WhileStmt)):
                for it, rv, init in zip(s.iter_args, s.return_vars, s.init_values):
                    define(it, s, here)
                    define(rv, s, here)
                    group[id(rv)] = id(it)
                    if isinstance(init, Var):
                        entry[id(it)] = id(init)
                inner = block(s.body)
                pos += 1
                for v in (*s.iter_args, *s.return_vars):
                    if id(v) in var:
                        end[id(v)] = max(end[id(v)], pos)
                for i in inner:
                    if start[i] < here:       # defined before the loop, read in it
                        end[i] = max(end[i], pos)
                used |= inner
            elif isinstance(s, IfStmt):
                for rv in s.return_vars:
                    define(rv, s, here)
                used |= block(s.then_body)
                used |= block(s.else_body)
                pos += 1
                for rv in s.return_vars:
                    if id(rv) in var:
                        end[id(rv)] = max(end[id(rv)], pos)
            elif isinstance(s, ScopeStmt):
                used |= block(s.body)
        return used

    def where(m) -> str:
        at = f"{m.addr}+{m.offset}" if m.addr is not None else f"+{m.offset}"
        return f"{m.base} {at}, {m.size} B"

    def hand_off(a: int, b: int) -> bool:
        """``a`` dies where ``b`` is defined and gives ``b`` its bytes (in place or loop entry)."""
        if end[a] != start[b] or var[a].type.memref != var[b].type.memref:
            return False
        init = entry.get(group.get(b, b))
        return any(group.get(o, o) == group.get(a, a) for o in inplace.get(b, ())) \
            or (init is not None and group.get(init, init) == group.get(a, a))

    block(f.body)
    # a loop's return var and iter_arg are one buffer: merge their intervals
    for rv, it in group.items():
        if rv in var and it in var:
            lo, hi = min(start[rv], start[it]), max(end[rv], end[it])
            start[rv] = start[it] = lo
            end[rv] = end[it] = hi
    bad = []
    ids = sorted(var, key=lambda i: (start[i], var[i].name))
    for n, a in enumerate(ids):
        ta = var[a].type
        for b in ids[n + 1:]:
            if start[b] > end[a]:
                continue
            tb = var[b].type
            if tb.memory_space != ta.memory_space:
                continue
            ma, mb = ta.memref, tb.memref
            if ma.addr is not None and mb.addr is not None:
                lo_a, lo_b = ma.addr + ma.offset, mb.addr + mb.offset
            elif ma.base == mb.base:
                lo_a, lo_b = ma.offset, mb.offset
            else:
                continue  # different buffers without addresses yet: placed apart or later
            if lo_a >= lo_b + mb.size or lo_b >= lo_a + ma.size:
                continue
            if group.get(a, a) == group.get(b, b) and ma == mb:
                continue  # iter_arg and return var of one loop
            if hand_off(a, b) or hand_off(b, a):
                continue
            bad.append((f, site[b], f"tiles '{var[a].name}' ({ta.memory_space.name} {where(ma)}, live "
                                    f"{start[a]}..{end[a]}) and '{var[b].name}' ({where(mb)}, live "
                                    f"{start[b]}..{end[b]}) overlap while both are live"))
    return bad


def verify(program: Program, properties, ctx, pass_name: str) -> None:
    """Check ``properties``; raise :class:`VerificationError` on the first failure."""
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
