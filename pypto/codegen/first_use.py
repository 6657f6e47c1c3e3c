"""Which bytes of core memory a kernel may read before it has written them.

Every simulated call starts from zeroed core memory (docs/simulator.md): a kernel that reads a tile
it never wrote sees zeros (or what an earlier task on the same core left), the same on every call
of a seeded run. Refilling with zeros all the memory the previous call wrote costs bandwidth (a
Qwen3 layer call: 8.9 MB, ~0.5 ms), yet most of it is tiles every task writes whole before reading
them: the cube pipeline's L1 / L0A / L0B / L0C tiles (a load, a move, a matmul). Their start value
cannot be observed by any kernel, so the runtime need not clear them
(:class:`pypto.runtime.cores.CoreMemory`, ``zero``).

:func:`zero_first` finds, for one kernel function, the byte ranges (per memory space) of the tiles
it may read before every byte of them has been written: the generated module lists them as
``ZERO_FIRST``; the runtime zeroes the union of its kernels' lists (all of a kernel's ``TILES``
where a module has no list) and leaves the rest as the previous call left it.

The analysis is conservative; where in doubt a byte counts as read first:

* Only a few ops count as writes, and only of their result tile, which their simulator code writes
  whole: ``tile.load`` (the valid region copied, the padding zeroed: ``load_into``; not a packed MX
  scale load), ``tile.move`` (one ``copy_``) and ``tile.matmul`` / ``tile.matmul_acc`` (the product
  copied / added into the destination). Any other op's result, a loop carry's copy, a scratch
  operand: no write.
* A move or view the kernel generator leaves out (:func:`pypto.codegen.scratch.fused_transposes`:
  ``"view"`` / ``"dead"``) reads and writes nothing; the move copying straight from a view's source
  (``"move"``) and the matmul reading a left-out move's source (``"operand"``) read that source.
* Statements run in order within a statement list; a write inside a loop body or an ``if`` branch
  covers later reads of the same body (each execution of the body writes before it reads) but not
  the statements after the loop or ``if`` (the body may not run). Every tile an expression refers to
  is read there (operands, loop init values, yields, conditions); reads nested in any other
  statement are taken as reads at that statement.
* A kernel that talks to other cores (an AIC / AIV function, a cross-core or synchronisation op:
  another core may write its memory) gets no list (``None``): all of its tiles are cleared.
"""
from __future__ import annotations

import math

from pypto.ir.nodes import AssignStmt, Call, EvalStmt, ForStmt, Function, IfStmt, ReturnStmt, Var, WhileStmt, YieldStmt
from pypto.ir.types import TileType
from pypto.ir.visit import iter_calls, iter_exprs, use_exprs, walk_expr
from pypto.language.dtypes import dtype_from_name
from pypto.language.enums import FunctionType
from pypto.ops.registry import get_op
from pypto.ops.traits import CoreSync

# ops whose simulator code writes every byte of the result tile's view (see the module docstring)
FULL_WRITERS = frozenset({"tile.load", "tile.move", "tile.matmul", "tile.matmul_acc"})
_MX_LAYOUTS = ("MX_A_ZZ", "MX_B_NN")


class _Unknown(Exception):
    """A tile whose bytes the analysis cannot place (no address): no list for the kernel."""


def zero_first(f: Function, fused: dict) -> list[tuple[str, int, int]] | None:
    """``(memory space name, first byte, end byte)`` ranges, sorted and disjoint, of the core memory
    kernel ``f`` may read before writing it (see the module docstring); ``None`` when not known (all
    of its tiles must start zeroed). ``fused`` is :func:`pypto.codegen.scratch.fused_transposes` of
    ``f``, as the kernel generator uses it."""
    if f.func_type in (FunctionType.AIC, FunctionType.AIV):
        return None
    for _, c in iter_calls(f.body):
        op = get_op(c.op)
        if op.waits or op.has(CoreSync):
            return None
    reads: list[tuple[str, int, int]] = []
    try:
        _block(f.body, {}, reads, fused)
    except _Unknown:
        return None
    return merge_ranges(reads)


def tile_range(v) -> tuple[str, int, int]:
    """``(space name, first byte, end byte)`` of a tile Var's view: the bytes the kernel generator's
    view of it covers (its buffer's address plus the tile's offset, the full shape, the dtype)."""
    t = v.type
    if t.memref is None or t.memref.addr is None or t.memory_space is None:
        raise _Unknown(v.name)
    lo = t.memref.physical_addr
    return t.memory_space.name, lo, lo + math.prod(t.shape) * dtype_from_name(t.dtype.name).torch.itemsize


def merge_ranges(ranges) -> list[tuple[str, int, int]]:
    """The union of ``(space, lo, hi)`` ranges as sorted disjoint ranges."""
    out: list[list] = []
    for sp, lo, hi in sorted(r for r in ranges if r[1] < r[2]):
        if out and out[-1][0] == sp and lo <= out[-1][2]:
            out[-1][2] = max(out[-1][2], hi)
        else:
            out.append([sp, lo, hi])
    return [tuple(r) for r in out]


def _is_tile(x) -> bool:
    return isinstance(x, Var) and isinstance(x.type, TileType)


def _read(v, cov: dict, reads: list) -> None:
    """A read of tile ``v``: the bytes of it no write has covered yet are read first."""
    sp, lo, hi = tile_range(v)
    for clo, chi in cov.get(sp, ()):
        if clo >= hi:
            break
        if chi <= lo:
            continue
        if clo > lo:
            reads.append((sp, lo, clo))
        lo = max(lo, chi)
        if lo >= hi:
            return
    if lo < hi:
        reads.append((sp, lo, hi))


def _cover(v, cov: dict) -> None:
    """Tile ``v`` written whole: its bytes are covered from here on (in this statement list)."""
    sp, lo, hi = tile_range(v)
    cov[sp] = [(a, b) for _, a, b in merge_ranges([(sp, a, b) for a, b in cov.get(sp, ())] + [(sp, lo, hi)])]


def _reads_of(exprs, cov: dict, reads: list, swap: dict | None = None) -> None:
    for e in exprs:
        for x in walk_expr(e):
            if _is_tile(x):
                if swap is not None and id(x) in swap:   # a fused operand: the matmul reads its source
                    x = swap[id(x)][0]
                _read(x, cov, reads)


def _block(stmts, cov: dict, reads: list, fused: dict) -> None:
    """Walk a statement list in order with ``cov`` (space -> covered (lo, hi) intervals, updated)."""
    for s in stmts:
        if isinstance(s, (AssignStmt, EvalStmt, ReturnStmt, YieldStmt)):
            c = s.value if isinstance(s, AssignStmt) else s.expr if isinstance(s, EvalStmt) else None
            entry = fused.get(id(c)) if isinstance(c, Call) else None
            if entry is not None and entry[0] in ("view", "dead"):
                continue   # not emitted: no read (its consumer reads the source, below), no write
            swap = None
            if entry is not None and entry[0] == "operand":   # {id(y): (src, transposed)}
                swap = entry[1]
            elif entry is not None and entry[0] == "move":   # one copy from the view's source
                swap = {id(c.args[0]): (entry[1],)}
            _reads_of(use_exprs(s), cov, reads, swap)
            if isinstance(s, AssignStmt) and isinstance(c, Call) and c.op in FULL_WRITERS and _is_tile(s.var) \
                    and not _mx_load(c):
                _cover(s.var, cov)
        elif isinstance(s, (ForStmt, WhileStmt)):
            _reads_of(use_exprs(s), cov, reads)
            _block(s.body, dict(cov), reads, fused)
        elif isinstance(s, IfStmt):
            _reads_of(use_exprs(s), cov, reads)
            _block(s.then_body, dict(cov), reads, fused)
            _block(s.else_body, dict(cov), reads, fused)
        else:   # (a scope, anything else): every tile it or its statements refer to is read here
            _reads_of(iter_exprs([s]), cov, reads)


def _mx_load(c: Call) -> bool:
    """A ``tile.load`` from a packed MX scale tensor (its own unpacking copy: not counted)."""
    if c.op != "tile.load":
        return False
    layout = getattr(getattr(c.args[0], "type", None), "layout", None)
    return getattr(layout, "name", None) in _MX_LAYOUTS
