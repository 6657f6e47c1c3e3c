"""The simulated device.

* **Global memory.** Each tensor argument of a call is copied into a GM buffer; ``Out`` and
  ``InOut`` parameters are copied back to the caller's tensors afterwards, nothing else is.
* **Cores.** Each core owns one byte buffer per on-chip memory space; a tile is a typed view at the
  address the compiler allocated, built once per (kernel, core).
* **Tasks.** The generated orchestration submits tasks; dependencies are inferred at submit time
  from overlapping GM regions: RAW (a reader waits for the last writer) and WAW (a writer waits for
  the last writer). WAR is deliberately not tracked, as on the device.
* **Time.** A discrete-event scheduler runs ready tasks on free cores. Kernels are generators that
  yield the cycles spent at each GM access, so accesses of different cores interleave in simulated
  time; each step gets seeded jitter (``RunConfig.sim_seed``), so an unordered program can differ
  between unseeded runs and reproduces exactly under a fixed seed.
"""
from __future__ import annotations

import heapq
import importlib.util
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from pypto.backend.platforms import Platform, get_platform
from pypto.errors import SimulationError
from pypto.language.dtypes import dtype_from_name
from pypto.language.enums import MemorySpace

_MODULES: dict[str, object] = {}


def load_module(path: Path):
    """Import a generated module (cached by path and modification time, so a recompile into the
    same directory is picked up)."""
    st = path.stat()
    key = f"{path.resolve()}:{st.st_mtime_ns}:{st.st_size}"
    mod = _MODULES.get(key)
    if mod is None:
        spec = importlib.util.spec_from_file_location(f"pypto_gen_{len(_MODULES)}_{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        _MODULES[key] = mod
    return mod


@dataclass
class Task:
    """One submitted kernel invocation."""

    tid: int
    kernel: str
    args: list
    directions: list
    deps: set = field(default_factory=set)
    waiting: int = 0
    dependents: list = field(default_factory=list)
    start: float = 0.0
    end: float = 0.0
    core: int = -1


def _region(t: torch.Tensor) -> tuple[int, int, int]:
    """(storage id, first byte, end byte) of a tensor view — the span of GM it may touch."""
    storage = t.untyped_storage().data_ptr()
    if t.numel() == 0:
        return storage, 0, 0
    lo = t.storage_offset()
    hi = lo + sum((s - 1) * st for s, st in zip(t.shape, t.stride())) + 1
    es = t.element_size()
    return storage, lo * es, hi * es


class Core:
    """One simulated core: byte buffers per memory space and cached tile views per kernel."""

    def __init__(self, index: int, platform: Platform):
        self.index = index
        self.platform = platform
        self.mem: dict[MemorySpace, torch.Tensor] = {}
        self.views: dict[str, list] = {}

    def buffer(self, space: MemorySpace) -> torch.Tensor:
        buf = self.mem.get(space)
        if buf is None:
            buf = torch.zeros(self.platform.capacity(space), dtype=torch.uint8)
            self.mem[space] = buf
        return buf

    def tile_views(self, kernel_name: str, tiles) -> list:
        views = self.views.get(kernel_name)
        if views is None:
            views = []
            for space, addr, shape, dtype in tiles:
                buf = self.buffer(MemorySpace[space])
                n = 1
                for d in shape:
                    n *= d
                nbytes = n * torch.empty((), dtype=dtype).element_size()
                if addr + nbytes > buf.numel():
                    raise SimulationError(f"kernel {kernel_name}: tile at {space}+{addr} ({nbytes} B) exceeds "
                                          f"the core's {space} memory ({buf.numel()} B)")
                views.append(buf[addr:addr + nbytes].view(dtype).view(shape))
            self.views[kernel_name] = views
        return views


class Runtime:
    """The device side of one call: GM allocation, task submission with dependency inference, and
    the multi-core discrete-event scheduler."""

    def __init__(self, platform: Platform, kernels: dict, seed: int | None):
        self.platform = platform
        self.kernels = kernels
        self.tasks: list[Task] = []
        self.last_writer: list[tuple[tuple, Task]] = []   # (region, task) of the latest writer per region
        self.rng = random.Random(seed)
        self.cores = [Core(i, platform) for i in range(platform.num_aiv)]
        self.time = 0.0

    # ------------------------------------------------------------------ orchestration API
    def create_tensor(self, shape, dtype) -> torch.Tensor:
        """A fresh GM tensor (contents unspecified on the device; zero here)."""
        return torch.zeros(list(shape), dtype=dtype)

    def submit(self, kernel: str, args: list, directions: list, returns=()):
        """Submit one task; returns the GM tensors it produces (per the kernel's returns)."""
        task = Task(len(self.tasks), kernel, list(args), list(directions))
        for a, d in zip(args, directions):
            if not isinstance(a, torch.Tensor):
                continue
            reg = _region(a)
            for wreg, writer in self.last_writer:
                if _overlap(reg, wreg):
                    task.deps.add(writer.tid)  # RAW for In/InOut, WAW for Out/InOut
            if d in ("Out", "InOut"):
                self.last_writer = [(r, w) for r, w in self.last_writer if not _covers(reg, r)]
                self.last_writer.append((reg, task))
        for dep in task.deps:
            self.tasks[dep].dependents.append(task)
        task.waiting = len(task.deps)
        self.tasks.append(task)
        outs = [args[i] for i in returns if i >= 0]
        if not returns:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    # ------------------------------------------------------------------ scheduling
    def run_all(self) -> None:
        """Run every submitted task to completion under the dependency rules."""
        ready = [t for t in self.tasks if t.waiting == 0]
        free = list(range(len(self.cores)))
        events: list = []   # (time, seq, core index, task, generator)
        seq = 0
        done = 0
        now = 0.0

        def start(task: Task, core_idx: int, at: float):
            nonlocal seq
            mod = self.kernels[task.kernel]
            core = self.cores[core_idx]
            views = core.tile_views(task.kernel, mod.TILES)
            gen = mod.kernel(views, *task.args)
            task.core, task.start = core_idx, at
            heapq.heappush(events, (at, seq, core_idx, task, gen))
            seq += 1

        while done < len(self.tasks):
            while ready and free:
                # pick a ready task and a free core at random (seeded): the device gives no order
                t = ready.pop(self.rng.randrange(len(ready)))
                c = free.pop(self.rng.randrange(len(free)))
                start(t, c, now)
            if not events:
                raise SimulationError("deadlock: tasks are waiting but none is running")
            now, _, core_idx, task, gen = heapq.heappop(events)
            try:
                cycles = next(gen)
                jitter = 1.0 + 0.25 * self.rng.random()
                heapq.heappush(events, (now + cycles * jitter, seq, core_idx, task, gen))
                seq += 1
            except StopIteration:
                task.end = now
                done += 1
                free.append(core_idx)
                for d in task.dependents:
                    d.waiting -= 1
                    if d.waiting == 0:
                        ready.append(d)
        self.time = now


def _overlap(a, b) -> bool:
    return a[0] == b[0] and a[1] < b[2] and b[1] < a[2]


def _covers(a, b) -> bool:
    return a[0] == b[0] and a[1] <= b[1] and b[2] <= a[2]


def execute(compiled, args: tuple, kwargs: dict, config=None):
    """Run a :class:`CompiledProgram` on its simulated platform with the caller's arguments."""
    from pypto.runtime.config import RunConfig

    cfg = config or RunConfig(platform=compiled.platform)
    if cfg.platform != compiled.platform:
        raise SimulationError(f"program was compiled for {compiled.platform} but RunConfig asks for "
                              f"{cfg.platform}; compile it again for that platform")
    meta = compiled.meta
    params = meta["params"]
    args = list(args)
    if kwargs:
        names = [p["name"] for p in params]
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError(f"unexpected argument '{k}'; parameters are {names}")
        args = args + [kwargs[n] for n in names[len(args):] if n in kwargs]
    allocate = False
    if len(args) != len(params):
        inputs = [p for p in params if p["direction"] != "Out"]
        if len(args) == len(inputs):
            allocate = True
        else:
            raise TypeError(f"{meta['name']}() takes {len(params)} arguments ({len(inputs)} inputs), got {len(args)}")
    full = []
    it = iter(args)
    for p in params:
        if allocate and p["direction"] == "Out":
            full.append(torch.zeros(p["shape"], dtype=dtype_from_name(p["dtype"]).torch))
        else:
            full.append(next(it))
    for p, a in zip(params, full):
        if p["kind"] == "TensorType":
            if not isinstance(a, torch.Tensor):
                raise TypeError(f"argument '{p['name']}' must be a torch.Tensor, got {type(a).__name__}")
            want = dtype_from_name(p["dtype"]).torch
            if list(a.shape) != p["shape"] or a.dtype != want:
                raise TypeError(f"argument '{p['name']}' has shape {list(a.shape)} {a.dtype}, the program was "
                                f"compiled for {p['shape']} {want}")
    platform = get_platform(compiled.platform)
    out = compiled.output_dir
    kernels = {name: load_module(out / rel) for name, rel in meta["kernels"].items()}
    rt = Runtime(platform, kernels, cfg.sim_seed)
    gm = [a.detach().clone().contiguous() if isinstance(a, torch.Tensor) else a for a in full]
    orch = load_module(out / meta["orchestration"])
    orch.orchestrate(rt, *gm)
    rt.run_all()
    for p, user, g in zip(params, full, gm):
        if p["direction"] in ("Out", "InOut"):
            user.copy_(g)
    if allocate:
        outs = [full[i] for i, p in enumerate(params) if p["direction"] == "Out"]
        return outs[0] if len(outs) == 1 else tuple(outs)
    return None
