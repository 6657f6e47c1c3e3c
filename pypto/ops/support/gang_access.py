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
        if entry[1] is load and len(mts) == len(ts) and all(map(is_, ts, mts)):
            if k:
                memo.insert(0, memo.pop(k))
            layout = entry[2]
            break
    else:
        layout = _layout(ts, load)
        memo.insert(0, (ts, load, layout))
        del memo[_MEMO_SIZE:]
    if layout is None:
        return None
    dims, st, runs = layout
    if len(dims) != nd:
        return None
    # the region's element offset inside each member's tensor, or None when it leaves the tensor
    # (the member's own access then raises the error)
    start = 0
    for o, e, d, k in zip(offsets, shape, dims, st):
        if o < 0 or o + e > d:
            return None
        start += o * k
    if runs.__class__ is tuple:   # a gather (see _general_layout): (tensor, first offset, spacing, count, index)
        t, c, g, count, idx = runs
        return [(0, len(ts), (t.as_strided((count, *shape), (g, *st), c + start), idx))]
    return [(lo, hi, t.as_strided((hi - lo, *shape), (stride0, *st), base + start))
            for lo, hi, t, stride0, base in runs]


def _layout(ts, load: bool):
    """What :func:`uniform_runs` finds of the members' tensors ``ts`` whatever the offsets:
    ``(dims, strides, runs)`` -- the members' shape and strides (a stacked buffer's: its rows'
    dims and strides), and per run ``(lo, hi, tensor, stride between members, storage offset of
    member lo's element 0)``, or for a gather the tuple :func:`_general_layout` describes; ``None``
    when they are not alike. Computed once per gang and site: a gang kernel's loop loads the same
    members' tensors at other offsets step after step (the Qwen3 projections: 8 loads of the same x
    / w views per gang)."""
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
        out.append((lo, hi, w, st[0], w.storage_offset() + i * st[0]))
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
    if (tags is not None and all(map(is_, map(_first, tags), repeat(tag0[0], n)))
            and list(map(_third, tags)).count(tag0[2]) == n):
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
        return t0.shape, st, [(0, n, t0, 0, t0.storage_offset())]
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
            return dims, inner, [(0, n, t0, step, s0)]
    out = _spaced_runs(ts, so, bases, load, 3 if load and one_base else n + 1)
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
            out = _spaced_runs(ts, so, bases, load, n + 1)
    return dims, inner, out


def _spaced_runs(ts, so, bases, load: bool, most: int) -> list:
    """Maximal runs ``(lo, hi, tensor, step, storage offset)`` of members at evenly spaced storage
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
        out.append((lo, hi, ts[lo], step, s0))
        lo = hi
    return out


def gang_load_fast(dst: torch.Tensor, plans) -> None:
    """``tile.load`` of a lockstep gang: one copy per run of :func:`uniform_runs`, else :func:`pypto.ops.support.core.gang_load_into`."""
    runs = uniform_runs(dst.shape[1:], plans, 0, 1, True)
    if runs is None:
        _core.gang_load_into(dst, plans)
    else:
        _load_runs(dst, runs)


def gang_load_at(dst: torch.Tensor, P, c: int, offsets) -> None:
    """:func:`gang_load_fast` of access ``c`` of the members' plans ``P`` (``P[k][c]``: ``(site,
    (tensor, offsets, None))``) whose offsets the gang kernel knows to be ``offsets`` for every
    member (constants, uniform loop variables) and which has no valid shape: the members' tensors
    are all that is read of the plans."""
    runs = runs_at(dst.shape[1:], [p[c][1][0] for p in P], offsets, True)
    if runs is None:
        _core.gang_load_into(dst, [p[c][1] for p in P])
    else:
        _load_runs(dst, runs)


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


def gang_store_at(tile: torch.Tensor, P, c: int, offsets) -> None:
    """:func:`gang_store_fast` of access ``c`` of the members' plans ``P`` (``P[k][c]``: ``(site,
    (offsets, tensor, None))``), the offsets ``offsets`` for every member (see :func:`gang_load_at`)."""
    runs = runs_at(tile.shape[1:], [p[c][1][1] for p in P], offsets, False)
    if runs is None:
        _core.gang_store(tile, [p[c][1] for p in P])
    else:
        _store_runs(tile, runs)


def _store_runs(tile: torch.Tensor, runs) -> None:
    if len(runs) == 1:
        runs[0][2].copy_(tile)
    else:
        for lo, hi, dst in runs:
            dst.copy_(tile[lo:hi])
