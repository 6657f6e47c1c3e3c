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

:func:`detect_uninitialized` is the sibling check for core memory (``RunConfig.sim_poison``): each
task's kernel runs on its own, once with core memory and load padding filled with the poison byte
0xFF (NaN in every float dtype), once with both zero, and once with only the padding poisoned. A
stored element whose bits differ between the runs was computed from bytes the kernel never wrote: the
padding of a ``valid_shape`` load, or a ``create_tile`` read before it was written. Each finding names
the task, its kernel and scope, the ``tile.store`` that wrote the element (its source line) and the
padded loads / never-written tiles it may come from.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Optional

import torch

from pypto.progress import track
from pypto.runtime.trace import rxty


@dataclass
class Access:
    """One global-memory access of a task: storage, byte range and direction."""

    storage: int
    lo: int
    hi: int
    write: bool
    op: str
    atomic: bool = False   # an atomic-add store: commutes with other atomic adds to the same memory
    # of a multi-block task only (pypto.debug.block_races.BlockTrack): the block, the barriers it had
    # passed, the phase from which the other blocks see it, the source line
    block: int = 0
    phase: int = 0
    published: int = 0
    where: str = ""


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
    # ordering bugs on the cross-core pipes of mixed kernels (pypto.debug.pipe_hazards.PipeHazard)
    pipe: list = field(default_factory=list)
    # unordered conflicting accesses of two cores of one cluster (pypto.debug.core_races.CoreRace)
    cores: list = field(default_factory=list)
    # conflicting accesses of two blocks of one multi-block task (pypto.debug.block_races.BlockRace)
    blocks: list = field(default_factory=list)

    @property
    def findings(self) -> list:
        """Every ordering bug found: task races, cross-core races, block races, pipe hazards."""
        return list(self.races) + list(self.cores) + list(self.blocks) + list(self.pipe)

    def to_dict(self) -> dict:
        """JSON-ready form: every race (kind, tasks, kernels, lines, overlap, fix) and the out-of-bounds list."""
        from pypto.debug.jsonable import jsonable

        return jsonable(self)

    def format(self) -> str:
        """The whole report."""
        if not self.races and not self.out_of_bounds and not self.pipe and not self.cores and not self.blocks:
            return f"race detector: {self.tasks} tasks, no unordered conflicting accesses"
        lines = [f"race detector: {self.tasks} tasks, {len(self.races) + len(self.cores) + len(self.blocks)} race(s)"
                 + (f", {len(self.pipe)} pipe hazard(s)" if self.pipe else "")]
        lines += [r.format() for r in self.races]
        lines += [r.format() for r in self.cores]
        lines += [r.format() for r in self.blocks]
        lines += [h.format() for h in self.pipe]
        lines += [f"out of bounds: {o}" for o in self.out_of_bounds]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def _span_of(lowered, kernel: str) -> str:
    try:
        span = lowered.get_function(kernel).span
    except KeyError:
        return "<unknown>"
    return str(span) if not span.is_unknown() else "<unknown>"


def _fix(kind: str, first: str, second: str, lowered, k1: str, k2: str) -> str:
    s1, s2 = _span_of(lowered, k1), _span_of(lowered, k2)
    lines = _deps_lines(kind, s1, s2)
    if kind == "WAR":
        head = (f"order the writer after the reader: bind the reader's scope (`with pl.at(...) as reader_tid:` at "
                f"{s1}) and add deps=[reader_tid] to the writer's pl.at at {s2}")
        tail = ". Do not promote the reader to pl.InOut: that serialises every reader of the buffer"
    elif k1 == k2:
        return (f"the tasks of the scope at {s1} (one per loop iteration) touch overlapping memory with no order: "
                "give each iteration its own region, or chain the iterations: in a pl.range loop, "
                "`with pl.at(..., deps=[prev_tid]) as prev_tid:` (prev_tid = None before the loop), and leave this "
                "tensor to automatic dependency tracking (no manual_dep / no_dep_args for it)")
    else:
        head = (f"order the tasks: bind the first scope (`with pl.at(...) as tid:` at {s1}) and add deps=[tid] to "
                f"the pl.at at {s2}")
        tail = (", or leave this tensor to automatic dependency tracking (no manual_scope / manual_dep / "
                "no_dep_args for it)")
    if lines and any("pl.array.create" in ln or ".create(" in ln for ln in lines):
        # the producer runs in a loop: one TaskId per iteration, collected in an array (a plain
        # `as tid` in a parallel loop names only one iteration's task)
        head = (f"the first scope ({s1}) runs once per loop iteration: collect its tasks in a TaskId array and "
                f"make the scope at {s2} wait for all of them")
    if lines:
        return head + tail + ":\n    " + "\n    ".join(lines)
    return head + tail


def _deps_lines(kind: str, s1: str, s2: str) -> list[str]:
    """The edited source lines of the fix (pypto.debug.fixes), or [] when the sources cannot be edited."""
    from pypto.debug.fixes import EditError, deps_fix_lines

    try:
        f1, l1, _ = s1.rsplit(":", 2)
        f2, l2, _ = s2.rsplit(":", 2)
        if f1 != f2:
            return []
        name = {"WAR": "reader_tid", "WAW": "writer_tid"}.get(kind, "producer_tid")
        return deps_fix_lines(f1, int(l1), int(l2), name)
    except (ValueError, EditError):
        return []


def _compiled_and_args(kernel_or_compiled, args, platform: str):
    from pypto.runtime.config import RunConfig

    if hasattr(kernel_or_compiled, "compile"):
        import inspect

        compiled = kernel_or_compiled.compile(*args, config=RunConfig(platform=platform))
        bound = inspect.signature(kernel_or_compiled.fn).bind(*args)
        return compiled, [bound.arguments[n] for n in compiled.param_names]
    return kernel_or_compiled, list(args)


def collect_accesses(compiled, args: list, seed: int = 0):
    """Build the task graph of one call and record every task's global-memory accesses.

    Returns ``(runtime, accesses per task, out-of-bounds messages)``.
    """
    from pypto.errors import SimulationError
    from pypto.ops import support
    from pypto.debug.block_races import BlockTrack
    from pypto.ops.support.sync import BlockBarrier
    from pypto.runtime.artifacts import open_artifacts

    arts = open_artifacts(compiled)
    kernels = arts.kernels
    rt, gm = arts.submit(args, seed)
    accesses: list[list[Access]] = []
    oob: list[str] = []
    core = rt.cores[0]
    # the cluster of group tasks watches the order between its cores too (pypto.debug.core_races)
    rt.clusters.get(0).check = True
    for task in track(rt.tasks, "race detector: running tasks"):
        log: list[Access] = []
        accesses.append(log)
        if task.kernel not in kernels:
            continue  # allocation / dummy tasks touch no memory

        n = getattr(task, "blocks", 1)
        track_blocks = BlockTrack() if n > 1 else None

        def record(what: str, view: torch.Tensor, _log=log, _track=track_blocks) -> None:
            lo = view.storage_offset() * view.element_size()
            span = sum((s - 1) * st for s, st in zip(view.shape, view.stride())) + 1 if view.numel() else 0
            acc = Access(view.untyped_storage().data_ptr(), lo, lo + span * view.element_size(),
                         what in support.WRITE_TAGS, what, what == support.STORE_ATOMIC)
            if _track is not None:
                _track.access(acc, support.kernel_where())
            _log.append(acc)
        if track_blocks is not None:
            record.fence = track_blocks.fence   # support.note_fence: a kernel's fence / bar_all
        mod = kernels[task.kernel]
        views = core.tile_views(task.kernel, mod.TILES)
        # a mixed-kernel group runs its members on a cluster (pypto.runtime.cross_core)
        kw = {"_group": rt.clusters.get(0)} if getattr(mod, "GROUP", None) is not None else {}
        with support.recording(record):
            try:
                # every block of a multi-block task: their accesses are the task's (against other
                # tasks) and are checked against each other between barriers (pypto.debug.block_races)
                for b in range(n):
                    if track_blocks is not None:
                        track_blocks.start(b)
                    for y in (mod.kernel(views, *task.args, **kw) if n == 1 else
                              mod.kernel(views, *task.args, _block=(b, n), **kw)):
                        if track_blocks is not None and y.__class__ is BlockBarrier:
                            track_blocks.barrier()
            except SimulationError as e:
                oob.append(f"task {rxty(task.task_id)} ({task.kernel}): {e.message}")
    return rt, accesses, oob


def detect_races(kernel_or_compiled, args, *, platform: str = "a2a3sim", seed: int = 0) -> RaceReport:
    """Find every unordered conflicting pair of tasks for one call of a kernel (``@pl.jit``) or of a
    :class:`CompiledProgram` with the given arguments (see the module docstring)."""
    compiled, run_args = _compiled_and_args(kernel_or_compiled, args, platform)
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
    from pypto.debug.core_races import CoreRace
    from pypto.debug.pipe_hazards import pipe_hazards

    from pypto.debug.block_races import find_block_races

    report = RaceReport(tasks=sum(1 for t in rt.tasks if t.kernel in compiled.meta["kernels"]), out_of_bounds=oob,
                        pipe=pipe_hazards(lowered),
                        cores=[CoreRace(*r) for r in rt.clusters.get(0).races])
    block_seen = set()
    for t, acc in zip(rt.tasks, accesses):
        n_blocks = getattr(t, "blocks", 1)
        if n_blocks > 1 and acc:
            for r in find_block_races(rxty(t.task_id), t.kernel, n_blocks, acc):
                if (r.kind, r.first_where, r.second_where) not in block_seen:   # once per scope, not per call
                    block_seen.add((r.kind, r.first_where, r.second_where))
                    report.blocks.append(r)
    seen = set()
    for j in track(range(n), "race detector: task pairs"):
        for i in range(j):
            if (reach[j] >> i) & 1:
                continue
            hit = _conflict(accesses[i], accesses[j])
            if hit is None:
                continue
            kind, nbytes = hit
            a, b = rt.tasks[i], rt.tasks[j]
            key = (a.kernel, b.kernel, kind)
            first, second = rxty(a.task_id), rxty(b.task_id)
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


# ------------------------------------------------------------------------------ uninitialized reads

@dataclass
class UninitRead:
    """A store of one task that writes elements computed from core memory the kernel never wrote."""

    task: str                # rXtY
    kernel: str
    kernel_span: str         # the scope (pl.at) the kernel was outlined from
    store_span: str          # the tile.store that wrote the poisoned elements
    tensor: str              # the kernel parameter stored into
    elements: int            # poisoned elements written (the last run's region)
    total: int               # elements the store writes
    cause: str               # "padding", "uninitialized tile" or "padding and uninitialized tile"
    sources: list[str] = field(default_factory=list)   # padded loads / never-written tiles, with spans

    def format(self) -> str:
        """Human-readable report of the finding and its likely sources."""
        what = {"padding": "the padding of a valid_shape load",
                "uninitialized tile": "tile memory the kernel never wrote (create_tile read before written)"}.get(
            self.cause, "load padding and never-written tile memory")
        lines = [f"uninitialized read: task {self.task} ({self.kernel}, {self.kernel_span}): the tile.store at "
                 f"{self.store_span} writes {self.elements}/{self.total} elements of '{self.tensor}' computed "
                 f"from {what}"]
        lines += [f"  from: {src}" for src in self.sources]
        if self.cause != "uninitialized tile":
            lines.append("  fix: fill the padding with the identity of the op that reads it (pl.fillpad(t, "
                         "pl.PadValue.min) before a max, zero before a sum, max before a min), or store only the "
                         "valid region")
        if self.cause != "padding":
            lines.append("  fix: write every element of the tile (pl.full / a load / an op result) before reading it")
        return "\n".join(lines)


@dataclass
class UninitReport:
    """Every task store that lets padding or never-written tile memory into global memory."""

    findings: list[UninitRead] = field(default_factory=list)
    tasks: int = 0
    out_of_bounds: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready form: every store of uninitialized memory, the task count, out-of-bounds accesses."""
        from pypto.debug.jsonable import jsonable

        return jsonable(self)

    def format(self) -> str:
        """The whole report."""
        if not self.findings:
            return f"poison check: {self.tasks} tasks, no store reads padding or never-written tile memory"
        lines = [f"poison check: {self.tasks} tasks, {len(self.findings)} store(s) write values computed from "
                 "uninitialized core memory"]
        lines += [f.format() for f in self.findings]
        lines += [f"out of bounds: {o}" for o in self.out_of_bounds]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


class _OpLines:
    """Map the generated kernel's lines back to the IR ops of its function (for source spans).

    The simulator codegen emits one ``_pto.<helper>(`` line per op, in the function's statement order;
    the k-th such line is the k-th call of the op in a pre-order walk of the IR function."""

    def __init__(self, mod, fn):
        import inspect

        from pypto.ir.visit import iter_stmts

        self.by_line: dict[tuple[str, int], str] = {}
        self.creates: list[str] = []
        try:
            src, first = inspect.getsourcelines(mod)
        except (OSError, TypeError):
            return
        calls: dict[str, list] = {}
        if fn is not None:
            for st in iter_stmts(fn.body):
                for c in _calls_in(st):
                    calls.setdefault(c.op, []).append(c)
            self.creates = [str(c.span) for c in calls.get("tile.create", []) if not c.span.is_unknown()]
        filename = mod.__file__
        for op, helper in (("tile.store", "_pto.store("), ("tile.load", "_pto.load_into(")):
            lines = [i + 1 for i, text in enumerate(src) if helper in text]
            ops = calls.get(op, [])
            if len(lines) == len(ops):
                for ln, c in zip(lines, ops):
                    if not c.span.is_unknown():
                        self.by_line[(filename, ln)] = str(c.span)

    def span(self, where: tuple, fallback: str) -> str:
        """The span of the op at ``(generated file, line)``."""
        return self.by_line.get(where, fallback)


def _calls_in(stmt):
    """The op calls directly in one statement (not in nested statements), outermost first."""
    from pypto.ir.nodes import Call
    from pypto.ir.visit import use_exprs

    out = []
    todo = list(use_exprs(stmt))
    while todo:
        e = todo.pop(0)
        if isinstance(e, Call):
            out.append(e)
            todo.extend(a for a in e.args if isinstance(a, Call))
    return out


def _group_memory(mod, cluster):
    """The byte buffers of the cluster memories a group task's members use (created now, so that
    they can be filled before the run; None for a task that is not a group)."""
    if getattr(mod, "GROUP", None) is None:
        return None
    for name, kind, _args, _site in mod.GROUP["members"]:
        for lane in (range(max(mod.GROUP["aiv_lanes"], 1)) if kind == "aiv" else (0,)):
            cluster._views(name, 3 * cluster.index + (0 if kind == "aic" else 1 + lane))
    i = 3 * cluster.index   # this cluster's rows: its AIC, AIV0, AIV1
    return [arr[i:i + 3] for arr in cluster.memory.arrays.values()]


def _run_poisoned(mod, views, core, args, core_fill: int, pad_fill: int, blocks: int = 1, cluster=None):
    """Run one task's kernel with core memory set to ``core_fill`` and load padding to ``pad_fill``;
    return ``[((file, line) of the store, GM tensor, copy of the region written), ...]``, ``[(file, line) of each padded load, ...]`` and any
    out-of-bounds message."""
    from pypto.errors import SimulationError
    from pypto.ops import support

    stores, padded = [], []

    def rec(what, view):
        if what in support.WRITE_TAGS:
            f = sys._getframe(2)
            stores.append(((f.f_code.co_filename, f.f_lineno), sys._getframe(1).f_locals.get("t"), view))
        elif what == support.LOAD_PADDED:
            f = sys._getframe(2)
            padded.append((f.f_code.co_filename, f.f_lineno))
    rec.pad_fill = pad_fill
    with support.recording(rec):
        try:
            group = _group_memory(mod, cluster) if cluster is not None else None
            kw = {"_group": cluster} if group is not None else {}
            for b in range(blocks):   # each block of a multi-block task on freshly filled memory
                for buf in list(core.mem.values()) + (group or []):
                    support.fill_bytes(buf, core_fill)
                for _ in (mod.kernel(views, *args, **kw) if blocks == 1 else
                          mod.kernel(views, *args, _block=(b, blocks), **kw)):
                    pass
        except SimulationError as e:
            return stores, padded, e.message
    return [(f, t, v.detach().clone()) for f, t, v in stores], padded, None


def _bits(t: torch.Tensor) -> torch.Tensor:
    """One row of raw bytes per element (bitwise comparison, NaN payloads included)."""
    t = t.contiguous()
    return t.view(torch.uint8).reshape(t.numel(), t.element_size()) if t.numel() else t.reshape(0, 1).to(torch.uint8)


def detect_uninitialized(kernel_or_compiled, args, *, platform: str = "a2a3sim", seed: int = 0) -> UninitReport:
    """Find every task store that writes values computed from core memory the kernel never wrote (see
    the module docstring), for one call of a kernel (``@pl.jit``) or a :class:`CompiledProgram`."""
    from pypto.runtime.artifacts import open_artifacts

    compiled, run_args = _compiled_and_args(kernel_or_compiled, args, platform)
    lowered = compiled.lowered
    arts = open_artifacts(compiled)
    kernels = arts.kernels
    rt, gm = arts.submit(run_args, seed)
    core = rt.cores[0]
    lines: dict[str, _OpLines] = {}
    report = UninitReport(tasks=sum(1 for t in rt.tasks if t.kernel in kernels))
    seen = set()
    for task in track(rt.tasks, "poison check: tasks"):
        if task.kernel not in kernels:
            continue
        mod = kernels[task.kernel]
        views = core.tile_views(task.kernel, mod.TILES)
        fn = next((f for f in lowered.functions if f.name == task.kernel), None)
        ol = lines.get(task.kernel)
        if ol is None:
            ol = lines[task.kernel] = _OpLines(mod, fn)
        saved = [a.clone() if isinstance(a, torch.Tensor) else None for a in task.args]

        def restore():
            for a, s in zip(task.args, saved):
                if s is not None:
                    a.copy_(s)
        runs = {}
        for name, core_fill, pad_fill in (("poison", 0xFF, 0xFF), ("zero", 0x00, 0x00), ("pad", 0x00, 0xFF)):
            restore()
            runs[name] = _run_poisoned(mod, views, core, task.args, core_fill, pad_fill, getattr(task, "blocks", 1),
                                       rt.clusters.get(0))
            if runs[name][2] is not None:
                break
        restore()
        err = next((r[2] for r in runs.values() if r[2] is not None), None)
        if err is not None:
            report.out_of_bounds.append(f"task {rxty(task.task_id)} ({task.kernel}): {err}")
            continue
        (st_p, padded, _), (st_z, _, _), (st_pad, _, _) = runs["poison"], runs["zero"], runs["pad"]
        kspan = _span_of(lowered, task.kernel)
        params = [p.name for p in fn.params] if fn is not None else []
        for (frame, target, vp), (_, _, vz), (_, _, vpad) in zip(st_p, st_z, st_pad):
            bp, bz, bpad = _bits(vp), _bits(vz), _bits(vpad)
            bad = (bp != bz).any(1)
            if not bool(bad.any()):
                continue
            from_pad = bool((bpad != bz).any())
            from_tile = bool((bp != bpad).any())
            cause = ("padding and uninitialized tile" if from_pad and from_tile
                     else "padding" if from_pad else "uninitialized tile")
            store_span = ol.span(frame, kspan)
            key = (task.kernel, store_span)
            if key in seen:
                continue   # one report per store (a loop would repeat it per iteration / task)
            seen.add(key)
            tensor = next((params[i] for i, a in enumerate(task.args) if a is target and i < len(params)), "?")
            sources = []
            if from_pad:
                sources += sorted({f"padded tile.load at {ol.span(f, kspan)}" for f in padded})
            if from_tile:
                sources += [f"create_tile at {c}" for c in ol.creates] or ["a tile the kernel never wrote"]
            report.findings.append(UninitRead(rxty(task.task_id), task.kernel, kspan, store_span, tensor,
                                              int(bad.sum()), bad.numel(), cause, sources))
    return report
