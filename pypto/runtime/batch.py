"""Batched orchestration: the runtime side (docs/simulator.md, "Batched orchestration").

The orchestration code generator (:mod:`pypto.codegen.batch`) emits a second form of a loop whose
iterations it proved independent (no loop-carried values, each iteration writes only tensors it
creates itself and its own disjoint slice of the outer tensors it writes, and reads no outer tensor
the loop writes). In that form every variable of the loop body is a list over the loop's iterations
(the *members*, indexed 0..N-1), the body runs once for all of them, and each call site submits
**one** task for all active members (:meth:`BatchRuntime.submit_batch`): one dependency inference,
one ring slot, one entry in the scheduler's books. Its members run as the task's *member runs* (each
with its own arguments, like the blocks of a ``pl.spmd`` task), which the scheduler gangs in
lockstep as it gangs any ready runs of one kernel. Tensors the body creates are created for all
members at once as one stacked allocation (:class:`Stack`), whose whole region stands for all
members in the dependency inference when the whole batch passes it.

Why results are bit-identical to the per-task form: the iterations touch disjoint global memory
except for what they only read, so every interleaving of their tasks (the per-task form's
iteration-by-iteration order, or the batch's step-by-step order) computes the same values; a batch
task waits for every producer any member's task would have waited for (a batch edge orders all
members, a superset of the per-member edges; never a cycle: edges point from earlier to later
submissions), and gangs are bit-identical to single runs (:mod:`pypto.runtime.gangs`).

Ring accounting: a member's tasks hold ring resources in its own scopes exactly as in the per-task
form (task slots, heap bytes per member; dependency entries: the batch task's predecessors, each
batch counting once per member), so a program whose open scopes overflow a ring reports the same
deadlock in both forms. The task window of streaming counts a batch as one slot.

The batched form is used only where nothing observes individual tasks: :meth:`BatchRuntime.batching`
is false unless the runtime was created with ``batch=True`` (``execute`` does so under
``RunConfig(sim_batch=True, sim_lockstep=True)``, the defaults, when neither deps.json, the swimlane,
tensor dumps nor scope statistics are asked for), and never while an access recorder or a task
observer is installed (the race detector, the doctor's task-by-task comparison, the poison check
build their own runtime, which never batches). Everywhere else the generated code runs the loop task
by task.
"""
from __future__ import annotations

import math
import mmap
import sys
import threading
import weakref
from itertools import repeat
from operator import is_, itemgetter

import torch

from pypto.ops.support import _RECORDER, read as _read, reshape_view as _reshape_view, tag_stack_rows, \
    view_region as _view_region
from pypto.ops.support.core import index_tensor
from pypto.ir.tags import ALL_TAGS, MAY_WRITE_TAGS
from pypto.runtime.deps import INOUT, INPUT, OUTPUT, OUTPUT_EXISTING, SCALAR, View, normalize_tag
from pypto.runtime import gm_pool

_REGISTER = (INOUT, OUTPUT_EXISTING)
_TAGSET = frozenset(ALL_TAGS)
_WRITE_TAGS = MAY_WRITE_TAGS


class Stack(list):
    """The member tensors of one batched ``create_tensor`` for a whole batch (member ``i`` is
    ``whole[i]``); ``whole`` is the stacked tensor, one region for the dependency inference."""

    __slots__ = ("whole",)


class Sliced(list):
    """The member views :meth:`BatchRuntime.bslice` made of one tensor (every member active): the
    storage (``ptr``), a tensor on it, the storage span ``[lo, hi)`` all of them lie in, for
    :func:`_read_bounds` (the same span its per-member loop computes), and each member's storage
    offset (``ats``), for :func:`_member_views`; ``views``: their :class:`pypto.runtime.deps.View`
    objects once :func:`_member_views` made them (kept with the views of a caller's tensor, see
    :func:`_kept_views`; False: not made yet), else None; ``refs``: a kept one's :class:`_Refs` when
    it is of a recycled created tensor (what keeping its Views holds is counted there)."""

    __slots__ = ("tensor", "ptr", "lo", "hi", "ats", "views", "refs")


class _Held:
    """What the members of a batched loop hold at one scope depth (or, for ``_bring3``, on ring 3
    in all), per resource (0 task slots, 1 heap bytes, 2 dependency entries): member ``i`` holds
    ``cols[w][i] + add[w]``. A hold of every member adds to ``add`` (O(1)); one of some members
    to their column entries. ``top[w]`` is the largest of ``cols[w]`` (holdings only grow while the
    scope is open), so the check against the ring is O(1) too."""

    __slots__ = ("cols", "add", "top")

    def __init__(self, n: int):
        self.cols = [[0] * n for _ in range(3)]
        self.add = [0, 0, 0]
        self.top = [0, 0, 0]

    def values(self, w: int) -> list:
        """Each member's holding of resource ``w``."""
        return [c + self.add[w] for c in self.cols[w]]

    def hold_some(self, w: int, active, amount: int) -> None:
        """The members in ``active`` (not all of them) each hold ``amount`` more of resource ``w``."""
        col = self.cols[w]
        top = self.top[w]
        for i in active:
            c = col[i] = col[i] + amount
            if c > top:
                top = c
        self.top[w] = top

    def clear(self) -> None:
        """Nothing held (the scope at this depth closed)."""
        n = len(self.cols[0])
        self.cols = [[0] * n for _ in range(3)]
        self.add = [0, 0, 0]
        self.top = [0, 0, 0]

    def take_back(self, h: "_Held") -> None:
        """These totals less the holdings ``h`` (a scope at depth >= 3 closes)."""
        for w in range(3):
            if any(h.cols[w]):
                self.cols[w] = [a - b for a, b in zip(self.cols[w], h.cols[w])]
                self.top[w] = max(self.cols[w])
            self.add[w] -= h.add[w]


class _BatchScope:
    """``with _rt.batch_scope(active):`` — one AUTO scope per active member (their tasks share one
    scope record: they retire together when the batch's scope ends)."""

    __slots__ = ("rt", "active")

    def __init__(self, rt, active):
        self.rt = rt
        self.active = active

    def __enter__(self):
        rt = self.rt
        rt._depth += 1
        d = rt._depth
        if len(rt._held) <= d:
            rt._held.append([0, 0, 0])
        if d not in rt._bheld:
            rt._bheld[d] = _Held(rt._bn)
            if rt._bring3 is None:
                rt._bring3 = _Held(rt._bn)
        rt._bactive.append(self.active)
        rt._scope_stack.append(rt._ScopeRec(d if d < 3 else 3))
        return self

    def __exit__(self, *exc):
        rt = self.rt
        # only this scope's members can hold anything at its depth (a hold goes to the innermost
        # scope's members): all of the depth's holdings go, and the ring-3 totals give them back
        h = rt._bheld[rt._depth]
        if rt._depth >= 3:
            rt._bring3.take_back(h)
        h.clear()
        rec = rt._scope_stack.pop()
        rec.open = False
        if rec.done:
            for t in rec.done:
                rt._retire(t)
        rec.done = None
        rt._bactive.pop()
        rt._depth -= 1
        if not rt._bactive:
            rt._bheld = {}
            rt._bring3 = None
            rt._bouter = None
            rt._bn = 0
        return False


class BatchRuntime:
    """The orchestration API of batched loops, mixed into :class:`pypto.runtime.simulator.Runtime`
    (which sets ``_ScopeRec``, ``_SubmitResult`` and ``_WritesIn`` to its own classes)."""

    def batching(self, n: int, writes=(), reads=()) -> bool:
        """Whether the loop the generated code is about to run over ``n`` iterations runs batched:
        batching is on for this runtime, nothing observes single tasks, no manual scope is open, and
        the outer tensors the loop writes (``writes``) share no storage with each other or with the
        outer tensors it reads (``reads``: the compiler proved disjointness per variable, this is the
        run-time check that two variables are not views of one buffer)."""
        if not self.batch or n < 2 or self._manual_depth or self._bactive or self.on_complete is not None \
                or _RECORDER.get() is not None:
            return False
        if writes:
            seen = set()
            for t in writes:
                b = t.untyped_storage().data_ptr()
                if b in seen:
                    return False
                seen.add(b)
            for t in reads:
                if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() in seen:
                    return False
        self._bn = n
        return True

    def bguard(self, n: int, tensors: list, regions, each=None) -> bool:
        """The run-time half of a loop with writes at data-dependent offsets (:func:`pypto.codegen.
        batch.guarded_plan`): ``regions[m]`` lists member ``m``'s ``(k, offsets, shape)`` slices of
        ``tensors[k]`` (every iteration's, evaluated before the loop's first submission). True when
        no two members' regions of one tensor intersect (the loop then runs batched); else the loop
        runs task by task (``guards_refused`` counts it). Offsets that are not integers, or negative
        ones, also refuse: the per-task form then reports the slice's own error.

        ``regions`` may be a function computing that list for all members at once (the generated
        batched guard), with ``each`` the per-member one: an exception of the former makes the
        latter run, member by member, so that the first member's error is the one raised."""
        if each is not None:
            try:
                regions = regions()
            except Exception:
                regions = each()
        if not _regions_disjoint(len(tensors), regions):
            self._bn = 0
            self.guards_refused += 1
            return False
        return True

    def bread(self, n: int, active, x, indices: list) -> list:
        """``tensor.read`` of ``x`` at ``indices[k]`` for the ``k``-th active member: a list over
        all ``n`` members (:func:`spread`). The values :func:`pypto.ops.support.read` gives, one
        conversion of ``x`` instead of a torch call per member; an index it would refuse makes
        every member read on its own, so the first bad one raises its usual error. Like
        :meth:`Runtime.read`, it first waits for the pending tasks writing ``x`` (all of it)."""
        self._wait_ready(x, None, False)
        return spread(n, active, _gather_reads(x, indices))

    def bread_flat(self, n: int, active, x, index: list) -> list:
        """:meth:`bread` with one index per member (``index[k]``: the ``k``-th active member's):
        a 1-D table read without a one-element list per member; anything but plain in-range ints
        of a 1-D ``x`` goes through :meth:`bread` (its checks and errors)."""
        if x.dim() == 1 and index and set(map(type, index)) == _INT and min(index) >= 0 and max(index) < x.shape[0]:
            self._wait_ready(x, None, False)
            return spread(n, active, _values_at(x, index, None))
        return self.bread(n, active, x, [[i] for i in index])

    def bslice_columns(self, n: int, active, t, cols: list, shape) -> list:
        """:meth:`bslice` with the offsets given per dimension: ``cols[d]`` lists the active
        members' offsets in dimension ``d``, or is one value for all of them (the generated code
        passes a KV-cache page's rows, ``[krow[_i] for _i in act]``, and the column 0, instead of
        a pair per member)."""
        out = _gather_columns(t, cols, shape, self.owner)
        if out is None:   # not the plain case: the pairs, for the per-member checks and errors
            offsets = [[c[k] if c.__class__ is list else c for c in cols] for k in range(len(active))]
            out = _gather_slices(t, offsets, shape, self.owner)
        return out if len(out) == n else spread(n, active, out)

    def bslice(self, n: int, active, t, offsets: list, shape) -> list:
        """``tensor.slice`` of ``t`` at ``offsets[k]`` for the ``k``-th active member (the views
        :func:`pypto.ops.support.view_region` returns; its checks in one loop for the plain 2-D
        case, the function itself for anything else)."""
        out = _gather_slices(t, offsets, shape, self.owner)
        return out if len(out) == n else spread(n, active, out)

    def breshape(self, n: int, active, xs: list, shape) -> list:
        """``tensor.reshape`` of member ``i``'s view ``xs[i]`` for every active member: the views
        :func:`pypto.ops.support.reshape_view` returns. :func:`pypto.codegen.batch.plan` admits
        only reshapes that drop or add unit axes of a slice (``x[b]``), which torch always makes
        views of the same elements; a copy here would mean a write lost, so it is an error.

        The results carry no :data:`pypto.ops.support.gang_access.SLICE_OF` tag (a tag of the
        slice would describe another shape and rank): gang accesses of them take the general
        route, which reads each view's own metadata. Every member active, 2-D and non-empty
        views of one storage with one layout come back as a :class:`Sliced` (their storage span
        and offsets, read off the views), so the batched submission looks them up as it does
        bslice's."""
        shape = list(shape)
        out = [_reshape_view(xs[i], shape) for i in active]
        for v in out:
            if getattr(v, "_pypto_reshape_copy", False):
                raise AssertionError("a batched tensor.reshape made a copy (plan() admits only views)")
        if len(out) != n:
            return spread(n, active, out)
        return _as_sliced(out)

    guards_refused = 0   # loops a failed bguard ran task by task (per runtime; tests read it)
    _bouter = None       # (_hold_members) (batched depths, the unbatched ring-3 holdings per resource)

    bspread = staticmethod(lambda n, active, values: spread(n, active, values))
    bmerge = staticmethod(lambda n, old, active, new: merge(n, old, active, new))
    branges = staticmethod(lambda active, starts, stops, steps: member_ranges(active, starts, stops, steps))

    @staticmethod
    def bstep(n: int, active, ranges: list, k: int) -> tuple:
        """Step ``k`` of an inner loop whose iteration values differ per member (``ranges``: the
        active members' ranges, :func:`member_ranges`): ``(the members still in the loop, their
        loop index as a list over all n members)``. Members with equal ranges (a context length
        the same for all requests) are all in or all out, at one index: no per-member pass."""
        r0 = ranges[0] if ranges else None
        if r0 is not None and ranges.count(r0) == len(ranges):
            if k < len(r0):
                return active, spread(n, active, [r0[k]] * len(active))
            return [], spread(n, [], [])
        sub = [i for i, r in zip(active, ranges) if k < len(r)]
        return sub, spread(n, sub, [r[k] for r in ranges if k < len(r)])

    def batch_scope(self, active) -> _BatchScope:
        """The scope of one batched loop iteration for the members in ``active``."""
        return _BatchScope(self, active)

    def _hold_members(self, what: int, amount: int) -> None:
        """:meth:`Runtime._hold` inside a batched loop: each active member holds ``amount`` in its
        own scope, and each member is checked against the ring as its iteration would be alone.
        A hold of every member is O(1) (:class:`_Held`)."""
        depth = self._depth
        h = self._bheld[depth]
        ring = depth if depth < 3 else 3
        limit = self._rings[what][ring]
        active = self._bactive[-1]
        n = len(h.cols[what])
        tot = None
        outer = 0
        if ring == 3:
            # ring 3: every depth >= 3 counts; the unbatched ones (outside the loop) for all
            # members, the batched ones per member (their running totals in _bring3). The unbatched
            # holdings do not change while a batched loop runs (every hold in it is a member's),
            # so their sums are taken once per set of batched depths
            ob = self._bouter
            if ob is None or ob[0] != len(self._bheld):
                bheld = self._bheld
                ob = self._bouter = (len(bheld), [sum(x[w] for d, x in enumerate(self._held) if d >= 3 and d not in bheld)
                                                  for w in range(3)])
            outer = ob[1][what]
            tot = self._bring3
        if len(active) == n:
            h.add[what] += amount
            if tot is None:
                if h.top[what] + h.add[what] > limit:
                    self._members_deadlock(ring, active, h, 0, what, limit)
                return
            tot.add[what] += amount
            if outer + tot.top[what] + tot.add[what] > limit:
                self._members_deadlock(ring, active, tot, outer, what, limit)
            return
        h.hold_some(what, active, amount)
        if tot is not None:
            tot.hold_some(what, active, amount)
        else:
            tot = h
        if outer + tot.top[what] + tot.add[what] > limit:
            self._members_deadlock(ring, active, tot, outer, what, limit)

    def _members_deadlock(self, ring: int, active, h, outer: int, what: int, limit: int):
        """The deadlock error of the first member (in ``active``'s order) over ``limit`` (a member
        not in ``active`` is never over it: it was checked at its own holds, and those of the
        members in ``active`` do not change its count)."""
        col, add = h.cols[what], h.add[what]
        for i in (*active, *range(len(col))):
            if outer + col[i] + add > limit:
                self._deadlock(ring, outer + col[i] + add, what, limit)

    def create_batch(self, active, shape, dtype, manual_dep: bool = False, init_value=None) -> list:
        """``create_tensor`` for every active member: one alloc task and one stacked tensor; returns
        the member tensors as a list over all members (a :class:`Stack` when all are active)."""
        n = len(active)
        shape = list(shape)
        members = None
        entry = None
        if init_value is not None:
            whole = torch.full([n] + shape, init_value, dtype=dtype)
        else:
            pool = _STACKS
            whole, members = pool.take(n, shape, dtype, self)
            entry = pool.handed if _KEEP_STACK_VIEW else None
        task = self._new_task("__alloc__", "alloc", [whole], [OUTPUT], False)
        self._hold(1, whole.numel() // n * whole.element_size())
        # a recycled stack's View comes back with it (a function of its layout, which _counts checks)
        v = entry[3] if entry is not None else None
        if v is None:
            v = View(whole)
            if entry is not None:
                entry[3] = v
        task.views[0] = v
        self._views[id(whole)] = (whole, v)
        self.owner[v.base] = task
        if manual_dep:
            self.manual_dep.add(v.base)
        self._link(task)
        if members is None:
            members = whole.unbind(0)
            tag_stack_rows(whole, members)   # gang loads / stores find runs of rows from the tags
        if n == self._bn:
            out = Stack(members)
            out.whole = whole
            return out
        out = [None] * self._bn
        for i, t in zip(active, members):
            out[i] = t
        return out

    def submit_batch(self, kernel: str, active, args: list, batched: tuple, tags: list, returns=()):
        """One task of ``kernel`` for every active member: ``args[k]`` is a list over all members
        where ``batched[k]``, else one value all members share. Dependencies are inferred once for
        the batch (a predecessor of any member's task is a predecessor of the batch). Returns, like
        :meth:`Runtime.submit`, the returned arguments (lists over the members) and the TaskId."""
        SubmitResult = self._SubmitResult
        if not _TAGSET.issuperset(tags):
            tags = [t if t in _TAGSET else normalize_tag(t) for t in tags]
        nb = self._bn
        n = len(active)
        full = n == nb
        # each member's arguments, one column per argument (a tuple per member, built in C)
        if full:
            cols = [a if f else (a,) * n for a, f in zip(args, batched)]
        else:
            cols = [[a[i] for i in active] if f else (a,) * n for a, f in zip(args, batched)]
        members = list(zip(*cols)) if cols else [()] * n
        task = self._new_task(kernel, "kernel", args, tags, False)
        task.members = members
        task.batched = batched
        fid = self.kernel_ids.get(kernel, -1)
        task.func_ids = (fid,)
        task.kernel_ids = (-1, fid, -1)
        fanin = task.fanin
        edges = task.edges
        owners = self.owner
        manual_dep = self.manual_dep
        tensormap = self.tensormap
        buckets = tensormap.buckets
        view = self._view
        written = self.written_bases
        protect = self.protect
        undo = self.undo
        Tensor = torch.Tensor
        register = []
        lookups = 0
        for k, a in enumerate(args):
            tag = tags[k]
            if tag == SCALAR:
                continue
            if not batched[k]:
                if not isinstance(a, Tensor):
                    continue
                vs = (view(a),)
            elif full and a.__class__ is Stack:
                vs = (view(a.whole),)
            elif tag == INPUT:
                vs = _read_bounds(a, active, buckets, owners)
            elif full and a.__class__ is Sliced:
                vs = _member_views(a, self._views)
                if _ONE_STORAGE and vs:
                    lookups += _one_storage(self, task, k, tag, a.ptr, vs, register)
                    continue
            else:
                vs = [view(a[i]) for i in active if isinstance(a[i], Tensor)]
            writes = tag in _WRITE_TAGS
            if writes and undo is not None:
                logged = [v for v in vs if v.base in undo.bases]   # (note() ignores other storages)
                if logged:
                    undo.note_views(logged)
            for v in vs:
                base = v.base
                if writes:
                    if protect is None or base in protect:
                        written.add(base)
                        if protect is not None and self._sched is not None:
                            raise self._WritesIn()
                if tag == OUTPUT:
                    continue
                owner = owners.get(base)
                if owner is not None and owner.index not in fanin:
                    fanin.add(owner.index)
                    edges.append((owner, k, "creator", None, None))
                if manual_dep and base in manual_dep:
                    continue
                inout = tag == INOUT
                if inout or tag == INPUT:
                    lookups += 1
                    if base in buckets:
                        # (a reader adds each producer once: the first hit of each is all it needs)
                        for p, ov, pv in (tensormap.lookup(v, True) if inout else tensormap.producers(v)):
                            if p is not task and p.index not in fanin:
                                fanin.add(p.index)
                                edges.append((p, k, "tensormap", ov, pv))
                if tag in _REGISTER:
                    register.append(v)
        self.tensormap_lookups += lookups
        if register:
            task.registered = tensormap.register_all(register, task) if _REGISTER_ALL else \
                [(v.base, tensormap.register(v, task)) for v in register]
        if fanin:
            self._hold(2, len(fanin))
        self._link(task)
        if not returns:
            return SubmitResult(None, task.task_id)
        # (an index -1: the kernel returns no parameter there, None for every member)
        if len(returns) == 1:
            r = returns[0]
            return SubmitResult(args[r] if r >= 0 else [None] * nb, task.task_id)
        return SubmitResult(tuple(args[i] if i >= 0 else [None] * nb for i in returns), task.task_id)


_REGISTER_ALL = True   # (off: one TensorMap.register call per view -- for A/B measurements)
_ONE_STORAGE = True    # (off: a Sliced argument's Views taken one by one -- for A/B measurements)


def _one_storage(rt, task, k: int, tag: str, base: int, vs: list, register: list) -> int:
    """``submit_batch``'s dependency steps for argument ``k`` of ``task``, a :class:`Sliced` whose
    member Views ``vs`` all lie on storage ``base`` (a non-INPUT tag: an INPUT one is looked up by
    its span): what the per-View loop does, with the per-storage steps (the undo log, the written
    set, the creator edge, the manual-dependency check) taken once -- the first View would take
    them and every later one find them done -- and the tensormap looked up View by View in the
    same order (the same edges in the same order). Returns the lookups made."""
    writes = tag in _WRITE_TAGS
    if writes:
        undo = rt.undo
        if undo is not None and base in undo.bases:
            undo.note_views(vs)
        protect = rt.protect
        if protect is None or base in protect:
            rt.written_bases.add(base)
            if protect is not None and rt._sched is not None:
                raise rt._WritesIn()
    if tag == OUTPUT:
        return 0
    fanin = task.fanin
    edges = task.edges
    owner = rt.owner.get(base)
    if owner is not None and owner.index not in fanin:
        fanin.add(owner.index)
        edges.append((owner, k, "creator", None, None))
    manual_dep = rt.manual_dep
    if manual_dep and base in manual_dep:
        return 0
    if tag == INOUT or tag == INPUT:
        tensormap = rt.tensormap
        if base in tensormap.buckets:   # (lookups empty a bucket's lists, never remove the bucket)
            find = tensormap.lookup if tag == INOUT else tensormap.producers
            inout = tag == INOUT
            for v in vs:
                for p, ov, pv in (find(v, True) if inout else find(v)):
                    if p is not task and p.index not in fanin:
                        fanin.add(p.index)
                        edges.append((p, k, "tensormap", ov, pv))
        lookups = len(vs)
    else:
        lookups = 0
    if tag in _REGISTER:
        register.extend(vs)
    return lookups


class _RunPool(threading.local):
    """What :class:`_StackPool` and :class:`_CreatedPool` share: entries (lists) per key, each
    with the run that last took it at index :attr:`SLOT`; a runtime's first take starts a new run
    and forgets the entries no run of the last :data:`KEEP_RUNS` took; within a run the entries
    taken come first per key, so a scan for a free one starts after them (a run takes many of one
    key: amortised O(1) per take)."""

    KEEP_RUNS = 2
    SLOT = 1        # the index of an entry's "run last handed out"
    RUN_ATTR = ""   # the runtime attribute holding its run number in this pool

    def __init__(self):
        self.entries: dict = {}   # key -> entries
        self.pos: dict = {}       # key -> how many of its entries this run took (they come first)
        self.total = 0
        self.run = 0

    def _begin(self, rt) -> int:
        """The run number of runtime ``rt`` (its first take: a new run, unused entries aged out)."""
        run = rt.__dict__.get(self.RUN_ATTR)
        if run is None:
            self.run += 1
            run = self.run
            setattr(rt, self.RUN_ATTR, run)
            self._age(run)
            self.pos = {}
        return run

    def _reuse(self, key, run: int, free):
        """The first entry of ``key`` not yet taken this run for which ``free(entry)`` holds, marked
        taken by ``run``; None when there is none."""
        got = self.entries.get(key)
        if got is None:
            return None
        pos = self.pos.get(key, 0)
        for k in range(pos, len(got)):
            e = got[k]
            if free(e):
                e[self.SLOT] = run
                got[k], got[pos] = got[pos], e
                self.pos[key] = pos + 1
                return e
        return None

    def _keep(self, key, e: list, nbytes: int) -> None:
        """Keep the new entry ``e`` (taken this run) of ``nbytes``."""
        got = self.entries.setdefault(key, [])
        pos = self.pos.get(key, 0)
        got.append(e)
        got[-1], got[pos] = got[pos], got[-1]
        self.pos[key] = pos + 1
        self.total += nbytes

    def _age(self, run: int) -> None:
        """Drop the entries no run of the last :data:`KEEP_RUNS` took (their tensors stay valid for
        whoever still holds them: only the pool forgets them)."""
        for key, got in list(self.entries.items()):
            keep = []
            for e in got:
                if e[self.SLOT] >= run - self.KEEP_RUNS:
                    keep.append(e)
                else:
                    self.total -= e[0].numel() * e[0].element_size()
                    self._dropped(e)
            if keep:
                self.entries[key] = keep
            else:
                del self.entries[key]

    def _dropped(self, e: list) -> None:
        """(a hook: an entry the pool forgets)"""


class _StackPool(_RunPool):
    """Stacked intermediates of earlier runs, handed out again with their member views.

    A batched loop creates a stacked buffer per ``create_tensor`` site and step, and its ``n``
    member views (``whole.unbind(0)``, tagged with their rows): building the views costs ~1.7 us
    a member in torch (a decode call of the benchmark makes ~2,800 of them, ~5 ms), far more than
    clearing the bytes. Runs of one program create the same stacks call after call, so a stack no
    one uses any more is handed out again, zeroed, with the same member tensors: the values
    ``torch.zeros`` gives, in the same dtype, shape and strides, and row views identical in
    metadata to fresh ones. (Stacks it keeps are plain ``torch.zeros`` allocations whose pages
    fault in once; :mod:`pypto.runtime.gm_pool` serves only the ones beyond its bound.)

    *No one uses it* is decided exactly, by reference counts: the pool's entry holds the whole
    tensor, the member tuple and nothing else, so the stack is free when (a) no Python reference to
    the whole or to any member is left besides the pool's (and the members' row tags, which point
    at the whole), and (b) its storage has no tensor over it besides those ``n + 1`` (a view taken
    of a member, e.g. a slice a program kept, holds the storage without holding the member). A
    stack of :data:`_LAZY_BYTES` or more is not kept (it is mapped lazily, and clearing it would
    touch every page). Entries unused for :data:`KEEP_RUNS` runs are dropped; at most
    :data:`MAX_BYTES` per thread are kept."""

    MAX_BYTES = 512 << 20
    SLOT = 2
    RUN_ATTR = "_stack_run"

    def __init__(self):
        super().__init__()   # entries: (n, shape, dtype) -> [[whole, members, run last handed out, its View]]
        self.handed = None        # the entry the last take handed out (None: a stack the pool does not keep)

    def take(self, n: int, shape: list, dtype, rt):
        """``(whole, members)`` of a zeroed ``[n, *shape]`` stack for runtime ``rt``: recycled with
        its member views when a free one is kept (``members`` then not None), else a new one from
        :func:`zeros_untouched` (``members`` None: the caller builds and tags them). ``handed`` is
        then the pool's entry of the stack (None: not kept), whose last item ``create_batch`` sets
        to the stack's dependency View, handed out again with it."""
        run = self._begin(rt)
        key = (n, tuple(shape), dtype)
        e = self._reuse(key, run, _free)
        if e is not None:
            whole = e[0]
            whole.zero_()
            self.handed = e
            return whole, e[1]
        self.handed = None
        nbytes = n * math.prod(shape) * dtype.itemsize
        if nbytes >= _LAZY_BYTES or self.total + nbytes > self.MAX_BYTES:
            return zeros_untouched([n] + shape, dtype, rt), None
        # a plain allocation (the pool keeps it: its pages fault in once, in the first run), made
        # like the probe _free measures its reference counts on
        whole = torch.zeros([n] + shape, dtype=dtype)
        members = whole.unbind(0)
        tag_stack_rows(whole, members)
        e = [whole, members, run, None]
        self._keep(key, e, nbytes)
        self.handed = e
        return whole, members


def _counts(entry: list) -> tuple:
    """``(references to the whole beyond its n row tags, the most references to one member,
    tensors and storage objects over the storage beyond the n + 1 kept ones, references to its
    View)`` of a kept stack's pool entry (its only argument, so that the references this function
    takes are the same for every entry); None when its View no longer describes the whole."""
    whole, members, _, v = entry
    n = len(members)
    most = max(map(sys.getrefcount, members), default=0)   # (in C: ~60 stacks of 32 rows a Qwen3 call)
    st = whole.untyped_storage()
    held = None
    if v is not None:
        if v.tensor is not whole or v.base != st.data_ptr() or v.start != whole.storage_offset() \
                or v.shape != tuple(whole.shape) or v.strides != tuple(whole.stride()):
            return None
        held = sys.getrefcount(v)
    # (a storage object someone holds shows in the use count or, where torch keeps one Python
    # object per storage, in that object's references)
    return sys.getrefcount(whole) - n, most, _use_count(st._cdata) - n - 1, sys.getrefcount(st), held


def _free(entry: list) -> bool:
    """Whether a kept stack is unused (see :class:`_StackPool`): its counts are those of a stack
    that only the pool holds. The baseline (the pool's entry, this call's own references, what
    torch keeps for the row views' base) is measured once on such a stack, through this very
    code, rather than assumed (it depends on the interpreter and torch)."""
    global _IDLE
    if _use_count is None:   # a torch without the storage use count: nothing is provably free
        return False
    if _IDLE is None:
        probe = torch.zeros([2, 1], dtype=torch.float32)   # made as take and create_batch make them
        held = [probe, probe.unbind(0), 0, None]
        tag_stack_rows(probe, held[1])
        del probe
        _IDLE = {False: _counts(held)}
        held[3] = View(held[0])   # (its entry's View: one more reference to the whole)
        _IDLE[True] = _counts(held)
    return _counts(entry) == _IDLE[entry[3] is not None]


_IDLE = None
_KEEP_STACK_VIEW = True   # (off: a recycled stack's View made afresh -- for A/B measurements)
_use_count = getattr(torch._C, "_storage_Use_Count", None)
_STACKS = _StackPool()


class _CreatedPool(_RunPool):
    """Tensors ``create_tensor`` made outside batched loops in earlier runs, handed out again zeroed,
    so that the views ``bslice`` makes of them are kept across calls (:func:`_kept_views`) like
    those of the caller's tensors: a decode call creates the same activations (``q``, ``attn``,
    the MLP's ``gate`` / ``up`` ...) and slices them at the same places call after call; making
    those views afresh cost ~0.4 ms a Qwen3-layer call.

    A tensor is handed out again only when *nothing but the pool refers to it or to anything over
    its storage*, decided exactly (:func:`_created_free`): no Python reference to it besides the
    pool's entry; no tensor over its storage besides it and its kept-view entry's alias and views
    (the storage's use count); no reference to that alias, any kept view or kept Sliced list
    besides the entry's own tables (their reference counts, which :class:`_Refs` tracks). So a
    created tensor the program returned, a view or slice of it someone kept, a finished run still
    alive (its tasks hold the views) or a traceback's frames all keep it from being reused, and no
    one can see one call's created tensor change in another; what is handed out is zeroed (the
    values ``torch.zeros`` gives, same dtype, shape and strides). Used only by runtimes that batch
    (``Runtime.create_tensor`` under ``batch=True``). Entries unused for :data:`KEEP_RUNS` runs
    are dropped; tensors of 32 MiB or more, and beyond :data:`MAX_BYTES` per thread, are not kept."""

    MAX_BYTES = 256 << 20
    RUN_ATTR = "_created_run"

    def __init__(self):
        super().__init__()   # entries: (shape, dtype) -> [[tensor, run last handed out]]
        self.ptrs: dict = {}      # storage address -> entry (which tensors are pooled: _slices_at)

    def take(self, shape, dtype, rt) -> torch.Tensor:
        """A zeroed ``shape`` tensor of ``dtype`` for runtime ``rt``: a free pooled one, else new."""
        run = self._begin(rt)
        key = (tuple(shape), dtype)
        e = self._reuse(key, run, _created_free)
        if e is not None:
            t = e[0]
            t.zero_()
            return t
        t = torch.zeros(list(shape), dtype=dtype)
        nbytes = t.numel() * t.element_size()
        if not nbytes or nbytes >= _LAZY_BYTES or self.total + nbytes > self.MAX_BYTES:
            return t
        e = [t, run]
        self._keep(key, e, nbytes)
        self.ptrs[t.untyped_storage().data_ptr()] = e
        return t

    def _dropped(self, e: list) -> None:
        del self.ptrs[e[0].untyped_storage().data_ptr()]


def _created_counts(entry: list) -> tuple:
    """``(references to the tensor, tensors over its storage beyond its kept-view entry's alias and
    views, references to the storage object)`` of a :class:`_CreatedPool` entry (its only argument,
    so that this function's own references are the same for every entry); None when the entry's
    kept objects are referred to from elsewhere or no longer counted exactly."""
    t = entry[0]
    k = _KEPT.get(id(t))
    extra = 0
    if k is not None and k[0]() is t:
        refs = k[4]
        if refs is None or not refs.ok or list(map(sys.getrefcount, refs.objs)) != refs.wants:
            return None
        extra = 1 + refs.nviews
    st = t.untyped_storage()
    return sys.getrefcount(t), _use_count(st._cdata) - extra, sys.getrefcount(st)


def _created_free(entry: list) -> bool:
    """Whether a pooled created tensor is unused (see :class:`_CreatedPool`): its counts are those
    of a tensor only the pool holds, measured once on such a tensor through this very code."""
    global _CREATED_IDLE
    if _use_count is None:   # a torch without the storage use count: nothing is provably free
        return False
    if _CREATED_IDLE is None:
        probe = [torch.zeros([1]), 0]
        _CREATED_IDLE = _created_counts(probe)
    got = _created_counts(entry)
    return got is not None and got == _CREATED_IDLE


_CREATED_IDLE = None
_CREATED = _CreatedPool()


def created_zeros(shape, dtype, rt) -> torch.Tensor:
    """``torch.zeros(shape, dtype=dtype)`` for ``create_tensor`` of batching runtime ``rt``: a
    recycled tensor when a free one is pooled (:class:`_CreatedPool`)."""
    if not _RECYCLE_CREATED:
        return torch.zeros(list(shape), dtype=dtype)
    return _CREATED.take(shape, dtype, rt)


_RECYCLE_CREATED = True   # (off: every created tensor new, its views made afresh -- for A/B measurements)


def batches_disjoint(runs) -> bool:
    """Whether the gang ``runs`` (member runs of two or more batched tasks, see
    :func:`pypto.runtime.gangs.conflict`) certainly has no conflict: no task may write a storage
    another one touches. A task's footprint is read off its arguments (a kernel reaches global
    memory only through them), a superset of what its members' accesses touch; False (the exact
    per-access check then decides) whenever the sets meet or a run is not a batch member."""
    first = runs[0].parent
    if first is None or first is runs[-1].parent:
        return False   # runs in task order: one batched task (the check itself returns at once)
    parents = []
    last = _NOT_A_TASK
    for t in runs:
        p = t.parent
        if p is not last:
            if t.kind != "member" or p.batched is None:
                return False
            if p not in parents:
                parents.append(p)
            last = p
    if len(parents) < 2:
        return False
    prints = [p.footprint or _footprint(p) for p in parents]
    for i, (w, _) in enumerate(prints):
        for j, (_, touched) in enumerate(prints):
            if i != j and not w.isdisjoint(touched):
                return False
    return True


_NOT_A_TASK = object()


def _footprint(task) -> tuple:
    """``(storages task may write, storages it touches)`` of a batched task (cached on it)."""
    written, touched = set(), set()
    Tensor = torch.Tensor
    for a, f, tag in zip(task.args, task.batched, task.tags):
        if tag == SCALAR:
            continue
        if not f:
            ptrs = (a.untyped_storage().data_ptr(),) if isinstance(a, Tensor) else ()
        elif a.__class__ is Stack:
            ptrs = (a.whole.untyped_storage().data_ptr(),)
        elif a.__class__ is Sliced:
            ptrs = (a.ptr,)
        else:
            ptrs = {x.untyped_storage().data_ptr() for x in a if isinstance(x, Tensor)}
        touched.update(ptrs)
        if tag in _WRITE_TAGS:
            written.update(ptrs)
    task.footprint = (written, touched)
    return task.footprint


# glibc serves an allocation of 32 MiB or more (its largest mmap threshold) with fresh pages, each
# faulted in on first touch (~0.5 ms per MiB on the shared benchmark machine); below it, freed heap
# memory is reused warm
_LAZY_BYTES = 32 << 20


def zeros_untouched(shape: list, dtype: torch.dtype, owner=None) -> torch.Tensor:
    """``torch.zeros(shape, dtype=dtype)``, for a stacked allocation of 32 MiB or more backed by
    anonymous memory the kernel maps zero-filled on first touch: a member buffer no instruction
    touches (a mixed kernel's GM pipe buffer: the simulator's pipes live in the cluster) costs
    nothing, where torch.zeros would fault in and clear every page of it. Same contents, same
    dtype and shape (contiguous). Smaller stacks come from :func:`pypto.runtime.gm_pool.zeros`
    (recycled, cleared buffers: no page faults for the many few-MiB stacks of a prefill call);
    ``owner`` (the calling runtime) marks the pool's run boundaries."""
    numel = 1
    for d in shape:
        numel *= d
    nbytes = numel * torch.empty((), dtype=dtype).element_size()
    if nbytes < _LAZY_BYTES:
        return gm_pool.zeros(shape, dtype, owner)
    # the tensor keeps the mapping alive (torch.frombuffer holds the buffer); unmapped when it dies
    return torch.frombuffer(mmap.mmap(-1, nbytes), dtype=torch.uint8).view(dtype).view(shape)


def _read_bounds(a: list, active, buckets, owners) -> list:
    """The views a batched INPUT argument is looked up with: per storage the members read, one 1-D
    view spanning all their regions (a lookup of it finds every producer any member's region
    overlaps, and maybe more: extra edges only wait for earlier tasks); none for a storage that no
    task produced or created (a caller's input)."""
    if a.__class__ is Sliced and len(active) == len(a):   # bslice's views: the span is known
        if a.ptr not in buckets and a.ptr not in owners:
            return []
        return [_span_view(a)]
    spans: dict = {}
    for i in active:
        x = a[i]
        if not isinstance(x, torch.Tensor):
            continue
        b = x.untyped_storage().data_ptr()
        if b not in buckets and b not in owners:
            continue
        lo = x.storage_offset()
        hi = lo + 1 + sum((n - 1) * k for n, k in zip(x.shape, x.stride())) if x.numel() else lo
        got = spans.get(b)
        if got is None:
            spans[b] = [x, lo, hi]
        else:
            if lo < got[1]:
                got[1] = lo
            if hi > got[2]:
                got[2] = hi
    out = []
    for x, lo, hi in spans.values():
        out.append(View(x.as_strided((hi - lo,), (1,), lo)) if hi > lo else View(x))
    return out


def _span_view(a: Sliced) -> View:
    """``View(a.tensor.as_strided((a.hi - a.lo,), (1,), a.lo))`` (the 1-D view of the members'
    storage span :func:`_read_bounds` looks up), its fields filled in without making the view:
    the lookup reads only them (an INPUT: nothing notes its tensor for the undo log; ``tensor``
    is the sliced one)."""
    t = a.tensor
    es = t.element_size()
    v = View.__new__(View)
    v.tensor, v.base, v.dtype, v.esize, v.start, v.shape, v.strides = t, a.ptr, t.dtype, es, a.lo, (a.hi - a.lo,), (1,)
    v.lo, v.hi, v.buffer_numel, v._box = a.lo * es, a.hi * es, t.untyped_storage().nbytes() // es, False
    return v


def _member_views(a: Sliced, cache: dict) -> list:
    """The :class:`pypto.runtime.deps.View` of each member view of ``a`` (bslice's, every member
    active), filled in from what bslice knows (storage, offsets, shape, strides) instead of read off
    each tensor: the fields ``View(x)`` computes, and, like ``Runtime._view``, entered in the
    runtime's view cache ``cache``."""
    kept = a.views
    if kept:   # a kept Sliced (:func:`_slices_at`): its Views of an earlier submission
        get = cache.get
        out = []
        for x, v in zip(a, kept):
            hit = get(id(x))
            if hit is not None and hit[0] is x:
                v = hit[1]
            else:
                cache[id(x)] = (x, v)
            out.append(v)
        return out
    x0 = a[0]
    t = a.tensor
    shape = tuple(x0.shape)
    strides = tuple(x0.stride())
    dtype = t.dtype
    es = t.element_size()
    numel = t.untyped_storage().nbytes() // es
    s0, s1 = shape   # (bslice tracks 2-D slices only, none empty)
    extent = 1 + (s0 - 1) * strides[0] + (s1 - 1) * strides[1]
    ptr = a.ptr
    new = View.__new__
    out = []
    get = cache.get
    for x, at in zip(a, a.ats):
        hit = get(id(x))
        if hit is not None and hit[0] is x:   # passed before: its View (as Runtime._view gives)
            out.append(hit[1])
            continue
        v = new(View)
        v.tensor, v.base, v.dtype, v.esize, v.start, v.shape, v.strides = x, ptr, dtype, es, at, shape, strides
        v.lo, v.hi, v.buffer_numel, v._box = at * es, (at + extent) * es, numel, False
        cache[id(x)] = (x, v)
        out.append(v)
    if kept is False:   # a kept Sliced: its Views kept with it (Views are never changed once made)
        a.views = out
        refs = a.refs
        if refs is not None:   # (a recycled created tensor's: the list holds its Views, each its member)
            refs.add(out, 1)
            at = refs.at
            for v in out:
                if id(v) in at:
                    refs.bump(v)
                else:
                    refs.add(v, 1)
                    if id(v.tensor) in at:
                        refs.bump(v.tensor)
                    else:   # (not one of the entry's views: never the case; uncounted, never free)
                        refs.ok = False
    return out


def spread(n: int, active, values: list) -> list:
    """A list over all ``n`` members from ``values`` of the ``active`` ones (the list itself when
    every member is active; ``None`` for the inactive)."""
    if len(values) == n:
        return values
    out = [None] * n
    for i, x in zip(active, values):
        out[i] = x
    return out


def merge(n: int, old: list, active, new: list) -> list:
    """A loop-carried list over ``n`` members after an iteration of the ``active`` ones: their
    entries from ``new``, the others' from ``old``."""
    if len(active) == n:
        return new
    out = list(old)
    for i in active:
        out[i] = new[i]
    return out


def member_ranges(active, starts, stops, steps) -> list:
    """The iteration values of an inner loop whose bounds differ per member (lists over all members,
    or one value for all)."""
    def at(x, i):
        return x[i] if isinstance(x, list) else x
    return [range(at(starts, i), at(stops, i), at(steps, i)) for i in active]



def _regions_disjoint(ntensors: int, regions: list) -> bool:
    """Whether, for each tensor index ``k < ntensors``, the boxes ``(k, offsets, shape)`` of
    different members (``regions[m]`` is member ``m``'s list) are pairwise disjoint. A sweep over
    the first dimension: boxes sorted by their start there, each compared only with the earlier
    boxes still open at that start (KV-cache rows: one pass finds that none meet there)."""
    boxes: list = [[] for _ in range(ntensors)]
    for m, rs in enumerate(regions):
        for k, offs, shape in rs:
            lo = offs
            for o in offs:
                if o.__class__ is not int or o < 0:
                    lo = _plain_offsets(offs)
                    if lo is None:
                        return False
                    break
            if min(shape, default=1) <= 0:
                continue   # an empty slice writes nothing
            o0 = lo[0]
            boxes[k].append((o0, o0 + shape[0], m, lo, shape))
    for bs in boxes:
        if len(bs) < 2:
            continue
        bs.sort(key=_first)
        end = bs[0][1]
        for b in bs[1:]:   # the common case: no two boxes meet in the first dimension
            if b[0] < end:
                break
            end = b[1]
        else:
            continue
        open_: list = []
        for b in bs:
            start = b[0]
            if open_:
                open_ = [a for a in open_ if a[1] > start]
                for a in open_:
                    if a[2] != b[2] and all(x < y + e and y < x + d for x, d, y, e in zip(a[3], a[4], b[3], b[4])):
                        return False
            open_.append(b)
    return True


def _plain_offsets(offs):
    """``offs`` as plain ints (int subclasses converted), or None when one is not an integer (a bool
    is not) or is negative."""
    lo = []
    for o in offs:
        if o.__class__ is not int:
            if not isinstance(o, int) or isinstance(o, bool):
                return None
            o = int(o)
        if o < 0:
            return None
        lo.append(o)
    return lo


_first = itemgetter(0)


def _gather_reads(x, indices: list) -> list:
    """:func:`pypto.ops.support.read` of ``x`` at each index list of ``indices`` (see ``bread``)."""
    dims = x.shape
    nd = len(dims)
    if nd == 1 and indices:   # a 1-D table (page table, lengths): plain in-range ints, checked in C passes
        try:
            flat = [i for (i,) in indices]
        except (TypeError, ValueError):
            flat = None
        if flat is not None and set(map(type, flat)) == {int} and min(flat) >= 0 and max(flat) < dims[0]:
            return _values_at(x, flat, indices)
    flat = []
    for idx in indices:
        if len(idx) != nd:
            return [_read(x, i) for i in indices]
        f = 0
        for i, d in zip(idx, dims):
            i = int(i)
            if not 0 <= i < d:
                return [_read(x, i) for i in indices]
            f = f * d + i
        flat.append(f)
    return _values_at(x, flat, indices)


def _values_at(x, flat: list, indices: list) -> list:
    """The values of ``x`` at the row-major flat positions ``flat`` (the elements ``indices`` name)."""
    numel = x.numel()
    if numel <= 128 * len(flat):   # small (a page table, lengths): one list of all its values
        values = x.reshape(-1).tolist()
        return [values[f] for f in flat]
    if x.is_contiguous():
        return x.view(-1)[index_tensor(flat)].tolist()   # (ints in range: checked by the callers)
    if indices is None:   # (bread_flat: a 1-D x, each index its flat position)
        indices = [[f] for f in flat]
    return [_read(x, i) for i in indices]


def _gather_slices(t, offsets: list, shape, owners=None) -> list:
    """:func:`pypto.ops.support.view_region` of ``t`` at each of ``offsets`` (see ``bslice``).
    With ``owners`` (the runtime's storages created in this run), the views of a tensor the run
    did not create (the caller's: a weight, the KV cache) come from :func:`_kept_views`, made
    once across calls."""
    if t.dim() != 2 or len(shape) != 2:
        return [_view_region(t, o, shape, "tensor.slice") for o in offsets]
    s0, s1 = shape
    d0, d1 = t.shape
    if type(s0) is not int or type(s1) is not int:
        return [_view_region(t, o, shape, "tensor.slice") for o in offsets]
    st = t.stride()
    st0, st1 = st
    base = t.storage_offset()
    size = (s0, s1)
    if s0 == d0 and s1 == d1:   # the whole tensor: view_region returns t itself
        return [_view_region(t, o, shape, "tensor.slice") for o in offsets]
    # every member's storage offset, while all are plain in-range int pairs (the common case)
    ats = []
    for o in offsets:
        if len(o) != 2:
            break
        o0, o1 = o
        if not (type(o0) is int and type(o1) is int and 0 <= o0 and o0 + s0 <= d0 and 0 <= o1 and o1 + s1 <= d1):
            break
        ats.append(base + o0 * st0 + o1 * st1)
    n = len(ats)
    if n != len(offsets) or not n:
        return _gather_slow(t, offsets, shape)
    return _slices_at(t, ats, size, owners)


def _gather_columns(t, cols: list, shape, owners):
    """:func:`_gather_slices` of a 2-D ``t`` with the offsets given per dimension (``cols[d]``: the
    active members' offsets in dimension ``d``, a list, or one int for all): the same result, from
    a few C-level passes over the one column that differs; None (the caller then gathers member by
    member) unless it is the plain case of one list column of in-range ints."""
    if t.dim() != 2 or len(shape) != 2 or len(cols) != 2:
        return None
    s0, s1 = shape
    if type(s0) is not int or type(s1) is not int:
        return None
    d0, d1 = t.shape
    if s0 == d0 and s1 == d1:
        return None
    c0, c1 = cols
    memo = None
    if owners is not None and _KEEP_COLUMNS:
        # the same columns of a kept tensor as before (a weight's, an activation's, call after call):
        # the Sliced that this function made of them then, from the kept entry (valid while t's
        # layout is: _kept_views checks it), without the checks and the offsets pass. A key matches
        # only ints (equal hashes: True, 1.0 would match 1; such columns are refused below)
        if c0.__class__ is list and type(c1) is int:
            key, col = (tuple(c0), c1), 0
        elif c1.__class__ is list and type(c0) is int:
            key, col = (c0, tuple(c1)), 1
        else:
            return None
        kept = _kept_of(t, t.untyped_storage().data_ptr(), (s0, s1), owners)
        if kept is not None:
            memo = kept[4]
            out = memo.get(key)
            if out is not None and set(map(type, key[col])) == _INT:
                return out
    st0, st1 = t.stride()
    base = t.storage_offset()
    if c0.__class__ is list and type(c1) is int:
        if not c0 or not 0 <= c1 <= d1 - s1 or set(map(type, c0)) != _INT or min(c0) < 0 or max(c0) > d0 - s0:
            return None
        at = base + c1 * st1
        ats = [at + x * st0 for x in c0]
    elif c1.__class__ is list and type(c0) is int:
        if not c1 or not 0 <= c0 <= d0 - s0 or set(map(type, c1)) != _INT or min(c1) < 0 or max(c1) > d1 - s1:
            return None
        at = base + c0 * st0
        ats = [at + x * st1 for x in c1]
    else:
        return None
    out = _slices_at(t, ats, (s0, s1), owners)
    if memo is not None and out.__class__ is Sliced and _KEEP_SLICED:   # (the kept Sliced of these offsets)
        refs = kept[3]
        if len(memo) >= _KEPT_VIEWS:
            memo.clear()
            if refs is not None:
                refs.ok = False
        memo[key] = out
        if refs is not None:
            refs.bump(out)
    return out


_KEEP_COLUMNS = True   # (off: the column memo of _gather_columns unused -- for A/B measurements)


_INT = {int}


def _slices_at(t, ats: list, size: tuple, owners) -> list:
    """The ``size`` views of 2-D ``t`` at storage offsets ``ats`` (checked in range), as
    :func:`_gather_slices` returns them."""
    s0, s1 = size
    st = t.stride()
    st0, st1 = st
    n = len(ats)
    ptr = t.untyped_storage().data_ptr()
    kept = _kept_of(t, ptr, size, owners)
    if kept is not None:
        alias, views, sliced, refs, _ = kept
        key = tuple(ats) if _KEEP_SLICED else None
        out = sliced.get(key)
        if out is not None:   # these very members before (a decode step's pages, call after call)
            return out
        out = list(map(views.get, ats))
        if any(map(is_, out, repeat(None))):
            strided = alias.as_strided
            for k, v in enumerate(out):
                if v is None:
                    at = ats[k]
                    v = views.get(at)   # (made for an earlier member of this call: one region twice)
                    if v is None:
                        v = views[at] = strided(size, st, at)
                        tag = v._pypto_slice = (alias, at, size)   # gang_access.SLICE_OF
                        if refs is not None:   # held by the view table; the tag holds the alias
                            refs.add(v, 1)
                            refs.add(tag, 1)
                            refs.bump(alias)
                            if not refs.nviews:   # (what torch adds for a tensor some view is of)
                                refs.bump(alias, _view_base_refs())
                            refs.nviews += 1
                    out[k] = v
        out = Sliced(out)
        lo, hi = min(ats), max(ats)
        if key is not None:
            # kept whole: the Sliced and (once _member_views made them) its members' Views are
            # functions of the alias's layout and the offsets alone, like the views; it names the
            # alias (same storage, dtype, layout), not t, so that it does not keep t alive
            if len(sliced) >= _KEPT_VIEWS:
                sliced.clear()
                if refs is not None:
                    refs.ok = False
            out.tensor, out.ptr, out.ats, out.views, out.refs = alias, ptr, ats, False, refs
            out.lo, out.hi = lo, hi + 1 + (s0 - 1) * st0 + (s1 - 1) * st1
            sliced[key] = out
            if refs is not None:   # held by the Sliced table; it holds the alias and its members
                refs.add(out, 1)
                refs.bump(alias)
                for v in out:
                    refs.bump(v)
            return out
    else:
        lo = ats[0]
        step = ats[1] - lo if n > 1 else 0
        if n > 1 and step >= 0 and ats == list(range(lo, lo + step * n, step) if step else [lo] * n):
            # evenly spaced (a loop over columns / rows of a weight or an activation): one [n, s0, s1]
            # view unbound into its n rows in C (~half the cost of n as_strided calls); each row has the
            # metadata as_strided gives it (storage, offset, shape, strides; its _base is t's)
            out = Sliced(t.as_strided((n, s0, s1), (step, st0, st1), lo).unbind(0))
            hi = ats[-1]
        else:
            strided = t.as_strided
            out = Sliced([strided(size, st, at) for at in ats])
            lo, hi = min(ats), max(ats)
        for v, at in zip(out, ats):
            v._pypto_slice = (t, at, size)   # gang_access.SLICE_OF: its run finder reads no metadata
        if s0 * s1 == 0:
            return list(out)
    out.tensor, out.ptr, out.ats, out.views = t, ptr, ats, None
    out.lo, out.hi = lo, hi + 1 + (s0 - 1) * st0 + (s1 - 1) * st1
    return out


def _kept_of(t, ptr: int, size: tuple, owners):
    """:func:`_kept_views` of ``t`` (storage address ``ptr``) at slice shape ``size`` where its views are
    kept (a caller's tensor, or one the run created that :class:`_CreatedPool` recycles), else None."""
    if owners is None or not size[0] or not size[1] or not _KEEP or t.__class__ is not torch.Tensor \
            or t.requires_grad:
        return None
    if ptr not in owners:
        return _kept_views(t, size, False)
    pooled = _CREATED.ptrs.get(ptr)
    if pooled is not None:
        p = pooled[0]
        if p is t:   # a recycled created tensor
            return _kept_views(t, size, True)
        # a view of one (``query``, a reshape of the rotated ``qr``, made afresh every call): the
        # views of an alias of the created tensor's storage in t's layout, kept in its entry (exact:
        # t is a plain tensor on that very storage object, in its dtype; the alias has t's offset,
        # shape and strides, so its slices and their SLICE_OF tags are those t would give)
        if _KEEP_VIEWS_OF_CREATED and t.dtype == p.dtype and t.untyped_storage()._cdata == p.untyped_storage()._cdata:
            return _kept_views(p, size, True, t)
    return None


_KEEP_VIEWS_OF_CREATED = True   # (off: the slices of a created tensor's views made afresh -- for A/B)


# The views bslice made of the caller's tensors, kept across calls (a decode step slices the same
# weights and KV-cache pages call after call: ~1.2 us a view and its tag, ~700 views a Qwen3 layer
# call). id(tensor) -> [weak reference to it, its layout when the entry was made, an alias, {slice
# shape: {storage offset: view}}]. Exact because:
# * a view is a function of the storage, its offset, shape and strides (and dtype) alone: the entry
#   is used only while the tensor object is alive (the weak reference; its callback drops the
#   entry, so an id reused by another tensor never hits) and still has the same storage object and
#   address, offset, shape, strides and dtype (``set_``, ``.data =``, ``resize_`` or a storage
#   resize make a new entry); the views see the storage's current contents, like fresh views;
# * the views are made of an *alias* of the tensor (``detach()``: same storage object, offset,
#   shape, strides and version counter, no autograd base), so they do not keep the caller's tensor
#   object alive (a view's ``_base`` would) and the entry goes when the caller drops the tensor;
#   the alias keeps the storage alive only as long as the entry does; a write through the views
#   bumps the caller's tensor's version like a write through fresh views (autograd's check that a
#   tensor saved for backward was not modified in place keeps working);
# * a view carries nothing per call: its SLICE_OF tag names the alias, its storage offset and shape
#   (fixed); the dependency records, the undo log and the runtime's view cache are the runtime's
#   own, keyed per run; gang_access's layout memo is forgotten at the end of every call and holds
#   only what the views' fixed metadata determines.
# Only 2-D slices of plain tensors the run did not create (a tensor the run creates is new every
# call) -- or that it created and _CreatedPool recycles, or views of those (_kept_of) --, not
# requiring grad (the alias would drop the autograd link a fresh view has) are kept.
_KEEP = True           # (off: every view made afresh, as before -- for A/B measurements)
_KEEP_SLICED = True    # (off: the Sliced lists and member Views made afresh every call -- for A/B)
_KEPT: dict = {}
_KEPT_TENSORS = 256    # bounds: tensors (all entries dropped beyond), views per tensor and shape
_KEPT_VIEWS = 8192


def _kept_views(t, size: tuple, pooled: bool = False, view=None):
    """``(alias, {storage offset: view}, {offsets of all members: Sliced}, refs, {columns: Sliced})``
    of the kept views of ``t`` at slice shape ``size`` (see above; the last: :func:`_gather_columns`'
    memo): the entry is made again when ``t``'s layout changed. ``pooled``: ``t`` is a recycled
    created tensor (:class:`_CreatedPool`), whose entry counts what it holds (``refs``, a
    :class:`_Refs`; None for the caller's tensors). ``view``: a view of the pooled ``t`` (same
    storage and dtype) whose slices are wanted: the tables of an alias in its layout, kept in
    ``t``'s entry (counted in its :class:`_Refs`); None when the entry keeps as many layouts as it
    may (the caller then makes fresh views)."""
    key = id(t)
    e = _KEPT.get(key)
    st = t.untyped_storage()
    layout = (st._cdata, st.data_ptr(), t.storage_offset(), t.shape, t.stride(), t.dtype)
    if e is None or e[0]() is not t or e[1] != layout or (e[4] is not None) != pooled:
        # (detach: the same storage, layout and version counter, no autograd link to t, not a
        # view of it -- so in-place writes through the views bump t's version, as fresh views' do)
        alias = t.detach()

        def drop(ref, key=key):
            got = _KEPT.get(key)
            if got is not None and got[0] is ref:
                del _KEPT[key]

        if len(_KEPT) >= _KEPT_TENSORS:
            _KEPT.clear()
        refs = None
        if pooled:
            refs = _Refs()
            refs.add(alias, 1)   # (the entry's own reference)
        e = _KEPT[key] = [weakref.ref(t, drop), layout, alias, {}, refs, {}]
    alias, shapes = e[2], e[3]
    if view is not None:
        vkey = (view.storage_offset(), tuple(view.shape), view.stride())
        got = e[5].get(vkey)
        if got is None:
            refs = e[4]
            if len(e[5]) >= _KEPT_LAYOUTS or refs is None:
                return None
            # (a view of the alias: one more tensor over the storage; the first one makes torch
            # refer to the alias's object, see _view_base_refs; the layout table holds it)
            valias = alias.as_strided(*vkey[1:], vkey[0])
            if not refs.nviews:
                refs.bump(alias, _view_base_refs())
            refs.nviews += 1
            refs.add(valias, 1)
            got = e[5][vkey] = (valias, {})
        alias, shapes = got
    got = shapes.get(size)
    if got is None or len(got[0]) >= _KEPT_VIEWS:
        if got is not None and e[4] is not None:
            e[4].ok = False   # (views dropped from the table: no longer counted exactly)
        got = shapes[size] = ({}, {}, {})
    return alias, got[0], got[1], e[4], got[2]


_KEPT_LAYOUTS = 8   # views of one recycled created tensor whose slices are kept (layouts)


class _Refs:
    """The objects a recycled created tensor's kept-view entry holds (its alias, views and Sliced
    lists) and how many references to each the entry's own tables make, so that
    :func:`_created_free` can tell that nothing else refers to any of them (the views' tags too: they
    name the alias): ``wants[i]`` is what
    ``sys.getrefcount`` reports for ``objs[i]`` read as ``map(sys.getrefcount, objs)`` (its holders
    in the entry, plus this list and the call's argument). ``nviews``: the views made (tensors over
    the storage besides the created tensor and the alias); ``ok`` False once a table was cleared
    (the counts are then no longer exact: the tensor is never handed out again)."""

    __slots__ = ("objs", "wants", "at", "nviews", "ok")

    def __init__(self):
        self.objs: list = []
        self.wants: list = []
        self.at: dict = {}
        self.nviews = 0
        self.ok = True

    def add(self, obj, holders: int) -> None:
        """Count ``obj``, which the entry refers to ``holders`` times."""
        self.at[id(obj)] = len(self.objs)
        self.objs.append(obj)
        self.wants.append(holders + 2)

    def bump(self, obj, k: int = 1) -> None:
        """The entry refers to ``obj`` (counted already) ``k`` more times."""
        self.wants[self.at[id(obj)]] += k


def _view_base_refs() -> int:
    """The references torch's own objects make to a tensor's Python object while views of it exist
    (measured once: this torch keeps the object of a tensor whose implementation is shared alive
    from C++, which shows as one more reference)."""
    global _VIEW_BASE_REFS
    if _VIEW_BASE_REFS is None:
        a = torch.zeros([2, 2]).detach()
        r0 = sys.getrefcount(a)
        views = [a.as_strided((1, 1), (2, 1), 1)]
        r1 = sys.getrefcount(a)
        views.append(a.as_strided((1, 1), (2, 1), 2))
        if sys.getrefcount(a) != r1:   # (not a fixed amount: nothing counts exactly, nothing is free)
            _VIEW_BASE_REFS = 1 << 30
        else:
            _VIEW_BASE_REFS = r1 - r0
        views.clear()
    return _VIEW_BASE_REFS


_VIEW_BASE_REFS = None


def _as_sliced(views: list) -> list:
    """``views`` (every member's) as a :class:`Sliced` when they are 2-D, non-empty, of one storage
    and alike in shape and strides (what :func:`_member_views` and :func:`_read_bounds` assume),
    else the plain list."""
    x0 = views[0]
    if x0.dim() != 2 or not x0.numel():
        return views
    shape, st = x0.shape, x0.stride()
    ptr = x0.untyped_storage().data_ptr()
    ats = []
    for v in views:
        if v.shape != shape or v.stride() != st or v.untyped_storage().data_ptr() != ptr:
            return views
        ats.append(v.storage_offset())
    out = Sliced(views)
    out.tensor, out.ptr, out.ats, out.views = x0, ptr, ats, None
    out.lo, out.hi = min(ats), max(ats) + 1 + (shape[0] - 1) * st[0] + (shape[1] - 1) * st[1]
    return out


def _gather_slow(t, offsets: list, shape) -> list:
    """:func:`_gather_slices` of a 2-D ``t`` where some member's offsets are not plain in-range
    ints: :func:`pypto.ops.support.view_region` makes (or refuses) those members' views, so the
    first bad one raises its usual error; the result is then a plain list (no span tracked)."""
    s0, s1 = shape
    d0, d1 = t.shape
    st = t.stride()
    st0, st1 = st
    base = t.storage_offset()
    size = (s0, s1)
    out = []
    for o in offsets:
        if len(o) == 2:
            o0, o1 = o
            if type(o0) is int and type(o1) is int and 0 <= o0 and o0 + s0 <= d0 and 0 <= o1 and o1 + s1 <= d1:
                at = base + o0 * st0 + o1 * st1
                v = t.as_strided(size, st, at)
                v._pypto_slice = (t, at, size)   # gang_access.SLICE_OF
                out.append(v)
                continue
        out.append(_view_region(t, o, shape, "tensor.slice"))
    return out
