"""When the scheduler may run tasks as a lockstep gang (:mod:`pypto.codegen.gang`).

A gang is ``n`` ready tasks of one kernel that has a lockstep form, started together on ``n``
adjacent free cores and advanced together (one jitter draw per step for all of them). Two rules keep
it indistinguishable from running the tasks one by one:

* **Footprints** (:func:`conflict`): no member writes global memory that another member reads or
  writes. Then no member can observe another, and lockstep is one of the interleavings the device
  could produce anyway (every member's accesses happen at times the per-task model allows).
* **Bits** (:func:`gang_size`): torch splits an elementwise call of ``numel >= GRAIN`` elements over
  ``min(threads, ceil(numel / GRAIN))`` threads in equal chunks, and a chunk boundary inside a tile
  would change which of its elements take the vectorised and which the scalar loop (for ``exp`` or
  ``maximum`` that can change bits). ``n`` is chosen so every such chunk holds whole tiles, and a
  kernel whose per-row ops (``Lockstep.ROWS`` trait) touch a tile of ``GRAIN`` elements or more
  (``GANG_NUMEL``: single-task calls are then split *inside* the tile) is not ganged while torch
  runs more than one thread. Data movement (``"copy"``) and per-task calls (``"gang"``) do not count.
"""
from __future__ import annotations

import torch

from pypto.ir.tags import MAY_WRITE_TAGS

GRAIN = 32768   # at::internal::GRAIN_SIZE: the smallest call torch splits over threads


def gang_size(limit: int, numel: int, threads: int) -> int:
    """The largest gang size ``n <= limit`` for tiles of at most ``numel`` elements (every call's
    extent per tile is at most that) whose thread chunks hold whole tiles; 0 when none is >= 2.
    (Remembered per arguments: the scheduler asks once per gang it forms, always the same few.)"""
    key = (limit, numel, threads)
    n = _SIZES.get(key)
    if n is None:
        if len(_SIZES) >= 4096:   # (a long process compiling many programs: tile sizes come and go)
            _SIZES.clear()
        n = _SIZES[key] = _gang_size(limit, numel, threads)
    return n


_SIZES: dict = {}   # (limit, numel, threads) -> gang_size (limit: at most the cores; numel: a kernel's)


def _gang_size(limit: int, numel: int, threads: int) -> int:
    """:func:`gang_size`, computed."""
    if threads > 1 and numel >= GRAIN:
        return 0
    for n in range(limit, 1, -1):
        # threads torch may use for a call over n tiles of <= numel elements each: any t up to this
        # (smaller per-tile extents use fewer), and a chunk is n / t tiles only when t divides n
        m = min(threads, -(-n * numel // GRAIN))
        if all(n % t == 0 for t in range(2, m + 1)):
            return n
    return 0


def _access(t, offsets, shape):
    """``(lo, hi, box)`` of ``t``'s region at ``offsets`` of ``shape``: the bytes of the smallest
    range of its storage holding it (a conservative bound for a strided region) and, for a plain
    region, its box ``(tensor, starts, stops)`` in ``t``'s index space (``None`` otherwise)."""
    st = t.stride()
    es = t.element_size()
    lo = hi = t.storage_offset()
    box = None
    if len(offsets) == len(shape) == len(st):
        starts = [int(o) for o in offsets]
        for o, n, s in zip(starts, shape, st):
            lo += o * s
            hi += (o + n - 1) * s
        box = (t, starts, [o + n for o, n in zip(starts, shape)])
    elif len(shape) == 2 and len(offsets) == t.dim() and t.is_contiguous():
        # a flattened 2-D access of a contiguous higher-rank tensor (FlattenTileNdTo2D): rows of its
        # row-major [prod(leading dims), last] view from row linear(offsets[:-1]); the byte range is
        # exact for whole rows, a bound otherwise (no box: overlapping ranges count as sharing)
        row = 0
        for o, d in zip(offsets[:-1], t.shape[:-1]):
            row = row * d + int(o)
        c = t.shape[-1]
        lo += row * c + int(offsets[-1])
        hi = lo + (shape[0] - 1) * c + shape[1] - 1
    else:   # any other flattened access of a higher-rank tensor: bound by the whole tensor
        hi = lo + sum((n - 1) * s for n, s in zip(t.shape, st))
    return lo * es, (hi + 1) * es, box


def _overlap(a, b) -> bool:
    """Whether two accesses whose storage ranges overlap really share an element: exact for boxes
    of the same tensor, conservatively true otherwise."""
    if a is None or b is None or a[0] is not b[0]:
        return True
    return all(lo1 < hi2 and lo2 < hi1 for lo1, hi1, lo2, hi2 in zip(a[1], a[2], b[1], b[2]))


def conflict(gm, plans, groups=None, tasks=None) -> bool:
    """True when some member of the gang writes global memory another member reads or writes.
    ``gm`` is the kernel's ``GANG_GM`` (``("r" | "w", shape)`` per access site), ``plans`` the
    members' ``GANG_PLAN`` results (``(site, arguments)`` per access) in member order. Only storages
    some member writes are examined. ``groups`` (one key per member) marks members known not to
    conflict with each other (the member runs of one batched task, :mod:`pypto.runtime.batch`): only
    accesses of different groups are compared. ``tasks`` (the members' tasks, with ``groups``) allows
    the argument pre-check :func:`_args_disjoint` first."""
    if groups is not None and len(set(groups)) == 1:
        return False
    if tasks is not None and groups is not None and _args_disjoint(tasks, groups):
        return False
    storage_of: dict[int, int] = {}   # id(tensor) -> its storage (the same tensors recur in every plan)
    bases: dict = {}
    # first pass: each access's storage; a written storage that only one member touches (its
    # private intermediate buffers: the common case) cannot make a conflict, so only storages
    # written by someone and touched by two or more members get their byte ranges computed (second
    # pass, in the same order); most gangs end after the first pass, which builds nothing per access
    written: set = set()
    touched: dict[int, int] = {}   # storage -> the one member touching it, or -1 for several
    for k, plan in enumerate(plans):
        if groups is not None:
            k = groups[k]
        for site, entry in plan:
            kind = gm[site][0]
            t = entry[0] if kind == "r" else entry[1]
            key = storage_of.get(id(t))
            if key is None:
                key = storage_of[id(t)] = _storage(t, bases)
            if kind == "w":
                written.add(key)
            m = touched.get(key, k)
            touched[key] = k if m == k else -1
    shared = {key for key in written if touched[key] == -1}
    if not shared:
        return False
    # second pass, only for the storages two members share and someone writes: the byte ranges
    by_storage: dict[int, list] = {}
    for k, plan in enumerate(plans):
        if groups is not None:
            k = groups[k]
        for site, entry in plan:
            kind, shape = gm[site]
            t, offsets = (entry[0], entry[1]) if kind == "r" else (entry[1], entry[0])
            key = storage_of[id(t)]
            if key in shared:
                lo, hi, box = _access(t, offsets, shape)
                by_storage.setdefault(key, []).append((lo, hi, k, kind == "w", box))
    for spans in by_storage.values():
        # sweep by start: an earlier range overlaps the current one while its end is past its start
        spans.sort(key=lambda s: (s[0], s[1], s[2]))
        active_w: list = []
        active_r: list = []
        for lo, hi, k, w, box in spans:
            active_w = [a for a in active_w if a[0] > lo]
            if any(m != k and _overlap(b, box) for _, m, b in active_w):
                return True
            if w:
                active_r = [a for a in active_r if a[0] > lo]
                if any(m != k and _overlap(b, box) for _, m, b in active_r):
                    return True
                active_w.append((hi, k, box))
            else:
                active_r.append((hi, k, box))
    return False


def _args_disjoint(tasks, groups) -> bool:
    """Whether no storage a member may write (a tensor argument tagged OUTPUT / INOUT /
    OUTPUT_EXISTING / NO_DEP) is a tensor argument of a member of another group: then no two groups
    share a written storage and :func:`conflict` is False without looking at the plans.

    Sound because every global-memory access in a ``GANG_PLAN`` is of a task's tensor argument or a
    view of it (the plan is a function of the arguments alone: same storage), and every store is into
    an argument whose tag allows writing -- a kernel writing an ``In`` parameter has it promoted to
    ``InOut`` (``pypto.passes.param_writes``); the dependency inference and the ``In``-tensor
    protection rely on the same tags. Per member ~3 arguments instead of its ~10 plan entries (the
    first pass of :func:`conflict` was ~3 ms of a 65 ms Qwen3-layer call); equal answers pinned by
    tests/runtime/test_gang_conflict_args.py."""
    bases: dict = {}   # id(base tensor) -> (its storage, the base), see _storage
    touched: dict[int, object] = {}   # storage -> the one group touching it, or _SEVERAL
    written: set = set()
    for t, g in zip(tasks, groups):
        args, tags = t.args, t.tags
        if tags is None or len(tags) != len(args):
            return False
        for a, tag in zip(args, tags):
            if not isinstance(a, torch.Tensor):
                if a is None or a.__class__ in _PLAIN:
                    continue
                return False   # a container or other object: its tensors are not seen here
            key = _storage(a, bases)
            if tag in MAY_WRITE_TAGS:
                written.add(key)
            m = touched.get(key, g)
            touched[key] = g if m == g else _SEVERAL
    return all(touched[key] is not _SEVERAL for key in written)


def _storage(t, bases: dict) -> int:
    """The address of ``t``'s storage, looked up once per base tensor (a view's storage is its
    base's) through ``bases``: ``id(base) -> (address, base)``. The entry keeps the base alive: its
    Python object may exist only while someone holds it (a view made in C++ names a base that has
    none), and a freed object's id can be another tensor's a moment later."""
    b = t._base
    if b is None:
        b = t
    hit = bases.get(id(b))
    if hit is None:
        hit = bases[id(b)] = (b.untyped_storage().data_ptr(), b)
    return hit[0]


_SEVERAL = object()
_PLAIN = (int, float, bool, str)
