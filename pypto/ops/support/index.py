"""Run-time helpers of the index ops (:mod:`pypto.ops.index`): gather, scatter, scatter_update,
mgather; shared by both executors (re-exported by :mod:`pypto.ops.support` as ``_pto.<name>``).

Indices are read as **unsigned 32-bit** values (as the device does: ``-1`` is ``0xFFFFFFFF``, out
of range). Only the elements inside the index tile's valid region are used; the padding of an
index tile (zeros after a load, or the poison byte) is never dereferenced. An index out of range
where the device's result is undefined raises :class:`SimulationError` naming the op, the index
and the bound (no silent wrap); ``mgather`` has the reference's explicit policies instead.
Duplicate destination indices in a scatter: the **last** element in row-major order wins (the
order of a sequential scatter).
"""
from __future__ import annotations

import torch

from pypto.errors import SimulationError
from pypto.ops.support.core import _RECORDER, STORE
from pypto.ops.support.elementwise import _inside


_BITS = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


def _bits(x: torch.Tensor) -> torch.Tensor:
    """The integer view of a float tensor: data is moved as bit patterns, since torch's own
    ``gather`` is not a bit copy for half types (BF16 NaNs come out as 0xFFFF, FP16 signalling NaNs
    are quieted: measured on torch 2.13 CPU)."""
    return x.view(_BITS[x.dtype]) if x.dtype in _BITS else x


def _u32(idx: torch.Tensor) -> torch.Tensor:
    """Indices as int64 values of their unsigned 32-bit (or 16-bit) patterns."""
    w = idx.element_size() * 8
    return idx.to(torch.int64) & ((1 << w) - 1) if w <= 32 else idx.to(torch.int64)


def _check(op: str, idx: torch.Tensor, mask: torch.Tensor, bound: int) -> torch.Tensor:
    """``idx`` with the positions outside ``mask`` set to 0; error for an index >= ``bound`` inside."""
    bad = mask & (idx >= bound)
    if bool(bad.any()):
        pos = bad.nonzero()[0].tolist()
        raise SimulationError(f"{op}: index {int(idx[tuple(pos)])} at {pos} is out of range [0, {bound}) "
                              f"(undefined on the device)")
    return torch.where(mask, idx, torch.zeros_like(idx))


def _nd(nd: str):
    """``"2,8,8|2,3,8"`` -> the source and index shapes of a rank-N gather."""
    a, b = nd.split("|")
    return [int(x) for x in a.split(",")], [int(x) for x in b.split(",")]


def gather(src: torch.Tensor, indices: torch.Tensor, dim, valid=None, nd: str | None = None,
           out: torch.Tensor | None = None):
    """``tile.gather``: ``dst[i, j] = src.flat[indices[i, j]]`` (``dim`` None: the flat index over
    the row-major tile, the reference's form) or ``src[i, indices[i, j]]`` (``dim`` -1: the form
    ``tensor.gather`` lowers to). ``valid``: the index tile's valid shape."""
    idx = _u32(indices)
    mask = _inside(idx, valid)
    sb = _bits(src)
    if nd is not None:
        # a rank-N gather (tensor.gather) on tiles flattened to 2-D: back to N-d, torch.gather, flatten
        sshape, ishape = _nd(nd)
        d = dim % len(sshape)
        i = _check("gather", idx, mask, sshape[d]).reshape(ishape)
        r = torch.gather(sb.reshape(sshape), d, i).reshape(indices.shape).view(src.dtype)
        return r if out is None else out.copy_(r)
    if dim is None:
        flat = sb.reshape(-1)
        r = flat[_check("gather", idx, mask, flat.numel())]
    else:
        rows = idx.shape[0]
        if rows > src.shape[0]:
            raise SimulationError(f"gather: {rows} index rows for {src.shape[0]} source rows")
        r = torch.gather(sb[:rows], 1, _check("gather", idx, mask, src.shape[1]))
    r = r.view(src.dtype)
    return r if out is None else out.copy_(r)


def _last_wins(flat_dst: torch.Tensor, pos: torch.Tensor, vals: torch.Tensor) -> None:
    """``flat_dst[pos[k]] = vals[k]`` in order k = 0, 1, ...: for duplicate positions the last k wins
    (deterministic, unlike ``index_put_`` with duplicates)."""
    if pos.numel() == 0:
        return
    order = torch.arange(pos.numel())
    last = torch.full((flat_dst.numel(),), -1, dtype=torch.int64).scatter_reduce(0, pos, order, "amax")
    hit = last >= 0
    flat_dst[hit] = vals[last[hit]]


def scatter(dst: torch.Tensor, src: torch.Tensor, indexes: torch.Tensor, dim, valid=None,
            out: torch.Tensor | None = None) -> torch.Tensor:
    """``tile.scatter``: a copy of ``dst`` with ``dst.flat[indexes[i, j]] = src[i, j]`` (``dim``
    None) or ``dst[i, indexes[i, j]] = src[i, j]`` (``dim`` -1), for the positions inside the index
    tile's valid region, in row-major order (the last duplicate wins)."""
    r = _bits(dst).clone()
    idx = _u32(indexes)
    mask = _inside(idx, valid)
    if dim is None:
        bound = r.numel()
        pos = _check("scatter", idx, mask, bound)
    else:
        if idx.shape[0] > r.shape[0]:
            raise SimulationError(f"scatter: {idx.shape[0]} index rows for {r.shape[0]} destination rows")
        pos = _check("scatter", idx, mask, r.shape[1]) + torch.arange(idx.shape[0])[:, None] * r.shape[1]
    flat = r.view(-1) if r.is_contiguous() else r.reshape(-1)
    _last_wins(flat, pos[mask], _bits(src.to(dst.dtype))[mask])
    if not r.is_contiguous():
        r = flat.view(r.shape)
    r = r.view(dst.dtype)
    return r if out is None else out.copy_(r)


def scatter_update(x: torch.Tensor, index: torch.Tensor, src: torch.Tensor, valid=None,
                   out: torch.Tensor | None = None) -> torch.Tensor:
    """``scatter_update``: a copy of ``x`` whose row ``index.flat[k]`` is ``src[k, :]`` for every k
    (row-major over the index tile's valid region; the last duplicate wins)."""
    r = x.clone()
    idx = _u32(index)
    mask = _inside(idx, valid).reshape(-1)
    flat = idx.reshape(-1)
    if src.shape[0] < flat.numel():
        raise SimulationError(f"scatter_update: {flat.numel()} indices but only {src.shape[0]} source rows")
    rows = _check("scatter_update", flat, mask, r.shape[0])
    ks = torch.nonzero(mask).flatten()
    last = {}
    for k in ks.tolist():
        last[int(rows[k])] = k
    rb, sb = _bits(r), _bits(src.to(x.dtype))
    for row, k in last.items():
        rb[row] = sb[k]
    return r if out is None else out.copy_(r)


_OOB = ("undefined", "clamp", "wrap", "zero")


def mgather(mem: torch.Tensor, idx: torch.Tensor, coalesce: str, oob: str, valid=None,
            out: torch.Tensor | None = None) -> torch.Tensor:
    """``tile.mgather`` (Vec form): ``coalesce="row"``: result row ``i`` is ``mem``'s row
    ``idx.flat[i]`` (an ``[R, 1]`` or ``[1, R]`` index tile gives ``R`` rows of ``mem``'s width);
    ``"elem"``: ``result[i, j] = mem.flat[idx[i, j]]``. Out-of-range indices (``>=`` the row count /
    element count, reading indices as unsigned 32-bit): ``clamp`` to the last, ``wrap`` modulo the
    bound, ``zero`` gives zeros, ``undefined`` raises :class:`SimulationError`. Rows / elements
    outside the index tile's valid region are zero."""
    u = _u32(idx)
    mask = _inside(u, valid)
    if coalesce == "row":
        mask = mask.reshape(-1)
        u = u.reshape(-1)
        bound = mem.shape[0]
        table = mem.reshape(mem.shape[0], -1)
    else:
        bound = mem.numel()
        table = mem.reshape(-1)
    if oob not in _OOB:
        raise SimulationError(f"mgather: unknown gather_oob {oob!r}; one of {', '.join(_OOB)}")
    outside = mask & (u >= bound)
    if bool(outside.any()):
        if oob == "undefined":
            pos = outside.nonzero()[0].tolist()
            raise SimulationError(f"mgather: index {int(u[tuple(pos)])} at {pos} is out of range [0, {bound}) "
                                  f"with gather_oob='undefined' (undefined on the device; pass gather_oob="
                                  f"'clamp' / 'wrap' / 'zero' to define it)")
        if oob == "clamp":
            u = u.clamp_max(bound - 1)
        elif oob == "wrap":
            u = torch.remainder(u, bound)
    keep = mask & (u < bound)                 # "zero": out-of-range positions stay zero
    safe = torch.where(keep, u, torch.zeros_like(u))
    g = _bits(table)[safe]
    zero = torch.zeros((), dtype=g.dtype)
    g = torch.where(keep.reshape(keep.shape + (1,) * (g.dim() - keep.dim())), g, zero).view(mem.dtype)
    return g if out is None else out.copy_(g)


def mscatter(src: torch.Tensor, idx: torch.Tensor, t: torch.Tensor, valid=None) -> torch.Tensor:
    """``tile.mscatter``: ``t.flat[idx[i, j]] = src[i, j]`` in global memory, in place, for the
    positions inside the index tile's valid region. Indices are unsigned 32-bit; one ``>=`` the
    tensor's element count (a negative one included) raises :class:`SimulationError` (the device
    writes outside the tensor). Duplicates: the last in row-major order wins (our decision: the device
    issues the element writes in that order; the reference leaves the order of colliding writes
    unspecified). Elements of ``t`` not indexed keep their value."""
    u = _u32(idx)
    mask = _inside(u, valid)
    pos = _check("mscatter", u, mask, t.numel())[mask]
    if pos.numel() == 0:
        return t
    flat = t.view(-1) if t.is_contiguous() else None
    if flat is None:
        raise SimulationError("mscatter: the output tensor is not contiguous in global memory")
    rec = _RECORDER.get()
    if rec is not None:
        # the race detector takes one view per access: the span from the lowest to the highest
        # written element (conservative: writes of two tasks interleaved in one span read as a race)
        rec(STORE, flat[int(pos.min()):int(pos.max()) + 1])
    fb = _bits(flat)
    _last_wins(fb, pos, _bits(src.to(t.dtype))[mask])
    return t


_CMPS = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}


def gather_compare(src: torch.Tensor, kvalue, mode: str, offset: int, out_cols: int, count_dtype: torch.dtype,
                   valid=None, part: str | None = None, out: torch.Tensor | None = None):
    """``gather_compare``: per row r of the valid region, the columns j with ``src[r, j] <mode>
    kvalue`` (kvalue converted to src's dtype) as ``j + offset`` into ``dst[r, :count]`` (INT32, 0
    after), and ``count`` into ``cdst[0, r]``. ``part``: ``"index"`` -> dst, ``"count"`` -> cdst,
    None -> both. More than ``out_cols`` matches in a row: :class:`SimulationError` (the device writes
    past the row)."""
    rows, cols = (int(v) for v in (valid if valid is not None else src.shape))
    k = torch.tensor(kvalue, dtype=torch.float64 if src.dtype.is_floating_point else torch.int64).to(src.dtype)
    hit = _CMPS[mode](src[:rows, :cols], k)
    counts = hit.sum(dim=1)
    if rows and int(counts.max()) > out_cols:
        r = int(torch.argmax((counts > out_cols).to(torch.int8)))
        raise SimulationError(f"gather_compare: row {r} has {int(counts[r])} matches but out_cols is {out_cols} "
                              "(the device writes past the row: undefined)")
    dst = torch.zeros((src.shape[0], out_cols), dtype=torch.int32)
    for r in range(rows):
        js = hit[r].nonzero().flatten()
        dst[r, :js.numel()] = (js + int(offset)).to(torch.int32)
    cnt = torch.zeros((1, src.shape[0]), dtype=torch.int64)
    cnt[0, :rows] = counts
    cnt = cnt.to(torch.int32).view(count_dtype) if count_dtype != torch.int32 else cnt.to(torch.int32)
    r = {"index": dst, "count": cnt}.get(part)
    if r is None:
        return dst, cnt
    return r if out is None else out.copy_(r)


def gatherb(src: torch.Tensor, offset: torch.Tensor, out_dtype, valid=None, out: torch.Tensor | None = None):
    """``tile.gatherb``: ``dst[r, c*B:(c+1)*B]`` = the 32 bytes of ``src`` (row-major) at byte
    ``offset[r, c]``, for the offset tile's valid region; 0 elsewhere. A block not wholly inside
    ``src`` raises :class:`SimulationError`."""
    dt = out_dtype if out_dtype is not None else src.dtype
    sb = src.contiguous().view(torch.uint8).reshape(-1)
    rows, cols = (int(v) for v in (valid if valid is not None else offset.shape))
    u = _u32(offset)
    b = 32 // torch.empty((), dtype=dt).element_size()
    r = torch.zeros((offset.shape[0], offset.shape[1] * 32), dtype=torch.uint8)
    if rows and cols:
        o = u[:rows, :cols]
        bad = o + 32 > sb.numel()
        if bool(bad.any()):
            pos = bad.nonzero()[0].tolist()
            raise SimulationError(f"gatherb: byte offset {int(o[tuple(pos)])} at {pos}: the 32-byte block leaves the "
                                  f"{sb.numel()}-byte source tile (implementation-defined on the device)")
        blocks = sb[o.reshape(-1, 1) + torch.arange(32)].reshape(rows, cols * 32)
        r[:rows, :cols * 32] = blocks
    res = r.view(dt).reshape(offset.shape[0], offset.shape[1] * b)
    return res if out is None else out.copy_(res)
