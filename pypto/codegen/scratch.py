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

One step further, the load of such a source: a ``tile.load`` whose tile nothing reads but the matmul
(through those left-out moves / views) writes no core memory; the matmul reads the global-memory
region the load would have copied. Safe because (1) no later statement reads the tile's bytes --
by byte ranges of the planned buffers, so a tile placed over them is a reader too -- and (2) only
moves and views sit between the load and the matmul: no global-memory access, hence no yield, so no
other task runs in between and the region holds the bytes the load would have copied at that
simulated moment. The load's cycles and yield stay where they were (the schedule is unchanged).
"""
from __future__ import annotations

from pypto.ir.nodes import AssignStmt, Call, EvalStmt, ForStmt, Function, IfStmt, ScopeStmt, Var, WhileStmt
from pypto.ir.types import TileType
from pypto.language.enums import FunctionType
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
      reads bytes of ``y``'s buffer and every statement in between is a move or a view writing
      no byte of ``src`` (or one left out itself): the move emits nothing;
    * ``("gmload", t)``: ``t = tile.load(tensor, offsets, shape)`` (the whole tile valid, the
      tensor's dtype, no packed layout) whose tile a cube matmul later in the same statement list
      reads -- directly, or through moves / views left out above -- where every statement in
      between is a move or a view (no global-memory access, so no yield: no other task runs in
      between and the global-memory bytes are the ones the load would have copied), and nothing
      after the load but that matmul reads bytes of ``t``'s buffer: the load writes no core memory,
      it binds the region it would have copied (a global-memory view) for the matmul to read;
    * ``("operand", {id(y): (src, transposed)})``: that matmul, which reads ``src`` (transposed:
      ``src.transpose(-2, -1)``) in place of each such ``y`` -- the same elements, ``src`` being
      unchanged since the move (or the view) read it; a ``src`` whose load is left out is read
      from the load's global-memory view (``y`` is ``src`` itself for a loaded tile the matmul
      takes as it is).

    "Reads" is what the generated code reads once these are left out (:func:`_reads_after`):
    a left-out move, view or load reads nothing of core memory, a matmul reads the sources it is
    handed instead of the staged tiles, and an op that only overwrites a buffer (a move, a load, a
    view, a matmul's result) does not read it. The moves and loads left out are the largest set
    whose conditions hold together (candidates are dropped until none fails), so each one's
    condition holds in the code generated with all the others left out too.
    """
    flat: list[tuple[object, int]] = []
    _flatten(f.body, -1, flat)
    pos = {id(s): (k, loop) for k, (s, loop) in enumerate(flat)}

    def later(k: int, loop: int):
        return range(loop if loop >= 0 else k + 1, len(flat))

    def unread(v, k: int, loop: int, skip: tuple) -> bool:
        rng = _range(v)
        return rng is not None and not any(_reads(flat[j][0], rng) for j in later(k, loop) if j not in skip)

    out: dict[int, tuple] = {}
    blocks = list(_blocks(f.body))
    kills = _Kills(blocks)
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
    # 2. candidates: a move (plain, or of such a view) read by a matmul after it -- (move statement,
    # its call, the matmul's statement, src, transposed, ids of the in-between moves that must be
    # left out for src to be intact)
    moves = []
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
            needs = []
            for t in block[i + 1:]:
                mm = _call(t)
                if mm is None:
                    break
                if mm.op in _CUBE_MATMULS and any(a is y for a in mm.args):
                    moves.append((s, m, t, mm, src, trans, tuple(needs)))
                    break
                # in between: moves and views, each writing no byte of src, or left out itself
                if mm.op not in ("tile.move", "tile.transpose_view") or not isinstance(t, AssignStmt):
                    break
                if _overlaps(t.var, srng):
                    if out.get(id(mm), ("",))[0] == "view":
                        continue
                    if mm.op != "tile.move":
                        break
                    needs.append(id(mm))
    # 3. candidates: a whole-tile load whose tile a matmul after it may read, with only moves and
    # views in between (no global-memory access: no yield)
    loads = []
    for block in blocks:
        for i, s in enumerate(block):
            ld = _call(s)
            if ld is None or not _plain_load(s, ld):
                continue
            for t in block[i + 1:]:
                mm = _call(t)
                if mm is None:
                    break
                if mm.op in _CUBE_MATMULS:
                    loads.append((s, ld, t, mm))
                    break
                if mm.op not in ("tile.move", "tile.transpose_view") or not isinstance(t, AssignStmt):
                    break
    # the largest set of candidates whose conditions hold together
    while True:
        dec = dict(out)
        for s, m, t, mm, src, trans, _ in moves:
            dec[id(m)] = ("dead", src)
            prev = dec.get(id(mm), ("operand", {}))[1]
            dec[id(mm)] = ("operand", {**prev, id(s.var): (src, trans)})
        gm = {}   # id of a tile whose load is left out -> id of the matmul reading its view
        for s, ld, t, mm in loads:
            gm[id(s.var)] = id(mm)
            if any(a is s.var for a in mm.args):
                prev = dec.get(id(mm), ("operand", {}))[1]
                dec[id(mm)] = ("operand", {**prev, id(s.var): (s.var, False)})
            dec[id(ld)] = ("gmload", s.var)
        keep_m = []
        for cand in moves:
            s, m, t, mm, src, trans, needs = cand
            k, loop = pos[id(s)]
            rng = _range(s.var)
            if all(dec.get(n, ("",))[0] == "dead" for n in needs) and not any(
                    _reads_after(flat[j][0], rng, dec, gm) and not kills.killed(s, flat[j][0], rng)
                    for j in later(k, loop) if j != k):
                keep_m.append(cand)
        keep_l = []
        for cand in loads:
            s, ld, t, mm = cand
            k, loop = pos[id(s)]
            rng = _range(s.var)
            ops = dec.get(id(mm), ("", {}))
            consumed = ops[0] == "operand" and any(src is s.var for src, _ in ops[1].values())
            if consumed and not any(_reads_after(flat[j][0], rng, dec, gm) and not kills.killed(s, flat[j][0], rng)
                                    for j in later(k, loop) if j != k):
                keep_l.append(cand)
        if len(keep_m) == len(moves) and len(keep_l) == len(loads):
            break
        moves, loads = keep_m, keep_l
    if f.func_type not in (FunctionType.AIC, FunctionType.AIV):
        _one_loads(f, flat, pos, blocks, dec, gm, kills)
    return dec


class _Kills:
    """Which reads a later overwrite hides: a statement ``r`` cannot read the value a statement
    ``s`` left in a buffer's bytes ``rng`` when, in the statement list holding ``r``, a statement
    before ``r`` writes all of ``rng`` without reading it (an op of :data:`_OVERWRITES`) and that
    list does not hold ``s`` at any depth: each pass through the list writes the bytes before ``r``
    reads them, and ``s`` does not run in between (the Qwen3 projection's first K chunk: the loop
    after it loads and moves into the same buffers before its matmul reads them). An overwrite that
    is itself left out writes nothing, but then nothing after it reads those bytes but its own
    consumer, which reads the source instead (its own condition, checked on the list holding it,
    where no overwrite hides anything)."""

    def __init__(self, blocks: list):
        self.blocks = blocks
        self.where: dict[int, tuple[int, int]] = {}   # id(statement) -> (its list, its index there)
        self.deep: list[set] = []                     # per list: ids of the statements inside at any depth
        for b, block in enumerate(blocks):
            for i, s in enumerate(block):
                self.where.setdefault(id(s), (b, i))
            self.deep.append({id(x) for x in _deep(block)})

    def killed(self, s, r, rng) -> bool:
        at = self.where.get(id(r))
        if at is None:
            return False
        b, i = at
        if id(s) in self.deep[b]:
            return False
        for w in self.blocks[b][:i]:
            c = _call(w)
            if c is not None and c.op in _OVERWRITES and isinstance(w, AssignStmt):
                r2 = _range(w.var)
                if r2 is not None and r2[0] == rng[0] and r2[1] <= rng[1] and rng[2] <= r2[2] \
                        and not any(isinstance(x, Var) and _overlaps(x, rng) for a in c.args for x in walk_expr(a)):
                    return True
        return False


def _deep(stmts):
    for s in stmts:
        yield s
        if isinstance(s, (ForStmt, WhileStmt, ScopeStmt)):
            yield from _deep(s.body)
        elif isinstance(s, IfStmt):
            yield from _deep(s.then_body)
            yield from _deep(s.else_body)


def _one_loads(f: Function, flat: list, pos: dict, blocks: list, dec: dict, gm: dict, kills: "_Kills") -> None:
    """Add to ``dec`` (:func:`fused_transposes`' entries) ``("oneload", t)`` for each whole-tile load
    ``t = tile.load(...)`` (not left out) whose tile only a cube matmul later in the same statement
    list reads, with only calls in between that refer to no byte of ``t``'s buffer (reads or writes;
    left-out moves, views and loads, which write no core memory, aside), and nothing after the load
    but that matmul reading those bytes. A gang whose members all load ONE region then loads it into the first member's tile
    alone and hands the matmul that tile repeated (stride 0, converted once: every member's tile
    would hold those bits); the other members' tiles are not written, which nobody can observe.
    Unlike a left-out load, yields may lie in between: the first member's tile is core memory that
    only its own kernel writes (an InCore kernel: no cluster peer pushes into it, so AIC / AIV
    functions are not considered), and nothing in between writes it."""
    for block in blocks:
        for i, s in enumerate(block):
            ld = _call(s)
            if ld is None or id(ld) in dec or not _plain_load(s, ld):
                continue
            t = s.var
            rng = _range(t)
            for u in block[i + 1:]:
                c = _call(u)
                if c is None:
                    break
                e = dec.get(id(c), ("",))
                if c.op in _CUBE_MATMULS and e[0] == "operand" and any(src is t for src, _ in e[1].values()):
                    k, loop = pos[id(s)]
                    one = {**gm, id(t): id(c)}
                    later = range(loop if loop >= 0 else k + 1, len(flat))
                    if not any(_reads_after(flat[j][0], rng, dec, one) and not kills.killed(s, flat[j][0], rng)
                               for j in later if j != k):
                        dec[id(ld)] = ("oneload", t)
                    break
                if e[0] in ("view", "dead", "gmload"):
                    continue   # (writes no core memory: emits nothing, or binds a global-memory view)
                if _touches(u, c, rng):
                    break


def _touches(s, c: Call, rng) -> bool:
    """Whether the call statement ``s`` (call ``c``) refers to bytes of ``rng`` in any way: an
    operand (a scratch one included) or its result."""
    if isinstance(s, AssignStmt) and _overlaps(s.var, rng):
        return True
    return any(isinstance(x, Var) and _overlaps(x, rng) for a in c.args for x in walk_expr(a))


# ops whose result buffer is written whole and never read by the op itself (a matmul_acc reads its
# accumulator as an operand): a statement referring to a buffer only as such a result does not read it
_OVERWRITES = ("tile.move", "tile.load", "tile.transpose_view", "tile.matmul", "tile.matmul_acc")


def _plain_load(s, c: Call) -> bool:
    """``s`` is ``t = tile.load(tensor, offsets, shape)`` copying the region as it is into the whole
    of ``t``: no valid shape, static extents, the tensor's dtype, no packed (MX) layout."""
    if c.op != "tile.load" or not isinstance(s, AssignStmt):
        return False
    t, src = s.var.type, c.args[0].type
    if not isinstance(t, TileType) or t.valid_shape is not None or c.args[3] is not None \
            or not all(type(d) is int for d in t.shape) or _range(s.var) is None:
        return False
    layout = getattr(getattr(src, "layout", None), "name", "ND")
    return getattr(src, "dtype", None) == t.dtype and layout not in ("MX_A_ZZ", "MX_B_NN")


def _reads_after(s, rng, dec: dict, gm: dict) -> bool:
    """Whether statement ``s`` reads bytes of ``rng`` in the code generated with the decisions
    ``dec`` (:func:`fused_transposes`' entries), the loads of the tiles ``gm`` (id -> id of the one
    matmul handed the load's global-memory view) left out."""
    c = _call(s)
    if c is None:
        return _reads(s, rng)
    e = dec.get(id(c))
    kind = e[0] if e is not None else None
    if kind in ("view", "dead", "gmload"):
        return False   # emits nothing / reads global memory
    if kind == "move":   # one transposed copy from the view's source
        return _overlaps(e[1], rng)
    subst = e[1] if kind == "operand" else {}
    op = get_op(c.op)
    scratch = op.trait(Scratch)
    skip = [p.name for p in op.params].index(scratch.param) if scratch is not None else -1
    for i, a in enumerate(c.args):
        if i == skip:
            continue
        for x in walk_expr(a):
            if not isinstance(x, Var):
                continue
            st = subst.get(id(x))
            if st is not None:
                x = st[0]
                if gm.get(id(x)) == id(c):   # (its consumer reads the load's view, not the tile)
                    continue
            if _overlaps(x, rng):
                return True
    return isinstance(s, AssignStmt) and c.op not in _OVERWRITES and _overlaps(s.var, rng)


def _blocks(stmts):
    """Every statement list of ``stmts`` (itself and the nested bodies), as tuples."""
    yield tuple(stmts)
    for s in stmts:
        if isinstance(s, (ForStmt, WhileStmt, ScopeStmt)):
            yield from _blocks(s.body)
        elif isinstance(s, IfStmt):
            yield from _blocks(s.then_body)
            yield from _blocks(s.else_body)
