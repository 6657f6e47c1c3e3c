"""The common case of a lockstep gang's global-memory access, in a few C-level passes.

A gang kernel (:mod:`pypto.codegen.gang`) loads or stores one tile per member. Most often every
member's region is a whole tile at the same offsets of its own tensor, and the members' tensors are
equally laid out views of one storage: the rows of a stacked buffer a batched loop created
(:mod:`pypto.runtime.batch`), or slices of one caller tensor. Members at evenly spaced storage
offsets then form runs, each ONE strided view ``[k, *tile]`` and one copy (a gang's members come
in readiness order, so a gang is often a few runs). :func:`pypto.ops.support.core._gang_runs` finds
these runs (and handles every other case), but member by member in Python (~1.6 us per member and
access: the largest per-member cost of a batched model call after the GEMMs); :func:`uniform_runs`
finds them with list comprehensions and set / list comparisons over the members when all members
are alike but for the storage offset, and leaves every other case (per-member offsets, a valid
shape, different layouts, an access recorder) to the general path. Same views, same copies.

A gang of member runs of batched tasks reading or writing a kernel PARAMETER (the code generator
passes its position) skips even those passes: :func:`param_runs` finds the runs from the tasks'
argument -- a stacked buffer, slices at known storage offsets, one shared tensor -- once per gang
and parameter (:class:`GangPlans` carries the member runs), the same regions as from the members'
tensors.
"""
from __future__ import annotations

import math
import threading
from itertools import repeat
from operator import is_, itemgetter, sub

import torch

from pypto.ops.support import core as _core


ROW = _core.STACK_ROW   # attribute of a stacked buffer's row: (the buffer, the row's index), set by create_batch
# attribute of a view the batched orchestration's tensor.slice made (runtime.batch.bslice):
# (the tensor sliced, the view's storage offset, its shape); exact for the same reason as ROW (the
# generated code passes such a view on or takes new, untagged, views of it)
SLICE_OF = "_pypto_slice"
_first, _second, _third = itemgetter(0), itemgetter(1), itemgetter(2)


def uniform_runs(shape, plans, ti: int, oi: int, load: bool):
    """``[(lo, hi, view)]`` covering members ``0 .. n - 1`` in order, ``view`` the ``[hi - lo, *shape]``
    view of members ``lo .. hi - 1``'s regions; or ``None`` when the members are not uniform.

    ``plans[k]`` is member ``k``'s access (load: ``(tensor, offsets, valid)``, ``ti`` 0 / ``oi`` 1;
    store: ``(offsets, tensor, valid)``). Uniform: no valid shapes; the same plain-int offsets for
    every member, inside each member's tensor; the tensors equally laid out views of one storage.
    Their regions then differ only by the tensors' storage offsets, and a run is a maximal stretch
    of members whose tensors are views of one base at offsets ``s0 + k * step`` with ``step > 0`` (a
    load also ``step == 0``: one region read by several members) -- what
    :func:`pypto.ops.support.core._storage_run` accepts, giving the same views (a member in no run
    gets a view of its region alone). Rows of a stacked buffer (:data:`ROW`) are recognised by their
    row index alone: consecutive rows of one buffer are a run."""
    n = len(plans)
    if n < 2 or _core._RECORDER.get() is not None:
        return None
    p0 = plans[0]
    o0 = p0[oi]
    if p0[2] is not None or [p[2] for p in plans].count(None) != n:
        return None
    # the same offsets for every member (plain ints: the lists compare elementwise)
    if [p[oi] for p in plans].count(o0) != n:
        return _offset_run(shape, plans, p0[ti], ti, oi, load)
    return runs_at(shape, [p[ti] for p in plans], o0, load)


def runs_at(shape, ts, offsets, load: bool):
    """:func:`uniform_runs` of members that access their tensors ``ts`` at the same ``offsets``
    (no valid shape): what the gang kernel asks when the offsets are the same for every member by
    construction (constants, uniform loop variables: :func:`gang_load_at`), so that neither the
    offsets nor the valid shapes are compared member by member."""
    if len(ts) < 2 or _core._RECORDER.get() is not None:
        return None
    nd = len(shape)
    if len(offsets) != nd:
        return None
    for o in offsets:
        if type(o) is not int:
            return None
    memo = _memo()
    for k, entry in enumerate(memo):
        mts = entry[0]
        # (a layout found for a store serves a load too, and one without a gather or a step-0 run
        # serves both: see _layout; a gang's kernel often loads a tensor it later stores, pa_update)
        if (entry[1] is load or entry[3]) and len(mts) == len(ts) and all(map(is_, ts, mts)):
            if k:
                memo.insert(0, memo.pop(k))
            layout = entry[2]
            break
    else:
        layout = _layout(ts, load)
        memo.insert(0, (ts, load, layout, _both(layout, load)))
        del memo[_MEMO_SIZE:]
    return None if layout is None else _views(layout, shape, offsets, len(ts))


def _views(layout, shape, offsets, n: int):
    """:func:`runs_at`'s runs of ``layout`` (:func:`_layout`'s) at ``offsets`` (plain ints, one per
    dimension of ``shape``), or ``None`` when the region leaves the members' tensors."""
    dims, st, runs = layout
    if len(dims) != len(shape):
        return None
    # the region's element offset inside each member's tensor, or None when it leaves the tensor
    # (the member's own access then raises the error)
    start = 0
    for o, e, d, k in zip(offsets, shape, dims, st or repeat(0)):
        if o < 0 or o + e > d:
            return None
        start += o * k
    if runs.__class__ is tuple:   # a gather (see _general_layout): (tensor, first offset, spacing, count, index)
        t, c, g, count, idx = runs
        return [(0, n, (t.as_strided((count, *shape), (g, *st), c + start), idx))]
    if runs.__class__ is _Scatter:
        span = 1
        for e, k in zip(shape, st):
            span += (e - 1) * k
        if span <= runs.gap:
            return [(0, n, (runs.t.as_strided((runs.count, *shape), (runs.g, *st), runs.c + start), runs.idx))]
        runs = runs.runs
    if shape == dims:
        # each member's whole tensor: a run over a whole stack is the stack itself (the view
        # as_strided would make: same storage, offset, shape and strides), one torch call fewer
        return [(lo, hi, t.as_strided((hi - lo, *shape), (stride0, *rst), base) if whole is None else whole)
                for lo, hi, t, stride0, base, rst, whole in runs]
    if st is not None:
        return [(lo, hi, t.as_strided((hi - lo, *shape), (stride0, *rst), base + start))
                for lo, hi, t, stride0, base, rst, _ in runs]
    # runs of tensors laid out differently (slices of several tensors): each its own offset
    out = []
    for lo, hi, t, stride0, base, rst, _ in runs:
        s = base
        for o, k in zip(offsets, rst):
            s += o * k
        out.append((lo, hi, t.as_strided((hi - lo, *shape), (stride0, *rst), s)))
    return out


def _both(layout, load: bool) -> bool:
    """Whether ``layout`` (found for a load when ``load``) serves loads and stores alike: a store's
    always does (a load copies the same elements however the members are split into runs); a
    load's unless it gathers or has a run reading one region for several members (stride 0),
    which a store must never make (a region written twice)."""
    if not load or layout is None:
        return True
    runs = layout[2]
    if runs.__class__ is tuple:
        return False
    for r in runs:
        if r[3] == 0 and r[1] - r[0] > 1:
            return False
    return True


def _layout(ts, load: bool):
    """What :func:`uniform_runs` finds of the members' tensors ``ts`` whatever the offsets:
    ``(dims, strides, runs)`` -- the members' shape and strides (a stacked buffer's: its rows'
    dims and strides; ``None`` when runs differ in them), and per run ``(lo, hi, tensor, stride
    between members, storage offset of member lo's element 0, the members' strides, the tensor
    that IS the run's view of whole members or None)``, or for a gather the tuple
    :func:`_general_layout` describes; ``None`` when they are not alike. Computed once per gang and
    site: a gang kernel's loop loads the same members' tensors at other offsets step after step
    (the Qwen3 projections: 8 loads of the same x / w views per gang)."""
    n = len(ts)
    # (attribute reads: a tensor's __dict__ costs more to fetch than the attribute through it)
    if getattr(ts[0], ROW, None) is None:
        return _general_layout(ts, load)
    try:
        rows = [t._pypto_row for t in ts]
    except AttributeError:
        return _general_layout(ts, load)
    # rows of stacked buffers [N, *member shape]: the members share the row's shape and layout
    w0 = rows[0][0]
    st = w0.stride()
    dims = w0.shape[1:]
    inner = st[1:]
    # (a plain loop: cheaper than list passes here, whether the rows are one run or a few)
    out = []
    lo = 0
    while lo < n:
        w, i = rows[lo]
        hi = lo + 1
        while hi < n:
            r = rows[hi]
            if r[0] is not w or r[1] != i + hi - lo:
                break
            hi += 1
        if w is not w0 and (w.stride() != st or w.shape[1:] != dims or w.dtype != w0.dtype):
            return None
        out.append((lo, hi, w, st[0], w.storage_offset() + i * st[0], inner,
                    w if i == 0 and hi - lo == w.shape[0] else None))
        lo = hi
    return dims, inner, out


def _memo() -> list:
    """This thread's recent ``(tensors, (ti, load), layout)`` of :func:`uniform_runs`, newest
    first; :func:`forget` empties it (the simulator does at the end of each call, so that no
    tensor of the call is kept alive by it)."""
    m = _TLS.__dict__.get("memo")
    if m is None:
        m = _TLS.memo = []
    return m


def forget() -> None:
    """Drop this thread's remembered layouts (and with them the tensors they name)."""
    _TLS.__dict__.pop("memo", None)


_TLS = threading.local()
_MEMO_SIZE = 4   # layouts remembered: a loop loading two or three tensors alternately hits


def _offset_run(shape, plans, t0, ti: int, oi: int, load: bool):
    """:func:`uniform_runs` for members that all access ONE tensor ``t0`` at their own offsets (a
    batched loop's tasks reading or writing their tiles of one caller tensor, ``[i * 32, 0]``):
    ``[(0, n, view)]`` when the regions lie inside ``t0`` at evenly spaced storage offsets (``step >
    0``; a load also 0) -- what :func:`pypto.ops.support.core._gang_runs` makes of them, found with
    a few list passes --, else ``None`` (the general path: other spacings, gathers, errors)."""
    n = len(plans)
    for p in plans:
        if p[ti] is not t0:
            return None
    offs = [p[oi] for p in plans]
    nd = len(shape)
    if [len(o) for o in offs].count(nd) != n:
        return None
    st = t0.stride()
    dims = t0.shape
    start = t0.storage_offset()
    starts = [start] * n
    for d, (k, e, size) in enumerate(zip(st, shape, dims)):
        col = [o[d] for o in offs]
        for o in col:
            if type(o) is not int:
                return None
        if min(col) < 0 or max(col) + e > size:
            return None
        starts = [s + o * k for s, o in zip(starts, col)]
    step = starts[1] - starts[0]
    if step < 0 or (step == 0 and not load):
        return None
    if step == 0:
        if starts.count(starts[0]) != n:
            return None
    elif starts != list(range(starts[0], starts[0] + step * n, step)):
        return None
    return [(0, n, t0.as_strided((n, *shape), (step, *st), starts[0]))]


def _general_layout(ts, load: bool):
    """:func:`_layout` for tensors that are not all rows of stacked buffers: any views with one
    shape, strides and dtype (checked for every member)."""
    n = len(ts)
    t0 = ts[0]
    tag0 = getattr(t0, SLICE_OF, None)
    tags = None
    if tag0 is not None:
        try:
            tags = [t._pypto_slice for t in ts]
        except AttributeError:
            pass
    if tags is not None and list(map(_third, tags)).count(tag0[2]) == n and not all(
            map(is_, map(_first, tags), repeat(tag0[0], n))):
        return _sources_layout(ts, tags, load)
    if tags is not None and list(map(_third, tags)).count(tag0[2]) == n:
        # slices of one tensor at one shape (SLICE_OF: the orchestration's batched tensor.slice):
        # their layout is that tensor's, their storage offsets are in the tags
        src, _, dims = tag0
        st = src.stride()
        one_base = True
        bases = None
        so = list(map(_second, tags))
    elif load and all(map(is_, ts, repeat(t0, n))):
        # one tensor every member reads (an activation every task of a projection reads): one
        # step-0 run, without reading each member's metadata
        st = t0.stride()
        return t0.shape, st, [(0, n, t0, 0, t0.storage_offset(), st, None)]
    else:
        meta = [(t.shape, t.stride(), t.dtype) for t in ts]
        if meta.count(meta[0]) != n:
            return None
        dims, st = meta[0][0], meta[0][1]
        # one storage per run: views of one base tensor (unbind / slicing results name it as their
        # _base; a tensor that is no view is its own base: one tensor every member reads is one storage)
        bases = [t if b is None else b for t, b in zip(ts, [t._base for t in ts])]
        one_base = all(map(is_, bases, repeat(bases[0], n)))
        so = [t.storage_offset() for t in ts]
    inner = st[len(st) - len(dims):]
    s0 = so[0]
    if one_base:
        # the common cases in C-level passes: evenly spaced (one run), or one region read by all
        step = so[1] - s0
        if (step > 0 and so == list(range(s0, s0 + step * n, step))) or (
                step == 0 and load and so.count(s0) == n):
            return dims, inner, [(0, n, t0, step, s0, inner, None)]
    out = _spaced_runs(ts, so, bases, load, 3 if load and one_base else n + 1, inner)
    if len(out) > 2 and load and one_base:
        # regions of one base placed at random (paged attention's K / V pages): one gather, as
        # core._gang_runs makes it -- every tile-shaped window of the storage at the regions'
        # common spacing, index_select'ed (a copy of the elements: the bits of per-member copies).
        # The region's offset inside each member moves every window alike: the windows' first
        # offset, spacing, count and the members' indices do not depend on it
        c = min(so)
        g = math.gcd(*map(sub, so, repeat(c, n)))
        if g > 0:
            return dims, inner, (t0, c, g, (max(so) - c) // g + 1, _core.index_tensor([(s - c) // g for s in so]))
        if out[-1][1] != n:   # (not reached: equal offsets are one run) the runs after the third
            out = _spaced_runs(ts, so, bases, load, n + 1, inner)
    return dims, inner, out


def _sources_layout(ts, tags, load: bool):
    """:func:`_layout` of slices of SEVERAL tensors at one shape (their SLICE_OF tags ``tags``): a
    gang of the tasks of several batched loops, e.g. the q / k / v projections reading column
    blocks of three weights. Each stretch of members slicing one tensor has that tensor's layout
    and is split into runs as slices of one tensor are (no gather: as the general path, which
    gathers only regions of one storage); the strides may differ from stretch to stretch."""
    n = len(ts)
    srcs = list(map(_first, tags))
    so = list(map(_second, tags))
    out = []
    common = srcs[0].stride()
    lo = 0
    while lo < n:
        src = srcs[lo]
        hi = lo + 1
        while hi < n and srcs[hi] is src:
            hi += 1
        st = src.stride()
        if st != common:
            common = None
        runs = _spaced_runs(ts[lo:hi], so[lo:hi], None, load, n + 1, st)
        out.extend((a + lo, b + lo, t, step, s0, st, None) for a, b, t, step, s0, _, _ in runs)
        lo = hi
    return tags[0][2], common, out


def _spaced_runs(ts, so, bases, load: bool, most: int, inner) -> list:
    """Maximal runs ``(lo, hi, tensor, step, storage offset, inner, None)`` (:func:`_layout`'s run
    entries, ``inner`` the members' strides) of members at evenly spaced storage
    offsets ``so`` of one base (``bases``: each member's; ``None``: all one): ``step > 0``, a load
    also 0. Stops after ``most`` runs (a load of one base with more is a gather)."""
    n = len(so)
    out = []
    lo = 0
    while lo < n and len(out) < most:
        b, s0 = (None if bases is None else bases[lo]), so[lo]
        hi = lo + 1
        step = 0
        if hi < n and (bases is None or bases[hi] is b):
            step = so[hi] - s0
            if step > 0 or (step == 0 and load):
                want = s0 + step
                while hi < n and so[hi] == want and (bases is None or bases[hi] is b):
                    hi += 1
                    want += step
            else:
                step = 0
        out.append((lo, hi, ts[lo], step, s0, inner, None))
        lo = hi
    return out


def gang_load_fast(dst: torch.Tensor, plans) -> None:
    """``tile.load`` of a lockstep gang: one copy per run of :func:`uniform_runs`, else :func:`pypto.ops.support.core.gang_load_into`."""
    runs = uniform_runs(dst.shape[1:], plans, 0, 1, True)
    if runs is None:
        _core.gang_load_into(dst, plans)
    else:
        _load_runs(dst, runs)


def gang_load_at(dst: torch.Tensor, P, c: int, offsets, pi: int = -1) -> None:
    """:func:`gang_load_fast` of access ``c`` of the members' plans ``P`` (``P[k][c]``: ``(site,
    (tensor, offsets, None))``) whose offsets the gang kernel knows to be ``offsets`` for every
    member (constants, uniform loop variables) and which has no valid shape: the members' tensors
    are all that is read of the plans. ``pi`` >= 0: the tensor is each member task's parameter
    ``pi`` (see :func:`param_runs`)."""
    if pi >= 0 and (P.__class__ is GangPlans or P.__class__ is LazyGangPlans):
        runs = param_runs(P, pi, c, 0, dst.shape[1:], offsets, True)
        if runs is not None:
            _load_runs(dst, runs)
            return
    runs = runs_at(dst.shape[1:], [p[c][1][0] for p in P], offsets, True)
    if runs is None:
        _core.gang_load_into(dst, [p[c][1] for p in P])
    else:
        _load_runs(dst, runs)


def gang_load_view_at(dst: torch.Tensor, P, c: int, offsets, pi: int = -1) -> torch.Tensor:
    """:func:`gang_load_at` of a load whose tile only the cube matmul right after it reads, with
    no yield in between (:func:`pypto.codegen.scratch.fused_transposes`' "gmload"): where the
    members' regions are ONE view of contiguous matrices, that view, for the matmul to read instead
    of ``dst`` (the same elements at the same simulated moment; no core memory written); see
    :func:`_view_or_load` for the rest (a gather, several runs, rows apart in memory, an access
    recorder, an error to raise: the load is made as :func:`gang_load_at` makes it and ``dst`` is
    returned)."""
    runs = _load_runs_at(dst, P, c, offsets, pi)
    return dst if runs is None else _view_or_load(dst, runs)


def gang_load_view(dst: torch.Tensor, plans) -> torch.Tensor:
    """:func:`gang_load_view_at` of a load whose offsets differ between the members (the general
    form, :func:`gang_load_fast`)."""
    runs = _uniform_load_runs(dst, plans)
    return dst if runs is None else _view_or_load(dst, runs)


def gang_load_one_at(dst: torch.Tensor, P, c: int, offsets, pi: int = -1) -> torch.Tensor:
    """:func:`gang_load_at` of a load whose tile only a cube matmul later reads, nothing touching it
    in between (:func:`pypto.codegen.scratch.fused_transposes`' "oneload"): where every member
    loads ONE region (a stride-0 run: an activation every task of a projection reads), only the
    first member's tile is loaded and returned repeated (stride 0) for the matmul, which converts
    it once and compares nothing (every member's tile would hold these bits); otherwise the load is
    made as :func:`gang_load_at` makes it and ``dst`` is returned."""
    runs = _load_runs_at(dst, P, c, offsets, pi)
    return dst if runs is None else _one_or_load(dst, runs)


def gang_load_one(dst: torch.Tensor, plans) -> torch.Tensor:
    """:func:`gang_load_one_at` of a load whose offsets differ between the members (the general
    form, :func:`gang_load_fast`)."""
    runs = _uniform_load_runs(dst, plans)
    return dst if runs is None else _one_or_load(dst, runs)


def _load_runs_at(dst: torch.Tensor, P, c: int, offsets, pi: int):
    """The runs of a gang's load at ``offsets`` (as :func:`gang_load_at` finds them), or ``None``
    after making the load member by member where there are none."""
    runs = None
    if pi >= 0 and (P.__class__ is GangPlans or P.__class__ is LazyGangPlans):
        runs = param_runs(P, pi, c, 0, dst.shape[1:], offsets, True)
    if runs is None:
        runs = runs_at(dst.shape[1:], [p[c][1][0] for p in P], offsets, True)
    if runs is None:
        _core.gang_load_into(dst, [p[c][1] for p in P])
    return runs


def _uniform_load_runs(dst: torch.Tensor, plans):
    """:func:`_load_runs_at` of a load whose offsets differ between the members."""
    runs = uniform_runs(dst.shape[1:], plans, 0, 1, True)
    if runs is None:
        _core.gang_load_into(dst, plans)
    return runs


def _one_or_load(dst: torch.Tensor, runs) -> torch.Tensor:
    """The first member's tile repeated where every run reads one region (a stride-0 run, or several
    whose views start at the same address with the same dtype and strides: the same bytes -- the
    runs of several tasks reading one activation, a projection's gate and up halves), else the
    load made."""
    if len(dst) > 1:
        src = runs[0][2]
        if src.__class__ is not tuple and (src.stride(0) == 0 or len(src) == 1):
            one = src[0]
            at, st = one.data_ptr(), one.stride()
            for r in runs[1:]:
                v = r[2]
                if v.__class__ is tuple or (v.stride(0) != 0 and len(v) != 1) or v.dtype != one.dtype:
                    break
                w = v[0]
                if w.data_ptr() != at or w.stride() != st:
                    break
            else:
                dst[0].copy_(one)
                return dst[:1].expand(dst.shape)
    _load_runs(dst, runs)
    return dst


def _view_or_load(dst: torch.Tensor, runs) -> torch.Tensor:
    """What a left-out load hands its matmul (:func:`gang_load_view_at`): the members' view where
    it is one view whose items are contiguous matrices (one region every member reads, stride 0,
    included: converted once, nothing compared) -- one conversion pass instead of a copy and a
    conversion; one region whose rows lie apart: copied into the first member's tile alone, that
    tile repeated; anything else: the load made, ``dst``. The matmul thus only ever converts
    contiguous matrices, as each task converts its own tile: FP16 NaN payloads come out of
    torch's conversion loops by position (see core._SAME_BITS_ANYWHERE), and strided items would
    also convert slower than the strided copy plus the contiguous conversion (ATen's short-row
    loop; torch 2.13, 22 MB of BF16 column blocks: ~4 ms against ~2.5 ms)."""
    if len(runs) == 1:
        src = runs[0][2]
        if src.__class__ is not tuple and src.dtype == dst.dtype:
            if src[0].is_contiguous():
                return src
            if src.stride(0) == 0 and len(dst) > 1:
                dst[0].copy_(src[0])
                return dst[:1].expand(dst.shape)
    _load_runs(dst, runs)
    return dst


class GangPlans(list):
    """The members' ``GANG_PLAN`` results of a gang the scheduler formed (a list, member by
    member), with the member runs themselves (``runs``, in the same order: tasks of the
    simulator), so that an access of a kernel parameter finds its runs from the batched task's
    argument (:func:`param_runs`); ``found`` caches those per parameter for the gang."""

    __slots__ = ("runs", "found", "build", "ends")


class LazyGangPlans(GangPlans):
    """A :class:`GangPlans` whose plans are not built yet: ``build(runs)`` makes them (the
    members' ``GANG_PLAN`` results) on the first read that needs them all (iteration, ``len`` is
    free, an index other than the first / last), which then turns this object into a plain
    :class:`GangPlans` holding them (same layout: a class switch, so later reads are native list
    reads). :func:`param_runs` reads only the first and last members' plans (``ends``, built from
    those two runs alone): most gangs never need the rest (~1,200 plans a Qwen3-layer call,
    their tuples and lists made and freed for nothing). The scheduler makes one only for a kernel
    whose plan cannot raise (``GANG_PLAN_PURE``, :func:`pypto.codegen.gang.plan_is_pure`), so
    building later, or never, changes no error."""

    __slots__ = ()

    def materialise(self) -> GangPlans:
        """Build the plans now (once); ``self``, a :class:`GangPlans` from here on."""
        list.extend(self, self.build(self.runs))
        self.__class__ = GangPlans
        return self

    def __len__(self):
        return len(self.runs)

    def __iter__(self):
        return iter(self.materialise())

    def __getitem__(self, k):
        if k.__class__ is int:
            n = len(self.runs)
            if k == 0 or k == -1 or k == n - 1 or k == -n:
                ends = self.ends
                if ends is None:
                    ends = self.ends = self.build([self.runs[0], self.runs[-1]])
                return ends[0] if k == 0 or k == -n else ends[1]
        return self.materialise()[k]


def gang_plans(plans: list, runs: list, containers: tuple, build=None) -> GangPlans:
    """``plans`` (of the gang's member ``runs``) as a :class:`GangPlans` (``None``: a
    :class:`LazyGangPlans` that ``build(runs)`` fills when read); ``containers`` are the
    runtime's ``(Stack, Sliced)`` classes (see :class:`_Containers`). The runs must be in task
    order, then member order (``(index, block)``, as the scheduler sorts a gang): :func:`_segments`
    reads a gang of one task's runs off its first and last run."""
    if _containers.Stack is None:
        _containers.Stack, _containers.Sliced = containers
    if plans is None:   # (lazy: built by ``build(runs)`` when read)
        out = LazyGangPlans()
        out.build = build
    else:
        out = GangPlans(plans)
        out.build = None
    out.ends = None
    out.runs = runs
    out.found = None
    return out


def param_runs(P: GangPlans, pi: int, c: int, ti: int, shape, offsets, load: bool):
    """:func:`runs_at` of access ``c`` of a gang whose members access their task's parameter
    ``pi`` (the code generator knows: the access's tensor is that parameter), found without
    reading the members' tensors one by one: a gang's members are member runs of batched tasks,
    and member ``b`` of a task (all members submitted together) has ``task.args[pi][b]`` --
    a row of the stacked buffer ``Stack.whole``, a slice at storage offset ``Sliced.ats[b]``, or
    the one tensor every member shares. The same runs as from the members' tensors (a layout per
    gang and parameter, kept in ``P.found``); ``None`` (the caller takes the member-by-member
    path) for anything else: other runs (blocks of a task, a task of a few members), other
    containers, a store of one shared tensor, an access recorder. The first and last members'
    tensors are checked to be the plan's (the generator's claim, checked where it is cheap)."""
    found = P.found
    if found is None:
        found = P.found = {}
    key = pi + pi + load
    lay = found.get(key, _UNSEEN)
    if lay is _UNSEEN:
        segs = found.get(-1, _UNSEEN)
        if segs is _UNSEEN:   # (the same for every parameter of the gang)
            segs = found[-1] = _segments(P.runs)
        lay = found.get(key + 1) if not load else None
        if lay is None or lay is _UNSEEN or not _store_safe(lay[0]):
            lay = None if segs is None else _param_layout(segs, pi, load)
        found[key] = lay
    if lay is None or _core._RECORDER.get() is not None:
        return None
    layout, first, last = lay
    if P[0][c][1][ti] is not first or P[-1][c][1][ti] is not last or len(offsets) != len(shape):
        return None
    for o in offsets:
        if type(o) is not int:
            return None
    return _views(layout, shape, offsets, len(P))


_UNSEEN = object()


def _store_safe(layout) -> bool:
    """Whether a load's ``layout`` of a parameter (:func:`_param_layout`) is the one its store
    would find: runs (no gather) each over members at a positive storage step -- stacked rows,
    evenly spaced slices, no member alone (a lone member's run has step 0, as does one tensor
    every member shares, whose store the member path makes). A gang's kernel often loads a
    parameter it later stores (pa_update: the running max, sum and output), and the store then
    takes the load's layout instead of finding it again: the same runs, hence the same copies."""
    if layout is None:
        return False
    runs = layout[2]
    if runs.__class__ is not list:
        return False
    for r in runs:
        if r[3] <= 0:
            return False
    return True


class _Containers:
    """The batched arguments :func:`param_runs` reads: ``pypto.runtime.batch``'s ``Stack`` and
    ``Sliced``, which the runtime hands over when it makes :class:`GangPlans` (this layer does not
    import the runtime); ``None`` (no parameter path) until then."""

    Stack = Sliced = None


_containers = _Containers()


def _segments(runs):
    """``[(lo, hi, task, b)]``: the gang's members ``lo .. hi - 1`` are members ``b ..`` of the
    batched ``task`` (members are in task order, then member order); ``None`` when a member is
    not a batched task's member run."""
    n = len(runs)
    first, last = runs[0], runs[-1]
    p = first.parent
    if p is None or first.kind != "member" or p.members is None:
        return None
    if last.parent is p and last.block - first.block == n - 1:
        # (one task's runs, distinct and in member order, spanning n positions: all of them)
        return [(0, n, p, first.block)]
    out = []
    lo = 0
    while lo < n:
        t = runs[lo]
        p = t.parent
        if p is None or t.kind != "member" or p.members is None:
            return None
        b = t.block
        hi = lo + 1
        while hi < n and runs[hi].parent is p and runs[hi].block == b + hi - lo:
            hi += 1
        out.append((lo, hi, p, b))
        lo = hi
    return out


def _param_layout(segs, pi: int, load: bool):
    """``(layout, first member's tensor, last member's tensor)`` of parameter ``pi`` of a gang
    whose members are the batched tasks' runs ``segs`` (:func:`_segments`), or ``None``."""
    Stack, Sliced = _containers.Stack, _containers.Sliced
    parts = []
    for lo, hi, task, b in segs:
        if task.batched is None or pi >= len(task.args):
            return None
        a = task.args[pi]
        if not task.batched[pi]:
            # the one tensor every member of the task reads (a store of it: the member-by-member
            # path, which never merges a region written twice)
            if not load or not isinstance(a, torch.Tensor):
                return None
            parts.append((None, lo, hi, a, 0))
            continue
        # member b of a task of all its members is a[b] (BatchRuntime.submit_batch)
        if len(a) != len(task.members) or (a.__class__ is not Stack and a.__class__ is not Sliced):
            return None
        parts.append((a.__class__, lo, hi, a, b))
    first = parts[0][3] if parts[0][0] is None else parts[0][3][parts[0][4]]
    cls, lo, hi, a, b = parts[-1]
    last = a if cls is None else a[b + hi - lo - 1]
    if cls is Sliced:
        # slices (bslice) or views (breshape) of one storage, alike in shape and strides, at
        # storage offsets a.ats, in every part (the pages of one KV cache over several tasks):
        # runs of one storage over the whole gang (a load at random places: one gather)
        x0 = parts[0][3][parts[0][4]]
        d, s, dt = x0.shape, x0.stride(), x0.dtype
        ptr = parts[0][3].ptr
        so, ts = [], []
        for cls, lo, hi, a, b in parts:
            if cls is not Sliced or a.ptr != ptr:
                break
            x = a[b]
            if x is not x0 and (x.shape != d or x.stride() != s or x.dtype != dt):
                break
            so += a.ats[b:b + hi - lo]
            ts += a[b:b + hi - lo]
        else:
            return _storage_layout(ts, so, d, s, load), first, last
    out = []
    dims = st = None
    mixed = False
    for cls, lo, hi, a, b in parts:
        m = hi - lo
        if cls is None:
            d, s = a.shape, a.stride()
            run = [(lo, hi, a, 0, a.storage_offset(), s, None)]
        elif cls is Stack:
            w = a.whole
            ws = w.stride()
            d, s = w.shape[1:], ws[1:]
            run = [(lo, hi, w, ws[0], w.storage_offset() + b * ws[0], s, w if b == 0 and m == w.shape[0] else None)]
        else:
            x0 = a[b]
            d, s = x0.shape, x0.stride()
            run = _spaced_runs(a[b:b + m], a.ats[b:b + m], None, load, m + 1, s)
            if lo:
                run = [(x + lo, y + lo, t, k, o, r, w) for x, y, t, k, o, r, w in run]
        if dims is None:
            dims, st = d, s
        elif d != dims:
            return None
        elif s != st:
            mixed = True
        out.extend(run)
    return (dims, None if mixed else st, out), first, last


def _storage_layout(ts, so, dims, inner, load: bool):
    """:func:`_layout` of members ``ts`` that are views of ONE storage with one shape ``dims``,
    strides ``inner`` and dtype, at storage offsets ``so`` (what :func:`_general_layout` makes of
    slices of one tensor): one run when evenly spaced (a load also: all at one place), else runs
    of evenly spaced members, a load of more than two of them one gather.

    The layout is a function of ``(so, dims, inner, load)`` alone but for the tensors it names,
    which are always ``ts[lo]`` of a run starting at member ``lo`` (``ts[0]`` for a gather or a
    scatter): the storage ``as_strided`` views (same storage and dtype for every member). So it is
    remembered across calls by those values (:data:`_SHAPES`, a Qwen3-layer call finds ~100 such
    layouts, the same call after call: the KV-cache rows and pages of each gang) with the tensors
    left out, and the current ``ts`` put back in: the same layout as computed afresh, holding no
    tensor of an earlier call (the index tensors it keeps are its own, never written)."""
    key = (load, tuple(so), dims, inner)
    got = _SHAPES.get(key)
    if got is None:
        lay = _storage_layout_new(ts, so, dims, inner, load)
        if len(_SHAPES) >= _SHAPES_SIZE:
            _SHAPES.clear()
        _SHAPES[key] = _unbound(lay)
        return lay
    return _bound(got, ts)


_SHAPES: dict = {}   # (load, storage offsets, dims, strides) -> _storage_layout's layout without its tensors
_SHAPES_SIZE = 4096


def _unbound(lay):
    """:func:`_storage_layout`'s ``lay`` without its tensors (``None`` in their places)."""
    dims, inner, runs = lay
    if runs.__class__ is tuple:   # a gather
        return dims, inner, (None,) + runs[1:]
    if runs.__class__ is _Scatter:
        return dims, inner, _Scatter([r[:2] + (None,) + r[3:] for r in runs.runs], None, runs.c, runs.g,
                                     runs.count, runs.idx, runs.gap)
    return dims, inner, [r[:2] + (None,) + r[3:] for r in runs]


def _bound(lay, ts):
    """:func:`_unbound`'s ``lay`` with the members' tensors ``ts`` back in (``ts[lo]`` for a run
    from member ``lo``, ``ts[0]`` for a gather's or scatter's storage)."""
    dims, inner, runs = lay
    if runs.__class__ is tuple:
        return dims, inner, (ts[0],) + runs[1:]
    if runs.__class__ is _Scatter:
        return dims, inner, _Scatter([(lo, hi, ts[lo], k, o, r, w) for lo, hi, _, k, o, r, w in runs.runs],
                                     ts[0], runs.c, runs.g, runs.count, runs.idx, runs.gap)
    return dims, inner, [(lo, hi, ts[lo], k, o, r, w) for lo, hi, _, k, o, r, w in runs]


def _storage_layout_new(ts, so, dims, inner, load: bool):
    """:func:`_storage_layout` computed afresh."""
    n = len(so)
    s0 = so[0]
    step = so[1] - s0 if n > 1 else 0
    if n == 1 or (step > 0 and so == list(range(s0, s0 + step * n, step))) or (
            step == 0 and load and so.count(s0) == n):
        return dims, inner, [(0, n, ts[0], step, s0, inner, None)]
    out = _spaced_runs(ts, so, None, load, 3 if load else n + 1, inner)
    if len(out) > 2 and load:
        c = min(so)
        g = math.gcd(*map(sub, so, repeat(c, n)))
        if g > 0:
            return dims, inner, (ts[0], c, g, (max(so) - c) // g + 1, _core.index_tensor([(x - c) // g for x in so]))
        out = _spaced_runs(ts, so, None, load, n + 1, inner)   # (not reached: equal offsets are one run)
    elif len(out) > 2 and all(k > 0 for k in inner):
        srt = sorted(so)
        gap = min(map(sub, srt[1:], srt[:-1]))
        if gap > 0:
            c = srt[0]
            g = math.gcd(*map(sub, so, repeat(c, n)))
            return dims, inner, _Scatter(out, ts[0], c, g, (srt[-1] - c) // g + 1,
                                         _core.index_tensor([(x - c) // g for x in so]), gap)
    return dims, inner, out


class _Scatter:
    """The runs of a store to more than two places of one storage (each request's row of a KV
    cache), and the same store as ONE ``index_copy_`` into the storage's windows at the places'
    common spacing ``g`` (the gather's windows, :func:`_storage_layout`), which :func:`_views`
    takes when the access's regions cannot overlap: the places are ``gap`` or more elements apart
    and a region spans fewer (positive strides). Disjoint regions written by element copies: the
    bytes of the members' own stores, in any order."""

    __slots__ = ("runs", "t", "c", "g", "count", "idx", "gap")

    def __init__(self, runs, t, c, g, count, idx, gap):
        self.runs, self.t, self.c, self.g, self.count, self.idx, self.gap = runs, t, c, g, count, idx, gap


def _load_runs(dst: torch.Tensor, runs) -> None:
    if len(runs) == 1:
        src = runs[0][2]
        if src.__class__ is tuple:   # a gather: (windows view, index of each member's window)
            torch.index_select(src[0], 0, src[1], out=dst)
        else:
            dst.copy_(src)
    else:
        for lo, hi, src in runs:
            dst[lo:hi].copy_(src)


def gang_store_fast(tile: torch.Tensor, plans) -> None:
    """``tile.store`` (not atomic) of a lockstep gang: one copy per run of
    :func:`uniform_runs`, else :func:`pypto.ops.support.core.gang_store`."""
    runs = uniform_runs(tile.shape[1:], plans, 1, 0, False)
    if runs is None:
        _core.gang_store(tile, plans)
    else:
        _store_runs(tile, runs)


def gang_store_at(tile: torch.Tensor, P, c: int, offsets, pi: int = -1) -> None:
    """:func:`gang_store_fast` of access ``c`` of the members' plans ``P`` (``P[k][c]``: ``(site,
    (offsets, tensor, None))``), the offsets ``offsets`` for every member (see :func:`gang_load_at`)."""
    if pi >= 0 and (P.__class__ is GangPlans or P.__class__ is LazyGangPlans):
        runs = param_runs(P, pi, c, 1, tile.shape[1:], offsets, False)
        if runs is not None:
            _store_runs(tile, runs)
            return
    runs = runs_at(tile.shape[1:], [p[c][1][1] for p in P], offsets, False)
    if runs is None:
        _core.gang_store(tile, [p[c][1] for p in P])
    else:
        _store_runs(tile, runs)


def _store_runs(tile: torch.Tensor, runs) -> None:
    if len(runs) == 1:
        dst = runs[0][2]
        if dst.__class__ is tuple:   # a scatter (_Scatter): (windows view, index of each member's window)
            w, idx = dst
            if w.dtype == tile.dtype:
                w.index_copy_(0, idx, tile)
            else:   # (index_copy_ does not convert: each member's copy does)
                for k, i in enumerate(idx.tolist()):
                    w[i].copy_(tile[k])
        else:
            dst.copy_(tile)
    else:
        for lo, hi, dst in runs:
            dst.copy_(tile[lo:hi])
