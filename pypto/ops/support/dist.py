"""Run-time side of the distributed ops (``pld.*`` inside kernels): what a generated kernel calls
when it reaches a window of another rank, a signal, a barrier or a collective.

The kernels of one rank run in that rank's own simulator (its GM, cores, scheduler) in one thread
of the engine (:mod:`pypto.runtime.distributed`); this module holds the *world* those threads
share and the per-thread *current rank*. It is a leaf of the ops layer on purpose: the generated
kernel modules import ``pypto.ops.support`` as ``_pto`` and reach these functions as
``_pto.dist.<name>``; the engine (runtime layer, above) installs the world.

Decisions (docs/distributed.md):

* A window is one torch tensor per rank (device memory of that rank's ChipWorker); a kernel sees
  its own rank's tensor as an ordinary GM argument. The peer's view of an argument is the same
  region (same offset, strides) of the peer's tensor of that window.
* Signals are INT32 cells of a window. ``notify`` changes a peer's cell under the world lock;
  ``wait`` re-checks its cell, yielding simulated cycles between checks, until it holds.
* Deadlock: a wait that sees no progress anywhere in the world (no notify, remote write,
  collective arrival or finished rank) while every unfinished rank is blocked in a wait ends the
  run with :class:`pypto.errors.SimulationError` naming every blocked rank and its source line.
* Collectives are rendezvous: every rank deposits its operand, the last arrival computes the
  result, in a rank order drawn from ``sim_seed`` (or rank order when the world is unseeded and
  ``fixed_order`` is set), accumulating in the operand dtype as a chain of pairwise adds, so the
  rounding drift of a reduction is reproducible per seed.
"""
from __future__ import annotations

import random
import threading
import time
from typing import Any, Callable

import torch

from pypto.errors import SimulationError
from pypto.ops.support.core import kernel_where

# simulated cycles one unsatisfied check of a wait costs before the next check
WAIT_POLL_CYCLES = 64
# a wait gives up (deadlock) after this many consecutive checks that saw no progress anywhere,
# and only while every unfinished rank is blocked; each check also sleeps up to POLL_SLEEP_S so
# the other ranks' threads get the interpreter
NO_PROGRESS_CHECKS = 400
POLL_SLEEP_S = 0.002

_TLS = threading.local()


class CommGroup:
    """One communication domain: the ranks (world indices) it holds, in group-rank order."""

    def __init__(self, gid: int, members: list[int]):
        self.gid = gid
        self.members = list(members)

    def rank_of(self, world_rank: int) -> int:
        """Group rank of a world rank."""
        try:
            return self.members.index(world_rank)
        except ValueError:
            raise SimulationError(f"rank {world_rank} is not a member of communication group {self.gid} "
                                  f"(members {self.members})") from None


class Window:
    """One window buffer: a tensor per world rank (``tensors[r]``) and the group it belongs to."""

    def __init__(self, name: str, tensors: dict[int, torch.Tensor], group: CommGroup):
        self.name = name
        self.tensors = tensors
        self.group = group


class Access:
    """One access of window memory, for the race check: ``rank`` read or wrote bytes ``[lo, hi)`` of
    ``owner``'s copy of window ``window`` at ``where``, knowing the clock ``vc``."""

    __slots__ = ("rank", "window", "owner", "lo", "hi", "write", "vc", "what", "where")

    def __init__(self, rank, window, owner, lo, hi, write, vc, what, where):
        self.rank, self.window, self.owner, self.lo, self.hi = rank, window, owner, lo, hi
        self.write, self.vc, self.what, self.where = write, vc, what, where

    def __repr__(self) -> str:
        return (f"rank {self.rank} {self.what} of rank {self.owner}'s '{self.window}' bytes "
                f"[{self.lo}, {self.hi}) at {self.where}")


def _merge(a: list[int], b: list[int] | None) -> list[int]:
    return a if b is None else [max(x, y) for x, y in zip(a, b)]


def _before(a: list[int], b: list[int]) -> bool:
    """Vector clock ``a`` happened before (or equals) ``b``."""
    return all(x <= y for x, y in zip(a, b))


class _Rendezvous:
    """One collective in flight: the operands deposited so far and, once complete, the results."""

    def __init__(self, kind: str, n: int, where: str):
        self.kind, self.n, self.where = kind, n, where
        self.parts: dict[int, Any] = {}
        self.vcs: dict[int, list[int]] = {}
        self.done = False
        self.taken = 0
        self.full: tuple = ()


class World:
    """The shared state of one multi-rank run (one per ``execute_distributed_compiled`` call)."""

    def __init__(self, nranks: int, seed: int | None, fixed_order: bool = False):
        self.nranks = nranks
        self.seed = seed
        self.fixed_order = fixed_order
        self.lock = threading.Condition()
        self.windows: list[Window] = []
        self._by_storage: dict[int, tuple[Window, int]] = {}
        self.groups: list[CommGroup] = [CommGroup(0, list(range(nranks)))]
        self.progress = 0
        self.finished: set[int] = set()
        self.failed: dict[int, BaseException | str] = {}   # (the Ray engine sends the message)
        self.blocked: dict[int, str] = {}          # world rank -> "what at file:line"
        self._rdv: dict[tuple, _Rendezvous] = {}
        self._seq: dict[tuple, int] = {}
        self._order_rng = random.Random(seed)
        # the race check (pypto.debug.dist_races): vector clocks per rank, the clocks carried by
        # signal cells, and every window access with the clock of the rank that made it
        self.record_accesses = False
        self.vc: list[list[int]] = [[0] * nranks for _ in range(nranks)]
        self.signal_vc: dict[tuple, list[int]] = {}
        self.accesses: list[Access] = []

    # -- windows ---------------------------------------------------------------------------
    def add_window(self, name: str, tensors: dict[int, torch.Tensor], group: CommGroup | None = None) -> Window:
        """Register a window buffer (one tensor per rank)."""
        w = Window(name, tensors, group or self.groups[0])
        self.windows.append(w)
        for r, t in tensors.items():
            self._by_storage[t.untyped_storage().data_ptr()] = (w, r)
        return w

    def locate(self, t: torch.Tensor, op: str) -> tuple[Window, int]:
        """The window ``t`` lies in and the rank owning it; a clear error for a non-window tensor."""
        hit = self._by_storage.get(t.untyped_storage().data_ptr())
        if hit is None:
            raise SimulationError(f"{op}: the tensor is not a window buffer of this program; pass a "
                                  "pld.window(...) view from the host orchestrator")
        return hit

    def peer_view(self, t: torch.Tensor, peer: int, op: str) -> torch.Tensor:
        """The region ``t`` covers in its own rank's window, in ``peer``'s (group rank) window."""
        w, owner = self.locate(t, op)
        g = w.group
        if not 0 <= peer < len(g.members):
            raise SimulationError(f"{op}: peer {peer} is out of range for a group of {len(g.members)} ranks")
        base = w.tensors[owner]
        other = w.tensors[g.members[peer]]
        # offsets in bytes: the window is registered as raw bytes, the argument is a typed view of it
        es = t.element_size()
        off = t.storage_offset() * es - base.storage_offset() * base.element_size()
        start = other.storage_offset() * other.element_size() + off
        if start % es:
            raise SimulationError(f"{op}: the window view is not aligned to its {es}-byte elements")
        return torch.empty(0, dtype=t.dtype).set_(other.untyped_storage(), start // es, t.shape, t.stride())

    # -- peer memory: every access of another rank's window goes through these three methods,
    # which an engine whose ranks live in other processes overrides (RayWorld,
    # pypto.runtime.distributed.ray_engine) ----------------------------------------------------
    def peer_read_into(self, rank: int, dst: torch.Tensor, local: torch.Tensor, peer: int, op: str,
                       where: str) -> None:
        """Copy the region ``local`` (a view of this rank's window) covers in ``peer``'s window into ``dst``."""
        with self.lock:
            src = self.peer_view(local, peer, op)
            self.record(rank, src, False, op, where)
            dst.copy_(src if src.shape == dst.shape else src.reshape(dst.shape))

    def peer_write(self, rank: int, local: torch.Tensor, peer: int, data: torch.Tensor, atomic: bool, op: str,
                   where: str) -> None:
        """Write (``atomic``: add) ``data`` into the region ``local`` covers in ``peer``'s window."""
        with self.lock:
            dst = self.peer_view(local, peer, op)
            self.record(rank, dst, True, op, where)
            if atomic:
                dst.add_(data)
            else:
                dst.copy_(data)
            self.bump()

    def peer_notify(self, rank: int, t: torch.Tensor, peer: int, cell: tuple, value: int, op: str) -> None:
        """Set (``Set``) or add to (``AtomicAdd``) the signal cell ``cell`` of ``peer``'s copy of ``t``."""
        with self.lock:
            pv = self.peer_view(t, peer, "pld.system.notify")
            self.vc[rank][rank] += 1
            key = (pv.untyped_storage().data_ptr(), pv.storage_offset(), cell)
            self.signal_vc[key] = _merge(list(self.vc[rank]), self.signal_vc.get(key))
            if op == "Set":
                pv[cell] = value
            else:
                pv[cell] += value
            self.bump()

    # -- race check ------------------------------------------------------------------------
    def record(self, rank: int, t: torch.Tensor, write: bool, what: str, where: str) -> None:
        """Log an access of window memory ``t`` (any rank's copy) by ``rank`` (lock held or not)."""
        if not self.record_accesses:
            return
        hit = self._by_storage.get(t.untyped_storage().data_ptr())
        if hit is None:
            return
        w, owner = hit
        es = t.element_size()
        lo = t.storage_offset() * es
        span = 1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride())) if t.numel() else 0
        with self.lock:
            self.vc[rank][rank] += 1
            self.accesses.append(Access(rank, w.name, owner, lo, lo + span * es, write, list(self.vc[rank]),
                                        what, where))

    def join_all(self) -> None:
        """Every rank knows everything (the host joined all ranks: a phase boundary)."""
        top = [max(col) for col in zip(*self.vc)]
        self.vc = [list(top) for _ in range(self.nranks)]

    def races(self) -> list[tuple[Access, Access]]:
        """Pairs of accesses of the same bytes by different ranks, one a write, unordered by any
        signal, barrier or collective."""
        out = []
        acc = self.accesses
        for i, a in enumerate(acc):
            for b in acc[i + 1:]:
                if a.rank == b.rank or a.window != b.window or a.owner != b.owner or not (a.write or b.write):
                    continue
                if a.hi <= b.lo or b.hi <= a.lo:
                    continue
                if _before(a.vc, b.vc) or _before(b.vc, a.vc):
                    continue
                out.append((a, b))
        return out

    # -- progress / blocking -----------------------------------------------------------------
    def bump(self) -> None:
        """Something another rank may be waiting for happened (call with the lock held)."""
        self.progress += 1
        self.lock.notify_all()

    def rank_done(self, rank: int, error: BaseException | None = None) -> None:
        """The engine reports the end of a rank's thread."""
        with self.lock:
            self.finished.add(rank)
            if error is not None:
                self.failed[rank] = error
            self.blocked.pop(rank, None)
            self.bump()

    def block(self, rank: int, what: str, ready: Callable[[], bool]):
        """Generator: yield poll cycles until ``ready()`` (checked under the lock) holds. Raises a
        deadlock error when no progress happens while every unfinished rank is blocked."""
        state = [None, 0]
        while True:
            with self.lock:
                if self.check(rank, what, ready(), state):
                    return
                self.lock.wait(POLL_SLEEP_S)
            yield WAIT_POLL_CYCLES

    def check(self, rank: int, what: str, ready: bool, state: list) -> bool:
        """One check of a blocked rank (lock held): True when ``ready``; raises when another rank
        failed (abandoned) or when no progress happened for ``NO_PROGRESS_CHECKS`` checks while
        every unfinished rank is blocked (deadlock). ``state`` is the waiter's ``[seen progress,
        quiet checks]``, kept between checks."""
        if ready:
            self.blocked.pop(rank, None)
            self.bump()
            return True
        if self.failed:
            bad = ", ".join(f"rank {r}" for r in sorted(self.failed))
            self.blocked.pop(rank, None)
            raise SimulationError(f"rank {rank}: {what} abandoned: {bad} failed")
        self.blocked[rank] = what
        if state[0] == self.progress:
            state[1] += 1
        else:
            state[0], state[1] = self.progress, 0
        alive = set(range(self.nranks)) - self.finished
        if state[1] >= NO_PROGRESS_CHECKS and alive and alive <= set(self.blocked):
            lines = "; ".join(f"rank {r} in {self.blocked[r]}" for r in sorted(alive))
            done = sorted(self.finished)
            tail = f" (ranks {done} finished)" if done else ""
            self.blocked.pop(rank, None)
            err = SimulationError(f"deadlock: every unfinished rank waits on a condition no rank can "
                                  f"satisfy: {lines}{tail}")
            self.failed.setdefault(rank, err)
            self.bump()
            raise err
        return False

    # -- collectives -------------------------------------------------------------------------
    def order(self, members: list[int]) -> list[int]:
        """The rank order a reduction accumulates in: drawn from the world's seed, per collective."""
        ranks = list(members)
        if self.fixed_order:
            return ranks
        self._order_rng.shuffle(ranks)
        return ranks

    def rendezvous(self, rank: int, key: tuple, n: int, part: Any, where: str, finish: Callable):
        """Generator: deposit ``part`` for collective ``key`` = ``(kind, group id)`` (counted per
        rank, so the k-th call of each rank meets the k-th of the others); the last of ``n``
        arrivals runs ``finish(world, group, parts)`` under the lock. Returns ``finish``'s result
        for everyone."""
        with self.lock:
            rdv = self.arrive(rank, key, n, part, where, finish)
        yield from self.block(rank, where, lambda: rdv.done)
        with self.lock:
            for v in rdv.vcs.values():
                self.vc[rank] = _merge(self.vc[rank], v)
            return self.take(rdv)

    def arrive(self, rank: int, key: tuple, n: int, part: Any, where: str, finish: Callable) -> "_Rendezvous":
        """Deposit one rank's part of a collective (lock held); the last arrival computes the result."""
        seq_key = (key, rank)
        k = self._seq.get(seq_key, 0)
        self._seq[seq_key] = k + 1
        full = (key, k)
        rdv = self._rdv.get(full)
        if rdv is None:
            rdv = self._rdv[full] = _Rendezvous(key[0], n, where)
            rdv.full = full
        rdv.parts[rank] = part
        self.vc[rank][rank] += 1
        rdv.vcs[rank] = list(self.vc[rank])
        if len(rdv.parts) == n:
            rdv.result = finish(self, self.groups[key[1]], rdv.parts)
            rdv.parts = {}   # the operands are no longer needed (a 64 MiB allreduce holds n of them)
            rdv.done = True
        self.bump()
        return rdv

    def take(self, rdv: "_Rendezvous") -> Any:
        """One rank takes a finished collective's result (lock held); the last one drops it."""
        rdv.taken += 1
        if rdv.taken == rdv.n:
            self._rdv.pop(rdv.full, None)
        return rdv.result


# ------------------------------------------------------------------------------ current rank
def install(world: World | None, rank: int | None) -> None:
    """Make ``world`` / ``rank`` the calling thread's (the engine does this per rank thread)."""
    _TLS.world, _TLS.rank = world, rank


def current() -> tuple[World, int]:
    """The calling thread's world and world rank; a clear error outside a multi-rank run."""
    w = getattr(_TLS, "world", None)
    if w is None:
        raise SimulationError("a distributed op (pld.*) ran outside a multi-rank program: call the kernel from a "
                              "@pl.jit.host orchestrator with RunConfig(distributed_config=DistributedConfig(...))")
    return w, _TLS.rank


def _group(world: World, ctx: int) -> CommGroup:
    if not 0 <= ctx < len(world.groups):
        raise SimulationError(f"unknown communication context {ctx}")
    return world.groups[ctx]


# ------------------------------------------------------------------------------ queries
def world_size() -> int:
    """Ranks of the world."""
    return current()[0].nranks


def comm_ctx(t: torch.Tensor) -> int:
    """The communication context (its group's id) of the window ``t`` lies in."""
    w, _ = current()
    return w.locate(t, "pld.get_comm_ctx")[0].group.gid


def rank(ctx: int) -> int:
    """This rank's index in group ``ctx``."""
    w, r = current()
    return _group(w, ctx).rank_of(r)


def nranks(ctx: int) -> int:
    """Ranks in group ``ctx``."""
    w, _ = current()
    return len(_group(w, ctx).members)


# ------------------------------------------------------------------------------ signals
def _cell(t: torch.Tensor, offsets) -> tuple:
    idx = tuple(int(o) for o in offsets)
    if len(idx) != t.dim() or any(not 0 <= i < n for i, n in zip(idx, t.shape)):
        raise SimulationError(f"signal offsets {list(idx)} are outside the signal tensor of shape {list(t.shape)}")
    return idx


def notify(t: torch.Tensor, offsets, peer: int, value: int, op: str, where: str = "") -> None:
    """``pld.system.notify``: set (``Set``) or add to (``AtomicAdd``) a cell of ``peer``'s signal."""
    w, r = current()
    w.peer_notify(r, t, int(peer), _cell(t, offsets), int(value), op)


_CMP = {"Eq": lambda a, b: a == b, "Ne": lambda a, b: a != b, "Gt": lambda a, b: a > b,
        "Ge": lambda a, b: a >= b, "Lt": lambda a, b: a < b, "Le": lambda a, b: a <= b}


def wait(t: torch.Tensor, offsets, expected: int, cmp: str, where: str = ""):
    """``pld.system.wait`` (generator): poll this rank's signal cell until ``cell <cmp> expected``."""
    w, r = current()
    cell = _cell(t, offsets)
    test = _CMP[cmp]
    exp = int(expected)
    what = f"pld.system.wait(cell {list(cell)} {cmp} {exp}) at {where}"
    yield from w.block(r, what, lambda: bool(test(int(t[cell]), exp)))
    with w.lock:
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), cell)
        w.vc[r] = _merge(w.vc[r], w.signal_vc.get(key))


def _no_result(world, group, parts) -> None:
    return None


def barrier(t: torch.Tensor, where: str = ""):
    """``pld.tensor.barrier`` (generator): all ranks of the signal's group meet."""
    w, r = current()
    g = w.locate(t, "pld.tensor.barrier")[0].group
    yield from w.rendezvous(r, ("barrier", g.gid), len(g.members), None, f"pld.tensor.barrier at {where}",
                            _no_result)
    return t


# ------------------------------------------------------------------------------ data movement
def remote_load(dst: torch.Tensor, t: torch.Tensor, peer: int, offsets, where: str = "") -> None:
    """``pld.tile.remote_load``: copy a region of ``peer``'s window into the tile ``dst``."""
    from pypto.ops.support import region

    w, r = current()
    # the region in this rank's window; the world maps it to the peer's copy
    local = region(t, offsets, list(dst.shape), "remote_load")
    w.peer_read_into(r, dst, local, int(peer), "pld.tile.remote_load", where)


def remote_store(tile: torch.Tensor, t: torch.Tensor, peer: int, offsets, atomic: bool, where: str = "") -> torch.Tensor:
    """``pld.tile.remote_store``: write a tile into a region of ``peer``'s window."""
    from pypto.ops.support import region

    w, r = current()
    local = region(t, offsets, list(tile.shape), "remote_store")
    w.peer_write(r, local, int(peer), tile, atomic, "pld.tile.remote_store", where)
    return t


def _regions(dst: torch.Tensor, src: torch.Tensor, dst_offsets, src_offsets, shape, op: str):
    """The (dst, src) views a put / get moves: the whole tensors, or ``shape`` at the offsets."""
    from pypto.ops.support import region

    if shape is None:
        return dst, src.reshape(dst.shape)
    shape = [int(x) for x in shape]
    d = region(dst, dst_offsets if dst_offsets is not None else [0] * dst.dim(), shape, op)
    s = region(src, src_offsets if src_offsets is not None else [0] * src.dim(), shape, op)
    return d, s


def put(dst: torch.Tensor, peer: int, src: torch.Tensor, atomic: bool, where: str = "", dst_offsets=None,
        src_offsets=None, shape=None) -> torch.Tensor:
    """``pld.tensor.put``: copy the local ``src`` (region) into ``dst``'s region of ``peer``'s window."""
    w, r = current()
    d, s = _regions(dst, src, dst_offsets, src_offsets, shape, "pld.tensor.put")
    w.record(r, s, False, "pld.tensor.put (source)", where)
    w.peer_write(r, d, int(peer), s, atomic, "pld.tensor.put", where)
    return dst


def get(dst: torch.Tensor, peer: int, src: torch.Tensor, where: str = "", dst_offsets=None, src_offsets=None,
        shape=None) -> torch.Tensor:
    """``pld.tensor.get``: copy ``src``'s region of ``peer``'s window into the local ``dst`` (region)."""
    w, r = current()
    if shape is None:
        d, s = dst, src   # the whole window view (a reshape could copy it out of the window)
    else:
        d, s = _regions(dst, src, dst_offsets, src_offsets, shape, "pld.tensor.get")
    w.peer_read_into(r, d, s, int(peer), "pld.tensor.get", where)
    w.record(r, d, True, "pld.tensor.get (target)", where)
    return dst


# ------------------------------------------------------------------------------ collectives
def reduce_chain(parts: list[torch.Tensor], op: str) -> torch.Tensor:
    """Reduce ``parts`` left to right in their dtype (one rounding per step, as a chain of adds).
    The steps accumulate in place: ``acc.add_(p)`` rounds exactly as ``acc + p`` for one dtype, and
    a 64 MiB operand then costs no new buffer per rank."""
    if op not in ("Sum", "Max", "Min", "Prod"):
        raise SimulationError(f"unknown reduce op {op!r}")
    dtype = parts[0].dtype
    if any(p.dtype != dtype for p in parts[1:]):
        raise SimulationError(f"reduce: the ranks' operands differ in dtype ({sorted({str(p.dtype) for p in parts})})")
    acc = parts[0].clone()
    for p in parts[1:]:
        if op == "Sum":
            acc.add_(p)
        elif op == "Max":
            torch.maximum(acc, p, out=acc)
        elif op == "Min":
            torch.minimum(acc, p, out=acc)
        else:
            acc.mul_(p)
    return acc


def _collect(kind: str, t: torch.Tensor, part, where: str, finish):
    w, r = current()
    g = w.locate(t, f"pld.tensor.{kind}")[0].group
    return (yield from w.rendezvous(r, (kind, g.gid), len(g.members), part, f"pld.tensor.{kind} at {where}",
                                    finish))


def allreduce(target: torch.Tensor, op: str, where: str = ""):
    """``pld.tensor.allreduce`` (generator): every rank's ``target`` becomes the reduction."""
    def finish(w, g, parts):
        return reduce_chain([parts[m] for m in w.order(g.members)], op)
    # the operand is the target itself, not a copy: it is read once every rank arrived (each rank
    # waits in the rendezvous meanwhile) and before any rank writes the result back; a copy per rank
    # was most of the cost of a large allreduce. (A rank outside the collective writing into a
    # participant's target meanwhile is a race, on the device too.) The Ray engine ships a snapshot.
    res = yield from _collect("allreduce", target, target, where, finish)
    target.copy_(res)
    return target


def allgather(local: torch.Tensor, target: torch.Tensor, where: str = ""):
    """``pld.tensor.allgather``: ``target`` (group-rank-major) holds every rank's ``local``."""
    def finish(w, g, parts):
        return torch.cat([parts[m].reshape(-1) for m in g.members])
    res = yield from _collect("allgather", target, local.clone(), where, finish)
    target.copy_(res.reshape(target.shape))
    return target


def reduce_scatter(target: torch.Tensor, op: str, where: str = ""):
    """``pld.tensor.reduce_scatter``: rank i's chunk i of ``target`` (split along dim 0) becomes the
    reduction of every rank's chunk i; the other chunks are left as they were."""
    w, r = current()
    g = w.locate(target, "pld.tensor.reduce_scatter")[0].group
    n = len(g.members)
    if target.shape[0] % n:
        raise SimulationError(f"pld.tensor.reduce_scatter at {where}: dim 0 ({target.shape[0]}) is not divisible "
                              f"by the group size {n}")

    def finish(w, g, parts):
        order = w.order(g.members)
        return [reduce_chain([parts[m].chunk(n)[i] for m in order], op) for i in range(n)]
    res = yield from _collect("reduce_scatter", target, target.clone(), where, finish)
    me = g.rank_of(r)
    target.chunk(n)[me].copy_(res[me])
    return target


def broadcast(target: torch.Tensor, root: int, where: str = ""):
    """``pld.tensor.broadcast``: every rank's ``target`` becomes group rank ``root``'s."""
    def finish(w, g, parts):
        if not 0 <= root < len(g.members):
            raise SimulationError(f"pld.tensor.broadcast at {where}: root {root} is out of range")
        return parts[g.members[root]]
    res = yield from _collect("broadcast", target, target.clone(), where, finish)
    target.copy_(res)
    return target


def all_to_all(inp: torch.Tensor, target: torch.Tensor, where: str = ""):
    """``pld.tensor.all_to_all``: chunk j (dim 0) of rank i's ``inp`` lands in chunk i of rank j's ``target``."""
    w, r = current()

    def finish(w, g, parts):
        n = len(g.members)
        return {dst: torch.cat([parts[src].chunk(n)[j] for src in g.members]) for j, dst in enumerate(g.members)}
    res = yield from _collect("all_to_all", target, inp.clone(), where, finish)
    target.copy_(res[r].reshape(target.shape))
    return target


def all_to_all_v(inp: torch.Tensor, target: torch.Tensor, send_counts: torch.Tensor, recv_counts: torch.Tensor,
                 where: str = ""):
    """``pld.tensor.all_to_all_v`` (the reference's push form): with ``MR = target.shape[0] // n``
    (each peer's capacity), rank i pushes its rows ``[j*MR, (j+1)*MR)`` — the whole block, valid or
    not — into rows ``[i*MR, (i+1)*MR)`` of rank j's ``target``, and publishes
    ``min(send_counts[j], MR)`` into rank j's ``recv_counts[i]``; only that many rows of the block
    are meaningful to the receiver."""
    w, r = current()
    g = w.locate(target, "pld.tensor.all_to_all_v")[0].group
    n = len(g.members)
    if target.shape[0] % n or inp.shape[0] < target.shape[0]:
        raise SimulationError(f"pld.tensor.all_to_all_v at {where}: target rows ({target.shape[0]}) must be "
                              f"{n} equal blocks and the input at least as long ({inp.shape[0]})")
    mr = target.shape[0] // n

    def finish(w, g, parts):
        out = {}
        for j, dst in enumerate(g.members):
            blocks, counts = [], []
            for src in g.members:
                x, sc = parts[src]
                blocks.append(x[j * mr:(j + 1) * mr])
                counts.append(min(max(int(sc[j]), 0), mr))
            out[dst] = (blocks, counts)
        return out
    res = yield from _collect("all_to_all_v", target, (inp.clone(), send_counts.reshape(-1).clone()), where, finish)
    blocks, counts = res[r]
    for i, b in enumerate(blocks):
        target[i * mr:(i + 1) * mr].copy_(b)
    rc = recv_counts.reshape(-1)
    rc[:len(counts)].copy_(torch.tensor(counts, dtype=recv_counts.dtype))
    return target


# ------------------------------------------------------------------------------ reference executor
def run_now(gen):
    """Drive one of the generators above to its end, discarding the cycles it yields (the reference
    executor has no time: its waits only block)."""
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        return stop.value


def remote_load_ref(t: torch.Tensor, peer: int, offsets, shape, where: str = "") -> torch.Tensor:
    """``pld.tile.remote_load`` for the reference executor: a new tensor."""
    out = torch.empty(list(shape), dtype=t.dtype)
    remote_load(out, t, peer, offsets, where)
    return out


def is_window(t: torch.Tensor) -> bool:
    """True when ``t`` lies in a window buffer of the calling thread's multi-rank run."""
    w = getattr(_TLS, "world", None)
    return w is not None and t.untyped_storage().data_ptr() in w._by_storage



def local_recorder(world: World, rank: int):
    """An access recorder (``pypto.ops.support._RECORDER``) that logs this rank's tile loads and
    stores of window memory for the race check."""
    def rec(what: str, view: torch.Tensor) -> None:
        if what.startswith(("tile.load", "tile.store")) and not what.endswith("padded"):
            if view.untyped_storage().data_ptr() in world._by_storage:
                world.record(rank, view, what.startswith("tile.store"), what, kernel_where())
    return rec
