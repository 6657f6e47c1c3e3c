"""The race detector: task pairs whose global-memory accesses conflict with no ordering between them.

The runtime infers RAW and WAW edges from buffer overlap but never WAR (seed page, "When the result
changes between runs"), and manual scopes / ``manual_dep`` / ``no_dep_args`` switch inference off.
Because the simulator sees every access, this module can check what the hardware cannot afford to:

1. the program is compiled and its orchestration submits every task to a simulated runtime, which
   builds the dependency graph exactly as a real run does (inferred + explicit edges);
2. every task's kernel is executed once with an access recorder: each ``tile.load`` / ``tile.store``
   reports the exact byte range of global memory it touches;
3. for every pair of tasks whose ranges overlap, where at least one writes and neither reaches the
   other in the graph, a :class:`Race` is reported — with both source lines and the ``deps=`` that
   orders them. Out-of-bounds accesses are reported too. Two atomic-add stores (``tile.store`` with
   ``atomic=pl.AtomicType.Add``) commute and never conflict with each other (split-K accumulation: the
   order moves only the last bits); they still conflict with plain loads and stores.

The recorder sees the regions a kernel computes from its scalar arguments, so the analysis holds for
data-independent addressing (all of the language today).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch


@dataclass
class Access:
    """One global-memory access of a task: storage, byte range and direction."""

    storage: int
    lo: int
    hi: int
    write: bool
    op: str
    atomic: bool = False   # an atomic-add store: commutes with other atomic adds to the same memory


@dataclass
class Race:
    """Two tasks with conflicting, unordered accesses to overlapping global memory."""

    kind: str            # "WAR" (later task overwrites what an earlier one reads), "RAW", "WAW"
    first: str           # rXtY of the task submitted first
    second: str
    first_kernel: str
    second_kernel: str
    first_span: str
    second_span: str
    overlap_bytes: int
    fix: str

    def format(self) -> str:
        """Human-readable report of the race and its fix."""
        what = {"WAR": "overwrites memory that", "RAW": "reads memory that", "WAW": "writes memory that"}[self.kind]
        verb = {"WAR": "reads", "RAW": "writes", "WAW": "writes"}[self.kind]
        return (f"{self.kind} race: task {self.second} ({self.second_kernel}, {self.second_span}) {what} task "
                f"{self.first} ({self.first_kernel}, {self.first_span}) {verb}, with no edge ordering them "
                f"({self.overlap_bytes} bytes overlap)\n  fix: {self.fix}")


@dataclass
class RaceReport:
    """Every race found, plus out-of-bounds accesses and how many tasks were analysed."""

    races: list[Race] = field(default_factory=list)
    out_of_bounds: list[str] = field(default_factory=list)
    tasks: int = 0

    def format(self) -> str:
        """The whole report."""
        if not self.races and not self.out_of_bounds:
            return f"race detector: {self.tasks} tasks, no unordered conflicting accesses"
        lines = [f"race detector: {self.tasks} tasks, {len(self.races)} race(s)"]
        lines += [r.format() for r in self.races]
        lines += [f"out of bounds: {o}" for o in self.out_of_bounds]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def _rxty(task_id: int) -> str:
    return f"r{task_id >> 32}t{task_id & 0xFFFFFFFF}"


def _span_of(lowered, kernel: str) -> str:
    try:
        span = lowered.get_function(kernel).span
    except KeyError:
        return "<unknown>"
    return str(span) if not span.is_unknown() else "<unknown>"


def _fix(kind: str, first: str, second: str, lowered, k1: str, k2: str) -> str:
    s1, s2 = _span_of(lowered, k1), _span_of(lowered, k2)
    if kind == "WAR":
        return (f"order the writer after the reader: bind the reader's scope (`with pl.at(...) as reader_tid:` at "
                f"{s1}) and add deps=[reader_tid] to the writer's pl.at at {s2}. Do not promote the reader to "
                f"pl.InOut: that serialises every reader of the buffer")
    return (f"order the tasks: bind the first scope (`with pl.at(...) as tid:` at {s1}) and add deps=[tid] to the "
            f"pl.at at {s2}, or leave this tensor to automatic dependency tracking (no manual_scope / manual_dep / "
            f"no_dep_args for it)")


def collect_accesses(compiled, args: list, seed: int = 0):
    """Build the task graph of one call and record every task's global-memory accesses.

    Returns ``(runtime, accesses per task, out-of-bounds messages)``.
    """
    from pypto.backend.platforms import get_platform
    from pypto.errors import SimulationError
    from pypto.ops import support
    from pypto.runtime.simulator import Runtime, load_module

    meta = compiled.meta
    out = compiled.output_dir
    kernels = {name: load_module(out / rel) for name, rel in meta["kernels"].items()}
    rt = Runtime(get_platform(compiled.platform), kernels, seed)
    gm = [a.detach().clone().contiguous() if isinstance(a, torch.Tensor) else a for a in args]
    orch = load_module(out / meta["orchestration"])
    orch.orchestrate(rt, *gm)
    accesses: list[list[Access]] = []
    oob: list[str] = []
    core = rt.cores[0]
    for task in rt.tasks:
        log: list[Access] = []
        accesses.append(log)
        if task.kernel not in kernels:
            continue  # allocation / dummy tasks touch no memory

        def record(what: str, view: torch.Tensor, _log=log) -> None:
            lo = view.storage_offset() * view.element_size()
            span = sum((s - 1) * st for s, st in zip(view.shape, view.stride())) + 1 if view.numel() else 0
            _log.append(Access(view.untyped_storage().data_ptr(), lo, lo + span * view.element_size(),
                               what in ("tile.store", "tile.store.atomic", "tensor.assemble"), what,
                               what == "tile.store.atomic"))
        mod = kernels[task.kernel]
        views = core.tile_views(task.kernel, mod.TILES)
        with support.recording(record):
            try:
                for _ in mod.kernel(views, *task.args):
                    pass
            except SimulationError as e:
                oob.append(f"task {_rxty(task.task_id)} ({task.kernel}): {e.message}")
    return rt, accesses, oob


def detect_races(kernel_or_compiled, args, *, platform: str = "a2a3sim", seed: int = 0) -> RaceReport:
    """Find every unordered conflicting pair of tasks for one call of a kernel (``@pl.jit``) or of a
    :class:`CompiledProgram` with the given arguments (see the module docstring)."""
    from pypto.runtime.config import RunConfig

    if hasattr(kernel_or_compiled, "compile"):
        import inspect

        compiled = kernel_or_compiled.compile(*args, config=RunConfig(platform=platform))
        bound = inspect.signature(kernel_or_compiled.fn).bind(*args)
        run_args = [bound.arguments[n] for n in compiled.param_names]
    else:
        compiled, run_args = kernel_or_compiled, list(args)
    rt, accesses, oob = collect_accesses(compiled, run_args, seed)
    lowered = compiled.lowered
    n = len(rt.tasks)
    # ancestors as bitsets; fan-in edges always point to earlier tasks (submit order is topological)
    reach = [0] * n
    for i, t in enumerate(rt.tasks):
        r = 0
        for p in t.fanin:
            r |= reach[p] | (1 << p)
        reach[i] = r
    report = RaceReport(tasks=sum(1 for t in rt.tasks if t.kernel in compiled.meta["kernels"]), out_of_bounds=oob)
    seen = set()
    for j in range(n):
        for i in range(j):
            if (reach[j] >> i) & 1:
                continue
            hit = _conflict(accesses[i], accesses[j])
            if hit is None:
                continue
            kind, nbytes = hit
            a, b = rt.tasks[i], rt.tasks[j]
            key = (a.kernel, b.kernel, kind)
            first, second = _rxty(a.task_id), _rxty(b.task_id)
            race = Race(kind, first, second, a.kernel, b.kernel, _span_of(lowered, a.kernel),
                        _span_of(lowered, b.kernel), nbytes, _fix(kind, first, second, lowered, a.kernel, b.kernel))
            if key in seen:
                continue  # one report per pair of scopes (a loop would repeat it per iteration)
            seen.add(key)
            report.races.append(race)
    return report


def _conflict(xs: list[Access], ys: list[Access]) -> Optional[tuple[str, int]]:
    best = None
    for x in xs:
        for y in ys:
            if x.storage != y.storage or not (x.write or y.write):
                continue
            if x.atomic and y.atomic:
                continue  # concurrent atomic adds commute: the hardware serialises each one (order is free)
            ov = min(x.hi, y.hi) - max(x.lo, y.lo)
            if ov <= 0:
                continue
            kind = "WAW" if x.write and y.write else ("WAR" if y.write else "RAW")
            if best is None or ov > best[1]:
                best = (kind, ov)
    return best
