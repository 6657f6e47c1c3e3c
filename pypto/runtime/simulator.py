"""The simulated device.

* **Global memory.** Each tensor argument of a call is copied into a GM buffer; ``Out`` and
  ``InOut`` parameters are copied back to the caller's tensors afterwards, nothing else is. A
  plain contiguous tensor is used in place instead where that is unobservable
  (:func:`pypto.runtime.arguments._in_place_args`; ``InOut`` ones with an undo log for failed runs,
  :mod:`pypto.runtime.undo`).
* **Cores.** Each core owns one byte buffer per on-chip memory space; a tile is a typed view at the
  address the compiler allocated, built once per (kernel, core).
* **Tasks.** The generated orchestration submits tasks through :class:`Runtime` (``submit``,
  ``create_tensor``, ``scope``, ``dump_tag``); dependencies are inferred at submit time exactly as
  docs/simulator.md, "What a run does" (:mod:`pypto.runtime.deps`): explicit ``deps=`` edges, creator edges to the alloc
  task of a ``tensor.create`` tensor, tensormap lookup (RAW, and WAW through ``INOUT``) against the
  registered producers of the same buffer, registration of ``INOUT`` / ``OUTPUT_EXISTING``. WAR is
  deliberately not tracked, as on the device. A manual scope skips the lookup and the registration.
  With ``analyze_auto_scopes_for_deps`` the compiler may have replaced a lookup by ``compiler_deps``
  edges to the latest task of a producer ``site`` (the argument's tag no longer looks up).
* **Time.** A discrete-event scheduler runs ready tasks on free cores. Kernels are generators that
  yield the cycles a global-memory access takes *before* performing it, so each load reads GM and each
  store (atomic ones included) writes it at the simulated moment the transfer completes, and accesses
  of different cores interleave. Each step gets seeded jitter and the scheduler's choice of ready task
  and core is random (``RunConfig.sim_seed``): an unordered program can differ between unseeded runs
  and reproduces exactly under a fixed seed. A ready kernel task is drawn only when a core is free;
  alloc / dummy / snapshot tasks (no core, no time) complete as soon as they are ready.
* **Lockstep gangs.** When a drawn ready task's kernel has a lockstep form
  (:mod:`pypto.codegen.gang`), the scheduler takes a run of ready tasks of that kernel around it and
  starts them together on the longest run of adjacent free cores; they advance as one event (one
  jitter draw per step), each instruction one torch call for all of them. Only tasks whose global-
  memory footprints do not conflict are ganged, and gang sizes keep torch's thread split on tile
  boundaries (:mod:`pypto.runtime.gangs`), so results are bit-identical to running them one by one;
  ``RunConfig(sim_lockstep=False)`` turns it off.
* **Core memory** (:mod:`pypto.runtime.cores`) starts zeroed on every call wherever a kernel may read it
  before writing it (the compiler's ``ZERO_FIRST``, :mod:`pypto.codegen.first_use`); the byte buffers are
  recycled between calls, clearing only the ranges the previous call's tile views covered. Under
  ``RunConfig.sim_poison`` it starts filled with the poison byte 0xFF instead (NaN in every float
  dtype; separate pool) and tile loads leave the padding of partially valid tiles poisoned too
  (:func:`pypto.ops.support.poisoning`), so a result that picks up padding or a never-written tile
  turns into NaN.

This module is the runtime and its scheduler, and :func:`execute` (one call). The task graph and its
dependency inference are :mod:`pypto.runtime.task_graph`; a call's arguments and return values
:mod:`pypto.runtime.arguments`; the DFX outputs :mod:`pypto.runtime.dfx`; a build opened to drive a
:class:`Runtime` by hand (the race detector, the doctor) :mod:`pypto.runtime.artifacts`.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import heapq
import operator
import random
import struct
import sys
import threading
import types

import torch

from pypto.backend.platforms import Platform, get_platform
from pypto.errors import CodegenError, SimulationError
from pypto.language.dtypes import dtype_from_name
from pypto.ir.tags import ALL_TAGS, MAY_WRITE_TAGS
from pypto.numerics.formats import fp4_pack
from pypto.ops.support import gang_access
from pypto.ops.support.while_loops import while_limit
from pypto.runtime.batch import BatchRuntime, Sliced, Stack, batches_disjoint, created_zeros
from pypto.runtime.cores import Core, CoreMemory, _nbytes
from pypto.language.enums import MemorySpace
from pypto.runtime.cross_core import Clusters, group_gang
from pypto.runtime.gangs import conflict, gang_size
from pypto.runtime.deps import INPUT, OUTPUT, TensorMap, View, normalize_tag
from pypto.runtime.dumps import AFTER, BEFORE, DumpCollector
from pypto.runtime.faults import locate
from pypto.runtime.trace import rxty
from pypto.ops.support.debug import DebugPrint, PrintRecord, emit as emit_print
from pypto.ops.support.sync import BlockBarrier

from pypto.runtime.modules import load_module  # noqa: F401  (re-exported: tools load modules by path)
from pypto.ops.support import _RECORDER, read as _read, write_ as _write_
from pypto.ops.support.views import ORCH_WRITES
from pypto.runtime.config import RunConfig
from pypto.runtime.undo import UndoLog
# the task graph, a call's arguments and its DFX outputs live in their own modules; their names stay
# importable from here (tools and tests use pypto.runtime.simulator._unpack_fp4, dfx_dir, ...)
from pypto.runtime.arguments import (  # noqa: F401
    _check_dynamic_dims, _check_tensor_args, _check_writable, _device_view, _host_layout, _in_place_args,
    _in_place_inout, _plain_in_place, _plain_scalar, _returned_values, _unpack_fp4, _window_args, param_facts,
)
from pypto.runtime.dfx import DfxWriteWarning, dfx_dir, write_dfx  # noqa: F401
from pypto.runtime.task_graph import SubmitResult, Task, TaskGraph, _Scope, _ScopeRec  # noqa: F401


class _PerThread(threading.local):
    """A one-slot list per thread: ``[runtime]`` of the latest call this thread simulated (a run in
    another thread does not replace it)."""

    def __init__(self):
        self.items: list = []

    def __getitem__(self, i):
        return self.items[i]

    def __setitem__(self, i, value):
        self.items[i] = value

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)


_LAST_RUNTIME = _PerThread()


def last_dumps() -> list[tuple[str, torch.Tensor]]:
    """``(tag, tensor)`` snapshots recorded by ``pl.dump_tag`` in the latest simulated call."""
    return list(_LAST_RUNTIME[0].dumps) if _LAST_RUNTIME else []


def last_prints() -> list:
    """The ``pl.debug_print`` lines of the latest simulated call (``PrintRecord``: task, core, time,
    where, label, value), in the order they were printed (simulated time)."""
    return list(_LAST_RUNTIME[0].prints) if _LAST_RUNTIME else []


class Runtime(BatchRuntime, TaskGraph):
    """The device side of one call: GM allocation, task submission with dependency inference
    (docs/simulator.md, "What a run does"), and the multi-core discrete-event scheduler.

    Orchestration-facing API (what generated orchestration code calls on ``_rt``):

    * ``submit(kernel, args, tags, returns=(), deps=(), manual=False, dumps=()) -> SubmitResult``
    * ``create_tensor(shape, dtype, manual_dep=False) -> torch.Tensor``
    * ``scope(manual=False)`` — a context manager (``pl.scope`` / ``pl.manual_scope``)
    * ``dump_tag(t, tag=None)`` — ``pl.dump_tag``
    * ``task_id_array(n)`` — ``pl.array.create(n, pl.TASK_ID)`` (a list of ``None``)
    * ``dummy(deps=())`` — ``pl.system.task_dummy``: a join task with no kernel
    """

    undo = None   # the UndoLog of the in-place InOut tensors (pypto.runtime.undo), set by execute

    # (the classes pypto.runtime.batch's methods use: defined here, which imports that module)
    _ScopeRec = _ScopeRec
    _SubmitResult = SubmitResult

    def __init__(self, platform: Platform, kernels: dict, seed: int | None, dump_level: int = 0,
                 dump_budget: int = 1 << 30, kernel_ids: dict | None = None, poison: bool = False,
                 rings: tuple | None = None, lockstep: bool = True, streaming: bool = False,
                 keep_history: bool = True, protect=None, batch: bool = False, zero_first: bool = False):
        self.platform = platform
        self.kernels = kernels
        self.kernel_ids = kernel_ids if kernel_ids is not None else {n: i for i, n in enumerate(sorted(kernels))}
        self.tasks: list[Task] = []
        self.by_id: dict[int, Task] = {}
        self.tensormap = TensorMap()
        self.owner: dict[int, Task] = {}        # base buffer -> alloc task (creator edges)
        self.manual_dep: set[int] = set()       # base buffers created with manual_dep=True
        self.seed = seed
        self.rng = random.Random(seed)
        self.poison = poison
        # ``zero_first`` (execute's runs): only the core memory the kernels may read before writing
        # it starts zeroed (pypto.runtime.cores); a runtime a tool drives keeps every byte zeroed
        self.memory = CoreMemory(platform, platform.num_aiv, poison,
                                 zero_ranges(kernels) if zero_first and not poison else None)
        # the clusters mixed-kernel groups run on (their cube and vector cores' memories): on first use
        self.clusters = Clusters(platform, kernels, platform.num_aiv, poison)
        self.cores = [Core(i, self.memory) for i in range(platform.num_aiv)]
        self.lockstep = lockstep
        self.gangs: list[tuple[int, ...]] = []   # task indices of each lockstep gang run (stats, tests)
        self.time = 0.0
        self.dumps: list[tuple[str, torch.Tensor]] = []   # pl.dump_tag snapshots, in program order
        self.prints: list = []                             # pl.debug_print lines (PrintRecord), as printed
        self.dump_level = dump_level
        self.dump = DumpCollector(dump_level, dump_budget) if dump_level else None
        self._tagged: dict[int, torch.Tensor] = {}        # id -> tensor marked by dump_tag (sticky)
        self._local = [0, 0, 0, 0]
        self._depth = 0
        # per ring: (task window, heap bytes, dependency entries); per open scope depth: what its
        # tasks hold until scope_end (tasks, heap bytes, edges) — see _hold
        self._rings = rings or ([platform.ring_task_window] * 4, [platform.ring_heap] * 4,
                                [platform.ring_dep_pool] * 4)
        self._held: list[list[int]] = [[0, 0, 0]]
        # storages some task may write (tags in _WRITE_TAGS): execute() checks that none is a
        # caller's In tensor used in place
        self.written_bases: set[int] = set()
        self._manual_depth = 0
        self._views: dict[int, tuple] = {}                 # id(tensor) -> (tensor, View)
        self._scopes = (_Scope(self, False), _Scope(self, True))
        self._sites: dict[int, Task] = {}                 # compiler task site -> its latest task
        self.tensormap_lookups = 0                         # Step B lookups performed (tests, stats)
        # observers (the doctor's task-by-task comparison): called with each kernel task as it completes
        self.on_complete = None
        # --- the task window (see _make_room). ``streaming``: when a ring's window is full, run the
        # scheduler until one of its tasks retires (as the device's orchestrator waits), instead of
        # submitting the whole orchestration first. ``keep_history``: keep every task in ``tasks``
        # (deps.json, the swimlane and tests read it); otherwise, once the window has filled, retired
        # tasks are forgotten so that memory stays bounded however many tasks the program submits.
        self.streaming = streaming
        self.keep_history = keep_history
        self._history = True                 # self.tasks holds every task (until the first drain without keep_history)
        self._barriers: dict = {}            # id(task) -> (task, BlockBarrier, participants, parked blocks): syncall
        self._same_misses: dict = {}         # kernel module -> gangs refused for differing GANG_SAME values
        self._plan_builders: dict = {}       # kernel module -> its gang plans' builder (_plan_builder)
        self.protect = protect               # bases of caller In tensors used in place (execute's fallback)
        self._n = 0                          # tasks submitted (their index), snapshots included
        self._live = [0, 0, 0, 0]            # per ring: task slots taken (submitted, not retired)
        self.max_live = [0, 0, 0, 0]         # per ring: the most slots ever taken at once (tests, stats)
        self._scope_stack: list[_ScopeRec] = [_ScopeRec(0)]   # the function scope never ends
        self.scope_stats: list | None = None   # the ended scopes' samples, when enable_scope_stats
        self._fresh: list[Task] = []         # tasks linked with nothing to wait for, not yet seen by the scheduler
        self._sched = None                   # the scheduler's state between runs (_SchedState)
        self.drains = 0                      # how often a full window made the orchestrator wait
        self.waits = 0                       # how often an orchestration read / write waited for tasks
        # a pypto.progress bar (execute() sets one when stderr is a terminal): a run longer than
        # a second shows its finished / submitted task counts
        self.progress = None
        # batched loops (pypto.runtime.batch): allowed at all; the members of the running one; per
        # batched scope depth, each member's ring holdings; the active members of each open batch scope
        self.batch = batch
        self._bn = 0
        self._bheld: dict = {}
        self._bring3 = None
        self._bactive: list = []

    # ------------------------------------------------------------------ orchestration API
    def scope(self, manual: bool = False) -> _Scope:
        """``with _rt.scope(manual=...):`` — nested scopes put tasks on ring ``min(depth, 3)``; a
        manual scope skips dependency inference (only explicit ``deps=`` order its tasks)."""
        return self._scopes[1 if manual else 0]   # stateless: one object per kind, reused

    def manual_scope(self) -> _Scope:
        return self._scopes[1]

    def task_id_array(self, n: int) -> list:
        """``pl.array.create(n, pl.TASK_ID)``: ``n`` TaskId slots, all ``None`` (dropped from deps)."""
        return [None] * n

    def create_tensor(self, shape, dtype, manual_dep: bool = False, init_value=None) -> torch.Tensor:
        """A fresh GM tensor (contents unspecified on the device; zero here, ``init_value`` where
        given), owned by an alloc task: every later task taking a view of it gets a creator edge to
        that task. ``manual_dep`` excludes the buffer from the tensormap for its whole lifetime."""
        if init_value is not None:
            t = torch.full(list(shape), init_value, dtype=dtype)
        elif self.batch:   # (recycled when free: bslice then keeps its views across calls)
            t = created_zeros(shape, dtype, self)
        else:
            t = torch.zeros(list(shape), dtype=dtype)
        task = self._new_task("__alloc__", "alloc", [t], [OUTPUT], self._manual_depth > 0)
        self._hold(1, t.numel() * t.element_size())
        v = task.views[0] = View(t)   # a fresh tensor: never in the view cache (an entry for a dead
        self._views[id(t)] = (t, v)   # tensor that had the same id is replaced, as _view does)
        base = v.base
        self.owner[base] = task
        if manual_dep:
            self.manual_dep.add(base)
        self._link(task)     # nothing to wait for: ready at once
        return t

    def dump_tag(self, t: torch.Tensor, tag: str | None = None) -> None:
        """``pl.dump_tag``: mark ``t`` for ``enable_dump_args=1`` (every later task taking this tensor
        dumps it), and record a snapshot of ``t`` once the tasks submitted so far that write it are
        done (``last_dumps()``; a zero-cost pseudo task that reads ``t``)."""
        if isinstance(t, torch.Tensor):
            self._tagged[id(t)] = t
        slot = len(self.dumps)
        self.dumps.append((tag if tag is not None else "", None))
        # a host-side pseudo task: it takes no ring slot (ids of real tasks are unaffected)
        task = Task(self._n, _SNAPSHOT_ID | slot, f"__dump_tag__:{slot}", "snapshot", [t], [INPUT], False)
        self._n += 1
        if self._history:
            self.tasks.append(task)
        task.snap = slot
        self._infer(task, ())
        self._link(task)

    def available_cores(self, kind: str) -> int:
        """``pl.system.available_cluster_count()`` ("aic") / ``available_aiv_count()`` ("aiv"): the
        platform's core counts (a launch of that many blocks fills the device)."""
        return self.platform.num_aic if kind == "aic" else self.platform.num_aiv

    def dummy(self, deps=()) -> int:
        """``pl.system.task_dummy(deps=[...])``: a join with no kernel; returns its TaskId."""
        task = self._new_task("__dummy__", "dummy", [], [], self._manual_depth > 0)
        self._infer(task, deps)
        self._link(task)
        return task.task_id

    def submit(self, kernel: str, args: list, tags: list, returns=(), deps=(), manual: bool = False,
               dumps=(), site: int | None = None, compiler_deps=(), predicate=None, blocks: int = 1) -> SubmitResult:
        """Submit one task of ``kernel``. ``tags`` are per-argument runtime tags (``INPUT``,
        ``INOUT``, ``OUTPUT_EXISTING``, ``OUTPUT``, ``NO_DEP``, ``SCALAR``; IR directions ``In`` /
        ``Out`` / ``InOut`` are accepted too), ignored for scalars. ``deps`` are TaskIds (or lists of them, or
        ``None``) to wait for; ``manual`` submits as if inside a manual scope; ``dumps`` marks
        tensors to dump for this launch (``enable_dump_args=1``). ``compiler_deps`` are
        ``(arg, site)`` edges AutoDeriveTaskDependencies proved (the argument's tag was rewritten so
        the tensormap lookup is skipped): the task waits for the latest task submitted with
        ``site=site`` (edge source ``compiler``). ``predicate`` is ``(tensor, index, cmp, value)``
        (``pl.submit(predicate=(t[i] == v))``, cmp one of eq ne lt le gt ge): the element is read when
        the task's dependencies are done, and a false comparison retires the task without running it
        (its dependents are released all the same); the task that last wrote the element must be
        among its dependencies. ``blocks`` (``pl.spmd``): the task runs as that many blocks, block ``i``
        on its own core with ``pl.tile.get_block_idx() == i``; it is one task (one TaskId, one entry of
        deps.json) that completes when its last block does. Returns the GM tensors named by ``returns``
        (argument indices, as :func:`pypto.codegen.common.returned_params`) and the TaskId."""
        if not _TAGSET.issuperset(tags):
            tags = [t if t in _TAGSET else normalize_tag(t) for t in tags]
        task = self._new_task(kernel, "kernel", list(args), tags, manual or self._manual_depth > 0)
        if blocks != 1:
            if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 1:
                raise SimulationError(f"task of '{kernel}': the block count must be a positive int, got {blocks!r}")
            task.blocks = blocks
        fid = self.kernel_ids.get(kernel, -1)
        task.func_ids = (fid,)
        task.kernel_ids = (-1, fid, -1)
        self._infer(task, deps)
        written = self.written_bases
        protect = self.protect
        undo = self.undo
        for i, v in task.views.items():
            if tags[i] in _WRITE_TAGS:
                if undo is not None:
                    undo.note(args[i])
                if getattr(args[i], "_pypto_reshape_copy", False):
                    raise SimulationError(
                        f"task of '{kernel}' writes argument {i}, a pl.reshape of a tensor whose elements are not "
                        "consecutive (a DN / pl.transpose view or a column slice): the reshape is a copy and the "
                        "write would not reach the tensor; write the tensor itself (or a pl.slice of it) and "
                        "reshape the result, or pass a row-major tensor")
                b = v.base
                if protect is None:
                    written.add(b)
                elif b in protect:
                    written.add(b)
                    if self._sched is not None:
                        # tasks already ran on the caller's In tensor used in place: start over on copies
                        raise _WritesIn()
        if compiler_deps:
            self._compiler_edges(task, compiler_deps)
        if predicate is not None:
            self._predicate(task, predicate)
        if site is not None:
            self._sites[site] = task
        if task.fanin:
            self._hold(2, len(task.fanin))
        if self.dump_level == 1:
            sel = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)
                   and (id(a) in self._tagged or any(a is d for d in dumps))]
            task.dump_sel = set(sel)
        self._link(task)
        if not returns:
            return SubmitResult(None, task.task_id)
        if len(returns) == 1:
            r = returns[0]
            return SubmitResult(args[r] if r >= 0 else None, task.task_id)
        return SubmitResult(tuple(args[i] if i >= 0 else None for i in returns), task.task_id)

    # ------------------------------------------------------------------ dependency inference
    def _new_task(self, kernel, kind, args, tags, manual) -> Task:
        ring = self._depth if self._depth < 3 else 3
        live = self._live
        if live[ring] >= self._rings[0][ring] and self.streaming:
            self._make_room(ring)
        local = self._local[ring]
        self._local[ring] = local + 1
        tid = (ring << 32) | local
        task = Task(self._n, tid, kernel, kind, args, tags, manual)
        self._n += 1
        if self._history:
            self.tasks.append(task)
        self.by_id[tid] = task
        self._hold(0, 1)
        task.scope = self._scope_stack[-1]
        n = live[ring] = live[ring] + 1
        if n > self.max_live[ring]:
            self.max_live[ring] = n
        if n > self._rings[0][ring] and self.streaming:
            raise SimulationError(f"ring {ring}: {n} task slots taken but the window has {self._rings[0][ring]} "
                                  "and no task can retire (internal scheduling error)")
        return task

    def read(self, x: torch.Tensor, indices):
        """``tensor.read`` in orchestration (the runtime's ``get_tensor_data``): the element's value
        once every task submitted before the read that writes it has completed. The tensormap
        runtime waits for the element's producer (``wait_for_tensor_ready``); reading the buffer at
        once would give a value that depends on the schedule (before: the value before the producer
        ran, silently). A read of a caller's input, or of an element no pending task writes, costs
        a dictionary lookup."""
        self._wait_ready(x, indices, False)
        return _read(x, indices)

    def write_(self, x: torch.Tensor, indices, value) -> torch.Tensor:
        """``tensor.write`` in orchestration (the runtime's ``set_tensor_data``): the element is
        written once no task submitted before the write may still read or write it. The tensormap
        knows the element's producers (a write after them: WAW) but not its readers (WAR), so when
        a task is pending on the tensor's storage the orchestrator waits for every task submitted so
        far: orchestration writes are rare (a flag, a counter), and a wait changes only the timing."""
        self._wait_ready(x, indices, True)
        return _write_(x, indices, value)

    def _wait_ready(self, x: torch.Tensor, indices, write: bool) -> None:
        """Run the scheduler until the tasks :meth:`read` (``write`` False) or :meth:`write_` must
        wait for are done; ``indices`` None: all of ``x`` (a batched read of many elements)."""
        st = self._sched
        if self._n == (st.done if st is not None else 0):
            return   # nothing pending
        base = x.untyped_storage().data_ptr()
        b = self.tensormap.buckets.get(base)
        if write:
            if b is None and base not in self.owner and not self._pending_on(base):
                return
            self._drain(None)
            return
        if b is None or not b.los:
            return
        if indices is not None and len(indices) == x.dim() and all(0 <= int(i) < d for i, d in zip(indices, x.shape)):
            x = x[tuple(slice(int(i), int(i) + 1) for i in indices)]   # the element (an error: read() reports it)
        wait = [p for p, _, _ in self.tensormap.lookup(View(x), False) if not p.done]
        if wait:
            self._drain(wait)

    def _pending_on(self, base: int) -> bool:
        """Whether a task not yet done has an argument on storage ``base`` (with the task history;
        without it, conservatively True)."""
        if not self._history:
            return True
        for t in self.tasks:
            if not t.done and any(v.base == base for v in t.views.values()):
                return True
        return False

    def _drain(self, until) -> None:
        """The orchestrator waits (:meth:`_wait_ready`): run the scheduler until every task of
        ``until`` is done (None: every task submitted so far)."""
        self._first_run()
        self.waits += 1
        with gc_paused(), python_faults():
            self._run(-1, until)

    def _make_room(self, ring: int) -> None:
        """The orchestrator waits for a slot of ``ring``: run the scheduler until one of the ring's
        tasks retires (completed, and its scope ended). When none can (every slot is held by an open
        scope), the caller's :meth:`_hold` reports the deadlock."""
        self._first_run()
        if self._history and not self.keep_history:
            # from now on retired tasks are forgotten: memory bounded by the window, not the program
            # (a read that waited keeps the history: the window is what bounds a program's memory)
            self._history = False
            self.tasks = []
            self.gangs = []
        self.drains += 1
        self._run(ring)
        if not self._history and len(self._views) > 4096:
            # a cache (id -> (tensor, View)) that keeps its tensors alive: the views a loop slices
            # afresh every iteration would pile up; the few hot tensors are simply looked up again
            self._views.clear()

    def _first_run(self) -> None:
        """Before the scheduler first runs during orchestration (a full window, a read that waits)."""
        if self._sched is None and self.protect and not self.written_bases.isdisjoint(self.protect):
            raise _WritesIn()   # nothing has run yet: execute() starts over on copies

    def unlink(self) -> None:
        """Break the reference cycles of a finished run (a task and the tasks waiting for it
        reference each other; the reusable scope objects reference the runtime): its tasks,
        intermediate tensors and views are then freed by reference counting as soon as the runtime
        itself is dropped (the next run replaces it in ``_LAST_RUNTIME``), instead of waiting as
        cyclic garbage for a full collection, which kept a previous run's memory alive during the
        next one (prefill 8 x 1024: +115 MiB RSS per run). What a finished run's users read (tasks,
        edges, gangs, dumps, times) stays."""
        for t in self.tasks:
            t.dependents = None
            t.scope = None
        for sc in self._scopes:
            sc.rt = None
        self._scope_stack = []
        self._sched = None

    def _retire(self, t: Task) -> None:
        """``t`` gives its ring slot back (it completed and its scope ended). Without history its
        bookkeeping is dropped too: tensormap entries, creator ownership, the id lookup, edges."""
        self._live[t.scope.ring] -= 1
        if self._history:
            return
        self.by_id.pop(t.task_id, None)
        if t.registered:
            self.tensormap.unregister_all(t.registered, t)
        if t.kind == "alloc":
            v = t.views.get(0)
            if v is not None and self.owner.get(v.base) is t:
                del self.owner[v.base]
                self.manual_dep.discard(v.base)
        t.edges = t.dependents = t.args = t.views = None
        t.registered = None

    _HELD = ("task slots (ring_task_window)", "heap bytes (ring_heap)", "dependency entries (ring_dep_pool)")

    def _hold(self, what: int, amount: int) -> None:
        """Account ``amount`` of a ring resource (0 task slots, 1 heap bytes, 2 dependency entries)
        to the innermost open scope. Tasks keep what they hold until their scope ends, so when the
        open scopes of one ring hold more than the ring has, the device's orchestrator waits for a
        release that can never come: a deadlock, which the runtime reports as fatal. (Short of
        that, a full ring only makes the orchestrator wait for retirements: no effect on results.)"""
        depth = self._depth
        if self._bheld and depth in self._bheld:
            return self._hold_members(what, amount)
        self._held[depth][what] += amount
        ring = depth if depth < 3 else 3
        limit = self._rings[what][ring]
        total = self._held[ring][what] if ring < 3 else sum(h[what] for h in self._held[3:])
        if total > limit:
            self._deadlock(ring, total, what, limit)

    def _deadlock(self, ring: int, total: int, what: int, limit: int):
        """Raise the ring deadlock error of :meth:`_hold`."""
        raise SimulationError(
            f"ring {ring} deadlocks: its open scopes hold {total} {self._HELD[what]} but the ring has "
            f"{limit}; on the device the orchestrator blocks forever. Raise RunConfig."
            f"{self._HELD[what].split('(')[1][:-1]}, or give the loop body its own scope so that its "
            "tasks retire sooner")

    # ------------------------------------------------------------------ scheduling
    def run_all(self) -> None:
        """Run every submitted task to completion under the dependency rules."""
        with gc_paused(), python_faults():
            self._run(-1)

    def _run(self, ring: int, until: list | None = None) -> None:
        """Run the scheduler: until every submitted task is done (``ring`` -1), until ``ring``
        has a free task slot (the orchestrator is waiting to submit, :meth:`_make_room`), or until
        every task of ``until`` is done (the orchestrator reads an element, :meth:`_wait_ready`;
        the list is consumed). Its state (ready lists, running cores, clock) persists between
        calls in ``self._sched``."""
        st = self._sched
        if st is None:
            st = self._sched = _SchedState(len(self.cores), self._gang_kernels())
        rng = self.rng
        rand = rng.random
        # randrange(n) is _randbelow(n) for n > 0 (the very same draws, without the argument checks)
        randrange = getattr(rng, "_randbelow", rng.randrange)
        heappush, heappop = heapq.heappush, heapq.heappop
        dump = self.dump
        kernels = self.kernels
        cores = self.cores
        gangs = st.gangs
        history = self._history
        live = self._live
        limit = self._rings[0][ring] if ring >= 0 else 0
        retire = self._retire
        # kernel tasks whose inputs are done, waiting for a core, by kernel (dict order: first ready
        # first, so draws are a function of the seed). A gang takes a run of its kernel's list (in
        # readiness order, so its members' offsets tend to be evenly spaced); a single draw swaps
        # with the last, exactly as with lockstep off (a refused gang leaves the same list behind)
        ready: dict[str, list] = st.ready
        nready = st.nready
        instant = st.instant   # alloc / dummy / snapshot tasks and tasks whose predicate is false: no core, no time
        fresh = self._fresh    # linked since the last run with nothing to wait for, in submit order
        for t in fresh:
            if t.kind == "kernel" and (t.pred is None or not _skip(t)):
                nready += _enqueue(ready, t)
            else:
                instant.append(t)
        fresh.clear()
        free = st.free
        events: list = st.events   # (time, seq, task or _Gang, generator)
        seq = st.seq
        done = st.done
        now = st.now
        n = self._n
        view_cache: dict = st.view_cache

        def release(t) -> int:
            """Count ``t`` done for its dependents; queue those now ready; return how many kernel
            tasks became ready."""
            k = 0
            t.done = True
            for d in t.dependents:
                d.waiting -= 1
                if d.waiting == 0:
                    if d.kind == "kernel" and (d.pred is None or not _skip(d)):
                        k += _enqueue(ready, d)
                    else:
                        instant.append(d)
            sc = t.scope
            if sc is not None:
                if sc.open:
                    sc.done.append(t)   # holds its slot until the scope ends
                else:
                    retire(t)
            return k

        while done < n:
            if ring >= 0 and live[ring] < limit:
                break
            if until is not None:
                while until and until[-1].done:
                    until.pop()
                if not until:
                    break
            while instant or (nready and free):
                if instant:
                    t = instant.pop()
                    if t.kind == "snapshot":
                        self.dumps[t.snap] = (self.dumps[t.snap][0], t.args[0].detach().clone())
                    t.start = t.end = now
                    done += 1
                    nready += release(t)
                    continue
                # a seeded random ready task (a random kernel weighted by its ready count, then a
                # random task of it) on a seeded random free core
                if len(ready) == 1:
                    kname = next(iter(ready))
                    k = randrange(nready) if nready > 1 else 0
                else:
                    k = randrange(nready)
                    for kname, bucket in ready.items():
                        if k < len(bucket):
                            break
                        k -= len(bucket)
                bucket = ready[kname]
                gang = gangs.get(kname) if len(free) > 1 and len(bucket) > 1 else None
                if gang is not None:
                    g, first = self._form_gang(gang, bucket, k, free)
                    if first == -1:
                        del gangs[kname]
                    if g is not None:
                        members = g.members
                        # runs of one task (members in task order: the first and last share it, so all do)
                        p = members[0].parent
                        one = p is not None and p is members[-1].parent
                        if history:
                            self.gangs.append((p.index,) * len(members) if one else tuple(map(_INDEX, members)))
                        nready -= len(members)
                        if not bucket:
                            del ready[kname]
                        key = (kname, first, len(members))
                        views = view_cache.get(key)
                        if views is None:
                            own = getattr(gang[0], "gang_views", None)   # a Group's: a gang of clusters
                            views = view_cache[key] = (own(first, len(members)) if own is not None else
                                                       self.memory.gang_views(kname, first, len(members),
                                                                              gang[0].TILES))
                        c = first
                        if one:   # (the general loop below, with the task looked at once)
                            if p.core < 0:   # the first run of its task to start
                                if dump is not None and (dump.level == 2 or p.dump_sel):
                                    dump.capture(p, BEFORE)
                                p.core = c
                                p.start = now
                            for t in members:
                                t.core = c
                                t.start = now
                                c += 1
                        else:
                            for t in members:
                                p = t.parent
                                if p is None:
                                    p = t
                                    if dump is not None and (dump.level == 2 or p.dump_sel) and p.core < 0:
                                        dump.capture(p, BEFORE)
                                elif p.core < 0:   # the first run of its task to start
                                    if dump is not None and (dump.level == 2 or p.dump_sel):
                                        dump.capture(p, BEFORE)
                                    p.core = c
                                    p.start = now
                                t.core = c
                                t.start = now
                                c += 1
                        heappush(events, (now, seq, g, (gang[0].kernel_gang(views, g.plans, *members[0].args)
                                                if getattr(gang[0], "GANG_SAME", ()) else
                                                gang[0].kernel_gang(views, g.plans))))
                        seq += 1
                        continue
                if len(bucket) > 1:
                    # O(1) removal: swap with the last
                    t = bucket[k]
                    bucket[k] = bucket[-1]
                    bucket.pop()
                else:
                    t = bucket.pop()
                if not bucket:
                    del ready[kname]
                nready -= 1
                nf = len(free)
                if nf > 1:
                    k = randrange(nf)
                    c = free[k]
                    free[k] = free[-1]
                    free.pop()
                else:
                    c = free.pop()
                key = (t.kernel, c)
                hit = view_cache.get(key)
                if hit is None:
                    mod = kernels[t.kernel]
                    if getattr(mod, "GROUP", None) is not None:   # a mixed kernel: core c's cluster runs it
                        hit = view_cache[key] = (functools.partial(mod.kernel, _group=self.clusters.get(c)), [])
                    else:
                        hit = view_cache[key] = (mod.kernel, cores[c].tile_views(t.kernel, mod.TILES))
                p = t.parent
                if p is None:
                    if dump is not None and (dump.level == 2 or t.dump_sel):
                        dump.capture(t, BEFORE)
                    gen = hit[0](hit[1], *t.args)
                else:   # one block of a multi-block task
                    if p.core < 0:
                        if dump is not None and (dump.level == 2 or p.dump_sel):
                            dump.capture(p, BEFORE)
                        p.core, p.start = c, now
                    gen = hit[0](hit[1], *t.args) if t.kind == "member" else \
                        hit[0](hit[1], *t.args, _block=(t.block, t.blocks))
                t.core = c
                t.start = now
                heappush(events, (now, seq, t, gen))
                seq += 1
            if done >= n:
                break
            if not events and self._barriers:
                raise SimulationError(self._barrier_deadlock())
            if not events:
                waiting = [t for t in self.tasks if t.waiting > 0][:5]
                raise SimulationError(f"deadlock: {n - done} tasks are waiting but none is running "
                                      f"(e.g. {waiting})")
            # run the earliest core (or gang) until it finishes or yields a time later than the next event
            now, _, t, gen = heappop(events)
            cycles = next(gen, None)   # kernels yield ints; None: the kernel returned
            if cycles.__class__ is DebugPrint:   # pl.debug_print: record it, resume the kernel at once
                cycles = self._print(t, now, cycles, gen)
            if cycles.__class__ is BlockBarrier:   # pl.system.syncall: park the block (on its core)
                for at, bt, bgen in self._arrive(t, now, cycles, gen):
                    heappush(events, (at, seq, bt, bgen))
                    seq += 1
                continue
            if cycles is not None:
                heappush(events, (now + cycles * (1.0 + 0.25 * rand()), seq, t, gen))
                seq += 1
                continue
            on_complete = self.on_complete
            if type(t) is _Gang:
                finished = t.members
                c = finished[0].core   # (the members sit on adjacent cores, in order: freed in that order)
                free.extend(range(c, c + len(finished)))
                p = finished[0].parent
                if p is not None and p is finished[-1].parent:
                    # runs of one task (members in task order: the first and last share the task, so
                    # all do): recorded in one go, as the loop below would; the task completes when
                    # its last runs were these
                    for r in finished:
                        r.end = now
                    p.runs.extend([(r.core, r.start, now, r.block) for r in finished])
                    left = p.left = p.left - len(finished)
                    if left:
                        continue
                    p.end = now
                    finished = ()
                    done += 1
                    if dump is not None and (dump.level == 2 or p.dump_sel):
                        dump.capture(p, AFTER)
                    if on_complete is not None:
                        on_complete(p)
                    nready += release(p)
            else:
                finished = (t,)
                free.append(t.core)
            for t in finished:
                t.end = now
                p = t.parent
                if p is not None:   # a block: its task completes with its last block
                    p.runs.append((t.core, t.start, now, t.block))
                    left = p.left = p.left - 1
                    if left:
                        continue
                    t = p
                    t.end = now
                done += 1
                if dump is not None and (dump.level == 2 or t.dump_sel):
                    dump.capture(t, AFTER)
                if on_complete is not None:
                    on_complete(t)
                nready += release(t)
            if self.progress is not None:
                self.progress.total = self._n
                self.progress.set(done)
        st.nready, st.seq, st.done, st.now = nready, seq, done, now
        self.time = now

    def _arrive(self, t, now: float, rec: BlockBarrier, gen) -> list:
        """Block ``t`` arrives at a syncall: parked (on its core) until every block of its task has;
        returns the ``(time, block, generator)`` to resume — all of them, at the last arrival, once
        the last has come, else none."""
        p = t.parent if t.parent is not None else t
        blocks = t.blocks if t.parent is not None else 1
        try:
            want = rec.participants(blocks, self.platform)
        except SimulationError as e:
            raise SimulationError(f"{e.message} (task {rxty(p.task_id)}, kernel {t.kernel!r})", e.span,
                                  e.hint) from None
        key = id(p)
        parked = self._barriers.setdefault(key, (p, rec, want, []))[3]
        parked.append((now, t, gen))
        if len(parked) < want:
            return []
        del self._barriers[key]
        at = max(x[0] for x in parked)
        return [(at, bt, bgen) for _, bt, bgen in parked]

    def _barrier_deadlock(self) -> str:
        """Blocks wait at a syncall and nothing else runs: the others never arrive."""
        lines = ["deadlock: blocks wait at a syncall for blocks that never arrive"]
        for p, rec, want, parked in self._barriers.values():
            lines.append(f"  task {rxty(p.task_id)} ({p.kernel}): {len(parked)} of {want} blocks arrived at the "
                         f"syncall at {rec.where or '?'} and hold their cores; the others finished without "
                         f"reaching it, or cannot start while the chip's {len(self.cores)} cores are held")
        return "\n".join(lines)

    def _print(self, t, now: float, rec, gen):
        """Print the ``pl.debug_print`` records ``gen`` yields now (task ``t``'s, on its core, at the
        simulated time its printed value is complete); return the kernel's next real yield."""
        while rec.__class__ is DebugPrint:
            line = PrintRecord(rxty(t.task_id), f"core {t.core}", now + rec.cycles, rec.where, rec.label, rec.value)
            self.prints.append(line)
            emit_print(line)
            rec = next(gen, None)
        return rec

    def _gang_kernels(self) -> dict:
        """``kernel -> (module, GANG_NUMEL, torch threads)`` for the kernels this run may gang
        (lockstep on, the kernel has a lockstep form, torch's threading allows a gang of two or more
        of its tiles, and no access recorder is installed: recorders expect one call per access)."""
        if not self.lockstep or _RECORDER.get() is not None:
            return {}
        threads = torch.get_num_threads()
        out = {}
        for name, mod in self.kernels.items():
            if getattr(mod, "GROUP", None) is not None:   # a mixed kernel: its members' lockstep forms
                mod = group_gang(mod, self.kernels, self.clusters)
            if getattr(mod, "GANG", False):
                numel = mod.GANG_NUMEL
                if gang_size(len(self.cores), numel, threads) >= 2:
                    out[name] = (mod, numel, threads)
        return out

    def _form_gang(self, gang, bucket: list, k: int, free: list):
        """Take a gang from ``bucket`` around position ``k`` onto the longest run of adjacent free
        cores: ``(_Gang with its members in task order, first core)``, removed from ``bucket`` and
        ``free``; or
        ``(None, None)`` when there is no run of two free cores, ``(None, -1)`` when the members'
        footprints conflict (the caller then stops ganging the kernel for the run)."""
        mod, numel, threads = gang
        cs = sorted(free)
        start = cs[0]
        if cs[-1] - start == len(cs) - 1:   # (distinct cores: all of them adjacent, one run)
            best = len(cs)
        else:   # the first longest run
            best = 1
            run_start, run = start, 1
            for a, b in zip(cs, cs[1:]):
                if b == a + 1:
                    run += 1
                    if run > best:
                        best, start = run, run_start
                else:
                    run_start, run = b, 1
        size = gang_size(min(best, len(bucket)), numel, threads)
        if size < 2:
            return None, None
        lo = min(k, len(bucket) - size)
        window = bucket[lo:lo + size]
        whole = True   # the window is bucket[lo:lo + size] itself
        same = getattr(mod, "GANG_SAME", ())
        if same:
            # the gang kernel reads these scalar arguments once for all members: only the tasks of the
            # window whose values equal the drawn task's (bit for bit) may join
            picked = _same_args(bucket[k], window, same)
            if len(picked) < size:
                size = gang_size(len(picked), numel, threads)
                if size < 2:
                    # values that keep differing (a per-task flag): stop trying after a few draws,
                    # as for conflicting footprints, so the scheduler does not pay for it per task
                    misses = self._same_misses[mod] = self._same_misses.get(mod, 0) + 1
                    return None, (-1 if misses >= 8 else None)
                window, whole = picked[:size], False
        # in task order, then block / member position ((index, block) pairs are distinct: two stable
        # passes with int keys give the same order as one with the pair, in half the time)
        members = sorted(window, key=_BLOCK)
        members.sort(key=_INDEX)
        t = members[0]
        p = t.parent
        build = self._plan_builders.get(mod)
        if build is None:
            build = self._plan_builders[mod] = _plan_builder(mod)
        # a plan that cannot raise (GANG_PLAN_PURE) is built when first read (most gangs read only
        # the first and last members': gang_access.param_runs); the others now, as their errors may
        plans = None if LAZY_PLANS and getattr(mod, "GANG_PLAN_PURE", False) else build(members)
        if (p is None or p is not members[-1].parent or t.kind != "member") and not batches_disjoint(members):
            # member runs of one batched task touch disjoint memory (the compiler's proof): compared by
            # task (members in task order: when the first and last are runs of one batched task, every
            # member is, and there is nothing to compare)
            groups = [t.parent.index if t.kind == "member" else -1 - t.index for t in members]
            if plans is None:
                plans = build(members)
            if conflict(mod.GANG_GM, plans, groups, members):
                return None, -1
        if whole:
            del bucket[lo:lo + size]
        else:
            gone = set(map(id, window))
            bucket[:] = [t for t in bucket if id(t) not in gone]
        end = start + size
        free[:] = [c for c in free if c < start or c >= end]
        # (with the runs: an access of a parameter finds its runs from the batched task's argument)
        return _Gang(members, gang_access.gang_plans(plans, members, (Stack, Sliced), build)), start


def zero_ranges(kernels: dict) -> dict:
    """``{memory space: ((lo, hi), ...)}``: the core memory (every row) that must start zeroed for
    ``kernels`` (name -> module): the union of each module's ``ZERO_FIRST`` (the bytes it may read
    before writing them, :mod:`pypto.codegen.first_use`) and, for a module without one (built
    before the table existed, or not proven), of all its ``TILES``. A space no kernel may read
    first is absent. Remembered per module tuple (every call of a program asks again)."""
    key = tuple(kernels.values())
    hit = _ZERO_RANGES.get(key)
    if hit is not None:
        return hit
    per: dict = {}
    for mod in key:
        zf = getattr(mod, "ZERO_FIRST", None)
        if zf is None:
            zf = [(sp, addr, addr + _nbytes(shape, dtype)) for sp, addr, shape, dtype in getattr(mod, "TILES", ())]
        for sp, lo, hi in zf:
            per.setdefault(_SPACES.get(sp) or MemorySpace[sp], []).append((lo, hi))
    out = {}
    for sp, rs in per.items():
        merged: list = []
        for lo, hi in sorted(rs):
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            elif lo < hi:
                merged.append([lo, hi])
        out[sp] = tuple(map(tuple, merged))
    if len(_ZERO_RANGES) >= 64:
        _ZERO_RANGES.clear()
    _ZERO_RANGES[key] = out
    return out


_ZERO_RANGES: dict = {}   # (the kernel modules) -> zero_ranges (keeps the modules: no id reuse)
_SPACES = {m.name: m for m in MemorySpace}


def _same_args(ref: Task, window: list, positions) -> list:
    """The tasks of ``window`` whose arguments at ``positions`` equal ``ref``'s bit for bit
    (:func:`_arg_key`), in window order. The very same objects are equal without packing them: the
    members of one batched submission share their scalar arguments."""
    key = None
    a0 = ref.args
    out = []
    for t in window:
        a = t.args
        for i in positions:
            if a[i] is not a0[i]:
                break
        else:
            out.append(t)
            continue
        if key is None:
            key = _arg_key(ref, positions)
        if _arg_key(t, positions) == key:
            out.append(t)
    return out


def _arg_key(t: Task, positions) -> tuple:
    """The values of ``t``'s arguments at ``positions``, compared bit for bit (-0.0 is not 0.0).
    (Called for every task of a window a GANG_SAME kernel's gang is drawn from: a Qwen3 layer call
    keys ~270 float arguments; hence the precompiled pack and no per-item call.)"""
    args = t.args
    return tuple([(float, _PACK_F64(x)) if x.__class__ is float else _value_key(x)
                  for x in [args[i] for i in positions]])


_PACK_F64 = struct.Struct("<d").pack


def _value_key(x) -> tuple:
    """:func:`_arg_key` of one argument other than a plain float."""
    if isinstance(x, torch.Tensor):
        return (x.dtype, x.detach().cpu().numpy().tobytes())
    if isinstance(x, float):   # a float subclass (np.float64): bit for bit too
        return (x.__class__, _PACK_F64(x))
    tobytes = getattr(x, "tobytes", None)
    if tobytes is not None:   # a NumPy scalar (np.float32(-0.0) == 0.0, its bytes differ)
        return (x.__class__, tobytes())
    return (x.__class__, x)


def _skip(t: Task) -> bool:
    """Whether ``t`` (its dependencies done) is retired without running: its predicate is false."""
    elem, cmp, value = t.pred
    t.skipped = not cmp(elem.item(), value)
    return t.skipped


class _SchedState:
    """What the scheduler keeps between runs (:meth:`Runtime._run`): ready tasks by kernel, instant
    tasks, free cores, the event heap of running cores, the clock."""

    __slots__ = ("ready", "nready", "instant", "free", "events", "seq", "done", "now", "view_cache", "gangs")

    def __init__(self, ncores: int, gangs: dict):
        self.ready: dict[str, list] = {}
        self.nready = 0
        self.instant: list = []
        self.free = list(range(ncores))
        self.events: list = []
        self.seq = 0
        self.done = 0
        self.now = 0.0
        self.view_cache: dict = {}
        self.gangs = gangs


class _WritesIn(Exception):
    """Internal: the program writes a caller In tensor that execute() passed in place; it starts
    over on copies."""


Runtime._WritesIn = _WritesIn


class _Gang:
    """Tasks running as one lockstep gang (members in task order on adjacent cores) and their
    ``GANG_PLAN`` results."""

    __slots__ = ("members", "plans")

    def __init__(self, members: list, plans: list):
        self.members = members
        self.plans = plans


# build gang plans lazily where they cannot raise (False: every plan when the gang forms; an A/B
# switch for measuring, and the form to compare against)
LAZY_PLANS = True


def _plan_builder(mod):
    """``build(runs)``: the ``GANG_PLAN`` results of gang members ``runs`` of kernel module ``mod``
    (in one ``GANG_PLANS`` call when no run is a block of a multi-block task)."""
    many = getattr(mod, "GANG_PLANS", None)   # all members' plans in one call (no block among them)
    plan = mod.GANG_PLAN

    def build(runs: list) -> list:
        if many is not None and "block" not in map(_KIND, runs):
            return many(list(map(_ARGS, runs)))
        # (only a block of a multi-block task passes its block: a member run or a task calls it plainly)
        return [plan(*t.args) if t.kind != "block" else plan(*t.args, _block=(t.block, t.blocks))
                for t in runs]
    return build


_INDEX = operator.attrgetter("index")
_BLOCK = operator.attrgetter("block")
_KIND = operator.attrgetter("kind")
_ARGS = operator.attrgetter("args")


class _Run(Task):
    """One run of a task that runs as several (:func:`_run_of`). A run is never linked into the
    graph (its task is) nor retired, dumped or released (its task is): only the fields the scheduler
    sets per run are its own (index, task_id, kernel, kind, args, tags, manual, start, end, core,
    blocks, block, parent); every other field of a Task reads here as the class attribute below,
    the value a fresh run had, shared. Writing one of them raises AttributeError (no instance dict),
    so a run can never silently diverge from these. (A Qwen3-layer call makes ~1,240 member runs:
    setting all 32 fields took ~0.4 us a run, 13 of them ~0.2 us.)"""

    __slots__ = ()
    views = types.MappingProxyType({})
    fanin = frozenset()
    edges = ()
    dependents = ()
    waiting = 0
    dump_sel = None
    func_ids = (-1,)
    kernel_ids = (-1, -1, -1)
    snap = -1
    pred = None
    skipped = False
    done = False
    scope = None
    registered = None
    left = 0
    runs = None
    members = None
    batched = None
    footprint = None


def _run_of(parent: Task, kind: str, args, block: int, blocks: int, manual: bool) -> Task:
    """One run of a task that runs as several: a block of a multi-block task (kind ``"block"``) or
    a member of a batched one (``"member"``); ``parent`` the task, ``block`` its position. A
    :class:`_Run`: its edge containers and the other fields no run sets are shared class values."""
    r = _new_task_object(_Run)
    r.index = parent.index
    r.task_id = parent.task_id
    r.kernel = parent.kernel
    r.kind = kind
    r.args = args
    r.tags = parent.tags
    r.manual = manual
    r.start = 0.0
    r.end = 0.0
    r.core = -1
    r.blocks = blocks
    r.block = block
    r.parent = parent
    return r


def _member_runs(t: Task) -> list:
    """:func:`_run_of` ``(t, "member", args, i, 1, False)`` of every member ``i`` of batched task ``t``
    (one loop, no call per run)."""
    new, R = _new_task_object, _Run
    index, task_id, kernel, tags = t.index, t.task_id, t.kernel, t.tags
    out = []
    append = out.append
    for i, args in enumerate(t.members):
        r = new(R)
        r.index = index
        r.task_id = task_id
        r.kernel = kernel
        r.kind = "member"
        r.args = args
        r.tags = tags
        r.manual = False
        r.start = 0.0
        r.end = 0.0
        r.core = -1
        r.blocks = 1
        r.block = i
        r.parent = t
        append(r)
    return out


_new_task_object = object.__new__




def _enqueue(ready: dict, t: Task) -> int:
    """Queue ready kernel task ``t`` — as its blocks, each its own run, when it has several. Returns
    how many runs were queued."""
    bucket = ready.setdefault(t.kernel, [])
    if t.members is not None:   # a batched task: one run per member, with its own arguments
        t.left = len(t.members)
        t.runs = []
        bucket.extend(_member_runs(t))
        return t.left
    n = t.blocks
    if n == 1:
        bucket.append(t)
        return 1
    t.left = n
    t.runs = []
    bucket.extend([_run_of(t, "block", t.args, i, n, t.manual) for i in range(n)])
    return n


_SNAPSHOT_ID = 1 << 63
_TAGSET = frozenset(ALL_TAGS)
# tags under which a task may write its argument (NO_DEP only skips dependency tracking: the
# kernel may still write, so it counts)
_WRITE_TAGS = MAY_WRITE_TAGS


def execute(compiled, args: tuple, kwargs: dict, config=None):
    """Run a :class:`CompiledProgram` on its simulated platform with the caller's arguments."""
    # The cyclic collector stays off until the run's objects (tasks, views, the runtime) are freed:
    # Python counts every allocation while it is off and frees uncount them, so re-enabling it
    # while they still live made the next allocation start a young collection walking all of them
    # (~3 % of a batched decode call); once they are gone there is nothing to walk.
    with gc_paused():
        return _execute(compiled, args, kwargs, config)


def _execute(compiled, args: tuple, kwargs: dict, config=None):
    """:func:`execute` (the cyclic collector paused)."""
    cfg = config or RunConfig(platform=compiled.platform)
    if get_platform(cfg.platform).name != compiled.platform:
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
            if None in p["shape"]:
                raise TypeError(f"{meta['name']}(): Out parameter '{p['name']}' has a dynamic shape; pass it")
            shape = list(p["shape"])
            if p["dtype"] == "FP4":   # the caller's form: packed, two codes per byte
                shape[-1] //= 2
            full.append(torch.zeros(shape, dtype=dtype_from_name(p["dtype"]).torch))
        else:
            a = next(it)
            full.append(a if a.__class__ is torch.Tensor else _plain_scalar(a, p))
    Tensor = torch.Tensor
    full = [a if a.__class__ is Tensor else _device_view(a, p) for p, a in zip(params, full)]
    facts = param_facts(compiled, params)   # (the parameters' dtypes and shapes, derived once per build)
    # the caller's packed FP4 tensors, by index (full: unpacked)
    packed = _unpack_fp4(params, full) if facts.fp4 else {}
    _check_tensor_args(facts, full)
    if facts.dims:
        _check_dynamic_dims(params, full)
    platform = get_platform(compiled.platform)
    out = compiled.output_dir
    kernels, orch = compiled.load_modules()
    if orch is None:   # (an entry that is not orchestration code: nothing would submit the kernels)
        raise CodegenError(
            f"program '{meta['name']}' has no orchestration to run: its entry function '{meta['entry']}' is not an "
            "Orchestration function and has no 'with pl.at(...)' scope that would make it one",
            None, "declare the entry @pl.function(type=pl.FunctionType.Orchestration), or put its kernel work in "
                  "'with pl.at(level=pl.Level.CORE_GROUP):'")
    kernel_ids = {name: i for i, name in enumerate(meta["kernels"])}

    # Without deps.json or a swimlane, nobody reads the task log after the run: a program that
    # overflows the task window then forgets retired tasks and runs in bounded memory.
    keep_history = bool(cfg.enable_dep_gen or cfg.enable_chip_swimlane)
    # batched loops (pypto.runtime.batch) only where nothing reads single tasks afterwards
    batch = cfg.sim_batch and cfg.sim_lockstep and not keep_history and not cfg.enable_dump_args \
        and not cfg.enable_scope_stats
    if cfg.sim_poison:
        from pypto.ops.support import poisoning
    else:
        poisoning = contextlib.nullcontext
    current: list = [None]

    def attempt(direct):
        """Run the program once with the tensors in ``direct`` used in place as global memory. The
        orchestration and the scheduler interleave: when a ring's task window fills, tasks run
        until one retires (Runtime._make_room), as the device's orchestrator waits."""
        gm = [a if i in direct else a.detach().clone().contiguous() if isinstance(a, torch.Tensor) else a
              for i, a in enumerate(full)]
        protect = {gm[i].untyped_storage().data_ptr() for i in direct if params[i]["direction"] == "In"}
        rt = current[0] = Runtime(platform, kernels, cfg.sim_seed, dump_level=cfg.enable_dump_args,
                                  dump_budget=cfg.dump_budget_bytes, kernel_ids=kernel_ids, poison=cfg.sim_poison,
                                  rings=cfg.ring_limits(), lockstep=cfg.sim_lockstep, streaming=True,
                                  keep_history=keep_history, protect=protect, zero_first=True,
                                  batch=batch)
        _LAST_RUNTIME[:] = [rt]
        if cfg.enable_scope_stats:
            rt.scope_stats = []
        from pypto import progress

        # a run of more than a second shows "run <name>: done/submitted tasks" on a terminal (drawn
        # only on a tty, after the delay; a tool's own bar, e.g. the doctor's, nests it). Only in the
        # main thread: the bars share one line (and one stack) per process
        bar = None
        if threading.current_thread() is threading.main_thread() and (
                progress._STACK or progress._enabled(sys.stderr, None)):
            bar = progress.Progress(f"run {meta['name']}: tasks", None)
        rt.progress = bar if bar is not None and bar.on else None
        if direct & inout:
            rt.undo = UndoLog([gm[i] for i in direct & inout])
        token = ORCH_WRITES.set(rt.undo.note) if rt.undo is not None else None
        try:
            with poisoning(), python_faults(), while_limit(cfg.max_while_iterations):
                host[:] = [_host_layout(g, p) for g, p in zip(gm, params)]
                returned[:] = [orch.orchestrate(rt, *host)]
                if _writes_into(rt, [gm[i] for i in direct if params[i]["direction"] == "In"]):
                    raise _WritesIn()
                rt.run_all()
            if rt.undo is not None:
                rt.undo.release()
        except BaseException:
            if rt.undo is not None:   # a failed run (or a restart on copies) leaves InOut tensors as they were
                rt.undo.restore()
            raise
        finally:
            if token is not None:
                ORCH_WRITES.reset(token)
            if bar is not None:
                bar.close()
        return gm, rt

    returned: list = [None]
    host: list = []   # the views of the arguments the orchestration received
    direct, inout = _plain_in_place(params, full)
    windows = _window_args(full)
    direct |= windows
    inout -= direct   # in place with an undo log (pypto.runtime.undo)
    direct |= inout
    rt = None
    try:
        with gc_paused():
            try:
                gm, rt = attempt(direct)
            except _WritesIn:
                # the program writes a tensor declared In (the device writes its own copy, the
                # caller's tensor is not an output): start over on copies. No task has written the
                # caller's tensor (the writing task was detected when it was submitted); Out
                # tensors used in place may hold part of the first attempt's results, which the
                # second overwrites (their contents before a kernel writes them are unspecified)
                _release_cores(current[0])
                current[0] = None
                gm, rt = attempt({i for i in direct if params[i]["direction"] == "Out"} | windows | inout)
    except SimulationError as e:
        # a fault inside generated code: name the kernel source line (file:line:col + caret)
        located = locate(e)
        if located is None:
            raise
        raise located from None
    finally:
        gang_access.forget()   # (its memo names tensors of this call)
        if current[0] is not None:
            _release_cores(current[0])
            current[0].unlink()
    # the results first: a DFX output that cannot be written (disk full, a directory in the way)
    # must not lose the outputs of a run that succeeded
    for p, user, g in zip(params, full, gm):
        if p["direction"] in ("Out", "InOut") and g is not user:
            user.copy_(g)
    for i, caller in packed.items():
        if params[i]["direction"] in ("Out", "InOut"):
            caller.copy_(fp4_pack(full[i]))
    full = [packed.get(i, a) for i, a in enumerate(full)]
    if cfg.any_dfx_enabled():
        write_dfx(rt, cfg, out, kernel_ids)
    if allocate:
        outs = [full[i] for i, p in enumerate(params) if p["direction"] == "Out"]
        return outs[0] if len(outs) == 1 else tuple(outs)
    return _returned_values(returned[0], gm, full, host)


def _release_cores(rt: Runtime) -> None:
    """Give a finished run's core memory back to the pool (no core of the run may run again). The
    cores share one :class:`CoreMemory`, released once; a core's own view cache is dropped where it
    has one (a lockstep gang's cores use the shared memory's views only): 48 no-op releases cost
    ~50 us of a Qwen3-layer call."""
    rt.memory.release()
    for core in rt.cores:
        if core.views or core.memory is not rt.memory:
            core.release()
    rt.clusters.release()


@contextlib.contextmanager
def python_faults():
    """Faults of generated code that Python itself raises become :class:`SimulationError` s (issue
    13), keeping the traceback so that :func:`pypto.runtime.faults.locate` names the kernel line: a
    loop whose step is 0 at run time (``range`` refuses it), an index past the end of a TaskId
    array, an integer scalar division by zero. Anything else raised outside generated code stays what
    it is (a bug, not bad input)."""
    try:
        yield
    except ValueError as e:
        if "arg 3 must not be zero" not in str(e) or not _in_generated_code(e):
            raise
        raise SimulationError("a loop's step is 0 at run time: pl.range(start, stop, step) needs step != 0"
                              ).with_traceback(e.__traceback__) from None
    except ZeroDivisionError as e:
        # (floating-point scalar division is IEEE 754 and never raises: pypto.ops.support.scalars)
        if not _in_generated_code(e):
            raise
        raise SimulationError("integer division by zero at run time: a scalar '//' or '%' whose divisor is 0 "
                              "(undefined on the device); guard the division or check the value passed in"
                              ).with_traceback(e.__traceback__) from None
    except IndexError as e:
        if not _in_generated_code(e):
            raise
        raise SimulationError(f"index out of range at run time ({e}): an index past the end of an array "
                              "(e.g. a pl.array.create(n, pl.TASK_ID) written at i >= n)"
                              ).with_traceback(e.__traceback__) from None


def _in_generated_code(e: BaseException) -> bool:
    """The innermost frame of ``e``'s traceback is a generated kernel / orchestration module."""
    import traceback

    frames = list(traceback.walk_tb(e.__traceback__))
    return bool(frames) and frames[-1][0].f_globals.get("__name__", "").startswith("pypto_gen_")


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic garbage collector off for the block (restored after; nesting is fine).

    A run allocates a few objects per task (Task, views, edges, generator frames) and keeps them all
    until it ends, so the collector's periodic scans of the growing heap find nothing to free and cost
    more than the run itself: 10,000 small tasks took 470 ms with it and 220 ms without. Cycles made
    during the run are collected by the next collection after it.

    When the block ends normally, the objects made during it are moved to the oldest generation
    before the collector is switched back on (``gc.freeze()`` then ``gc.unfreeze()``: two O(1) list
    splices that also reset the young generation's count). They are the run's record, alive until
    the next call replaces it (``_LAST_RUNTIME``, freed by reference counting then: no cycles, see
    tests/runtime/test_gc_aging.py), so the young collection that re-enabling would trigger at once
    (the count passed its threshold thousands of allocations ago) would scan them all and free
    nothing: ~4-10 ms of a 70 ms Qwen3-layer call, and the next gen-1 collection scans them again.
    Not when the block raised (a traceback's frames are cycles that may hold GM tensors: the young
    collection frees them soon), nor when the process has frozen objects of its own (``unfreeze``
    would thaw them too)."""
    was = gc.isenabled()
    gc.disable()
    ok = False
    try:
        yield
        ok = True
    finally:
        if was:
            if ok and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _writes_into(rt: Runtime, tensors) -> bool:
    """True when a submitted task may write one of ``tensors`` (an OUTPUT / INOUT /
    OUTPUT_EXISTING / NO_DEP argument on the same storage, :attr:`Runtime.written_bases`)."""
    if not tensors:
        return False
    bases = {t.untyped_storage().data_ptr() for t in tensors}
    return not bases.isdisjoint(rt.written_bases)


