"""On-chip memory of the simulated cores.

Per memory space, the memories of all cores of a run are the rows of one ``[cores, bytes]`` byte
tensor. A core's buffer is its row; a tile is a typed view of the row at the address the compiler
allocated. Because the rows are evenly spaced, the same tile on *adjacent* cores is also one strided
view with a leading axis over those cores (:meth:`CoreMemory.gang_views`): that is what lets a
lockstep gang of tasks (:mod:`pypto.codegen.gang`) run each instruction as one torch call.

Every call starts from zeroed core memory (seeded runs stay bit-identical); the tensors are recycled
between calls (``_MEM_POOL``; a fresh allocation page-faults, which costs more than the whole run of a
small program), clearing only the byte ranges the previous call's tile views covered, on the rows
(cores) they covered (the only bytes a kernel can write: a small program that ran on a few cores
clears a few rows, not all 48). Under ``sim_poison`` memory starts as the byte 0xFF instead (a separate pool).

A simulated call (:func:`pypto.runtime.simulator.execute`) narrows that further (``zero``): of those
ranges it clears only the bytes some kernel of the program may read before writing them (its
modules' ``ZERO_FIRST``, :mod:`pypto.codegen.first_use`); the others (tiles every task writes whole
before reading: the cube pipeline's L1 / L0 tiles) keep what the previous call left, which no kernel
can observe, and stay marked (``stale``) so that a later call of a program that may read them first,
or a memory without ``zero`` (the race detector's and the doctor's runtimes), clears them. Decision
and reason: the documented start state (zero) holds for every byte a kernel can observe, and the
Qwen3 layer's call no longer clears 7.9 MB of matmul tiles it overwrites anyway (~0.4 ms).
"""
from __future__ import annotations

import threading

import torch

from pypto.backend.platforms import Platform
from pypto.errors import SimulationError
from pypto.language.enums import MemorySpace

# (platform, space, cores, fill) -> [(tensor, dirty (lo, hi, first row, row stop, row step) ranges)]
_MEM_POOL: dict[tuple, list] = {}
_POOL_LOCK = threading.Lock()       # runs in several threads share the pool


def _merge(ranges, nrows: int) -> list:
    """The byte ranges ``(lo, hi, first, stop, step)`` (rows ``first:stop:step`` of each; ``stop``
    None: to the last of ``nrows``) as fewer, disjoint rectangles of the same union: the views of a
    call cover the same bytes on nested row sets (one core's, a gang's of 8, 12, 32, 48 adjacent
    cores), and clearing each set's ranges on its own cleared the shared part several times (a
    Qwen3 layer's core memory: 16 MB cleared a call for 9 MB of used bytes). Rows ``first:stop``
    (step 1) are cut where a range starts or stops; each stretch of rows is cleared once over the
    union of the ranges covering it, stretches with the same union as one. Strided row sets (a
    cluster kind's rows) keep their own ranges, merged per row set."""
    plain, strided = [], []
    for lo, hi, first, stop, step in ranges:
        stop = nrows if stop is None else min(stop, nrows)
        if first >= stop:
            continue
        (plain if step == 1 else strided).append((lo, hi, first, stop, step))
    out: list = []
    if plain:
        cuts = sorted({r[2] for r in plain} | {r[3] for r in plain})
        prev = None   # [union, first row]: the stretch being extended
        for r0, r1 in zip(cuts, cuts[1:]):
            spans = sorted((lo, hi) for lo, hi, first, stop, _ in plain if first <= r0 and r1 <= stop)
            union: list = []
            for lo, hi in spans:
                if union and lo <= union[-1][1]:
                    if hi > union[-1][1]:
                        union[-1][1] = hi
                else:
                    union.append([lo, hi])
            if prev is not None and prev[0] == union:
                continue
            if prev is not None:
                out.extend([lo, hi, prev[1], r0, 1] for lo, hi in prev[0])
            prev = [union, r0]
        if prev is not None:
            out.extend([lo, hi, prev[1], cuts[-1], 1] for lo, hi in prev[0])
    for lo, hi, first, stop, step in sorted(strided, key=lambda r: (r[2], r[3], r[4], r[0], r[1])):
        last = out[-1] if out else None
        if last is not None and last[2:] == [first, stop, step] and lo <= last[1]:
            last[1] = max(last[1], hi)
        else:
            out.append([lo, hi, first, stop, step])
    return out


class _Pooled(tuple):
    """A pool entry ``(array, dirty ranges)`` that also carries the array's view cache (``views``):
    building a gang's ``[n, *tile]`` views by indexing costs ~10 us each, ~2 ms of a Qwen3-layer
    call, and every call of a program builds the same ones on the same recycled arrays. ``raw`` is
    the set of ranges the dirty ranges were merged from: the next call of the same program marks
    the same set, whose merge is then the one already made (:meth:`CoreMemory.release`)."""


_VIEWS_KEPT = 4096   # views cached per pooled array (cleared beyond: programs come and go)
_NONE = frozenset()


def _split(dirty: list, stale: frozenset, zero) -> tuple[list, frozenset]:
    """``(rectangles to clear, rectangles left stale)`` of a pooled array's ``dirty`` (merged) and
    ``stale`` rectangles ``(lo, hi, first, stop, step)`` for the byte ranges ``zero`` (sorted,
    disjoint ``(lo, hi)``, on every row): each rectangle cut at the ranges' bounds, the parts inside
    them cleared, the others kept (the same rows). Remembered per (dirty list, stale, zero): every
    call of one program asks the same (the dirty list is the very object its last call merged)."""
    key = (id(dirty), stale, zero)
    hit = _SPLITS.get(key)
    if hit is not None and hit[0] is dirty:
        return hit[1], hit[2]
    clear, keep = [], set()
    for lo, hi, first, stop, step in [*dirty, *stale]:
        pos = lo
        for zlo, zhi in zero:
            if zhi <= pos:
                continue
            if zlo >= hi:
                break
            if zlo > pos:
                keep.add((pos, zlo, first, stop, step))
            a, pos = max(pos, zlo), min(hi, zhi)
            clear.append((a, pos, first, stop, step))
            if pos >= hi:
                break
        if pos < hi:
            keep.add((pos, hi, first, stop, step))
    keep = frozenset(keep)
    if len(_SPLITS) >= 256:
        _SPLITS.clear()
    _SPLITS[key] = (dirty, clear, keep)
    return clear, keep


_SPLITS: dict = {}   # (id(dirty), stale, zero) -> (dirty, clear, keep): _split's results
_SPACE = {m.name: m for m in MemorySpace}


def _nbytes(shape, dtype) -> int:
    n = 1
    for d in shape:
        n *= d
    return n * dtype.itemsize


class CoreMemory:
    """The on-chip memories of the ``cores`` cores of one run (see the module docstring)."""

    def __init__(self, platform: Platform, cores: int, poison: bool = False, zero: dict | None = None):
        self.platform = platform
        self.cores = cores
        self.fill = 0xFF if poison else 0   # the byte core memory starts as
        # per space: the sorted disjoint (lo, hi) byte ranges (every row) that must start as the fill
        # byte (the program's ZERO_FIRST; a space absent: none); None: every byte (poison: always)
        self.zero = None if poison else zero
        # per space: dirty rectangles left uncleared (outside ``zero``), handed on with the array
        self.stale: dict[MemorySpace, frozenset] = {}
        self.arrays: dict[MemorySpace, torch.Tensor] = {}
        # (lo, hi, first row, row stop, row step): byte ranges some view was built on, on the rows
        # first:stop:step it covers (one core's row, a gang's adjacent rows, a cluster kind's rows)
        self.dirty: dict[MemorySpace, set] = {}
        # per space: (addr, shape, dtype, rows, one core) -> (view, bytes): the views built on the
        # array so far, kept with it in the pool (a view of recycled memory is the same view)
        self.views: dict[MemorySpace, dict] = {}
        # per space: (the raw ranges, their merge) of the pool entry this call's array came from
        self.merged: dict[MemorySpace, tuple] = {}

    def array(self, space: MemorySpace) -> torch.Tensor:
        """The ``[cores, capacity]`` byte tensor of ``space``."""
        arr = self.arrays.get(space)
        if arr is None:
            fill = self.fill
            with _POOL_LOCK:  # two threads must not both take the last free tensor
                free = _MEM_POOL.get((self.platform.name, space, self.cores, fill))
                taken = free.pop() if free else None
            if taken is not None:
                arr, dirty = taken
                stale = getattr(taken, "stale", _NONE)
                if self.zero is None:
                    for lo, hi, first, stop, step in dirty:
                        arr[first:stop:step, lo:hi].fill_(fill)
                    for lo, hi, first, stop, step in stale:
                        arr[first:stop:step, lo:hi].fill_(fill)
                    stale = _NONE
                else:
                    clear, stale = _split(dirty, stale, self.zero.get(space, ()))
                    for lo, hi, first, stop, step in clear:
                        arr[first:stop:step, lo:hi].fill_(fill)
                self.stale[space] = stale
                views = getattr(taken, "views", None)
                self.merged[space] = (getattr(taken, "raw", None), dirty)
            else:
                arr = torch.full((self.cores, self.platform.capacity(space)), fill, dtype=torch.uint8)
                views = None
            self.arrays[space] = arr
            self.dirty[space] = set()
            self.views[space] = {} if views is None else views
        return arr

    def view(self, space: str, addr: int, shape, dtype, cores: slice, what: str) -> torch.Tensor:
        """The tile ``(space, addr, shape, dtype)`` on the cores ``cores`` (a slice of rows): shape
        ``[n, *shape]``, or ``shape`` itself when ``cores`` is an int. Only the rows ``cores`` covers
        (one core, a gang's adjacent cores, the cube or vector rows of the clusters) are marked for
        clearing at the next call."""
        sp = _SPACE.get(space) or MemorySpace[space]
        arr = self.array(sp)
        if isinstance(cores, slice):
            rows = (cores.start or 0, cores.stop, cores.step or 1)
        else:
            rows = (cores, cores + 1, 1)
        key = (addr, tuple(shape), dtype, rows, cores.__class__ is int)
        cache = self.views[sp]
        hit = cache.get(key)
        if hit is None:
            nbytes = _nbytes(shape, dtype)
            if addr + nbytes > arr.shape[1]:
                raise SimulationError(f"kernel {what}: tile at {space}+{addr} ({nbytes} B) exceeds "
                                      f"the core's {space} memory ({arr.shape[1]} B)")
            v = arr[cores, addr:addr + nbytes].view(dtype)
            v = v.view(shape) if isinstance(cores, int) else v.view(v.shape[0], *shape)
            if len(cache) >= _VIEWS_KEPT:
                cache.clear()
            hit = cache[key] = (v, nbytes)
        self.dirty[sp].add((addr, addr + hit[1], *rows))
        return hit[0]

    def gang_views(self, kernel: str, first: int, n: int, tiles) -> list:
        """Every tile of ``tiles`` on cores ``first .. first + n - 1``, as ``[n, *shape]`` views.
        (:meth:`view`'s cache lookup and marking written out for the rows of a gang: a call of a
        batched model builds a hundred gang views, nearly all of them found in the cache.)

        The list and its marks are remembered per (tiles, first, n) across calls, in the view cache
        of the first tile's array (so they live and go with that array, as its views do), with the
        arrays they are views of: a later call whose memory is the very same arrays (every call of
        a program, its memory recycled) gets the same list and marks the same ranges; any other
        array (another thread's, a poisoned pool's, a new one) builds them again."""
        if not tiles:
            return []
        sp0 = _SPACE.get(tiles[0][0]) or MemorySpace[tiles[0][0]]
        if sp0 not in self.arrays:
            self.array(sp0)
        cache = self.views[sp0]
        key = ("gang", id(tiles), first, n)
        hit = cache.get(key)
        if hit is not None and hit[0] is tiles:
            arrays = self.arrays
            for sp, arr, marks in hit[2]:
                if (arrays.get(sp) if sp in arrays else self.array(sp)) is not arr:
                    break
            else:
                dirty = self.dirty
                for sp, _, marks in hit[2]:
                    dirty[sp].update(marks)
                return hit[1]
        out = self._gang_views(kernel, first, n, tiles)
        per: dict = {}
        for space, addr, shape, dtype in tiles:
            sp = _SPACE.get(space) or MemorySpace[space]
            per.setdefault(sp, set()).add((addr, addr + _nbytes(shape, dtype), first, first + n, 1))
        cache = self.views[sp0]   # (the same dict, unless building the views cleared it past _VIEWS_KEPT)
        cache[key] = (tiles, out, [(sp, self.arrays[sp], frozenset(m)) for sp, m in per.items()])
        return out

    def _gang_views(self, kernel: str, first: int, n: int, tiles) -> list:
        """:meth:`gang_views` built from the per-array view caches."""
        rows = (first, first + n, 1)
        out = []
        for space, addr, shape, dtype in tiles:
            sp = _SPACE.get(space) or MemorySpace[space]
            cache = self.views.get(sp)
            hit = None if cache is None else cache.get(
                (addr, shape if shape.__class__ is tuple else tuple(shape), dtype, rows, False))
            if hit is None:
                out.append(self.view(space, addr, shape, dtype, slice(first, first + n), kernel))
            else:
                self.dirty[sp].add((addr, addr + hit[1], first, first + n, 1))
                out.append(hit[0])
        return out

    def release(self) -> None:
        """Give the memories back to the pool (no view of them may be used afterwards)."""
        for space, arr in self.arrays.items():
            raw = self.dirty[space]
            last = self.merged.get(space)
            entry = _Pooled((arr, last[1] if last is not None and last[0] == raw else _merge(raw, arr.shape[0])))
            entry.views = self.views.get(space)
            entry.raw = raw
            entry.stale = self.stale.get(space, _NONE)
            with _POOL_LOCK:
                _MEM_POOL.setdefault((self.platform.name, space, self.cores, self.fill), []).append(entry)
        self.arrays = {}
        self.dirty = {}
        self.views = {}
        self.merged = {}
        self.stale = {}


class Core:
    """One simulated core: its row of each memory space and cached tile views per kernel."""

    def __init__(self, index: int, memory: CoreMemory):
        self.index = index
        self.memory = memory
        self.views: dict[str, list] = {}

    @property
    def mem(self) -> dict:
        """This core's byte buffer of each memory space used so far."""
        return {space: arr[self.index] for space, arr in self.memory.arrays.items()}

    def buffer(self, space: MemorySpace) -> torch.Tensor:
        """This core's byte buffer of ``space``."""
        return self.memory.array(space)[self.index]

    def release(self) -> None:
        """Give the run's core memory back to the pool (no core of the run may run again)."""
        self.memory.release()
        self.views = {}

    def tile_views(self, kernel_name: str, tiles) -> list:
        """The views of ``tiles`` (a kernel module's ``TILES``) in this core's memory (cached)."""
        views = self.views.get(kernel_name)
        if views is None:
            views = self.views[kernel_name] = [
                self.memory.view(space, addr, shape, dtype, self.index, kernel_name)
                for space, addr, shape, dtype in tiles]
        return views
