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
"""
from __future__ import annotations

import math
import threading
from operator import is_

import torch

from pypto.ops.support import core as _core


ROW = _core.STACK_ROW   # attribute of a stacked buffer's row: (the buffer, the row's index), set by create_batch
# attribute of a view the batched orchestration's tensor.slice made (runtime.batch.bslice):
# (the tensor sliced, the view's storage offset, its shape); exact for the same reason as ROW (the
# generated code passes such a view on or takes new, untagged, views of it)
SLICE_OF = "_pypto_slice"


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
    t0, o0 = p0[ti], p0[oi]
    nd = len(shape)
    if p0[2] is not None or len(o0) != nd or t0.dim() != nd:
        return None
    for o in o0:
        if type(o) is not int:
            return None
    if [p[2] for p in plans].count(None) != n:
        return None
    # the same offsets for every member (plain ints: the lists compare elementwise)
    if [p[oi] for p in plans].count(o0) != n:
        return _offset_run(shape, plans, t0, ti, oi, load)
    ts = [p[ti] for p in plans]
    key = (ti, load)
    memo = _memo()
    for k, (mts, mkey, layout) in enumerate(memo):
        if mkey == key and len(mts) == n and all(map(is_, ts, mts)):
            if k:
                memo.insert(0, memo.pop(k))
            break
    else:
        layout = _layout(ts, load)
        memo.insert(0, (ts, key, layout))
        del memo[_MEMO_SIZE:]
    if layout is None:
        return None
    dims, st, runs = layout
    start = _inside(o0, shape, dims, st[-nd:])
    if start is None:
        return None
    if runs.__class__ is tuple:   # a gather (see _general_layout): (tensor, first offset, spacing, count, index)
        t, c, g, count, idx = runs
        return [(0, n, (t.as_strided((count, *shape), (g, *st[-nd:]), c + start), idx))]
    out = []
    for lo, hi, t, stride0, base in runs:
        out.append((lo, hi, t.as_strided((hi - lo, *shape), (stride0, *st[-nd:]), base + start)))
    return out


def _layout(ts, load: bool):
    """What :func:`uniform_runs` finds of the members' tensors ``ts`` whatever the offsets:
    ``(dims, strides, runs)`` -- the members' shape and strides (a stacked buffer's: its rows'
    dims, the buffer's strides), and per run ``(lo, hi, tensor, stride between members, storage
    offset of member lo's element 0)``; ``None`` when they are not alike. Computed once per gang and
    site: a gang kernel's loop loads the same members' tensors at other offsets step after step
    (the Qwen3 projections: 8 loads of the same x / w views per gang)."""
    n = len(ts)
    try:
        rows = [t._pypto_row for t in ts]
    except AttributeError:
        return _general_layout(ts, load)
    # rows of stacked buffers [N, *member shape]: the members share the row's shape and layout
    w0 = rows[0][0]
    st = w0.stride()
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
        if w is not w0 and (w.stride() != st or w.shape[1:] != w0.shape[1:] or w.dtype != w0.dtype):
            return None
        out.append((lo, hi, w, st[0], w.storage_offset() + i * st[0]))
        lo = hi
    return w0.shape[1:], st, out


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


def _inside(offsets, shape, dims, strides):
    """The element offset of the region at ``offsets`` of ``shape`` in a tensor of ``dims`` with
    ``strides``, or ``None`` when it leaves the tensor (the member's own access raises the error)."""
    start = 0
    for o, e, d, k in zip(offsets, shape, dims, strides):
        if o < 0 or o + e > d:
            return None
        start += o * k
    return start


def _general_layout(ts, load: bool):
    """:func:`_layout` for tensors that are not all rows of stacked buffers: any views with one
    shape, strides and dtype (checked for every member)."""
    n = len(ts)
    t0 = ts[0]
    try:
        tags = [t._pypto_slice for t in ts]
    except AttributeError:
        tags = None
    if tags is not None and len(set(map(id, [g[0] for g in tags]))) == 1 and len({g[2] for g in tags}) == 1:
        # slices of one tensor at one shape (SLICE_OF: the orchestration's batched tensor.slice):
        # their layout is that tensor's, their storage offsets are in the tags
        src, _, dims = tags[0]
        st = src.stride()
        bases = [src] * n
        so = [g[1] for g in tags]
    else:
        if len({t.shape for t in ts}) != 1 or len({t.stride() for t in ts}) != 1 or len({t.dtype for t in ts}) != 1:
            return None
        dims, st = t0.shape, t0.stride()
        # one storage per run: views of one base tensor (unbind / slicing results name it as their
        # _base; a tensor that is no view is its own base: one tensor every member reads is one storage)
        bases = [t if b is None else b for t, b in zip(ts, [t._base for t in ts])]
        so = [t.storage_offset() for t in ts]
    out = []
    lo = 0
    while lo < n:
        b, s0 = bases[lo], so[lo]
        hi = lo + 1
        step = 0
        if hi < n and bases[hi] is b:
            step = so[hi] - s0
            if step > 0 or (step == 0 and load):
                want = s0 + step
                while hi < n and so[hi] == want and bases[hi] is b:
                    hi += 1
                    want += step
            else:
                step = 0
        out.append((lo, hi, ts[lo], step, s0))
        lo = hi
    b0 = bases[0]
    if load and len(out) > 2 and all(b is b0 for b in bases):
        # regions of one base placed at random (paged attention's K / V pages): one gather, as
        # core._gang_runs makes it -- every tile-shaped window of the storage at the regions'
        # common spacing, index_select'ed (a copy of the elements: the bits of per-member copies).
        # The region's offset inside each member moves every window alike: the windows' first
        # offset, spacing, count and the members' indices do not depend on it
        c = min(so)
        g = math.gcd(*[s - c for s in so])
        if g > 0:
            return dims, st, (t0, c, g, (max(so) - c) // g + 1, torch.tensor([(s - c) // g for s in so]))
    return dims, st, out


def gang_load_fast(dst: torch.Tensor, plans) -> None:
    """``tile.load`` of a lockstep gang: one copy per run of :func:`uniform_runs`, else :func:`pypto.ops.support.core.gang_load_into`."""
    runs = uniform_runs(dst.shape[1:], plans, 0, 1, True)
    if runs is None:
        _core.gang_load_into(dst, plans)
    elif len(runs) == 1:
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
    elif len(runs) == 1:
        runs[0][2].copy_(tile)
    else:
        for lo, hi, dst in runs:
            dst.copy_(tile[lo:hi])
