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

import torch

from pypto.errors import SimulationError
from pypto.runtime.cores import CoreMemory

_DIRS = {"v2c": "vector -> cube", "c2v": "cube -> vector"}


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
        self.queued = [[] for _ in range(lanes)]   # [(tensor, clock)] pushed, not popped
        self.popped = [[] for _ in range(lanes)]   # popped, not freed
        self.pushes = self.pops = self.frees = 0

    def taken(self, lane: int) -> int:
        return len(self.queued[lane]) + len(self.popped[lane])

    def label(self) -> str:
        return f"pipe {self.direction} ({_DIRS[self.direction]}) id {self.id}"


def _halves(t: torch.Tensor, split: int, lanes: int) -> list:
    """Lane parts of ``t`` under split code ``split`` (odd codes: lane 0 takes the ceil half)."""
    if not split or lanes < 2:
        return [t] * max(lanes, 1)
    axis = 0 if split in (1, 3) else 1
    n = t.shape[axis]
    first = (n + 1) // 2 if split in (3, 4) else n // 2
    return [t.narrow(axis, 0, first), t.narrow(axis, first, n - first)]


class _Core:
    """One core of a cluster running a member kernel: its name, clock, generator and state."""

    def __init__(self, name: str, kernel: str, lane: int):
        self.name, self.kernel, self.lane = name, kernel, lane
        self.clock = 0.0
        self.gen = None
        self.wait: _Wait | None = None
        self.done = False


class CoreLink:
    """``_cc`` of a member kernel: the ops of :mod:`pypto.ops.cross_core` on its cluster."""

    def __init__(self, cluster: "Cluster", core: _Core, side: str):
        self.cluster, self.core, self.side = cluster, core, side

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
            targets = list(enumerate(_halves(tile, split, p.lanes)))
        lanes = [ln for ln, _ in targets]
        while any(p.taken(ln) >= p.slot_num for ln in lanes):
            yield _Wait(lambda: all(p.taken(ln) < p.slot_num for ln in lanes),
                        f"tpush (all {p.slot_num} slots taken)", where, p)
        yield c.transfer_cycles(tile)
        for ln, part in targets:
            p.queued[ln].append((part.clone(), self.core.clock))
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
        self.core.clock = max([self.core.clock] + [t for _, t in parts])
        data = [d for d, _ in parts]
        if direction == "v2c" and split and len(data) > 1:
            value = torch.cat(data, dim=0 if split in (1, 3) else 1)
        else:
            value = data[0]   # one lane, or both lanes' unsplit copies: lane 0's
        if tuple(value.shape) != tuple(dst.shape):
            raise SimulationError(f"{where}: tpop on {p.label()} into a {list(dst.shape)} tile, but the slot holds "
                                  f"{list(value.shape)} (split {split})",
                                  hint="make the popped tile's annotation match what the producer pushes")
        yield self.cluster.transfer_cycles(value)
        dst.copy_(value.to(dst.dtype) if value.dtype != dst.dtype else value)
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
        p.frees += 1


class Cluster:
    """The cluster the scheduler's core ``index`` stands for when it runs a Group task."""

    def __init__(self, index: int, platform, kernels: dict, memory: CoreMemory):
        self.index = index
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

    def pipe(self, direction: str, pid) -> Pipe:
        key = (direction, 0 if pid is None else pid)
        p = self.pipes.get(key)
        if p is None:
            p = self.pipes[key] = Pipe(direction, key[1], self.lanes)
        return p

    def transfer_cycles(self, t: torch.Tensor) -> int:
        """Cycles of one pipe transfer: a GM round trip on a2a3 (GM pipe buffers), an on-chip copy on a5."""
        nbytes = t.numel() * t.element_size()
        plat = self.platform
        if plat.arch == "a5":
            return 1 + nbytes // plat.vector_bytes_per_cycle
        return plat.gm_latency_cycles + nbytes // plat.gm_bytes_per_cycle

    def _views(self, kernel: str, row: int) -> list:
        key = (kernel, row)
        v = self.views.get(key)
        if v is None:
            v = self.views[key] = [self.memory.view(space, addr, shape, dtype, row, kernel)
                                   for space, addr, shape, dtype in self.kernels[kernel].TILES]
        return v

    def run(self, spec: dict, params: tuple, block):
        """Run the group ``spec`` (a group module's ``GROUP``) on this cluster; a generator yielding
        the group's simulated cycles to the scheduler."""
        self.group, self.pipes, self.buffers, self.next_addr = spec["name"], {}, {}, 0
        self.lanes = max(spec["aiv_lanes"], 1)
        self.kernel_names = [m[0] for m in spec["members"]]
        cores = []
        for name, kind, arg_index, _site in spec["members"]:
            lanes = range(spec["aiv_lanes"]) if kind == "aiv" else (0,)
            for lane in lanes:
                core = _Core("AIC" if kind == "aic" else f"AIV{lane}", name, lane)
                row = 3 * self.index + (0 if kind == "aic" else 1 + lane)
                args = [params[i] for i in arg_index]
                cc = CoreLink(self, core, kind)
                core.gen = self.kernels[name].kernel(self._views(name, row), *args,
                                                     _block=(block[0], block[1], lane), _cc=cc)
                cores.append(core)
        now = 0.0
        while True:
            live = [c for c in cores if not c.done]
            if not live:
                return None
            runnable = [c for c in live if c.wait is None or c.wait.ready()]
            if not runnable:
                raise SimulationError(self._deadlock(live, cores))
            core = min(runnable, key=lambda c: c.clock)
            if core.wait is not None:
                core.wait = None
                core.clock = max(core.clock, now)   # it resumes when its partner made progress
            if core.clock > now:
                yield core.clock - now
                now = core.clock
            try:
                r = next(core.gen)
            except StopIteration:
                core.done = True
                continue
            if type(r) is _Wait:
                core.wait = r
            elif isinstance(r, (int, float)):
                core.clock += r
            else:   # a pl.debug_print record: the scheduler prints it
                yield r

    def _deadlock(self, waiting, cores) -> str:
        lines = [f"deadlock in mixed-kernel group {self.group!r} (cluster {self.index}): every running core "
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


class Clusters:
    """The clusters of a run, one per scheduler core, created on first use (with their memories:
    three cores per cluster, rows ``3i`` (AIC), ``3i + 1`` / ``3i + 2`` (AIV0 / AIV1))."""

    def __init__(self, platform, kernels: dict, ncores: int, poison: bool):
        self.platform, self.kernels, self.ncores, self.poison = platform, kernels, ncores, poison
        self.memory = None
        self.clusters: dict = {}

    def get(self, index: int) -> Cluster:
        if self.memory is None:
            self.memory = CoreMemory(self.platform, 3 * self.ncores, self.poison)
        c = self.clusters.get(index)
        if c is None:
            c = self.clusters[index] = Cluster(index, self.platform, self.kernels, self.memory)
        return c

    def release(self) -> None:
        if self.memory is not None:
            self.memory.release()
            self.memory = None
        self.clusters = {}
