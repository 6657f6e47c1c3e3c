"""The task graph of a simulated call: tasks, scopes, and the dependency inference that links them.

What the generated orchestration submits through :class:`pypto.runtime.simulator.Runtime` becomes a
:class:`Task` here, linked to the tasks it waits for by :class:`TaskGraph` (the runtime's dependency
inference, docs/simulator.md, "What a run does"; the tensormap is :mod:`pypto.runtime.deps`): explicit
``deps=`` edges, creator edges to the alloc task of a ``tensor.create`` tensor, tensormap lookup
(RAW, and WAW through ``INOUT``) against the registered producers of the same buffer, registration of
``INOUT`` / ``OUTPUT_EXISTING``, the compiler's edges, and predicates. The scheduler that runs the
graph, the rings and the gangs stay in :mod:`pypto.runtime.simulator`.
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import torch

from pypto.errors import SimulationError
from pypto.runtime import scope_stats
from pypto.runtime.deps import INOUT, INPUT, OUTPUT, OUTPUT_EXISTING, SCALAR, View


class Task:
    """One submitted task: a kernel invocation, an alloc task (``create_tensor``) or a dummy.

    ``task_id`` is ``(ring << 32) | local``; ``index`` its position in the submit log; ``fanin`` the
    indices of the tasks it waits for; ``edges`` ``(pred task, arg slot, source, overlap, producer
    view)`` as inferred (one per match, for deps.json)."""

    __slots__ = ("index", "task_id", "kernel", "kind", "args", "tags", "views", "manual", "fanin", "edges",
                 "dependents", "waiting", "start", "end", "core", "dump_sel", "func_ids", "kernel_ids", "snap",
                 "pred", "skipped", "done", "scope", "registered", "blocks", "block", "parent", "left", "runs",
                 "members", "batched", "footprint")

    def __init__(self, index, task_id, kernel, kind, args, tags, manual):
        self.index = index
        self.task_id = task_id
        self.kernel = kernel
        self.kind = kind            # "kernel" | "alloc" | "dummy" | "snapshot"
        self.args = args
        self.tags = tags
        self.views = {}
        self.manual = manual
        self.fanin = set()
        self.edges = []
        self.dependents = []
        self.waiting = 0
        self.start = 0.0
        self.end = 0.0
        self.core = -1
        self.dump_sel = None        # level 1: the arg slots to dump; level 2: None (everything)
        self.func_ids = (-1,)
        self.kernel_ids = (-1, -1, -1)
        self.snap = -1
        self.pred = None            # pl.submit(predicate=...): (tensor, index, cmp, value)
        self.skipped = False        # retired without running (its predicate was false)
        self.done = False           # completed (its dependents were released)
        self.scope = None           # the _ScopeRec it was submitted in (None: a snapshot, no ring slot)
        self.registered = None      # [(base, tensormap key)] of the views it registered
        # a multi-block task (pl.spmd): ``blocks`` > 1; when ready it is run as ``blocks`` block runs
        # (Tasks with ``parent`` set and ``block`` their index), each on its own core; it completes when
        # the last one does (``left`` counts those still to finish, ``runs`` (core, start, end, block))
        self.blocks = 1
        self.block = 0
        self.parent = None
        self.left = 0
        self.runs = None
        # a batched task (pypto.runtime.batch): each member's argument list; it runs as one "member"
        # run per member (``parent`` set, ``block`` the member's position), like the blocks above
        self.members = None
        self.batched = None         # per argument: a list over the members (True) or one shared value
        self.footprint = None       # (storages it may write, storages it touches), computed on demand

    @property
    def tid(self) -> int:
        return self.task_id

    @property
    def deps(self) -> set:
        return self.fanin

    def __repr__(self) -> str:
        return f"Task(r{self.task_id >> 32}t{self.task_id & 0xFFFFFFFF}, {self.kernel!r})"


class SubmitResult(NamedTuple):
    """What :meth:`Runtime.submit` returns: the kernel's returned GM tensors (``None``, one tensor,
    or a tuple, per ``returns``) and the task's id."""

    value: object
    task_id: int


class _ScopeRec:
    """One executed scope (one loop iteration's body, or the function's): its ring, whether it is
    still open, and its tasks that completed while it was open (they keep their ring slots until it
    ends)."""

    __slots__ = ("ring", "open", "done")

    def __init__(self, ring: int):
        self.ring = ring
        self.open = True
        self.done: list = []


class _Scope:
    __slots__ = ("rt", "manual")

    def __init__(self, rt, manual):
        self.rt = rt
        self.manual = manual

    def __enter__(self):
        rt = self.rt
        if rt._manual_depth:
            kind = "MANUAL" if self.manual else "AUTO"
            raise SimulationError(f"a {kind} scope cannot be opened inside a manual scope")
        rt._depth += 1
        if self.manual:
            rt._manual_depth += 1
        held = rt._held
        if len(held) <= rt._depth:
            held.append([0, 0, 0])
        rt._scope_stack.append(_ScopeRec(rt._depth if rt._depth < 3 else 3))
        return self

    def __exit__(self, *exc):
        rt = self.rt
        h = rt._held[rt._depth]
        if rt.scope_stats is not None:   # (RunConfig.enable_scope_stats: pypto.runtime.scope_stats)
            scope_stats.sample(rt.scope_stats, rt._scope_stack[-1].ring, rt._depth, self.manual, h)
        h[0] = h[1] = h[2] = 0      # scope_end: its tasks' slots, heap and edges can be retired
        rec = rt._scope_stack.pop()
        rec.open = False
        if rec.done:
            retire = rt._retire
            for t in rec.done:
                retire(t)
        rec.done = None
        rt._depth -= 1
        if self.manual:
            rt._manual_depth -= 1
        return False


_PRED_CMP = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
             "ge": operator.ge}


def _flatten(deps):
    for d in deps:
        if isinstance(d, (list, tuple)):
            yield from _flatten(d)
        else:
            yield d


class TaskGraph:
    """The dependency inference of :class:`pypto.runtime.simulator.Runtime` (a mixin: the runtime
    holds the state it reads — ``by_id``, ``owner``, ``manual_dep``, ``tensormap``, ``_views``,
    ``_sites``, ``_fresh`` — and calls these from ``submit``)."""

    def _view(self, t: torch.Tensor) -> View:
        hit = self._views.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        v = View(t)
        self._views[id(t)] = (t, v)
        return v

    def _infer(self, task: Task, deps) -> None:
        """The runtime's dependency inference (docs/simulator.md, "What a run does"), in order: explicit edges; (unless manual) creator edges, tensormap
        lookup for INPUT/INOUT, registration of INOUT/OUTPUT_EXISTING."""
        fanin = task.fanin
        edges = task.edges
        if deps:
            for d in _flatten(deps):
                p = self.by_id.get(d) if d is not None else None
                if p is None or p is task:
                    continue  # None, invalid or unknown ids are dropped
                fanin.add(p.index)
                edges.append((p, -1, "explicit", None, None))
        if task.manual:
            for i, a in enumerate(task.args):
                if isinstance(a, torch.Tensor):
                    task.views[i] = self._view(a)
            return
        register = None
        tags = task.tags
        views = task.views
        vcache = self._views
        owners = self.owner
        manual_dep = self.manual_dep
        tensormap = self.tensormap
        buckets = tensormap.buckets
        Tensor = torch.Tensor
        lookups = 0
        for i, a in enumerate(task.args):
            if not isinstance(a, Tensor):
                continue
            hit = vcache.get(id(a))
            if hit is not None and hit[0] is a:
                v = views[i] = hit[1]
            else:
                v = views[i] = View(a)
                vcache[id(a)] = (a, v)
            tag = tags[i]
            if tag == OUTPUT:
                continue
            if tag == SCALAR:
                raise ValueError(f"task '{task.kernel}': tensor argument {i} is tagged SCALAR")
            base = v.base
            if owners:
                owner = owners.get(base)
                if owner is not None and owner is not task:
                    fanin.add(owner.index)
                    edges.append((owner, i, "creator", None, None))
            if manual_dep and base in manual_dep:
                continue
            inout = tag == INOUT
            if inout or tag == INPUT:
                lookups += 1
                if base in buckets:
                    for p, ov, pv in tensormap.lookup(v, inout):
                        if p is not task:
                            fanin.add(p.index)
                            edges.append((p, i, "tensormap", ov, pv))
            if inout or tag == OUTPUT_EXISTING:
                if register is None:
                    register = []
                register.append(v)
        self.tensormap_lookups += lookups
        if register:
            task.registered = [(v.base, tensormap.register(v, task)) for v in register]

    def _predicate(self, task: Task, predicate) -> None:
        """Check and attach a ``predicate=(tensor, index, cmp, value)``: the element exists, and
        every task registered as writing it is a dependency of ``task`` (docs/language.md, "Task
        dependencies": the producer of the predicate's tensor must be a dependency), so that the value read at dispatch is settled."""
        t, index, cmp, value = predicate
        if cmp not in _PRED_CMP:
            raise SimulationError(f"task '{task.kernel}': unknown predicate comparison {cmp!r}")
        if not isinstance(t, torch.Tensor) or len(index) != t.dim() or not all(
                0 <= int(i) < n for i, n in zip(index, t.shape)):
            raise SimulationError(f"task '{task.kernel}': predicate element {list(map(int, index))} is outside the "
                                  f"tensor (shape {list(getattr(t, 'shape', []))})")
        elem = t[tuple(slice(int(i), int(i) + 1) for i in index)]
        for p, _, _ in self.tensormap.lookup(self._view(elem), False):
            if p is not task and p.index not in task.fanin:
                raise SimulationError(
                    f"task '{task.kernel}': its predicate reads element {list(map(int, index))} of a tensor that "
                    f"task {p!r} writes, which is not among its dependencies; the value read at dispatch would "
                    f"depend on the schedule. Add that task's TaskId to deps=")
        task.pred = (elem, _PRED_CMP[cmp], value)

    def _compiler_edges(self, task: Task, compiler_deps) -> None:
        """Edges the compiler recorded in place of tensormap lookups: ``(arg, site)`` -> the latest
        task of ``site``. A site never submitted means the compiler's proof does not match this
        orchestration (a compiler bug): an error, never a silently dropped dependency."""
        for arg, site in compiler_deps:
            p = self._sites.get(site)
            if p is None:
                raise SimulationError(f"task '{task.kernel}': compiler dependency edge of argument {arg} names "
                                      f"task site {site}, which has not been submitted")
            if p is not task:
                task.fanin.add(p.index)
                task.edges.append((p, arg, "compiler", None, None))

    def _link(self, task: Task) -> None:
        """Register ``task`` with its not yet completed predecessors (every fanin entry has an edge
        naming the predecessor); a task with nothing to wait for is handed to the scheduler."""
        w = 0
        if task.fanin:
            edges = task.edges
            if len(edges) == len(task.fanin):
                for e in edges:
                    p = e[0]
                    if not p.done:
                        p.dependents.append(task)
                        w += 1
            else:
                seen = set()
                for e in edges:
                    p = e[0]
                    if p.index not in seen:
                        seen.add(p.index)
                        if not p.done:
                            p.dependents.append(task)
                            w += 1
        task.waiting = w
        if w == 0:
            self._fresh.append(task)
