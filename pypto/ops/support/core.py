"""The core of the runtime support (:mod:`pypto.ops.support`): regions, loads and stores, casts,
reductions, matmul, and the access recorder of the race detector.

Generated code reaches these through the package (``_pto.<name>``); the op families' helper
modules (``support/elementwise.py``, ...) import this module, never the package, so that any of
them may be imported first.
"""
from __future__ import annotations

import contextlib
import math
from array import array as _array
import sys
import contextvars
import threading
import weakref
from typing import Callable, Iterator, Sequence

import torch

from pypto.errors import SimulationError
from pypto.numerics.cast import cast_into as _cast_into, cast_tensor, device_mode
from pypto.numerics.intarith import int_div

__all__ = ["region", "load", "load_into", "store", "assemble", "cast", "cast_into", "matmul", "extract", "tensor_matmul"]


# The access recorder of the race detector (pypto.debug.races): when set, every global-memory read
# (tile.load) and write (tile.store) reports ``(what, view)``. A context variable, not a module
# global, so recording is scoped to the code that asked for it; None costs one lookup per access.
_RECORDER: contextvars.ContextVar[Callable | None] = contextvars.ContextVar("pypto_access_recorder", default=None)
# the ``what`` a recorder is called with: these tags, and nothing else (they name accesses, not ops:
# an atomic store and a load that fills padding are told apart)
LOAD, LOAD_PADDED, STORE, STORE_ATOMIC = "tile.load", "tile.load.padded", "tile.store", "tile.store.atomic"
WRITE_TAGS = frozenset({STORE, STORE_ATOMIC})


# Poison mode (RunConfig.sim_poison, pypto.debug.races.detect_uninitialized): a recorder with an int
# attribute ``pad_fill`` makes tile.load fill the padding of a partially valid tile with that byte
# (0xFF: NaN in every float dtype) instead of zero. Read only where padding is written, and only off
# the recorder already fetched there, so runs without poison pay nothing extra.
POISON_BYTE = 0xFF


def _poison_only(what: str, view: torch.Tensor) -> None:
    """The recorder of a plain ``sim_poison`` run: records nothing, only carries ``pad_fill``."""


_poison_only.pad_fill = POISON_BYTE


def poisoning(fill: int = POISON_BYTE):
    """Within the block, tile loads leave their padding filled with the byte ``fill`` (see above)."""
    if fill == POISON_BYTE:
        return recording(_poison_only)

    def rec(what: str, view: torch.Tensor) -> None:
        """Records nothing; carries ``pad_fill``."""
    rec.pad_fill = fill
    return recording(rec)


def fill_bytes(t: torch.Tensor, byte: int) -> None:
    """Set every byte of ``t`` to ``byte`` (in place)."""
    if byte == 0:
        t.zero_()
    elif t.is_contiguous():
        t.view(torch.uint8).fill_(byte)
    else:
        pattern = torch.full((t.numel() * t.element_size(),), byte, dtype=torch.uint8)
        t.copy_(pattern.view(t.dtype).view(t.shape))


def note_fence() -> None:
    """A kernel's ``fence`` (or ``bar_all``): a recorder with a ``fence`` attribute (the race detector's
    block tracker, :mod:`pypto.debug.block_races`) is told, since a barrier publishes fenced accesses only."""
    rec = _RECORDER.get()
    if rec is not None:
        f = getattr(rec, "fence", None)
        if f is not None:
            f()


@contextlib.contextmanager
def recording(callback: Callable[[str, torch.Tensor], None]) -> Iterator[None]:
    """Within the block, report every GM access of generated kernels to ``callback(what, view)``."""
    token = _RECORDER.set(callback)
    try:
        yield
    finally:
        _RECORDER.reset(token)


def view_region(t: torch.Tensor, offsets: Sequence[int], shape: Sequence[int], what: str = "tensor.slice") -> torch.Tensor:
    """``tensor.slice`` in orchestration: :func:`region`, except that a view running past the end of
    the tensor is cut at that end. On the device such a view is only an address and strides (the
    reference's ``pl.slice(block_table, [n_unroll], [off])`` of the last, partial group of blocks,
    whose kernel reads only its first ``n_blocks`` entries); here the part past the end does not
    exist, so a kernel access of it is a located out-of-bounds error, never a read of other data.
    A view that starts outside the tensor is an error at once."""
    dims = t.shape
    if len(dims) == 2 and len(offsets) == 2 and len(shape) == 2:
        # fast path (a 2-D slice inside the tensor: nothing to cut): region's
        o0, o1 = offsets
        s0, s1 = shape
        if (type(o0) is int and type(o1) is int and type(s0) is int and type(s1) is int
                and 0 <= o0 and o0 + s0 <= dims[0] and 0 <= o1 and o1 + s1 <= dims[1]):
            return region(t, offsets, shape, what)
    if len(offsets) == len(shape) == t.dim():
        cut = []
        for o, s, n in zip(offsets, shape, t.shape):
            o, s = int(o), int(s)
            cut.append(n - o if 0 <= o < n and o + s > n else s)
        shape = cut
    return region(t, offsets, shape, what)


def _rows_stay_in_their_block(dims, row: int, rows: int, offsets, what: str) -> None:
    """A flattened access of ``rows`` rows from ``row`` is the N-D box it stands for only if it does
    not run past the end of a leading dimension into the next block: rows ``[row, row + rows)`` must
    lie in one block of every suffix product ``prod(dims[j:-1])`` at least ``rows`` long (a
    ``[1, 16, 512]`` load at ``[b, 40, 0]`` of a ``[B, 48, 512]`` tensor would read batch ``b + 1``).
    Raises the out-of-bounds error the N-D access would."""
    if rows <= 0:
        return
    block = 1
    for n in reversed(dims[:-1]):
        block *= int(n)
        if block >= rows and row // block != (row + rows - 1) // block:
            raise SimulationError(
                f"{what} out of bounds: offsets {list(map(int, offsets))} + {rows} flattened rows run past "
                f"a leading dimension of the tensor of shape {list(dims)}")


def region(t: torch.Tensor, offsets: Sequence[int], shape: Sequence[int], what: str = "access") -> torch.Tensor:
    """The view ``t[o0:o0+s0, o1:o1+s1, ...]``; raises when the region leaves the tensor."""
    dims = t.shape
    if len(dims) == 2 and len(offsets) == 2 and len(shape) == 2:
        # fast path (every tile access of a 2-D kernel): plain ints inside the tensor
        o0, o1 = offsets
        s0, s1 = shape
        if (type(o0) is int and type(o1) is int and type(s0) is int and type(s1) is int
                and 0 <= o0 and o0 + s0 <= dims[0] and 0 <= o1 and o1 + s1 <= dims[1]):
            if o0 == 0 and o1 == 0 and s0 == dims[0] and s1 == dims[1]:
                return t
            st = t.stride()
            return t.as_strided((s0, s1), st, t.storage_offset() + o0 * st[0] + o1 * st[1])
    if len(shape) == 2 and len(offsets) == t.dim() != 2:
        # a 2-D tile access of a rank != 2 tensor (FlattenTileNdTo2D): the tensor's row-major 2-D view
        try:
            t2 = t.view(-1, t.shape[-1]) if t.dim() else t.view(1, 1)
        except RuntimeError:
            raise SimulationError(f"{what}: a flattened 2-D access needs a tensor whose leading dimensions "
                                  f"are contiguous, got shape {list(t.shape)} strides {list(t.stride())}") from None
        row = 0
        for o, n in zip(offsets[:-1], t.shape[:-1]):
            row = row * n + int(o)
        _rows_stay_in_their_block(t.shape, row, int(shape[0]), offsets, what)
        return region(t2, [row, int(offsets[-1]) if t.dim() else 0], shape, what)
    if len(offsets) != t.dim() or len(shape) != t.dim():
        raise SimulationError(f"{what}: rank mismatch, tensor has shape {list(t.shape)}, "
                              f"offsets {list(offsets)}, shape {list(shape)}")
    idx = []
    for o, s, n in zip(offsets, shape, t.shape):
        o, s = int(o), int(s)
        if o < 0 or o + s > n:
            raise SimulationError(
                f"{what} out of bounds: offsets {list(map(int, offsets))} + shape {list(map(int, shape))} "
                f"exceeds tensor shape {list(t.shape)}")
        idx.append(slice(o, o + s))
    return t[tuple(idx)]


def _check_valid(valid, shape, what: str) -> None:
    """A valid shape known only at run time (``valid_shape=[m, n]``) must lie within the tile."""
    for v, s in zip(valid, shape):
        if not (isinstance(v, int) and 0 <= v <= s):
            raise SimulationError(f"{what}: valid_shape {list(valid)} does not fit the tile's shape {list(shape)}")


def load(t: torch.Tensor, offsets, shape, valid=None) -> torch.Tensor:
    """Reference ``tile.load``: a new tile of ``shape``; the valid extent is read, the rest is zero."""
    valid = list(shape) if valid is None else list(valid)
    _check_valid(valid, shape, "tile.load")
    out = torch.zeros(list(shape), dtype=t.dtype)
    region(out, [0] * len(shape), valid).copy_(region(t, offsets, valid, "tile.load"))
    return out


def load_into(dst: torch.Tensor, t: torch.Tensor, offsets, valid=None) -> None:
    """Simulator ``tile.load`` into core memory: zero the tile (what the DMA leaves in the padding
    by default; the poison byte under :func:`poisoning`), then copy the valid extent from global memory."""
    shape = dst.shape
    rec = _RECORDER.get()
    if valid is None or tuple(valid) == shape:
        # the valid extent is the whole tile: no padding to zero
        src = region(t, offsets, shape, "tile.load")
        if rec is not None:
            rec(LOAD, src)
        dst.copy_(src)
        return
    valid = list(valid)
    _check_valid(valid, shape, "tile.load")
    src = region(t, offsets, valid, "tile.load")
    if rec is not None:
        rec(LOAD, src)
        fill = getattr(rec, "pad_fill", None)
        if fill is not None:   # poison mode: the padding keeps a recognisable pattern
            fill_bytes(dst, fill)
            rec(LOAD_PADDED, dst)
        else:
            dst.zero_()
    else:
        dst.zero_()
    region(dst, [0] * dst.dim(), valid).copy_(src)


def gang_load_into(dst: torch.Tensor, plans) -> None:
    """``tile.load`` of a lockstep gang (:mod:`pypto.codegen.gang`): ``dst`` is ``[n, *tile]``,
    ``plans[k]`` is task ``k``'s ``(tensor, offsets, valid)``. Tasks reading whole tiles of one
    storage are one strided copy (evenly spaced regions) or one gather (``index_select`` of their
    regions, e.g. the randomly placed K / V pages of paged attention: a copy of each region's
    elements, bit for bit) (:func:`_gang_runs`); any other task gets its own :func:`load_into`."""
    for lo, hi, src in _gang_runs(dst, plans, 0, 1, "tile.load"):
        if src is None:
            t, offsets, valid = plans[lo]
            load_into(dst[lo], t, offsets, valid)
        elif src.__class__ is tuple:   # a gather: (windows view, index of each member's window)
            torch.index_select(src[0], 0, src[1], out=dst[lo:hi])
        else:
            dst[lo:hi].copy_(src)


def gang_store(tile: torch.Tensor, plans) -> None:
    """``tile.store`` (not atomic) of a lockstep gang: ``plans[k]`` is task ``k``'s
    ``(offsets, tensor, valid)``; one strided copy per run of evenly spaced whole-tile regions."""
    for lo, hi, dst in _gang_runs(tile, plans, 1, 0, "tile.store"):
        if dst is not None:
            dst.copy_(tile[lo:hi])
        else:
            offsets, t, valid = plans[lo]
            store(tile[lo], offsets, t, valid)


def _gang_runs(tiles: torch.Tensor, plans, ti: int, oi: int, what: str):
    """Split the gang's accesses into runs ``(lo, hi, src)`` over tasks ``lo .. hi - 1``.

    Consecutive tasks accessing whole tiles of one storage (one tensor at different offsets, views of
    one stacked buffer a batched loop created, slices of one tensor), through tensors of one dtype and
    the same strides, each region inside its own tensor (checked here as its own access would be),
    form a group (:func:`_storage_group`). A group's regions at storage offsets ``s0 + k * step``
    (``step`` > 0; a load also 0: one region read by every task) are one run whose ``src`` is the
    ``[hi - lo, *tile]`` strided view of them. A load group that is not a few such runs is one
    gather: ``src`` is ``(windows, index)``, ``windows`` the overlapping view of every tile-shaped
    window of the storage at the regions' common spacing (their offsets' gcd) and ``index`` each
    task's window (``index_select`` then copies the elements: the same bits as task-wise copies).
    ``src`` is ``None`` for a task accessed on its own (a partial tile, a region outside its tensor
    -- its own access raises the error --, a lone task, or while an access recorder is installed,
    which expects one call per access)."""
    n = len(plans)
    shape = tiles.shape[1:]
    if _RECORDER.get() is not None:
        return [(k, k + 1, None) for k in range(n)]
    out = []
    lo = 0
    while lo < n:
        row = plans[lo][ti].__dict__.get(STACK_ROW)
        if row is not None:
            hi, src = _stack_run(plans, lo, ti, oi, shape, row)
            if src is not None:
                out.append((lo, hi, src))
                lo = hi
                continue
        starts = _storage_group(plans, lo, ti, oi, shape)
        m = len(starts)
        if m < 2:
            out.append((lo, lo + 1, None))
            lo += 1
            continue
        t = plans[lo][ti]
        st = t.stride()
        runs = []
        i = 0
        while i < m:   # maximal runs of evenly spaced regions
            j = i + 1
            if j < m and (starts[j] > starts[i] or (ti == 0 and starts[j] == starts[i])):
                step = starts[j] - starts[i]
                j += 1
                while j < m and starts[j] - starts[j - 1] == step:
                    j += 1
                runs.append((i, j, step))
            else:
                runs.append((i, j, None))
            i = j
        if ti == 0 and len(runs) > 2:
            c = min(starts)
            g = math.gcd(*[s - c for s in starts])   # > 0: the regions are not all one
            windows = t.as_strided(((max(starts) - c) // g + 1, *shape), (g, *st), c)
            out.append((lo, lo + m, (windows, index_tensor([(s - c) // g for s in starts]))))
        else:
            for i, j, step in runs:
                out.append((lo + i, lo + j, None if step is None else
                            t.as_strided((j - i, *shape), (step, *st), starts[i])))
        lo += m
    return out


# The members of a batched loop's stacked intermediate (pypto.runtime.batch.create_batch) are the
# runtime's own row views ``whole[j]``, tagged ``(whole, j)`` under this key of their ``__dict__``
# (:func:`tag_stack_rows`): a gang access of whole rows of one stack is found from the tags alone,
# without reading each member's tensor metadata (1-1.5 us a member in a run's cold caches). The tag
# is exact because nothing changes a row view's metadata: the generated code only passes it on or
# takes new views of it (untagged, so they take the general path).
STACK_ROW = "_pypto_row"


def tag_stack_rows(whole: torch.Tensor, rows) -> None:
    """Tag ``rows`` (``whole.unbind(0)``) as rows of the stack ``whole`` (:data:`STACK_ROW`)."""
    for j, t in enumerate(rows):
        t.__dict__[STACK_ROW] = (whole, j)


def _stack_run(plans, lo: int, ti: int, oi: int, shape, row):
    """``(hi, src)`` for tasks ``lo .. hi - 1`` accessing whole rows of one stack at offsets 0 (no
    valid shape): rows evenly spaced (a store: increasing) are one strided view, other rows of a load
    one gather ``(whole, index)``; ``(lo, None)`` when fewer than two tasks qualify."""
    whole = row[0]
    n = len(plans)
    nd = len(shape)
    if whole.shape[1:] != shape:
        return lo, None
    rows = []
    add = rows.append
    for hi in range(lo, n):
        p = plans[hi]
        r = p[ti].__dict__.get(STACK_ROW)
        offs = p[oi]
        if r is None or r[0] is not whole or p[2] is not None or len(offs) != nd or any(offs):
            break
        add(r[1])
    m = len(rows)
    if m < 2:
        return lo, None
    step = rows[1] - rows[0]
    j = 2
    while j < m and rows[j] - rows[j - 1] == step:
        j += 1
    if step > 0 or (step == 0 and ti == 0):
        if j == m or ti != 0:
            st = whole.stride()
            return lo + j, whole.as_strided((j, *shape), (step * st[0], *st[1:]), whole.storage_offset() + rows[0] * st[0])
    elif ti != 0:
        return lo, None
    return lo + m, (whole, index_tensor(rows))


def index_tensor(values: list) -> torch.Tensor:
    """``torch.tensor(values)`` of a non-empty list of ints, as int64, built from a packed buffer:
    ``torch.tensor`` of a Python list costs ~0.5 us an element here (26 us for a gang of 48 page
    indices, the largest cost of a paged-attention gang load), the buffer ~3 us in all."""
    return torch.frombuffer(_array("q", values), dtype=torch.int64)


def _storage_group(plans, lo: int, ti: int, oi: int, shape) -> list:
    """The storage offsets of the regions of tasks ``lo, lo + 1, ...`` as long as they access whole
    tiles (no valid shape) of one storage (views of one base tensor), through tensors of one dtype and
    the same strides, each region inside its own tensor; empty when task ``lo`` does not."""
    n = len(plans)
    nd = len(shape)
    t = plans[lo][ti]
    if t.dim() != nd:
        return []
    b = t._base
    key = t if b is None else b
    st = t.stride()
    dtype = t.dtype
    starts = []
    add = starts.append
    for hi in range(lo, n):
        p = plans[hi]
        u = p[ti]
        if u is not t:
            b = u._base
            if (u if b is None else b) is not key or u.dtype is not dtype or u.stride() != st:
                break
        offs = p[oi]
        if p[2] is not None or len(offs) != nd:
            break
        s = u.storage_offset()
        if u.shape != shape or any(offs):
            for o, k, e, d in zip(offs, st, shape, u.shape):
                o = int(o)
                if o < 0 or o + e > d:
                    return starts
                s += o * k
        add(s)
    return starts


def store(tile: torch.Tensor, offsets, t: torch.Tensor, valid=None, atomic: bool = False) -> torch.Tensor:
    """``tile.store``: write the tile's valid extent into ``t`` at ``offsets`` (``+=`` when atomic)."""
    if valid is None:
        dst = region(t, offsets, tile.shape, "tile.store")
        src = tile
    else:
        valid = list(valid)
        dst = region(t, offsets, valid, "tile.store")
        src = region(tile, [0] * tile.dim(), valid)
    rec = _RECORDER.get()
    if rec is not None:
        rec(STORE_ATOMIC if atomic else STORE, dst)
    if atomic:
        dst.add_(src.to(dst.dtype))
    else:
        dst.copy_(src)
    return t


def assemble(target: torch.Tensor, src: torch.Tensor, offsets, atomic: bool = False) -> torch.Tensor:
    """Reference ``tensor.assemble``: write ``src`` into ``target`` at ``offsets``, in place
    (``+=`` when ``atomic``, i.e. ``atomic=pl.AtomicType.Add``)."""
    if src.dim() < target.dim():   # leading 1s, as tensor.assemble's type rule pads the value's shape
        src = src.reshape([1] * (target.dim() - src.dim()) + list(src.shape))
    dst = region(target, offsets, list(src.shape), "tensor.assemble")
    if atomic:
        dst.add_(src.to(dst.dtype))
    else:
        dst.copy_(src)
    return target


def cast(x: torch.Tensor, dtype: torch.dtype, mode: str = "round") -> torch.Tensor:
    """``cast`` with the hardware's rounding mode and overflow rules (see :mod:`pypto.numerics.cast`).
    Casts into FP8 / HF8 / FP4 round as the device does whatever mode is asked
    (:func:`pypto.numerics.cast.device_mode`)."""
    return cast_tensor(x, dtype, device_mode(dtype, mode))


def cast_into(dst: torch.Tensor, x: torch.Tensor, dtype: torch.dtype, mode: str = "round") -> None:
    """Simulator ``tile.cast`` into tile ``dst``: ``dst.copy_(cast(x, dtype, mode))`` with the direct
    forms of :func:`pypto.numerics.cast.cast_into` (same bits, no intermediate result tensor)."""
    dm = _DEVICE_MODE_OF.get((dtype, mode))
    if dm is None:   # first use of the pair: device_mode validates and normalises (cached: a hot op)
        dm = device_mode(dtype, mode)
        if len(_DEVICE_MODE_OF) > 256:
            _DEVICE_MODE_OF.clear()
        _DEVICE_MODE_OF[(dtype, mode)] = dm
    if dtype == dst.dtype:
        _cast_into(dst, x, dm)
    else:
        dst.copy_(cast_tensor(x, dtype, dm))


_DEVICE_MODE_OF: dict = {}   # (dtype, mode as written) -> device_mode(dtype, mode)


# -- reductions and fillpad (pypto/ops/reduction.py, pypto/ops/padding.py) ----------------------
# One implementation of the reduction ORDER, called by both executors, so that the reference and
# the simulator agree bit for bit by construction.

_TLS = threading.local()  # per-thread caches of scratch buffers (reductions, matmul)
_REDUCE_FN = {"sum": torch.add, "max": torch.maximum, "min": torch.minimum,
              "prod": torch.mul}  # prod: row_prod / col_prod (pypto/ops/argreduce.py)
_EXTREMES = ("max", "min")  # the kinds whose result does not depend on the order (_extreme_fast)


# dtypes whose sum tree may run in a contiguous scratch whatever the tmp tile's strides: their add
# converts nothing (IEEE add of FP32 / FP64, wrapping integer add), and each level's rows are the same
# runs of ``h`` contiguous elements in either layout (only the outer strides differ; a level view
# never merges its rows, ``h < n``), so every element takes the same vector-or-scalar path of the
# same kernel: the same bits, NaN payloads included (tests/runtime/test_sim_fastpaths.py compares
# with the tree in a gang's own layout, NaNs of two payloads meeting in the vector loop).
_LAYOUT_FREE_ADD = (torch.float32, torch.float64, torch.int32, torch.int64)


def _tree_plan(like: torch.Tensor, kind: str):
    """A private scratch with ``like``'s exact shape and strides, plus the pre-built views of every
    tree level (cached per thread and layout). The same strides mean the same TensorIterator loops
    (vector / scalar split) as working in ``like`` itself, so every level computes the same bits;
    only the Python cost of building the views each call is saved. A sum over a
    :data:`_LAYOUT_FREE_ADD` dtype runs in a contiguous scratch instead, whatever ``like``'s strides
    (a gang's tmp tiles are spread over every core's memory: ~12 us a call less, fewer pages).
    FP16 / BF16 adds convert (torch's vector and scalar conversions give NaNs different payloads)
    and max / min's vector loops return an all-ones NaN: those keep ``like``'s layout."""
    cache = _TLS.__dict__.setdefault("tree", {})
    compact = kind == "sum" and like.dtype in _LAYOUT_FREE_ADD
    key = (tuple(like.shape), None if compact else like.stride(), like.dtype, kind)
    plan = cache.get(key)
    if plan is None:
        w = torch.empty(like.shape, dtype=like.dtype) if compact else \
            torch.empty_strided(like.shape, like.stride(), dtype=like.dtype)
        steps = []
        n = like.shape[-1]
        while n > 1:
            h = n // 2
            r = n - h
            steps.append((w.narrow(-1, 0, h), w.narrow(-1, r, h)))
            n = r
        plan = (w, steps, w.narrow(-1, 0, 1))
        if len(cache) > 64:
            cache.clear()
        cache[key] = plan
    return plan


def _tree_levels(steps, kind: str) -> None:
    if kind == "sum":
        for a, b in steps:
            a.add_(b)  # the same kernel as torch.add(a, b, out=a)
    else:
        fn = _REDUCE_FN[kind]
        for a, b in steps:
            fn(a, b, out=a)


def _extreme_fast(x: torch.Tensor, kind: str):
    """``max`` / ``min`` of the last axis (keepdim) with one ``torch.amax`` / ``amin``, or ``None``
    when that could differ in bits from the documented order. Proof: every step of either order
    returns one of its two operands unchanged (``torch.maximum`` / ``minimum`` do no arithmetic),
    so both orders return an element equal in value to the row's extreme; NaN propagates in both
    (amax returns NaN for a row with NaN). Two floats of equal value differ in bits only when they
    are +0.0 / -0.0 (or NaNs with different payloads), so when no row's extreme is zero or NaN the
    result is bit-identical whatever the order. Integers: equal value = equal bits."""
    dt = x.dtype
    if dt == torch.bool or dt.is_complex or x.numel() == 0:
        return None
    r = torch.amax(x, -1, keepdim=True) if kind == "max" else torch.amin(x, -1, keepdim=True)
    # a zero or NaN extreme: the smallest magnitude is 0 or NaN (the -inf norm is min |r| in one
    # reduction, NaN if any element is NaN; NaN > 0 is false)
    if dt.is_floating_point and not float(torch.linalg.vector_norm(r, _NEG_INF)) > 0:
        return None
    return r


_NEG_INF = float("-inf")


def _reduce_last(x: torch.Tensor, kind: str, tree: bool, work: torch.Tensor | None = None,
                 fresh: bool = True, clobber: bool = True, pairs: bool = False) -> torch.Tensor:
    """Reduce the last axis of ``x`` (keepdim) in the documented order; every step rounds to the
    dtype (torch computes FP16/BF16 in FP32 and rounds once per op, like the vector unit).

    * ``tree``: pairwise halving. With ``n`` elements left, ``h = n // 2``: elements ``[n-h, n)``
      (the upper half) are combined onto ``[0, h)`` (the lower half) in ONE vectorised op; when
      ``n`` is odd the middle element ``h`` is carried unchanged to the next level; ``n -> n - h``.
      ``work`` (a tensor of ``x``'s shape, e.g. the tmp tile's region) receives the partial
      results; ``None`` works in a fresh copy.
    * sequential: ``acc = x[..., 0]; acc = acc + x[..., 1]; ...`` left to right, one op per element.

    Fast paths with the same bits: ``max`` / ``min`` without ``work`` use one ``amax`` / ``amin``
    when :func:`_extreme_fast` proves the result order-independent; the tree runs in a cached
    scratch of the very layout it would have used (``work``'s, or ``x.clone()``'s) with pre-built
    level views, and ``work`` then receives the scratch's final contents (the same partial results).
    ``fresh=False`` allows returning a view of that scratch (the caller copies it out at once);
    ``clobber=False`` leaves ``work`` unwritten (only its layout is used).
    """
    n = x.shape[-1]
    if kind in _EXTREMES and work is None and n > 1:
        r = _extreme_fast(x, kind)
        if r is not None:
            return r
    if tree and pairs:
        return _pairs_tree(x, kind, work if clobber else None)
    if tree:
        if n <= 1:
            w = x.clone() if work is None else work.copy_(x)
            return w[..., :1].clone()
        like = work if work is not None else torch.empty_like(x)  # empty_like: clone()'s layout
        w, steps, first = _tree_plan(like, kind)
        w.copy_(x)
        _tree_levels(steps, kind)
        if work is not None and clobber:
            work.copy_(w)
        return first.clone() if fresh else first  # fresh=False: a view of the scratch, copy at once
    fn = _REDUCE_FN[kind]
    if n <= 1:
        return x[..., 0:1].clone()
    cols = x.unbind(-1)  # x[..., j] is x[..., j:j + 1] without the size-1 axis: same elements, same loop
    acc = cols[0].clone()
    if kind == "sum":
        for c in cols[1:]:
            acc.add_(c)
    else:
        for c in cols[1:]:
            fn(acc, c, out=acc)
    return acc.unsqueeze(-1)


def _pairs_tree(x: torch.Tensor, kind: str, work: torch.Tensor | None) -> torch.Tensor:
    """The binary tree of the device's column reduction with a tmp tile (pto-isa ``TCOLSUM``,
    ``BinarySum``), over the last axis of ``x``: each level combines ADJACENT elements,
    ``w[i] = w[2i] + w[2i+1]`` for ``i < n // 2``; when ``n`` is odd the last element is then added
    onto ``w[0]``; ``n -> n // 2``. Every step rounds to the dtype: the vector unit adds FP16 in
    FP16 (no wider accumulator), as torch's CPU half add does (FP32 compute, one rounding).
    a5's TCOLSUM folds an odd level's last element onto the last pair instead of the first: the
    same sum in another order, different only in rounding and only for odd level counts; the
    simulators use the a2a3 order on both platforms (docs/numerics.md).
    ``work`` (``x``'s shape) receives the partial results; ``None`` works in a copy."""
    fn = _REDUCE_FN[kind]
    w = x.clone() if work is None else work.copy_(x)
    n = w.shape[-1]
    while n > 1:
        h = n // 2
        level = fn(w[..., 0:2 * h:2], w[..., 1:2 * h:2])  # a new tensor: the views overlap w[..., :h]
        if n % 2:
            fn(level[..., 0:1], w[..., n - 1:n], out=level[..., 0:1])
        w[..., :h].copy_(level)
        n = h
    return w[..., :1].clone()


def _reduce_last_reference(x: torch.Tensor, kind: str, tree: bool, work: torch.Tensor | None = None) -> torch.Tensor:
    """The straightforward implementation of :func:`_reduce_last` (kept for the tests: the fast
    paths above must give the same bits)."""
    fn = _REDUCE_FN[kind]
    n = x.shape[-1]
    if tree:
        w = x.clone() if work is None else work.copy_(x)
        while n > 1:
            h = n // 2
            r = n - h
            fn(w[..., :h], w[..., r:n], out=w[..., :h])
            n = r
        return w[..., :1].clone()
    acc = x[..., 0:1].clone()
    for j in range(1, n):
        fn(acc, x[..., j:j + 1], out=acc)
    return acc


def reduce(x: torch.Tensor, tmp, axis: int, kind: str) -> torch.Tensor:
    """Reference ``row_*`` (``axis=-1``) / ``col_*`` (``axis=-2``) reduction, keepdim. With a
    ``tmp`` tile the order is the binary tree, without it sequential (see :func:`_reduce_last`).
    The whole physical tile participates (padding included). A column tree pairs adjacent rows
    (TCOLSUM), a row tree halves (see :func:`_reduce_last`).

    The scratch contract (issue 13): with a ``tmp`` tile, the tree's partial results are left in
    ``tmp``'s leading region exactly as :func:`reduce_into` leaves them in the simulated core's
    memory (the device's behaviour), so a kernel that reads its scratch afterwards — which the
    PTO-W004 diagnostic warns about — gets the same bits from both executors."""
    last = axis == -1 or axis == x.dim() - 1
    if tmp is None:
        if last:
            return _reduce_last(x, kind, False)
        return _reduce_last(x.movedim(axis, -1), kind, False, pairs=True).movedim(-1, axis)
    work = region(tmp, [0] * tmp.dim(), list(x.shape), "reduction tmp_tile")
    if last:
        return _reduce_last(x, kind, True, work)
    return _reduce_last(x.movedim(axis, -1), kind, True, work.movedim(axis, -1), pairs=True).movedim(-1, axis)


def reduce_into(dst: torch.Tensor, x: torch.Tensor, tmp, axis: int, kind: str, clobber: bool = True) -> None:
    """Simulator reduction into core memory; the tree path works in the tmp tile's leading
    region (so the device's scratch really is clobbered), the sequential path needs no scratch.
    ``clobber=False`` (the kernel generator proved nothing reads the clobbered tmp tile,
    :mod:`pypto.codegen.scratch`): the same result computed without writing ``tmp`` — the tree in
    a private scratch of ``tmp``'s layout, or for ``max`` / ``min`` one ``amax`` / ``amin`` where
    that is bit-identical (:func:`_extreme_fast`)."""
    last = axis == -1 or axis == x.dim() - 1  # movedim is a no-op then (but costs a torch call)
    if tmp is not None and not clobber:
        xs = x if last else x.movedim(axis, -1)
        r = _extreme_fast(xs, kind) if kind in _EXTREMES and xs.shape[-1] > 1 else None
        if r is None:
            # the tree in a cached scratch with the tmp region's strides: the same loops, the same bits
            like = tmp if tmp.shape == x.shape else region(tmp, [0] * tmp.dim(), list(x.shape), "reduction tmp_tile")
            r = _reduce_last(xs, kind, True, like if last else like.movedim(axis, -1), fresh=False, clobber=False,
                             pairs=not last)
        dst.copy_(r if last else r.movedim(-1, axis))
        return
    work = None
    if tmp is not None:
        # (a tmp tile of the input's shape is its own leading region: region() would build the same
        # view, ~5 us for a gang's 3-D tile)
        work = tmp if tmp.shape == x.shape else region(tmp, [0] * tmp.dim(), list(x.shape), "reduction tmp_tile")
        if not last:
            work = work.movedim(axis, -1)
    if last:
        dst.copy_(_reduce_last(x, kind, tmp is not None, work, fresh=False))
    else:
        dst.copy_(_reduce_last(x.movedim(axis, -1), kind, tmp is not None, work, fresh=False,
                               pairs=True).movedim(-1, axis))


def pad_scalar(dtype: torch.dtype, pad: str):
    """The fill value of ``fillpad``: ``zero`` -> 0; ``max`` -> +inf for floats (the identity of a
    min-reduction), the dtype's largest value for integers; ``min`` -> -inf / the smallest."""
    if pad == "zero":
        return 0
    if dtype.is_floating_point:
        return float("inf") if pad == "max" else float("-inf")
    info = torch.iinfo(dtype)
    return info.max if pad == "max" else info.min


def fillpad(x: torch.Tensor, valid, pad: str) -> torch.Tensor:
    """Reference ``fillpad``: a copy of ``x`` whose elements outside ``valid`` (``None`` = the
    whole tile) are set to :func:`pad_scalar`."""
    valid = list(x.shape) if valid is None else list(valid)
    out = torch.full_like(x, pad_scalar(x.dtype, pad))
    region(out, [0] * x.dim(), valid).copy_(region(x, [0] * x.dim(), valid, "fillpad"))
    return out


def fillpad_into(dst: torch.Tensor, x: torch.Tensor, valid, pad: str) -> None:
    """Simulator ``fillpad`` into core memory (``dst`` may be ``x``'s own buffer)."""
    dst.copy_(fillpad(x, valid, pad))


def fillpad_expand(x: torch.Tensor, valid, shape, pad: str, out: torch.Tensor | None = None) -> torch.Tensor:
    """``fillpad_expand``: a ``shape`` tile of :func:`pad_scalar` with ``x``'s valid region
    (``None``: all of ``x``) copied to its top-left corner."""
    valid = list(x.shape) if valid is None else list(valid)
    r = torch.full(list(shape), pad_scalar(x.dtype, pad), dtype=x.dtype)
    region(r, [0] * x.dim(), valid).copy_(region(x, [0] * x.dim(), valid, "fillpad_expand"))
    return r if out is None else out.copy_(r)


# -- elementwise / compare / broadcast / layout helpers (pypto.ops.elementwise, compare, broadcast,
# layout). Each is used verbatim by both executors, so they agree bit for bit by construction.

_HALF = (torch.float16, torch.bfloat16)
_UNARY = {"log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "recip": torch.reciprocal,
          "exp": torch.exp, "sin": torch.sin, "cos": torch.cos}


def unary_f32(name: str, x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """A float unary op the way the vector unit does it: FP16/BF16 are computed in FP32 and rounded
    once to the operand's dtype (torch's own CPU half kernels do not all do that: FP16 sqrt differs)."""
    fn = _UNARY[name]
    if out is not None and x.dtype in _HALF:
        # the FP32 working copy takes x's own strides (for a tile: contiguous, the layout .float()
        # gives), so that on a lockstep gang's views (pypto.codegen.gang) the op still loops over
        # each tile's elements as for one tile instead of over one compacted block
        w = torch.empty_strided(x.shape, x.stride(), dtype=torch.float32).copy_(x)
        return out.copy_(fn(w, out=w))
    r = fn(x.float()).to(x.dtype) if x.dtype in _HALF else fn(x)
    if out is None:
        return r
    return out.copy_(r)


def scalar_operand(x: torch.Tensor, s, dtype: torch.dtype):
    """``x`` converted to the result ``dtype`` and the scalar ``s`` as a 0-d tensor of that dtype."""
    # a float scalar is rounded once from its double value (overflow gives inf, as the cast does)
    sv = torch.tensor(s, dtype=torch.float64 if isinstance(s, float) else None).to(dtype)
    return x.to(dtype), sv


def subs(x: torch.Tensor, s, dtype: torch.dtype, out: torch.Tensor | None = None) -> torch.Tensor:
    """``x - s`` in the result dtype (the scalar converted to it first, as TSUBS does)."""
    a, b = scalar_operand(x, s, dtype)
    return torch.sub(a, b) if out is None else torch.sub(a, b, out=out)


def maximums(x: torch.Tensor, s, dtype: torch.dtype, out: torch.Tensor | None = None) -> torch.Tensor:
    """``max(x, s)`` elementwise in the result dtype (NaN in ``x`` propagates, like ``torch.maximum``)."""
    a, b = scalar_operand(x, s, dtype)
    return torch.maximum(a, b) if out is None else torch.maximum(a, b, out=out)


def minimums(x: torch.Tensor, s, dtype: torch.dtype, out: torch.Tensor | None = None) -> torch.Tensor:
    """``min(x, s)`` elementwise in the result dtype."""
    a, b = scalar_operand(x, s, dtype)
    return torch.minimum(a, b) if out is None else torch.minimum(a, b, out=out)


_INT_SCALAR = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "maximum": torch.maximum,
               "minimum": torch.minimum}


def int_scalar_op(kind: str, x: torch.Tensor, s, out: torch.Tensor | None = None) -> torch.Tensor:
    """``x <kind> s`` on an integer tile in its own dtype (TADDS / TMULS / TMAXS ... keep the tile's
    element type): the scalar converted to that dtype first (a float toward zero), the arithmetic
    wrapping modulo ``2**w`` as the vector unit's does."""
    _, sv = scalar_operand(x, s, x.dtype)
    fn = _INT_SCALAR[kind]
    return fn(x, sv) if out is None else fn(x, sv, out=out)


def int_divs(x: torch.Tensor, s, out: torch.Tensor | None = None, valid=None) -> torch.Tensor:
    """``x / s`` on an INT16 / INT32 tile (TDIVS on A5): the scalar converted to the tile's dtype
    (a float toward zero), then integer division truncating toward zero (``int_div``: a zero divisor
    inside the valid region is a run-time error)."""
    _, sv = scalar_operand(x, s, x.dtype)
    return int_div(x, sv.expand_as(x), out=out, valid=valid, what="tile.divs")


_CMP = (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge)


def cmp(a: torch.Tensor, b, cmp_type: int, out: torch.Tensor | None = None) -> torch.Tensor:
    """Comparison ``cmp_type`` (EQ0 NE1 LT2 LE3 GT4 GE5) as a BOOL tensor; ``b`` may be a scalar."""
    fn = _CMP[cmp_type]
    return fn(a, b) if out is None else fn(a, b, out=out)


def sels(mask: torch.Tensor, a: torch.Tensor, s, dtype: torch.dtype, out: torch.Tensor | None = None):
    """``where(mask, a, s)`` in the result dtype."""
    x, y = scalar_operand(a, s, dtype)
    return torch.where(mask, x, y) if out is None else torch.where(mask, x, y, out=out)


def fill(t: torch.Tensor, value) -> torch.Tensor:
    """``t`` filled with ``value`` converted to its dtype (in place)."""
    return t.fill_(value)


def expdif(t: torch.Tensor, v: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``exp(t - v)`` as the two vector instructions it is: the difference rounded to the dtype,
    then the exponential (FP16/BF16 in FP32, rounded once). ``v`` broadcasts ([M,1] or [1,N])."""
    d = torch.sub(t, v) if out is None else torch.sub(t, v, out=out)
    return unary_f32("exp", d, out)


def tile_slice(dst: torch.Tensor, x: torch.Tensor, offsets) -> torch.Tensor:
    """Simulator ``tile.slice``: copy the sub-tile of ``x`` at ``offsets`` into ``dst``."""
    return dst.copy_(region(x, offsets, list(dst.shape), "tile.slice"))


def tile_assemble(target: torch.Tensor, src: torch.Tensor, offsets, dst: torch.Tensor | None = None):
    """``tile.assemble``: ``target`` with ``src`` written at ``offsets``. The reference returns a new
    tile; the simulator writes the result into ``dst`` (its own buffer)."""
    out = target.clone() if dst is None else dst
    if dst is not None and dst.data_ptr() != target.data_ptr():
        dst.copy_(target)
    region(out, offsets, list(src.shape), "tile.assemble").copy_(src)
    return out


def read(x: torch.Tensor, indices):
    """Element ``x[indices]`` as a Python scalar (``tile.read`` / ``tensor.read``)."""
    if len(indices) == 1 and x.dim() == 1:   # fast path: a table / length entry
        i = int(indices[0])
        if 0 <= i < x.shape[0]:
            return x[i].item()
    if len(indices) != x.dim():
        raise SimulationError(f"read: {len(indices)} indices for a rank-{x.dim()} tensor")
    for i, n in zip(indices, x.shape):
        if not 0 <= int(i) < n:
            raise SimulationError(f"read out of bounds: indices {list(map(int, indices))} in shape {list(x.shape)}")
    return x[tuple(int(i) for i in indices)].item()


def matmul(lhs: torch.Tensor, rhs: torch.Tensor, acc: torch.Tensor | None = None) -> torch.Tensor:
    """Cube ``lhs @ rhs`` (``acc + lhs @ rhs`` when ``acc`` is given) in the accumulator dtype:
    float operands as fresh FP32 copies (FP16/BF16 products are exact in FP32, sums in FP32),
    INT8 as INT32. Fresh contiguous copies make both executors run the very same BLAS call (the
    simulator's operands are views into core memory), so they agree bit for bit."""
    dt = torch.float32 if lhs.dtype.is_floating_point else torch.int32
    if lhs.dim() != 2 or rhs.dim() != 2:
        out = torch.matmul(lhs.to(dt, copy=True).contiguous(), rhs.to(dt, copy=True).contiguous())
    else:
        # the "fresh copies" live in per-thread cached buffers (allocated like a fresh copy: contiguous,
        # from the same allocator, so the same alignment class): the same BLAS call on the same data,
        # minus two allocations per call
        ta, tb = _transposed(lhs), _transposed(rhs)
        if (ta or tb) and not (dt is torch.float32 and _transposed_same_bits(lhs.shape[0], lhs.shape[1],
                                                                             rhs.shape[1], ta, tb)):
            ta = tb = False
        # a transposed operand (the source of a fused transpose_view, pypto.codegen.scratch) as its
        # natural matrix converted and handed to BLAS transposed, where that is the same product
        a = _operand_buffer(0, lhs.mT, dt).mT if ta else _operand_buffer(0, lhs, dt)
        b = _operand_buffer(1, rhs.mT, dt).mT if tb else _operand_buffer(1, rhs, dt)
        out = torch.matmul(a, b)
    return out if acc is None else acc + out


def packed_rows(v: torch.Tensor, n: int) -> torch.Tensor:
    """A packed row vector ``[..., M, C]`` tiled across ``n`` columns (``v[..., i, j % C]``)."""
    c = v.shape[-1]
    reps = -(-n // c)
    return v.repeat(*([1] * (v.dim() - 1)), reps)[..., :n]


def scalar_cast(x, dtype: torch.dtype, mode: str = "round"):
    """``pl.cast`` of a scalar: the same conversion as a one-element tile cast (rounding mode,
    saturation, NaN rules of :func:`pypto.numerics.cast.cast_tensor`), as a Python number."""
    src = torch.tensor([x], dtype=torch.float64 if isinstance(x, float) else
                       (torch.bool if isinstance(x, bool) else torch.int64))
    r = cast_tensor(src, dtype, mode)[0].item()
    return r


def acc_unless(acc: torch.Tensor, init) -> torch.Tensor | None:
    """``matmul_acc(..., init_cond=c)``: no accumulator (overwrite with the product) when ``c``
    holds, else ``acc``."""
    return None if bool(init) else acc


def matmul_into(dst: torch.Tensor, lhs: torch.Tensor, rhs: torch.Tensor, acc: torch.Tensor | None = None) -> None:
    """Simulator cube op into core memory: the product exactly as :func:`matmul` computes it (the
    same BLAS call), then ``acc + product`` written straight into ``dst`` (an elementwise FP32 add,
    the same bits as :func:`matmul`'s ``acc + out``, without its temporary). ``dst`` may be
    ``acc``'s own buffer."""
    out = matmul(lhs, rhs)
    if acc is None:
        dst.copy_(out)
    else:
        torch.add(acc, out, out=dst)


def _acc_window(t: torch.Tensor, offset, n: int) -> torch.Tensor:
    """The column window ``t[:, c:c + n]`` of an accumulator (``offset`` = ``[0, c]``, run-time
    values allowed), bounds-checked."""
    c = int(offset[1])
    if not 0 <= c <= t.shape[1] - n:
        raise SimulationError(f"tile.matmul_acc into a column window: columns {c}..{c + n - 1} are outside the "
                              f"accumulator's {t.shape[1]} columns")
    return t[:, c:c + n]


def matmul_window(acc: torch.Tensor, lhs: torch.Tensor, rhs: torch.Tensor, offset, init=False) -> torch.Tensor:
    """``tile.matmul_acc_window`` for the reference executor: a copy of ``acc`` whose column window
    at ``offset`` is ``window + lhs @ rhs`` (``lhs @ rhs`` when ``init`` holds), as :func:`matmul`."""
    out = acc.clone()
    win = _acc_window(out, offset, rhs.shape[1])
    win.copy_(matmul(lhs, rhs, None if bool(init) else win.clone()))
    return out


def matmul_window_into(dst: torch.Tensor, acc: torch.Tensor, lhs: torch.Tensor, rhs: torch.Tensor, offset,
                       init=False) -> None:
    """Simulator ``tile.matmul_acc_window``: ``dst`` (usually ``acc``'s own buffer) holds ``acc``
    with its column window at ``offset`` accumulated by ``lhs @ rhs`` (:func:`matmul_into`)."""
    if dst.data_ptr() != acc.data_ptr():
        dst.copy_(acc)
    win = _acc_window(dst, offset, rhs.shape[1])
    matmul_into(win, lhs, rhs, None if bool(init) else win)


def gang_matmul_into(dst: torch.Tensor, lhs: torch.Tensor, rhs: torch.Tensor, acc: torch.Tensor | None = None) -> None:
    """:func:`matmul_into` for a lockstep gang (``[n, M, K] x [n, K, N]``, :mod:`pypto.codegen.gang`):
    every task's product is the very BLAS call that task makes alone on its own tiles.

    Where that is proven (:func:`_bmm_is_per_item_sgemm`), the gang is one ``torch.bmm`` whose output
    items are 64-byte aligned and not adjacent: for a non-contiguous output ATen's CPU bmm splits
    along the batch and calls, per item, the same ``sgemm`` with the same arguments (sizes,
    transposes, leading dimensions, alpha 1, beta 0) as ``torch.matmul`` of the task's 2-D operands,
    every matrix 64-byte aligned as a fresh allocation is; a contiguous output would take MKL's
    ``sgemm_batch`` instead, which may block the sums differently, and fewer than 400 multiply-adds
    a naive loop. The output is ``dst`` itself where its items qualify (:func:`_bmm_target`), else a
    padded stack copied into ``dst``. The operands (:func:`_gang_operand`): one whose items are all
    the same bits (a tile every task loads from one place) is converted once and given to bmm as
    that one matrix repeated (stride 0: the same matrix, the same call per item); the others are
    converted for the whole gang in one call where that gives every task's own bits
    (:data:`_SAME_BITS_ANYWHERE`, :data:`_NAN_PAYLOAD_ONLY`), member by member otherwise.
    Elsewhere task by task."""
    n = lhs.shape[0]
    if n < 2 or lhs.dim() != 3 or rhs.dim() != 3 or not lhs.dtype.is_floating_point:
        for k in range(n):
            matmul_into(dst[k], lhs[k], rhs[k], None if acc is None else acc[k])
        return
    m, kk = lhs.shape[1:]
    nn = rhs.shape[2]
    if not _bmm_is_per_item_sgemm(m, kk, nn):
        for k in range(n):
            matmul_into(dst[k], lhs[k], rhs[k], None if acc is None else acc[k])
        return
    ta, tb = _transposed(lhs), _transposed(rhs)
    if (ta or tb) and not _transposed_same_bits(m, kk, nn, ta, tb):
        ta = tb = False
    # (a transposed operand's natural view is a new tensor each call: _same_items' cached views would
    # be made again every time, ~7 us; its stacked conversion is every task's own all the same)
    a = _gang_operand(0, lhs.mT, False).mT if ta else _gang_operand(0, lhs)
    b = _gang_operand(1, rhs.mT, False).mT if tb else _gang_operand(1, rhs)
    c = dst if acc is None and _bmm_target(dst) else _gang_buffer(2, n, m, nn)
    torch.bmm(a, b, out=c)
    if c is dst:
        return
    if acc is None:
        dst.copy_(c)
    else:
        torch.add(acc, c, out=dst)


# CPU bmm = per-item sgemm, the evidence (torch 2.13.0+cpu, MKL 2024.2, x86-64 AVX512; traced with
# gdb breakpoints on sgemm_ / cblas_sgemm_batch and with MKL_VERBOSE, 1 and 2 threads):
# torch.matmul of [M, K] x [K, N] FP32 calls sgemm_ once; torch.bmm with a non-contiguous ``out``
# calls sgemm_ once per item with identical (transa, transb, m, n, k, lda, ldb, ldc) -- ATen's
# "split along the batch dimension" branch, per item the addmm path mm takes --, while a contiguous
# ``out`` calls cblas_sgemm_batch once, and M * K * N < 400 calls no BLAS at all (ATen's naive small
# kernel; mm still calls sgemm_). mkldnn takes FP32 matmuls only under a reduced FP32 matmul
# precision, which this gate refuses, and a build without MKL is not covered by the trace. Pinned by
# tests/runtime/test_gang_matmul_bits.py (MKL_VERBOSE call lists, and bits on random, subnormal,
# inf and NaN inputs in several shapes at 1 and 2 threads) and benchmarks/check_fastpaths.py.
_MKL = torch.backends.mkl.is_available()


# Transposed operands. A cube operand the kernel generator passes as ``src.transpose(-2, -1)`` (the
# source of a ``tile.transpose_view`` whose move into Left / Right only the matmul reads,
# :func:`pypto.codegen.scratch.fused_transposes`) is, item by item, a transposed contiguous matrix.
# Materialising it (the task's FP32 copy of the moved tile) is a strided 16-bit transpose, ~5 us a
# 128 x 128 BF16 tile; converting the natural matrix (a contiguous copy) and handing it to BLAS
# transposed is a fraction of that, and the same product where sgemm with the transposed flag sums
# in the same order as sgemm of the materialised copy. That is not so for every shape (MKL 2024.2:
# M = 1, 2, 3 take other kernels, whose sums differ in the last bits), so it is checked, once per
# shape, transposition, thread count and precision setting (:func:`_transposed_same_bits`), on
# operands whose sums round differently in any other order; where it fails, the operand is
# materialised as before. A BLAS kernel's order of operations does not depend on the values (no
# branch on data), so operands summed in the same order on those probes are summed in the same
# order on any others; the order of the two factors inside each multiply-add does not change a
# finite product, but decides which of two meeting NaNs survives (M = 2 with both operands
# transposed: the same sums, other NaN signs), so the probes carry NaNs of distinct payloads too.
# Pinned by tests/runtime/test_gang_matmul_bits.py.
_TRANSPOSED_SAME: dict = {}   # (m, k, n, lhs transposed, rhs transposed, threads, settings) -> bool


def _transposed(x: torch.Tensor) -> bool:
    """Whether the trailing two axes of ``x`` are a transposed contiguous matrix (every item of a gang
    view too): ``x.mT``'s items are contiguous, and ``x`` is not itself contiguous-looking (a
    vector's strides say nothing)."""
    r, c = x.shape[-2], x.shape[-1]
    return r > 1 and c > 1 and x.stride(-2) == 1 and x.stride(-1) == r


def _transposed_same_bits(m: int, k: int, n: int, ta: bool, tb: bool) -> bool:
    """Whether ``lhs @ rhs`` (``[m, k] x [k, n]``, FP32) with the transposed operands handed to BLAS
    transposed gives the bits of the product of materialised copies (see above): in
    :func:`matmul`'s call and in the gang's per-item bmm alike. Checked once per key."""
    try:
        settings = (torch.get_float32_matmul_precision(), _MKLDNN_FP32())
    except RuntimeError:
        return False
    key = (m, k, n, ta, tb, torch.get_num_threads(), settings)
    got = _TRANSPOSED_SAME.get(key)
    if got is None:
        got = _probe_transposed(m, k, n, ta, tb)
        if len(_TRANSPOSED_SAME) > 256:
            _TRANSPOSED_SAME.clear()
        _TRANSPOSED_SAME[key] = got
    return got


def _probe_transposed(m: int, k: int, n: int, ta: bool, tb: bool) -> bool:
    """The check of :func:`_transposed_same_bits`: BF16-valued operands spread over 2^-24..2^24 (sums
    whose rounding depends on the order), three pairs, then two with NaN payloads, infs and zeros
    mixed in (which NaN survives depends on the operands' order in each multiply-add); the product of fresh contiguous copies (the
    task's call) against the transposed forms: ``torch.matmul`` and the gang's bmm (two items and a
    stride-0 repeated operand, into a padded output, as :func:`gang_matmul_into` calls it)."""
    g = torch.Generator().manual_seed(m * 1_000_003 + k * 1_009 + n * 7 + 2 * ta + tb)

    def values(r: int, c: int, special: bool) -> torch.Tensor:
        x = torch.randn(r, c, generator=g) * torch.exp2(torch.randint(-24, 25, (r, c), generator=g).float())
        x = x.to(torch.bfloat16).float()
        if special:
            # NaNs of both signs with distinct payloads (where two meet, the one the instruction takes
            # first wins: that shows the operands' order inside each multiply-add), infs, zeros
            bits = x.view(torch.int32).view(-1)
            pick = torch.randint(0, bits.numel(), (max(2, bits.numel() // 16),), generator=g)
            pay = torch.randint(1, 0x7F, pick.shape, generator=g, dtype=torch.int32) << 16
            sign = torch.randint(0, 2, pick.shape, generator=g, dtype=torch.int32) << 31
            bits[pick] = (0x7F800000 | pay) | sign
            more = torch.randint(0, bits.numel(), (max(1, bits.numel() // 64),), generator=g)
            bits[more] = torch.tensor([0x7F800000, -0x00800000, 0, -0x80000000],
                                      dtype=torch.int32)[torch.randint(0, 4, more.shape, generator=g)]
        return x

    def stack(items: list, trans: bool) -> torch.Tensor:
        # 64-byte aligned items, as _gang_buffer's; a transposed operand as the natural items' .mT
        r, c = items[0].shape
        if trans:
            r, c = c, r
        numel = r * c
        buf = torch.empty(len(items), -(-numel // 16) * 16)
        view = buf[:, :numel].view(len(items), r, c)
        for d, x in zip(view.unbind(0), items):
            d.copy_(x.mT if trans else x)
        return view.mT if trans else view

    for special in (False, False, False, True, True):
        a = [values(m, k, special), values(m, k, special)]
        b = [values(k, n, special), values(k, n, special)]
        ref = [torch.matmul(x, y).view(torch.int32) for x, y in zip(a, b)]
        ao = [x.mT.contiguous().mT if ta else x for x in a]
        bo = [y.mT.contiguous().mT if tb else y for y in b]
        if not all(torch.equal(torch.matmul(x, y).view(torch.int32), r) for x, y, r in zip(ao, bo, ref)):
            return False
        out = torch.empty(2, -(-m * n // 16) * 16 + 16)
        c = out[:, :m * n].view(2, m, n)
        torch.bmm(stack(a, ta), stack(b, tb), out=c)
        if not all(torch.equal(c[i].view(torch.int32), ref[i]) for i in range(2)):
            return False
        # an operand every member holds alike: one matrix repeated with stride 0
        sa, sb = stack(a[:1], ta), stack(b[:1], tb)
        torch.bmm(sa.expand(2, m, k), stack(b, tb), out=c)
        if not all(torch.equal(c[i].view(torch.int32), torch.matmul(a[0], b[i]).view(torch.int32)) for i in range(2)):
            return False
        torch.bmm(stack(a, ta), sb.expand(2, k, n), out=c)
        if not all(torch.equal(c[i].view(torch.int32), torch.matmul(a[i], b[0]).view(torch.int32)) for i in range(2)):
            return False
    return True


# Sources whose conversion to FP32 gives the same bits wherever an element sits in the copied tensor:
# FP32 (a copy) and BF16 (a 16-bit shift in the vectorised and the scalar loop alike; every pattern
# checked in both, tests/runtime/test_gang_matmul_bits.py). FP16 is not: torch's vectorised loop
# turns the NaN 0x7E00 into 0x7FC00000, its scalar tail (the last len % 8 elements of a contiguous
# copy, 8 = the vector width) into 0x7FFFFFFF -- so a whole-gang conversion, whose tails fall
# elsewhere than the tasks' own (and, with threads, where the copy is split), may give a NaN
# another payload. Every other FP16 pattern converts to the same bits in every loop (all 65,536
# checked: tests/runtime/test_gang_matmul_bits.py), which is what :data:`_NAN_PAYLOAD_ONLY` says.
_SAME_BITS_ANYWHERE = (torch.float32, torch.bfloat16)

# Sources converted for the whole gang in one call all the same, because only their NaNs' payloads
# can come out otherwise than in each task's own conversion: a converted stack whose sum is not NaN
# holds no NaN (a NaN addend makes the sum NaN), so it is every task's own conversion bit for bit; a
# sum that is NaN (a NaN, or inf - inf: a harmless false alarm) has the stack converted again member
# by member. Every other source is converted member by member.
_NAN_PAYLOAD_ONLY = (torch.float16,)


def _gang_operand(slot: int, x: torch.Tensor, shared: bool = True) -> torch.Tensor:
    """A gang operand ``x`` (``[n, rows, cols]``) converted to FP32 exactly as each task converts its
    own tile: a stack of 64-byte aligned matrices (``slot`` picks the buffer), or, where every item
    holds the same bits (looked for unless ``shared`` is false), one such matrix repeated with
    stride 0."""
    n, rows, cols = x.shape
    views = _item_views(x) if shared else None
    if shared and _same_items(x, views):
        # every task's tile holds these bits (a tile every task loads from one place): the first
        # task's own conversion is every task's, and bmm multiplies each item by that one matrix (a
        # stride-0 batch: ATen selects the same 2-D matrix per item, the same sgemm call)
        one, repeated = _gang_one(slot, n, rows, cols)
        one.copy_(views[3])
        return repeated
    buf = _gang_buffer(slot, n, rows, cols)
    if x.dtype in _SAME_BITS_ANYWHERE:
        buf.copy_(x)
        return buf
    if x.dtype in _NAN_PAYLOAD_ONLY:
        buf.copy_(x)
        if not bool(torch.isnan(buf.sum())):
            return buf
    for d, t in zip(buf.unbind(0), x.unbind(0)):
        d.copy_(t)
    return buf


def _same_items(x: torch.Tensor, views: tuple | None = None) -> bool:
    """Whether every item ``x[k]`` of a gang operand holds the same bits as ``x[0]`` (compared as
    integers: NaN payloads, -0 and all). The first elements of the first two items first: a cheap no
    for most gangs that differ (a numpy scalar compare; this runs once per operand of every gang
    matmul), then one ``torch.equal`` of the items against their neighbours (integers: bitwise; it
    stops at the first chunk that differs). ``views``: :func:`_item_views` of ``x`` where the caller
    has them."""
    v, tail, head, _ = views or _item_views(x)
    if len(v) < 2 or v.size == 0:   # one item, or none with any element: alike
        return True
    if v[0, 0, 0] != v[1, 0, 0]:
        return False
    return torch.equal(tail, head)


# _item_views' cache: id(x) -> (weak reference to x, its views). A gang's operand is a view built once
# per kernel (pypto/codegen/gang.py) and passed again on every call, so its integer, numpy and
# shifted views are made once, not per call. Keyed by id with the weak reference checked (an id is
# reused only after its object died; the reference's callback drops the entry when it dies, so the
# cached views do not keep core memory alive); the views share x's memory, so they see its data as
# it is at each call. The address, strides and shape are checked too (0.3 us): a tensor changed in
# place (``set_``, ``as_strided_``) gets its views made again rather than stale ones.
_ITEM_VIEWS: dict[int, tuple] = {}


def _item_views(x: torch.Tensor):
    """``x`` (``[n, ...]``) as integers (the widest whose layout allows), as a numpy array, and its
    items ``1..n-1`` and ``0..n-2``, and its first item ``x[0]`` (cached per tensor object, see
    above)."""
    key = id(x)
    got = _ITEM_VIEWS.get(key)
    where = (x.data_ptr(), x.stride(), x.shape)
    if got is not None and got[0]() is x and got[2] == where:
        return got[1]
    try:
        w = x.view(torch.int64)   # 4 FP16 / 2 FP32 elements a compare where the layout allows
    except RuntimeError:
        w = x.view({1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()])
    views = (w.numpy(), w[1:], w[:-1], x[0] if len(x) else None)

    def drop(ref, key=key):
        entry = _ITEM_VIEWS.get(key)
        if entry is not None and entry[0] is ref:
            _ITEM_VIEWS.pop(key, None)

    if len(_ITEM_VIEWS) > 512:   # a bound for operands whose tensors outlive their use
        _ITEM_VIEWS.clear()
    _ITEM_VIEWS[key] = (weakref.ref(x, drop), views, where)
    return views


def _bmm_target(dst: torch.Tensor) -> bool:
    """Whether the gang's bmm may write straight into ``dst``: FP32 items that are contiguous
    ``[M, N]`` matrices (the strides of the task's fresh product) at 64-byte aligned addresses (its
    alignment class), not adjacent (so ``dst`` is not contiguous: one sgemm per item, see above).
    (The operands are converted copies: ``dst`` may share memory with the source tiles.)"""
    if dst.dtype != torch.float32 or dst.dim() != 3:
        return False
    _, m, nn = dst.shape
    s0, s1, s2 = dst.stride()
    if s2 != 1 or s1 != nn or s0 <= m * nn or (s0 * 4) % 64 or dst.data_ptr() % 64:
        return False
    return True


def _mkldnn_fp32_reader() -> Callable[[], str]:
    """A reader of ``torch.backends.mkldnn.matmul.fp32_precision`` ("none" where torch has no such
    setting): torch's own C getter bound once where the setting is torch's ``_FP32Precision`` (its
    property reads that very getter; the gate below runs once per gang matmul), else the attribute."""
    mk = getattr(getattr(torch.backends, "mkldnn", None), "matmul", None)
    if mk is None:
        return lambda: "none"
    getter = getattr(torch._C, "_get_fp32_precision_getter", None)
    if getter is not None and type(mk).__name__ == "_FP32Precision":
        backend, op = mk.backend, mk.op
        return lambda: getter(backend, op)
    return lambda: getattr(mk, "fp32_precision", "none")


_MKLDNN_FP32 = _mkldnn_fp32_reader()


def _bmm_is_per_item_sgemm(m: int, k: int, n: int) -> bool:
    """Whether ``torch.bmm`` into a padded (non-contiguous) FP32 output is one ``sgemm`` per item with
    the arguments of each item's ``torch.matmul`` (see the evidence above). Read per call: the
    settings may change between runs. Where torch refuses to tell (it raises when the legacy and the
    per-backend precision settings were mixed) the answer is no: task by task is always exact."""
    if not _MKL or m * k * n < 400:
        return False
    try:
        return torch.get_float32_matmul_precision() == "highest" and _MKLDNN_FP32() in ("none", "ieee")
    except RuntimeError:
        return False


def _gang_buffer(slot: int, n: int, rows: int, cols: int) -> torch.Tensor:
    """A per-thread ``[n, rows, cols]`` FP32 stack whose items are contiguous matrices 64-byte aligned
    (as a fresh allocation), with a 64-byte gap after each product item (slot 2) so that the stack is
    not contiguous (the bmm branch above); grown when a larger gang comes. The view itself is cached
    per ``(slot, n, rows, cols)`` (slicing a tensor costs more than the dict look-up, and a gang
    matmul takes three of them); a cached view keeps the buffer it was cut from alive, so growing a
    buffer drops the cached views."""
    views = _TLS.__dict__.setdefault("gmmv", {})
    key = (slot, n, rows, cols)
    view = views.get(key)
    if view is None:
        cache = _TLS.__dict__.setdefault("gmm", {})
        bkey = (slot, rows, cols)
        numel = rows * cols
        stride = -(-numel // 16) * 16 + (16 if slot == 2 else 0)
        buf = cache.get(bkey)
        if buf is None or buf.shape[0] < n:
            if len(cache) > 24:
                cache.clear()
            buf = cache[bkey] = torch.empty(max(n, 48), stride, dtype=torch.float32)
            views.clear()
        if len(views) > 96:
            views.clear()
        view = views[key] = buf[:n, :numel].view(n, rows, cols)
    return view


def _gang_one(slot: int, n: int, rows: int, cols: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The first matrix of :func:`_gang_buffer`'s stack ``(slot, 1, rows, cols)`` as ``[rows, cols]``
    and that matrix repeated ``n`` times with stride 0 (an operand every task holds alike); both views
    cached like the stack's."""
    views = _TLS.__dict__.setdefault("gmmv", {})
    key = (slot, -n, rows, cols)
    got = views.get(key)
    if got is None:
        one = _gang_buffer(slot, 1, rows, cols)
        got = views[key] = (one[0], one.expand(n, rows, cols))
    return got


def _operand_buffer(slot: int, x: torch.Tensor, dt: torch.dtype) -> torch.Tensor:
    cache = _TLS.__dict__.setdefault("mm", {})
    key = (slot, tuple(x.shape), dt)
    buf = cache.get(key)
    if buf is None:
        if len(cache) > 32:
            cache.clear()
        buf = cache[key] = torch.empty(x.shape, dtype=dt)
    return buf.copy_(x)  # copy_ converts exactly like x.to(dt) (FP16/BF16/INT8 -> FP32/INT32 is exact)


def extract(x: torch.Tensor, offsets, shape, transpose: bool = False) -> torch.Tensor:
    """``tile.extract``: a copy of the region of ``x`` (transposed when asked)."""
    r = region(x, offsets, shape, "tile.extract")
    return (r.t() if transpose else r).clone()


def tensor_matmul(a: torch.Tensor, b: torch.Tensor, out_dtype=None, a_trans=False, b_trans=False,
                  acc=None) -> torch.Tensor:
    """Reference ``tensor.matmul`` (before lowering): the cube product, then a ``rint`` cast to
    ``out_dtype`` (default: the operand dtype) when it differs from the accumulator dtype."""
    if a.dim() > 2 or b.dim() > 2:  # batched: one cube matmul per (broadcast) batch
        from pypto.ops.support.matmul_ext import batch_matmul  # noqa: PLC0415 - matmul_ext imports core

        out = batch_matmul(a, b, None, None, a_trans, b_trans, acc)
    else:
        out = matmul(a.t() if a_trans else a, b.t() if b_trans else b, acc)
    dtype = out_dtype if out_dtype is not None else (a.dtype if acc is None else out.dtype)
    return out if dtype == out.dtype else cast(out, dtype, "rint")


def relu(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``max(x, 0)`` (NaN propagates); torch.relu has no ``out=``, so both executors use this."""
    return torch.clamp_min(x, 0) if out is None else torch.clamp_min(x, 0, out=out)


def kernel_where() -> str:
    """``file:line`` of the generated kernel instruction running now (the kernel module's SPANS
    table), for run-time errors and race records raised from helpers the kernel called."""
    f = sys._getframe(1)
    while f is not None:
        spans = f.f_globals.get("SPANS")
        if spans is not None and "KERNEL_NAME" in f.f_globals:
            sp = spans.get(f.f_lineno)
            if sp is not None:
                return f"{sp[0]}:{sp[1]}"
        f = f.f_back
    return "<unknown>"
