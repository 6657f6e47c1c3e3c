"""A cluster of the simulated device running one mixed-kernel group: the cube core (AIC), one or two
vector cores (AIV0, AIV1), each with its own memories, and the cross-core pipes between them.

The scheduler runs a Group task (:mod:`pypto.codegen.group`) on one of its cores; that core stands
for the whole cluster here (:meth:`Cluster.run`): the members' kernels are generators, interleaved
in simulated time — always the core with the earliest clock runs next — and a member waiting on a
pipe (a pop with nothing pushed, a push into a full ring, an import of a buffer the peer has not
reserved) stops until its partner acts; it then resumes no earlier than the partner's clock. The
group's clock, what the task yields to the scheduler, is the earliest clock of its running cores,
so global-memory accesses of the cluster and of other tasks still happen in time order.

A pipe is one ``(direction, id)``: ``v2c`` (vector -> cube) or ``c2v``, a ring of ``slot_num``
slots per vector lane. A slot is taken from its push until its consumer's ``tfree``; a push into a
lane with every slot taken waits. On a2a3 the pipes run through global-memory buffers (a push and a
pop each cost a GM transfer); on a5 the cores reach each other's buffers directly (a vector-speed
copy). When every unfinished core of the cluster waits, the run ends with a :class:`SimulationError`
naming the group, each waiting core, its kernel, the pipe and the source line of the wait, and
what its partner did (finished, or waits itself) — never a hang.
"""
from __future__ import annotations

import operator
from typing import Callable

import torch

from pypto.errors import SimulationError
from pypto.ops import support
from pypto.ops.support.sync import BlockBarrier, CoreFlags
from pypto.runtime.cores import CoreMemory

_DIRS = {"v2c": "vector -> cube", "c2v": "cube -> vector"}

# ---- happens-before between the cores of a cluster (the race detector's view, ``Cluster.check``)
# Each core numbers its global-memory accesses (an epoch) and remembers, per pipe, its latest one and
# the latest one before a fence. A release (a push, a free, a sync_set, a syncall arrival) hands on a
# token {core index: [latest epoch per pipe..., fenced epoch]}; an acquire (a pop, a push that
# reuses freed slots, a sync_wait, the syncall departure) joins it into what the core has seen, for
# one pipe (sync_wait) or all. Access a of core c (epoch k, pipe p) happens before access b when b's
# view holds k for c at p or in the fenced entry. Tokens carry what the releaser saw (transitive).
_PIPES = ("MTE1", "MTE2", "MTE3", "M", "V", "S", "FIX")
_PIPE_AT = {p: i for i, p in enumerate(_PIPES)}
_FENCED = len(_PIPES)


def _join(into: dict, token: dict) -> dict:
    for c, vec in token.items():
        have = into.get(c)
        into[c] = list(vec) if have is None else [max(x, y) for x, y in zip(have, vec)]
    return into



class _Wait:
    """What a waiting core yields to its cluster: ``ready()`` says when it may retry."""

    __slots__ = ("ready", "what", "where", "pipe")

    def __init__(self, ready, what: str, where: str, pipe=None):
        self.ready, self.what, self.where, self.pipe = ready, what, where, pipe


class Pipe:
    """One cross-core pipe: per vector lane, the pushed slots (data, push clock) not yet popped and
    the popped ones not yet freed."""

    def __init__(self, direction: str, pid: int, lanes: int):
        self.direction, self.id = direction, pid
        self.lanes = lanes
        self.slot_num = 0          # set by the first initialize_pipe (8 one-way, 4 per direction both ways)
        self.inited: set = set()   # "aic" / "aiv": the sides that initialised it
        self.queued = [[] for _ in range(lanes)]   # [(tensor, clock, release token)] pushed, not popped
        self.freed = [{} for _ in range(lanes)]    # what the consumer's tfrees released (race detector)
        self.popped = [[] for _ in range(lanes)]   # popped, not freed
        self.pushes = self.pops = self.frees = 0

    def taken(self, lane: int) -> int:
        return len(self.queued[lane]) + len(self.popped[lane])

    def label(self) -> str:
        return f"pipe {self.direction} ({_DIRS[self.direction]}) id {self.id}"


def _halves(t: torch.Tensor, split: int, lanes: int, lead: int = 0) -> list:
    """Lane parts of ``t`` under split code ``split`` (odd codes: lane 0 takes the ceil half);
    ``lead``: 1 when ``t`` has a gang axis in front (a lockstep gang of clusters)."""
    if not split or lanes < 2:
        return [t] * max(lanes, 1)
    axis = (0 if split in (1, 3) else 1) + lead
    n = t.shape[axis]
    first = (n + 1) // 2 if split in (3, 4) else n // 2
    return [t.narrow(axis, 0, first), t.narrow(axis, first, n - first)]


class _Core:
    """One core of a cluster running a member kernel: its name, clock, generator and state."""

    def __init__(self, name: str, kernel: str, lane: int, index: int = 0):
        self.name, self.kernel, self.lane, self.index = name, kernel, lane, index
        self.clock = 0.0
        self.gen = None
        self.wait: _Wait | None = None
        self.done = False
        # happens-before state (kept only while the race detector watches the cluster)
        self.epoch = 0
        self.pipe_epoch = [0] * len(_PIPES)
        self.fenced = 0
        self.seen_all: dict = {}
        self.seen_pipe: dict = {}

    def token(self, pipe: str | None = None, fenced_only: bool = False) -> dict:
        """What a release by this core publishes: all its accesses (``pipe`` None / ALL), those on
        ``pipe`` and the fenced ones, or the fenced ones only (a syncall arrival)."""
        vec = [0] * (len(_PIPES) + 1)
        if fenced_only:
            vec[_FENCED] = self.fenced
        elif pipe in (None, "ALL"):
            vec[_FENCED] = self.epoch
        else:
            vec[_FENCED] = self.fenced
            vec[_PIPE_AT[pipe]] = self.pipe_epoch[_PIPE_AT[pipe]]
        tok = _join({}, self.seen_all)
        for seen in self.seen_pipe.values():
            _join(tok, seen)
        return _join(tok, {self.index: vec})

    def acquire(self, token: dict, pipe: str | None = None) -> None:
        """Later accesses (on ``pipe``, or on every pipe) come after what ``token`` published."""
        if pipe in (None, "ALL"):
            _join(self.seen_all, token)
        else:
            _join(self.seen_pipe.setdefault(pipe, {}), token)

    def fence(self) -> None:
        """Every access so far completes before any later one; later ones follow every wait so far."""
        self.fenced = self.epoch
        for seen in self.seen_pipe.values():
            _join(self.seen_all, seen)


class CoreLink(CoreFlags):
    """``_cc`` of a member kernel: the ops of :mod:`pypto.ops.cross_core` and :mod:`pypto.ops.sync`
    on its cluster."""

    def __init__(self, cluster: "Cluster", core: _Core, side: str, block=(0, 1)):
        super().__init__(block)
        self.cluster, self.core, self.side = cluster, core, side

    def who(self) -> str:
        return f"the {self.core.name} core ({self.core.kernel})"

    # -------------------------------------------------------------- sync (pypto.ops.sync)
    def fence(self, where: str = "") -> None:
        support.note_fence()
        if self.cluster.check:
            self.core.fence()

    def _side_check(self, op: str, core_type, where: str) -> None:
        if core_type is not None and core_type != self.side:
            raise SimulationError(f"{where}: {op}(core_type={core_type!r}) runs on the {self.core.name} core "
                                  f"({self.core.kernel}), a{'n' if self.side == 'aiv' else ''} {self.side} core",
                                  hint=f"drop core_type in an explicit {self.side.upper()} function, or move the op")

    def event_set(self, event_id, pipe: str, ffts_mode, core_type, where: str) -> None:
        """``sync_set`` in FFTS mode 2 (the default): a vector lane's event is for the cube, the cube's
        for every lane. Mode 1 (vector lanes only) and mode 0 (every core of the setter's kind in the
        launch) are barriers of the event: each participant's set counts as an arrival, and when all
        have arrived every participant's event is raised once — the CANN semantics of
        ``CrossCoreSetFlag<mode>``. A cluster running its vector function on one lane stands for both
        subblocks (both set on the device), so that lane completes a mode-1 barrier alone."""
        self._side_check("sync_set", core_type, where)
        c, ev = self.cluster, int(event_id)
        tok = self.core.token(pipe) if c.check else None
        c.event_log.setdefault((ev, self.side), []).append(where)
        if ffts_mode in (None, 2):
            targets = [("aic", self.core.lane)] if self.side == "aiv" else [("aiv", ln) for ln in range(c.lanes)]
            for t in targets:
                c.events.setdefault((ev,) + t, []).append((tok, self.core.clock))
            return
        if ffts_mode == 1 and self.side == "aic":
            raise SimulationError(f"{where}: sync_set(ffts_mode=1) on the {self.core.name} core ({self.core.kernel}): "
                                  "mode 1 synchronises the vector cores of a cluster, the cube has no part in it",
                                  hint="use ffts_mode=2 for a cube -> vector event, ffts_mode=0 for all cube cores")
        if ffts_mode == 0 and (self.block[1] if len(self.block) > 1 else 1) > 1:
            raise SimulationError(f"{where}: sync_set(ffts_mode=0) in a group task of {self.block[1]} blocks: a "
                                  "mode-0 event spans every core of its kind in the launch, and the simulator "
                                  "models it within one cluster only",
                                  hint="use pl.system.syncall(...) for a barrier across blocks, or launch one block")
        # mode 1, or mode 0 in a one-block launch: the participants are this side's cores of the cluster
        lanes = range(c.lanes) if self.side == "aiv" else (0,)
        n = c.syncalls.get((("ffts", ev, self.side), self.core.index), 0)
        c.syncalls[(("ffts", ev, self.side), self.core.index)] = n + 1
        arrived = c.arrivals.setdefault((("ffts", ev, self.side), n), {})
        arrived[self.core.lane] = (tok, self.core.clock)
        if len(arrived) == len(lanes):
            joined = None
            if c.check:
                joined = {}
                for t, _ in arrived.values():
                    _join(joined, t)
            at = max(t for _, t in arrived.values())
            # the event lands where a wait of this side looks for it: a lane's own key, the cube's one per lane
            keys = [(ev, "aiv", ln) for ln in lanes] if self.side == "aiv" else [(ev, "aic", ln) for ln in range(c.lanes)]
            for k in keys:
                c.events.setdefault(k, []).append((joined, at))

    def event_wait(self, event_id, pipe: str, core_type, where: str):
        """``sync_wait``: the cube takes one set of every lane; a lane one set of the cube."""
        self._side_check("sync_wait", core_type, where)
        c, ev = self.cluster, int(event_id)
        keys = ([(ev, "aic", ln) for ln in range(c.lanes)] if self.side == "aic" else [(ev, "aiv", self.core.lane)])
        while any(not c.events.get(k) for k in keys):
            partner = "the vector lane(s)" if self.side == "aic" else "the cube"
            setters = "AIV" + "/".join(str(k[2]) for k in keys if not c.events.get(k)) if self.side == "aic" else "AIC"
            done = c.event_log.get((ev, "aiv" if self.side == "aic" else "aic"), [])
            yield _Wait(lambda: all(c.events.get(k) for k in keys),
                        f"sync_wait(event {ev}, pipe {pipe}) for a sync_set of {setters} ({partner}: "
                        f"{len(done)} set(s) of event {ev} so far)", where)
        for k in keys:
            tok, t = c.events[k].pop(0)
            self.core.clock = max(self.core.clock, t)
            if tok is not None:
                self.core.acquire(tok, pipe)

    def syncall(self, core_type: str, mode: str, used_cores, where: str = ""):
        """``syncall``: the participants of the cluster (``mix``: all its cores) arrive, then go on."""
        c = self.cluster
        parts = [k for k in c.cores if core_type == "mix" or (core_type == "aiv_only") == k.name.startswith("AIV")]
        if self.core not in parts:
            raise SimulationError(f"{where}: syncall(core_type={core_type!r}) on the {self.core.name} core "
                                  f"({self.core.kernel}), which does not take part in it",
                                  hint="call it only on the participating cores, or use core_type='mix'")
        blocks = self.block[1] if len(self.block) > 1 else 1
        # participants per cluster as on the device: the cube and both vector subblocks (both run the
        # vector member there, even where the simulator runs it on one lane: that lane stands for both)
        per = ((1 if core_type != "aiv_only" else 0)
               + (c.platform.aiv_per_cluster if core_type != "aic_only" else 0))
        if mode == "hard" and blocks != c.platform.clusters:
            # the hard form waits for every cluster of the chip: a launch of fewer never completes
            raise SimulationError(f"{where}: deadlock: the hard syncall(core_type={core_type!r}) in a mixed-kernel "
                                  f"group waits for every cluster of the {c.platform.name} chip "
                                  f"({c.platform.clusters}), the group runs on {blocks}: the barrier never completes "
                                  "(on the device the core times out, error 507018)",
                                  hint=f"use mode='soft', gm_workspace=..., used_cores={blocks * per}")
        want = blocks * per if used_cores in (None, 0) or mode == "hard" else int(used_cores)
        if want != blocks * per:
            raise SimulationError(f"{where}: {'deadlock: ' if want > blocks * per else ''}syncall("
                                  f"core_type={core_type!r}, used_cores={want}) waits for {want} participants; the "
                                  f"{blocks} block(s) of the group have {blocks * per} such cores ({per} per "
                                  "cluster), each of which arrives", hint=f"pass used_cores={blocks * per}")
        key = (core_type, c.syncalls.setdefault((core_type, self.core.index), 0))
        c.syncalls[(core_type, self.core.index)] += 1
        arrived = c.arrivals.setdefault(key, {})
        arrived[self.core.index] = (self.core.token(fenced_only=True) if c.check else None, self.core.clock)
        if len(arrived) == len(parts) and blocks > 1:
            # the cluster's participants are all here: the cluster (the group task's block) waits at the
            # scheduler for the other blocks' clusters (pypto.runtime.simulator.Runtime._arrive)
            yield BlockBarrier(core_type, "soft", None, where)
            c.released.add(key)
        while len(arrived) < len(parts) or (blocks > 1 and key not in c.released):
            missing = ", ".join(k.name for k in parts if k.index not in arrived) or "the other blocks' clusters"
            yield _Wait(lambda: len(arrived) >= len(parts) and (blocks == 1 or key in c.released),
                        f"syncall(core_type={core_type!r}) #{key[1] + 1} for {missing}", where)
        self.core.clock = max([self.core.clock] + [t for _, t in arrived.values()])
        if c.check:
            for tok, _ in arrived.values():
                self.core.acquire(tok)

    # -------------------------------------------------------------- pipe set-up
    def init_pipe(self, side: str, dir_mask: int, slot_size: int, slot_num, local_slot_num, pid, where: str):
        """``aic/aiv_initialize_pipe``: declare the pipes of ``dir_mask`` with id ``pid`` on this side."""
        if side != self.side:
            raise SimulationError(f"{where}: {side}_initialize_pipe runs on the {self.core.name} core "
                                  f"({self.core.kernel}); call {self.side}_initialize_pipe there")
        dirs = [d for bit, d in ((1, "c2v"), (2, "v2c")) if dir_mask & bit]
        n = slot_num if slot_num is not None else (8 if len(dirs) == 1 else 4)
        for d in dirs:
            p = self.cluster.pipe(d, pid)
            if p.slot_num and p.slot_num != n:
                raise SimulationError(f"{where}: {p.label()} declared with {n} slots here but {p.slot_num} by the "
                                      f"peer core: give both sides the same slot_num")
            p.slot_num = n
            p.inited.add(side)

    def reserve(self, name: str, size: int, base: int, where: str) -> int:
        """``reserve_buffer``: the named buffer's address (``base``, or the next free one for AUTO)."""
        c = self.cluster
        prev = c.buffers.get(name)
        if prev is not None:
            if prev[1] == self.core.kernel and self.core.lane not in prev[2]:
                # the other vector lane of the same AIV function: its own UB, the same address
                prev[2].add(self.core.lane)
                return prev[0]
            raise SimulationError(f"{where}: buffer {name!r} reserved twice in group {c.group!r}")
        addr = base if base >= 0 else c.next_addr
        c.next_addr = max(c.next_addr, addr + size)
        c.buffers[name] = (addr, self.core.kernel, {self.core.lane})
        return addr

    def import_peer(self, name: str, peer: str, where: str):
        """``import_peer_buffer``: the address ``peer`` reserved as ``name`` (waits until it has)."""
        c = self.cluster
        if peer not in c.kernel_names:
            raise SimulationError(f"{where}: import_peer_buffer: '{peer}' is not a member of group {c.group!r} "
                                  f"(members: {', '.join(c.kernel_names)})")
        while name not in c.buffers:
            yield _Wait(lambda: name in c.buffers, f"import_peer_buffer({name!r}) from '{peer}'", where)
        return c.buffers[name][0]

    def _pipe(self, direction: str, pid, where: str, op: str) -> Pipe:
        p = self.cluster.pipe(direction, pid)
        if self.side not in p.inited:
            raise SimulationError(f"{where}: {op} on {p.label()} before {self.side}_initialize_pipe on the "
                                  f"{self.core.name} core ({self.core.kernel})",
                                  hint=f"call pl.{self.side}_initialize_pipe(..., id={p.id}) first")
        return p

    # -------------------------------------------------------------- data
    def push(self, direction: str, pid, tile: torch.Tensor, split: int, where: str):
        """``tpush_to_aic`` / ``tpush_to_aiv``: a copy of ``tile`` into the next slot of each target lane."""
        p = self._pipe(direction, pid, where, "tpush")
        c = self.cluster
        if direction == "v2c":   # a vector lane pushes its part to the cube
            targets = [(self.core.lane, tile)]
        else:                    # the cube pushes to every lane: the whole tile, or each lane its half
            targets = list(enumerate(_halves(tile, split, p.lanes, c.lead)))
        lanes = [ln for ln, _ in targets]
        while any(p.taken(ln) >= p.slot_num for ln in lanes):
            yield _Wait(lambda: all(p.taken(ln) < p.slot_num for ln in lanes),
                        f"tpush (all {p.slot_num} slots taken)", where, p)
        yield c.transfer_cycles(tile)
        tok = None
        if c.check:
            for ln in lanes:   # the slots it refills were released by the consumer's tfree
                self.core.acquire(p.freed[ln])
            tok = self.core.token()
        for ln, part in targets:
            p.queued[ln].append((part.clone(), self.core.clock, tok))
        p.pushes += 1

    def pop(self, direction: str, pid, dst: torch.Tensor, split: int, where: str):
        """``tpop_from_aiv`` / ``tpop_from_aic``: the next pushed slot into ``dst``."""
        p = self._pipe(direction, pid, where, "tpop")
        lanes = list(range(p.lanes)) if direction == "v2c" else [self.core.lane]
        while any(not p.queued[ln] for ln in lanes):
            yield _Wait(lambda: all(p.queued[ln] for ln in lanes), "tpop (nothing pushed)", where, p)
        parts = [p.queued[ln].pop(0) for ln in lanes]
        for ln, part in zip(lanes, parts):
            p.popped[ln].append(part[0])
            if part[2] is not None:
                self.core.acquire(part[2])
        self.core.clock = max([self.core.clock] + [t for _, t, _ in parts])
        data = [d for d, _, _ in parts]
        lead = self.cluster.lead
        if direction == "v2c" and split and len(data) > 1:
            value = torch.cat(data, dim=(0 if split in (1, 3) else 1) + lead)
        else:
            value = data[0]   # one lane, or both lanes' unsplit copies: lane 0's
            if len(data) > 1 and not (data[0].shape == data[1].shape and torch.equal(
                    data[0].view(torch.uint8) if data[0].dtype.is_floating_point else data[0],
                    data[1].view(torch.uint8) if data[1].dtype.is_floating_point else data[1])):
                # the cube takes one copy of an unsplit push; two lanes pushing different tiles would
                # lose lane 1's silently
                raise SimulationError(f"{where}: tpop (split=0) on {p.label()}: the two vector lanes pushed "
                                      "different tiles, and an unsplit pop takes one of them",
                                      hint="push each lane's half with split=1 (rows) or 2 (columns), or push "
                                           "the same tile from both lanes")
        if split in (3, 4) and direction == "c2v" and value.dim() == 2 and value.dtype == dst.dtype and tuple(dst.shape) == tuple(
                value.shape[i] + (i == (0 if split == 3 else 1)) for i in range(2)):
            # an odd split: lane 1's part is one row / column short of the ceil-half box every lane
            # pops into; it fills the leading part (its valid extent says so)
            yield self.cluster.transfer_cycles(value)
            dst.narrow(0 if split == 3 else 1, 0, value.shape[0 if split == 3 else 1]).copy_(value)
            p.pops += 1
            return
        if tuple(value.shape) != tuple(dst.shape):
            raise SimulationError(f"{where}: tpop on {p.label()} into a {list(dst.shape)[lead:]} tile, but the slot "
                                  f"holds {list(value.shape)[lead:]} (split {split})",
                                  hint="make the popped tile's annotation match what the producer pushes")
        if value.dtype != dst.dtype:
            # a pipe moves bytes unchanged (the family's contract): no silent conversion
            raise SimulationError(f"{where}: tpop on {p.label()} into a {str(dst.dtype).split('.')[-1]} tile, but "
                                  f"the slot holds {str(value.dtype).split('.')[-1]}",
                                  hint="pop with the dtype the producer pushes, and cast after the pop")
        yield self.cluster.transfer_cycles(value)
        dst.copy_(value)
        p.pops += 1

    def free(self, direction: str, pid, tile, where: str) -> None:
        """``tfree_to_aiv`` / ``tfree_to_aic``: release the oldest popped slot back to the producer."""
        p = self._pipe(direction, pid, where, "tfree")
        lanes = list(range(p.lanes)) if direction == "v2c" else [self.core.lane]
        for ln in lanes:
            if not p.popped[ln]:
                raise SimulationError(f"{where}: tfree on {p.label()} with no popped slot to release "
                                      f"({self.core.name}, {self.core.kernel})",
                                      hint="each tfree releases one slot a tpop took: free each popped tile once")
            p.popped[ln].pop(0)
            if self.cluster.check:
                _join(p.freed[ln], self.core.token())
        p.frees += 1


class Cluster:
    """The cluster the scheduler's core ``index`` stands for when it runs a Group task; with
    ``n`` > 1, the ``n`` adjacent clusters ``index .. index + n - 1`` running a lockstep gang of
    Group tasks (:meth:`run_gang`): every tile view has a leading gang axis, every member kernel is
    its lockstep form (``kernel_gang``), and each pipe slot holds the whole gang's tiles."""

    def __init__(self, index: int, platform, kernels: dict, memory: CoreMemory, shared: dict | None = None,
                 n: int = 1):
        self.index = index
        self.n = n                       # clusters in lockstep (1: one Group task)
        self.lead = 1 if n > 1 else 0    # the gang axis in front of every tile's dimensions
        self.shared = {} if shared is None else shared   # kernel -> its tiles' views over all rows
        self.platform = platform
        self.kernels = kernels
        self.memory = memory
        self.views: dict = {}
        self.group = ""
        self.kernel_names: list = []
        self.pipes: dict = {}
        self.buffers: dict = {}
        self.next_addr = 0
        self.lanes = 1
        self.cores: list = []
        self.events: dict = {}       # (event id, target side, lane) -> [(release token, clock)] not yet waited
        self.event_log: dict = {}    # (event id, setting side) -> [where] of its sync_sets
        self.syncalls: dict = {}     # (core_type, core index) -> syncalls passed
        self.arrivals: dict = {}     # (core_type, n-th syncall) -> {core index: (token, clock)}
        self.released: set = set()   # syncalls of a multi-block group the other blocks' clusters reached too
        # the race detector's watch (pypto.debug.races): happens-before between the cores, and each
        # member's global-memory accesses; unordered conflicting pairs are collected in ``races``
        self.check = False
        self.accesses: list = []
        self.races: list = []        # tuples of the fields of pypto.debug.core_races.CoreRace

    def pipe(self, direction: str, pid) -> Pipe:
        key = (direction, 0 if pid is None else pid)
        p = self.pipes.get(key)
        if p is None:
            p = self.pipes[key] = Pipe(direction, key[1], self.lanes)
        return p

    def transfer_cycles(self, t: torch.Tensor) -> int:
        """Cycles of one pipe transfer: a GM round trip on a2a3 (GM pipe buffers), an on-chip copy on a5."""
        nbytes = t.numel() // self.n * t.element_size()   # (one member's tile in a gang)
        plat = self.platform
        if plat.arch == "a5":
            return 1 + nbytes // plat.vector_bytes_per_cycle
        return plat.gm_latency_cycles + nbytes // plat.gm_bytes_per_cycle

    def _views(self, kernel: str, row: int) -> list:
        key = (kernel, row)
        v = self.views.get(key)
        if v is None:
            # one view per tile over the same core of every cluster (rows row % 3, + 3, ...: the
            # cube's or one vector lane's), shared by the clusters of the run (built once), indexed
            # by this cluster: cheaper than a view from the memory per cluster and tile, and only
            # those rows are cleared for the next call
            part = row % 3
            rows = self.shared.get((kernel, part))
            if rows is None:
                rows = self.shared[(kernel, part)] = [
                    self.memory.view(space, addr, shape, dtype, slice(part, None, 3), kernel)
                    for space, addr, shape, dtype in self.kernels[kernel].TILES]
            i = row // 3
            # a gang: the clusters' tiles side by side, one view per tile with the gang axis in front
            v = [t[i] for t in rows] if self.n == 1 else [t[i:i + self.n] for t in rows]
            self.views[key] = v
        return v

    def _start(self, spec: dict) -> None:
        """Fresh per-run state for the group ``spec``."""
        self.group, self.pipes, self.buffers, self.next_addr = spec["name"], {}, {}, 0
        self.events, self.event_log, self.syncalls, self.arrivals, self.released = {}, {}, {}, {}, set()
        self.lanes = max(spec["aiv_lanes"], 1)
        self.kernel_names = [m[0] for m in spec["members"]]
        self.cores = []

    def run(self, spec: dict, params: tuple, block):
        """Run the group ``spec`` (a group module's ``GROUP``) on this cluster; a generator yielding
        the group's simulated cycles to the scheduler."""
        self._start(spec)
        cores = self.cores
        for name, kind, arg_index, _site in spec["members"]:
            lanes = range(spec["aiv_lanes"]) if kind == "aiv" else (0,)
            for lane in lanes:
                core = _Core("AIC" if kind == "aic" else f"AIV{lane}", name, lane, len(cores))
                row = 3 * self.index + (0 if kind == "aic" else 1 + lane)
                args = [params[i] for i in arg_index]
                blk = (block[0], block[1], lane)
                cc = CoreLink(self, core, kind, blk)
                core.gen = self.kernels[name].kernel(self._views(name, row), *args, _block=blk, _cc=cc)
                cores.append(core)
        return (yield from self._interleave(cores))

    def run_gang(self, spec: dict, plans: list, params: tuple):
        """Run ``n`` Group tasks of ``spec`` in lockstep on this gang of clusters: ``plans`` are the
        members' plans (:meth:`GroupGang.GANG_PLAN`, each holding its cores' plans), ``params`` the
        first member's arguments (read only for the members' ``GANG_SAME`` parameters, which every
        member of the gang shares). The cores run exactly as in :meth:`run`, each its member's
        ``kernel_gang``; the waits and clocks are those of every member (their instruction streams
        are the same), so the cycles yielded are each member's."""
        self._start(spec)
        cores = self.cores
        for name, kind, arg_index, _site in spec["members"]:
            mod = self.kernels[name]
            lanes = range(spec["aiv_lanes"]) if kind == "aiv" else (0,)
            for lane in lanes:
                core = _Core("AIC" if kind == "aic" else f"AIV{lane}", name, lane, len(cores))
                row = 3 * self.index + (0 if kind == "aic" else 1 + lane)
                P = [plan.parts[core.index] for plan in plans]
                cc = CoreLink(self, core, kind, (0, 1, lane))
                views = self._views(name, row)
                if mod.GANG_SAME:
                    core.gen = mod.kernel_gang(views, P, *[params[i] for i in arg_index], _cc=cc)
                else:
                    core.gen = mod.kernel_gang(views, P, _cc=cc)
                cores.append(core)
        return (yield from self._interleave(cores))

    def _interleave(self, cores: list):
        """Drive the cores of a run in simulated time (the earliest runnable first) to the end."""
        outer = support._RECORDER.get() if self.check else None
        self.accesses = []
        now = 0.0
        while True:
            # the runnable core with the earliest clock (first in member order on a tie), in one pass
            core, alive = None, False
            for c in cores:
                if c.done:
                    continue
                alive = True
                if (core is None or c.clock < core.clock) and (c.wait is None or c.wait.ready()):
                    core = c
            if not alive:
                if outer is not None:
                    self._find_races()
                return None
            if core is None:
                raise SimulationError(self._deadlock([c for c in cores if not c.done], cores))
            if core.wait is not None:
                core.wait = None
                core.clock = max(core.clock, now)   # it resumes when its partner made progress
            if core.clock > now:
                yield core.clock - now
                now = core.clock
            try:
                if outer is None:
                    r = next(core.gen)
                else:   # the race detector: each access also noted with the core's happens-before view
                    token = support._RECORDER.set(self._noter(core, outer))
                    try:
                        r = next(core.gen)
                    finally:
                        support._RECORDER.reset(token)
            except StopIteration:
                core.done = True
                continue
            if type(r) is _Wait:
                core.wait = r
            elif isinstance(r, (int, float)):
                core.clock += r
            else:   # a pl.debug_print record: the scheduler prints it
                yield r

    def _noter(self, core: _Core, outer):
        def note(what: str, view: torch.Tensor) -> None:
            outer(what, view)
            write = what in support.WRITE_TAGS
            pipe = ("FIX" if core.name == "AIC" else "MTE3") if write else "MTE2"
            core.epoch += 1
            core.pipe_epoch[_PIPE_AT[pipe]] = core.epoch
            seen = _join(_join({}, core.seen_all), core.seen_pipe.get(pipe, {}))
            lo = view.storage_offset() * view.element_size()
            n = sum((d - 1) * st for d, st in zip(view.shape, view.stride())) + 1 if view.numel() else 0
            self.accesses.append((core, view.untyped_storage().data_ptr(), lo, lo + n * view.element_size(), write,
                                  what == support.STORE_ATOMIC, core.epoch, _PIPE_AT[pipe], seen, support.kernel_where()))
        fence = getattr(outer, "fence", None)
        if fence is not None:   # the block tracker of a multi-block group (pypto.debug.block_races)
            note.fence = fence
        return note

    def _find_races(self) -> None:
        """Every pair of accesses of two cores of this run that conflict with nothing ordering them."""
        acc = self.accesses
        seen = {(r[4], r[8], r[0]) for r in self.races}
        for j, b in enumerate(acc):
            for a in acc[:j]:
                if a[0] is b[0] or a[1] != b[1] or not (a[4] or b[4]) or (a[5] and b[5]):
                    continue
                ov = min(a[3], b[3]) - max(a[2], b[2])
                if ov <= 0 or _before(a, b) or _before(b, a):
                    continue
                # a read / write pair is reported writer first (either may come first on the device)
                w, o = (a, b) if a[4] else (b, a)
                kind = "WAW" if a[4] and b[4] else "RAW"
                key = (w[9], o[9], kind)
                if key in seen:
                    continue
                seen.add(key)
                # the fields of pypto.debug.core_races.CoreRace (the race detector builds them)
                self.races.append((kind, self.group, w[0].name, w[0].kernel, w[9], _PIPES[w[7]],
                                   o[0].name, o[0].kernel, o[9], ov, bool(o[8].get(w[0].index))))

    def _deadlock(self, waiting, cores) -> str:
        where = (f"cluster {self.index}" if self.n == 1 else
                 f"clusters {self.index}-{self.index + self.n - 1}: a lockstep gang of {self.n} tasks, "
                 "each stuck alike")
        lines = [f"deadlock in mixed-kernel group {self.group!r} ({where}): every running core "
                 f"waits on a partner that can never act"]
        for c in waiting:
            w = c.wait
            on = f" on {w.pipe.label()}" if w.pipe is not None else ""
            lines.append(f"  {c.name} ({c.kernel}) waits in {w.what}{on} at {w.where}")
        for c in cores:
            if c.done:
                lines.append(f"  {c.name} ({c.kernel}) has finished")
        for p in self.pipes.values():
            lines.append(f"  {p.label()}: {p.pushes} pushed, {p.pops} popped, {p.frees} freed, "
                         f"{p.slot_num} slots per lane")
        return "\n".join(lines)


def _before(a, b) -> bool:
    """Access ``a`` happens before access ``b`` (b's view holds a's epoch at a's pipe or fenced)."""
    vec = b[8].get(a[0].index)
    return vec is not None and (vec[_FENCED] >= a[6] or vec[a[7]] >= a[6])


class Clusters:
    """The clusters of a run, one per scheduler core, created on first use (with their memories:
    three cores per cluster, rows ``3i`` (AIC), ``3i + 1`` / ``3i + 2`` (AIV0 / AIV1))."""

    def __init__(self, platform, kernels: dict, ncores: int, poison: bool):
        self.platform, self.kernels, self.ncores, self.poison = platform, kernels, ncores, poison
        self.memory = None
        self.clusters: dict = {}
        self.shared: dict = {}

    def get(self, index: int, n: int = 1) -> Cluster:
        """Cluster ``index``; with ``n`` > 1 the gang of clusters ``index .. index + n - 1``."""
        if self.memory is None:
            self.memory = CoreMemory(self.platform, 3 * self.ncores, self.poison)
            self.shared = {}
        key = index if n == 1 else (index, n)
        c = self.clusters.get(key)
        if c is None:
            c = self.clusters[key] = Cluster(index, self.platform, self.kernels, self.memory, self.shared, n)
        return c

    def release(self) -> None:
        if self.memory is not None:
            self.memory.release()
            self.memory = None
        self.clusters = {}
        self.shared = {}


class _GroupPlan:
    """One Group task's plan: in ``parts`` each of its cores' own ``GANG_PLAN`` (what that core's
    ``kernel_gang`` reads); iterated, the task's global-memory accesses as one plan (``(site,
    arguments)`` in the sites of :attr:`GroupGang.GANG_GM`: what the scheduler's footprint check
    reads). The combined list is built only when iterated: a gang of one batched task's members
    skips the footprint check (:func:`pypto.runtime.gangs.conflict`), so it never is."""

    __slots__ = ("parts", "firsts")

    def __init__(self, parts: list, firsts: tuple):
        self.parts, self.firsts = parts, firsts

    def __iter__(self):
        for p, first in zip(self.parts, self.firsts):
            if first:
                for site, e in p:
                    yield first + site, e
            else:
                yield from p

    def __len__(self) -> int:
        return sum(map(len, self.parts))


class GroupGang:
    """The lockstep form of a Group kernel module (:mod:`pypto.codegen.group`), composed from its
    members' (:mod:`pypto.codegen.gang`): it offers the scheduler what a kernel module with a
    lockstep form does (``GANG_NUMEL``, ``GANG_GM``, ``GANG_SAME``, ``GANG_PLAN``,
    ``kernel_gang``), and builds its views itself: a gang of adjacent clusters (:meth:`gang_views`).

    A gang of Group tasks is sound for the same reasons as one of InCore tasks: every member core's
    instruction stream does not depend on the task (each member function has a lockstep form), so
    the cores of every cluster of the gang wait, resume and yield at the same points and clocks,
    and the pipes carry every cluster's tiles at once; the footprint rule (no member writes what
    another touches) covers the accesses of all the cores of each task. Built only when every member
    function has a lockstep form (:func:`group_gang`)."""

    GANG = True
    TILES: tuple = ()   # (the members' tiles are in the clusters' memories)

    def __init__(self, mod, kernels: dict, clusters: Clusters):
        spec = self.GROUP = mod.GROUP
        self.clusters = clusters
        self.cores = []   # (member GANG_PLAN, its arguments from the group's, lane) per core
        firsts = []       # each core's first site in GANG_GM
        gm: list = []
        same: set = set()
        numel = 0
        for name, kind, arg_index, _site in spec["members"]:
            m = kernels[name]
            for lane in (range(spec["aiv_lanes"]) if kind == "aiv" else (0,)):
                self.cores.append((m.GANG_PLAN, _picker(arg_index), lane))
                firsts.append(len(gm))
                gm.extend(m.GANG_GM)
            same.update(arg_index[i] for i in m.GANG_SAME)
            numel = max(numel, m.GANG_NUMEL)
        self.GANG_GM = gm
        self.GANG_SAME = tuple(sorted(same))
        self.GANG_NUMEL = numel
        self._firsts = tuple(firsts)
        self._blocks: dict = {}   # a task's _block -> each core's (with its lane)

    def GANG_PLAN(self, *params, _block=(0, 1)) -> _GroupPlan:  # noqa: N802  (the kernel modules' name)
        """The task's plan: each core's (the AIV member's once per lane, with its lane in ``_block``
        as :meth:`Cluster.run` passes it), the sites shifted into this group's ``GANG_GM`` when
        iterated. (Called per task by the scheduler: the argument pickers and blocks are built once.)"""
        blocks = self._blocks.get(_block)
        if blocks is None:
            blocks = self._blocks[_block] = [(_block[0], _block[1], lane) for _, _, lane in self.cores]
        return _GroupPlan([plan(*pick(params), _block=blk) for (plan, pick, _), blk in zip(self.cores, blocks)],
                          self._firsts)

    def gang_views(self, first: int, n: int) -> Cluster:
        """What the gang kernel runs on: the gang of clusters ``first .. first + n - 1``."""
        return self.clusters.get(first, n)

    def kernel_gang(self, cluster: Cluster, plans: list, *params):
        """The gang of Group tasks (``plans``: theirs, in member order) on ``cluster``."""
        return cluster.run_gang(self.GROUP, plans, params)


def _picker(index) -> Callable[[tuple], tuple]:
    """``params -> tuple(params[i] for i in index)``, as one C call where it can be."""
    if len(index) >= 2:
        return operator.itemgetter(*index)
    if len(index) == 1:
        i = index[0]
        return lambda params: (params[i],)
    return lambda params: ()


def group_gang(mod, kernels: dict, clusters: Clusters) -> GroupGang | None:
    """The lockstep form of Group kernel module ``mod`` (:class:`GroupGang`), or None when one of its
    member functions has none (its kernel module's ``GANG_WHY`` says why)."""
    if not all(getattr(kernels[name], "GANG", False) for name, *_ in mod.GROUP["members"]):
        return None
    return GroupGang(mod, kernels, clusters)
