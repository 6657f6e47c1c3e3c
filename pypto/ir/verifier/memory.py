"""NoLiveOverlap: no two simultaneously live tiles of a kernel share bytes."""
from __future__ import annotations

from pypto.ir.nodes import AssignStmt, Call, ForStmt, Function, IfStmt, Program, ScopeStmt, Stmt, Var, WhileStmt
from pypto.ir.types import TileType
from pypto.ir.visit import use_exprs, walk_expr
from pypto.language.enums import KERNEL_TYPES
from pypto.ir.verifier.registry import function_prop


@function_prop("NoLiveOverlap")
def _no_live_overlap(f: Function, program: Program, ctx) -> list:
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
    return _overlaps(f) if f.func_type in KERNEL_TYPES else []


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
