"""Run-time helpers of the view and element-write ops (:mod:`pypto.ops.views`), shared by both
executors (re-exported by :mod:`pypto.ops.support` as ``_pto.<name>``)."""
from __future__ import annotations

import contextvars
import weakref

import torch

from pypto.errors import SimulationError


def reinterpret(x: torch.Tensor, dtype: torch.dtype, shape=None, out: torch.Tensor | None = None) -> torch.Tensor:
    """``reinterpret_view``: the bytes of ``x`` (row-major) read as ``dtype``; the innermost extent
    scaled by the byte ratio, or reshaped to ``shape`` (same byte count)."""
    b = x.contiguous().view(torch.uint8)
    r = b.reshape(-1).view(dtype)
    if shape is None:
        shape = list(x.shape[:-1]) + [x.shape[-1] * x.element_size() // r.element_size()]
    r = r.reshape(list(shape))
    if out is None:
        return r.clone()
    return out.copy_(r)


def layout_view(x: torch.Tensor, shape, src_dn: bool, dst_dn: bool) -> torch.Tensor:
    """``tensor.view`` involving the DN layout, zero-copy: the same global-memory bytes as another
    shape / layout. ``x`` is the logical view of a tensor (a DN tensor is a torch view whose
    trailing pair is column-major, ``x.mT`` row-major). Without ``shape``: the layout-only flip,
    ``x.mT`` (shape's trailing pair swapped). With ``shape``: the packed bytes of ``x`` in its
    layout, read as ``shape`` in the target layout; ``x`` must be packed (no window of a larger
    tensor), as the reference requires."""
    if shape is None:
        return x.mT if src_dn != dst_dn else x
    packed = x.mT if src_dn else x
    if not packed.is_contiguous():
        raise SimulationError(f"tensor.view: reinterpreting a {'DN' if src_dn else 'ND'} tensor of shape "
                              f"{list(x.shape)} as {[int(d) for d in shape]} needs a packed source (its elements "
                              f"consecutive in its layout), got a strided window of a larger tensor")
    tgt = [int(d) for d in shape]
    if dst_dn:
        tgt[-2], tgt[-1] = tgt[-1], tgt[-2]
    v = packed.view(tgt)
    return v.mT if dst_dn else v


def swap_last2(shape) -> list:
    """``shape`` with its last two extents swapped (the row-major buffer behind a DN tensor)."""
    shape = list(shape)
    shape[-2], shape[-1] = shape[-1], shape[-2]
    return shape


def host_dn(x: torch.Tensor) -> torch.Tensor:
    """A DN parameter of the program's entry as the program sees the caller's buffer: its bytes in
    order, the trailing pair column-major (the simulator's host boundary does the same)."""
    x = x.contiguous()   # the bytes the host hands over (the reference uploads .contiguous())
    return x.reshape(*x.shape[:-2], x.shape[-1], x.shape[-2]).mT


def _index(x: torch.Tensor, indices, op: str) -> tuple:
    idx = tuple(int(i) for i in indices)
    if len(idx) != x.dim():
        raise SimulationError(f"{op}: {len(idx)} indices for a rank-{x.dim()} operand")
    for i, n in zip(idx, x.shape):
        if not 0 <= i < n:
            raise SimulationError(f"{op} out of bounds: indices {list(idx)} in shape {list(x.shape)}")
    return idx


# called with the element view an orchestration-level write is about to change (the run's undo log
# of in-place InOut tensors, pypto.runtime.undo), or None
ORCH_WRITES: contextvars.ContextVar = contextvars.ContextVar("pypto_orch_writes", default=None)


def write_(x: torch.Tensor, indices, value) -> torch.Tensor:
    """``tensor.write``: set ``x[indices]`` to ``value`` converted to ``x``'s dtype, in place."""
    idx = _index(x, indices, "write")
    note = ORCH_WRITES.get()
    if note is not None:
        note(x[idx])
    x[idx] = value
    return x


def write(x: torch.Tensor, indices, value, out: torch.Tensor | None = None) -> torch.Tensor:
    """``tile.write``: ``x`` with ``x[indices] = value`` (a copy; ``out`` may be ``x``'s own buffer)."""
    idx = _index(x, indices, "write")
    r = x.clone() if out is None else (out if out.data_ptr() == x.data_ptr() else out.copy_(x))
    r[idx] = value
    return r


def reshape_into(dst: torch.Tensor, x: torch.Tensor) -> None:
    """Simulator ``tile.reshape`` into ``dst``: ``dst.copy_(x.reshape(dst.shape))``, the reshaped view
    of ``x`` made once per pair of tile views instead of per call (a view and its shape cost two
    torch calls, each several microseconds inside a Qwen3-layer call: ``pa_update`` reshapes four
    times per gang). The views the simulator hands over are the same tensor objects call after
    call (:class:`pypto.runtime.cores.CoreMemory` caches them), so the pair is recognised by
    identity: keyed by ``id`` and checked by weak references whose callbacks drop the entry when
    either tensor dies (an id is never taken for another tensor, and the cache keeps nothing
    alive: the kept view refers to ``x``'s root tensor, so only views ``x`` are cached). Where ``x``
    cannot be viewed in ``dst``'s shape (a strided source: ``reshape`` copies) nothing is kept and
    the reshape is made each call: a kept copy would go stale."""
    key = (id(dst), id(x))
    hit = _RESHAPED.get(key)
    if hit is not None and hit[0]() is dst and hit[1]() is x:
        dst.copy_(hit[2])
        return
    try:
        r = x.view(dst.shape)     # what reshape returns whenever a view exists
    except RuntimeError:
        dst.copy_(x.reshape(dst.shape))
        return
    if x._base is not None:
        if len(_RESHAPED) >= 4096:
            _RESHAPED.clear()
        drop = lambda _, k=key: _RESHAPED.pop(k, None)   # noqa: E731
        _RESHAPED[key] = (weakref.ref(dst, drop), weakref.ref(x, drop), r)
    dst.copy_(r)


_RESHAPED: dict = {}   # (id(dst), id(x)) -> (weakref to dst, weakref to x, x viewed in dst's shape)
