"""LowerAutoVectorSplit's check that a ragged cube -> vector boundary leaves the two vector lanes
extents the device can place (the reference's rule; a :class:`~pypto.errors.SplitBoundaryError`,
a ``ValueError`` as there, where it refuses).

A shard of a tile whose split axis (box ``n``, half ``h = ceil(n / 2)``) is valid to ``V`` gives
lane 0 ``min(V, h)`` and lane 1 ``max(V - h, 0)`` cells (the box partition). pto-isa places lane
1's band at lane 0's extent (even split codes) or one past it (the odd codes 3 / 4), so the lanes
must be equal, differ by one, or leave lane 1 empty: 13 of 16 rows (8 and 5) is not placeable.

The reference then partitions the VALID region instead (``lane_stride = ceil(V / 2)``: 7 and 6),
but only in an automatic ``pl.split`` kernel whose whole split body derives from that one
boundary: no vector -> cube crossing, no second boundary of another extent, no run-time extent,
and every tile the vector side computes on the split axis derived from the boundary (a load, a
generator or a full-width operand is split on its own box, which the balanced partition would not
cover). We do not realise that partition (the simulator's box partition computes the same
values), so such a kernel is accepted as the reference accepts it; anything else unplaceable is
refused at the boundary, naming the extents that would work. Explicit ``pl.split_aiv`` regions
always take the box partition (the reference balances the automatic path only).
"""
from __future__ import annotations

from pypto.errors import SplitBoundaryError
from pypto.ir.nodes import AssignStmt, Call, ConstInt, Var
from pypto.ir.types import TileType
from pypto.ir.visit import iter_stmts


def _static(x):
    return x.value if isinstance(x, ConstInt) else x if isinstance(x, int) else None


def boundary_extent(t, dim: int):
    """``(box, valid)`` of tile type ``t`` on axis ``dim`` (None: not static)."""
    if not isinstance(t, TileType) or dim >= len(t.shape):
        return None
    box = _static(t.shape[dim])
    valid = box if t.valid_shape is None else _static(t.valid_shape[dim])
    return None if box is None or valid is None else (box, valid)


def lanes(box: int, valid: int) -> tuple[int, int]:
    """The box partition's cells per lane."""
    h = (box + 1) // 2
    return min(valid, h), max(valid - h, 0)


def placeable(box: int, valid: int) -> bool:
    l0, l1 = lanes(box, valid)
    return l0 == l1 or l0 == l1 + 1 or l1 == 0


def refuse(op: str, box: int, valid: int, dim: int, span) -> None:
    l0, l1 = lanes(box, valid)
    h = (box + 1) // 2
    raise SplitBoundaryError(
        f"{op}: the cube -> vector boundary tile's valid split-axis extent ({valid} of a {box}-wide dim {dim}) leaves "
        f"the two AIV lanes {l0} and {l1} cells; the device places lane 1's band at lane 0's extent or one past it, "
        "so the lanes must be equal, differ by one, or leave lane 1 empty. The compiler balances a ragged boundary "
        "across the lanes only when the whole split body derives from it, and this one also holds an independently "
        "split value (a load, a generator, a full-width operand), a vector -> cube crossing, or a second boundary",
        span,
        f"move that value out of the split scope, or widen the valid extent to {2 * h} / {2 * h - 1} with "
        f"pl.tile.set_validshape(...), or narrow it to at most {h} so that the whole value stays on lane 0")


def check_regions(f, dim_of) -> None:
    """Explicit regions: every ``tile.aiv_shard`` of a static ragged tile must be placeable by the
    box partition (``dim_of(split code)``: its axis, None for NONE)."""
    for s in iter_stmts(f.body):
        c = s.value if isinstance(s, AssignStmt) else None
        if isinstance(c, Call) and c.op == "tile.aiv_shard":
            dim = dim_of(c.args[1])
            ext = None if dim is None else boundary_extent(c.args[0].type, dim)
            if ext is not None and not placeable(*ext):
                refuse("tile.aiv_shard", *ext, dim, s.span)


def check_auto(f, dim: int, is_c2v, is_v2c, cube_side) -> None:
    """The automatic path, on the kernel before its halving: refuse an unplaceable boundary the
    reference would not rebalance. ``is_c2v(s)`` / ``is_v2c(s)``: the statement is a crossing that
    way; ``cube_side(s)``: a statement of the cube side."""
    blocked, shape, derived = False, None, set()
    first_bad = None
    for s in iter_stmts(f.body):
        c = s.value if isinstance(s, AssignStmt) else getattr(s, "expr", None)
        if not isinstance(c, Call):
            continue
        if is_v2c(s):
            blocked = True
            continue
        if is_c2v(s):
            ext = boundary_extent(c.args[0].type, dim)
            if ext is None or (shape is not None and shape != ext):
                blocked = True
            shape = shape or ext
            if ext is not None and not placeable(*ext) and first_bad is None:
                first_bad = (ext, s.span)
            derived.add(id(s.var))
            continue
        t = getattr(c, "type", None)
        if not isinstance(t, TileType) or dim >= len(t.shape) or t.shape[dim] == 1 or cube_side(s):
            continue
        split_args = [a for a in c.args if isinstance(getattr(a, "type", None), TileType)
                      and dim < len(a.type.shape) and a.type.shape[dim] != 1]
        if not split_args or not all(isinstance(a, Var) and id(a) in derived for a in split_args):
            blocked = True   # a tile split on its own box (a load, a generator, a full-width operand)
        elif isinstance(s, AssignStmt):
            derived.add(id(s.var))
    if first_bad is None:
        return
    (box, valid), span = first_bad
    balanced = (valid + 1) // 2
    rebalanced = not blocked and 0 < balanced and valid < box and balanced != (box + 1) // 2
    if not rebalanced:
        refuse("tile.aiv_shard", box, valid, dim, span)

