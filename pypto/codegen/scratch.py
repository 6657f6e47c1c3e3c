"""Which scratch clobbers a kernel can observe.

A reduction with a ``tmp_tile`` leaves that tile holding the tree's partial results, as the device
does. Producing them costs the simulator a copy (and, for ``max`` / ``min``, the whole tree instead
of one order-independent ``amax``), yet most kernels never look at them: the next use of the
scratch is the scratch of another reduction (which overwrites before reading) or there is none.
:func:`dead_scratch_calls` finds the calls whose clobbered scratch no later instruction of the same
kernel can read, so the kernel generator lets the simulator skip it. The analysis works on byte
ranges of the allocated tiles, so buffers shared by several Vars (in-place results, loop carries,
reused addresses) are covered.

What it does not preserve: the contents a *later task on the same core* would find in that memory
if it read a tile before writing it. That is an uninitialized read, whose contents are unspecified
on the device too (``RunConfig(sim_poison=True)`` exposes such reads).

The same analysis finds the transposed copies no one reads but the move right after them
(:func:`fused_transposes`): the reference's ``tile.transpose_view`` is zero-copy (a Mat tile
read in the other fractal order), the cube operand move reading it does the transposition. Our
row-major tiles make the view a copy into a buffer of its own; where nothing but that move reads the
buffer, the kernel generator emits the move as one transposed copy from the view's source and the
view's buffer is not written (a strided BF16 transpose costs ~5 us a 128 x 128 tile: the Qwen3
layer's ``q @ k^T`` made it twice per task). Where the move's result is read by nothing but the
matmul right after it (a cube operand staged in Left / Right), that matmul reads the transposed
source directly and the move is not made either (the matmul hands the natural matrix to BLAS
transposed where that is the same product, pypto/ops/support/core.py). Not preserved, as above:
what an uninitialized read of those buffers by a later task would find.
"""
from __future__ import annotations

from pypto.ir.nodes import AssignStmt, Call, EvalStmt, ForStmt, Function, IfStmt, ScopeStmt, Var, WhileStmt
from pypto.ir.types import TileType
from pypto.ir.visit import walk_expr
from pypto.ops.registry import get_op
from pypto.ops.traits import Elementwise, Scratch


def dead_scratch_calls(f: Function) -> set[int]:
    """``id`` of every call with a scratch operand (the ``Scratch`` trait) whose clobbered contents no
    later statement of ``f`` can read. Later = after the call in program order, plus the whole
    outermost loop around it (the next iteration). A later reference to an overlapping buffer
    counts as a read unless it is itself the scratch operand of such an op (written first), or,
    after a call outside any loop, a whole overwrite of those bytes that runs before any read of them
    (:func:`_dead_after`)."""
    flat: list[tuple[object, int]] = []   # (statement, index of its outermost enclosing loop or -1)
    _flatten(f.body, -1, flat)
    top = _top_level(f.body, set())
    dead = set()
    for pos, (s, loop) in enumerate(flat):
        c = _call(s)
        if c is None:
            continue
        op = get_op(c.op)
        scratch = op.trait(Scratch)
        if scratch is None:
            continue
        tmp = c.args[[p.name for p in op.params].index(scratch.param)]
        rng = _range(tmp)
        if rng is None:
            continue
        if loop < 0:
            if _dead_after(flat, pos, rng, top):
                dead.add(id(c))
            continue
        later = range(loop, len(flat))
        # (the call itself, met again in the next iteration, overwrites its scratch before reading)
        if not any(_reads(flat[k][0], rng) for k in later if k != pos):
            dead.add(id(c))
    return dead


def _top_level(stmts, out: set) -> set:
    """``id`` of the statements of ``stmts`` that run exactly once, in order, when the function
    body runs: its own statements and those of the scopes among them (not of loops or branches)."""
    for s in stmts:
        out.add(id(s))
        if isinstance(s, ScopeStmt):
            _top_level(s.body, out)
    return out


def _dead_after(flat, pos: int, rng, top: set) -> bool:
    """Whether no statement after ``flat[pos]`` (a call outside any loop) can read the bytes of
    ``rng`` it leaves clobbered. A later statement that overwrites a part of them whole before
    anything reads it (:func:`_overwrite`), and runs unconditionally in order (``top``), takes that
    part out of the range still holding the clobbered values (reduction scratch is often another
    tile's buffer, reloaded afterwards); every other reference to a byte still held counts as a
    read, as in :func:`_reads`."""
    live = [rng]   # sub-ranges still holding what the call left there
    for k in range(pos + 1, len(flat)):
        s = flat[k][0]
        if any(_reads_args(s, r) if id(s) in top and _overwrite(s) is not None else _reads(s, r) for r in live):
            return False
        w = _overwrite(s) if id(s) in top else None
        if w is not None:
            live = [p for r in live for p in _minus(r, w)]
            if not live:
                return True
    return True


# ops whose result is the whole result tile, written from the operands alone: a load (DMA, its
# padding zeroed: support.load_into), the elementwise vector ops (one result per element) and the
# row / column broadcasts (pypto/ops/broadcast.py: one result per element of the full tile)
_BROADCAST_PREFIXES = ("tile.row_expand", "tile.col_expand")
def _overwrite(s):
    """The byte range ``(space, lo, hi)`` statement ``s`` writes whole, without reading it first (its
    operands are read before the write): ``x = op(...)`` with ``op`` a ``tile.load``, an
    elementwise op or a row / column broadcast, and ``x`` a tile with no smaller valid extent; ``None`` for anything else."""
    c = _call(s)
    if c is None or not isinstance(s, AssignStmt):
        return None
    if c.op != "tile.load" and not c.op.startswith(_BROADCAST_PREFIXES) and not get_op(c.op).has(Elementwise):
        return None
    t = getattr(s.var, "type", None)
    if not isinstance(t, TileType) or t.valid_shape is not None:
        return None
    return _range(s.var)


def _reads_args(s, rng) -> bool:
    """Whether call statement ``s``'s operands refer to bytes of ``rng`` (its result not counted)."""
    c = _call(s)
    return any(isinstance(x, Var) and _overlaps(x, rng) for a in c.args for x in walk_expr(a))


def _minus(r, w) -> list:
    """Byte range ``r`` without the bytes of ``w`` (both ``(space, lo, hi)``): 0, 1 or 2 ranges."""
    if w[0] != r[0] or w[2] <= r[1] or r[2] <= w[1]:
        return [r]
    return [p for p in ((r[0], r[1], w[1]), (r[0], w[2], r[2])) if p[1] < p[2]]


def _flatten(stmts, loop: int, out: list) -> None:
    for s in stmts:
        if isinstance(s, (ForStmt, WhileStmt)):
            here = len(out) if loop < 0 else loop
            out.append((s, loop))   # the loop header itself: init values are read here
            _flatten(s.body, here, out)
        elif isinstance(s, IfStmt):
            out.append((s, loop))
            _flatten(s.then_body, loop, out)
            _flatten(s.else_body, loop, out)
        elif isinstance(s, ScopeStmt):
            _flatten(s.body, loop, out)
        else:
            out.append((s, loop))


def _call(s) -> Call | None:
    if isinstance(s, AssignStmt) and isinstance(s.value, Call):
        return s.value
    if isinstance(s, EvalStmt) and isinstance(s.expr, Call):
        return s.expr
    return None


def _range(v) -> tuple | None:
    """(memory space, first byte, end byte) of a tile Var's buffer."""
    t = getattr(v, "type", None)
    if not isinstance(t, TileType) or t.memref is None or t.memref.addr is None or t.memory_space is None:
        return None
    lo = t.memref.physical_addr
    return t.memory_space, lo, lo + t.nbytes


def _overlaps(v, rng) -> bool:
    r = _range(v)
    return r is not None and r[0] == rng[0] and r[1] < rng[2] and rng[1] < r[2]


def _reads(s, rng) -> bool:
    """Whether statement ``s`` may read bytes of ``rng`` (conservative: any reference to an
    overlapping tile other than as a scratch operand counts, results included)."""
    c = _call(s)
    if c is not None:
        op = get_op(c.op)
        scratch = op.trait(Scratch)
        skip = [p.name for p in op.params].index(scratch.param) if scratch is not None else -1
        for i, a in enumerate(c.args):
            if i != skip and any(isinstance(x, Var) and _overlaps(x, rng) for x in walk_expr(a)):
                return True
        return isinstance(s, AssignStmt) and _overlaps(s.var, rng)
    vars_: list = []
    if isinstance(s, AssignStmt):
        vars_ = [s.var, *walk_expr(s.value)]
    elif isinstance(s, (ForStmt, WhileStmt)):
        vars_ = [*s.iter_args, *s.return_vars, *(x for e in s.init_values for x in walk_expr(e))]
    elif isinstance(s, IfStmt):
        vars_ = list(s.return_vars)
    else:
        vars_ = [x for e in getattr(s, "values", ()) for x in walk_expr(e)]
        vars_ += [x for x in walk_expr(s.expr)] if isinstance(s, EvalStmt) else []
    return any(isinstance(x, Var) and _overlaps(x, rng) for x in vars_)


# the cube ops a transposed operand may be handed to as ``src.transpose(-2, -1)``: their simulator
# helpers (matmul / gang_matmul_into, pypto/ops/support/core.py) take any strided operand, a
# transposed one without materialising it where that is the same product
_CUBE_MATMULS = ("tile.matmul", "tile.matmul_acc")


def fused_transposes(f: Function) -> dict[int, tuple]:
    """The staging copies of ``f``'s cube operands the kernel generator may leave out: ``id`` of a
    call ->

    * ``("view", src)``: ``x = tile.transpose_view(src)`` (2-D form: no ``nd_shape``) followed in the
      same statement list by ``y = tile.move(x, ...)``, where no other statement after the view (in
      program order, plus its whole outermost loop) refers to bytes of ``x``'s buffer and ``y``'s
      buffer does not overlap ``src``'s: the view emits nothing;
    * ``("move", src)``: that move, one transposed copy ``y.copy_(src.transpose(-2, -1))`` (the two
      statements are adjacent, so ``src`` holds what the view copied);
    * ``("dead", src)``: such a move, or a plain ``y = tile.move(src, ...)``, whose ``y`` a cube
      matmul later in the same statement list reads, where nothing after the move but that matmul
      refers to bytes of ``y``'s buffer and every statement in between is a move or a view writing
      no byte of ``src`` (or one left out itself): the move emits nothing, and
    * ``("operand", {id(y): (src, transposed)})``: that matmul, which reads ``src`` (transposed:
      ``src.transpose(-2, -1)``) in place of each such ``y``: the same elements, ``src`` being
      unchanged since the move (or the view) read it.
    """
    flat: list[tuple[object, int]] = []
    _flatten(f.body, -1, flat)
    pos = {id(s): (k, loop) for k, (s, loop) in enumerate(flat)}

    def unread(v, k: int, loop: int, skip: tuple) -> bool:
        rng = _range(v)
        later = range(loop if loop >= 0 else k + 1, len(flat))
        return rng is not None and not any(_reads(flat[j][0], rng) for j in later if j not in skip)

    out: dict[int, tuple] = {}
    blocks = list(_blocks(f.body))
    # 1. a view read only by the move right after it
    for block in blocks:
        for s, nxt in zip(block, block[1:]):
            c, m = _call(s), _call(nxt)
            if c is None or m is None or c.op != "tile.transpose_view" or m.op != "tile.move" \
                    or not isinstance(s, AssignStmt) or not isinstance(nxt, AssignStmt) \
                    or c.args[1] is not None or m.args[0] is not s.var:
                continue
            src, y = c.args[0], nxt.var
            srng = _range(src)
            if srng is None or _range(y) is None or _overlaps(y, srng):
                continue
            k, loop = pos[id(s)]
            if unread(s.var, k, loop, (k, k + 1)):
                out[id(c)] = ("view", src)
                out[id(m)] = ("move", src)
    # 2. a move (plain, or of such a view) read only by a matmul after it
    for block in blocks:
        for i, s in enumerate(block):
            m = _call(s)
            if m is None or m.op != "tile.move" or not isinstance(s, AssignStmt):
                continue
            entry = out.get(id(m))
            if entry is not None:
                src, trans = entry[1], True
            elif isinstance(m.args[0], Var):
                src, trans = m.args[0], False
            else:
                continue
            y, srng = s.var, _range(src)
            if srng is None or _range(y) is None:
                continue
            for t in block[i + 1:]:
                mm = _call(t)
                if mm is None:
                    break
                if mm.op in _CUBE_MATMULS and any(a is y for a in mm.args):
                    k, loop = pos[id(s)]
                    if unread(y, k, loop, (k, pos[id(t)][0])):
                        out[id(m)] = ("dead", src)
                        prev = out.get(id(mm), ("operand", {}))[1]
                        out[id(mm)] = ("operand", {**prev, id(y): (src, trans)})
                    break
                # in between: moves and views, each left out or writing no byte of src
                if mm.op not in ("tile.move", "tile.transpose_view") or not isinstance(t, AssignStmt) or \
                        (out.get(id(mm), ("",))[0] not in ("view", "dead") and _overlaps(t.var, srng)):
                    break
    return out


def _blocks(stmts):
    """Every statement list of ``stmts`` (itself and the nested bodies), as tuples."""
    yield tuple(stmts)
    for s in stmts:
        if isinstance(s, (ForStmt, WhileStmt, ScopeStmt)):
            yield from _blocks(s.body)
        elif isinstance(s, IfStmt):
            yield from _blocks(s.then_body)
            yield from _blocks(s.else_body)
