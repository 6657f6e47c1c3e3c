"""Run-time helpers of the sort ops (:mod:`pypto.ops.sort`): ``sort32``, ``mrgsort``, ``gather_mask``;
shared by both executors (re-exported by :mod:`pypto.ops.support` as ``_pto.<name>``).

A sorted list is a row of 8-byte **structs**, one per element (pto-isa TSORT32 / TMRGSORT): FP32: the
value at the even column, the UINT32 index bits at the odd one (2 FP32 slots); FP16: the value, a
zero half, then the UINT32 index bits in two halves (4 FP16 slots, little-endian). Order:
**descending** by value; NaN sorts before +inf (our decision: the device's comparisons leave it
undefined). Ties (-0.0 vs +0.0 included): within a sort32 block the smaller index VALUE first (the
pto-isa CPU model's rule: by the idx operand, unsigned, not by position), in a merge the earlier run /
list first (TMRGSORT picks a later list only for a strictly larger value). Data moves as bit patterns.
"""
from __future__ import annotations

import torch

from pypto.errors import SimulationError


def _stable_desc(vals: torch.Tensor) -> torch.Tensor:
    """Permutation sorting the last axis descending, stably, NaN first (torch.sort's NaN rule)."""
    return torch.sort(vals, dim=-1, descending=True, stable=True).indices


_SLOTS = {torch.float32: 2, torch.float16: 4}    # slots of one 8-byte struct


def _structs(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A list's structs as int64 bit patterns ``[..., n]`` and their values ``[..., n]``."""
    k = _SLOTS[x.dtype]
    c = x.contiguous()
    return c.view(torch.int64), c[..., 0::k]


def _from_structs(bits: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return bits.contiguous().view(dtype)


def sort32(src: torch.Tensor, idx: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Each 32-element block of each row sorted descending (ties: smaller idx value first); result
    ``[R, 2C]`` (FP32) / ``[R, 4C]`` (FP16) of structs."""
    r, c = src.shape[-2], src.shape[-1]
    if c % 32:
        raise SimulationError(f"sort32: the row length {c} is not a multiple of 32")
    v = src.reshape(r, c // 32, 32)
    ib = idx.to(torch.int64).to(torch.int32) if idx.dtype not in (torch.int32, torch.uint32) else idx.view(torch.int32)
    ib = ib.reshape(r, c // 32, 32)
    # ties by the index value, unsigned: order by it first, then a stable sort by value
    pre = torch.sort(ib.to(torch.int64) & 0xFFFFFFFF, dim=-1, stable=True).indices
    perm = torch.gather(pre, -1, _stable_desc(torch.gather(v, -1, pre)))
    vals = torch.gather(v, -1, perm)
    iv = torch.gather(ib, -1, perm)
    if src.dtype == torch.float32:
        pairs = torch.stack((vals.view(torch.int32), iv), dim=-1)
        res = pairs.reshape(r, 2 * c).view(torch.float32)
    else:
        halves = iv.view(torch.int16).reshape(r, c // 32, 32, 2)
        st = torch.cat((vals.view(torch.int16).unsqueeze(-1), torch.zeros_like(halves[..., :1]), halves), dim=-1)
        res = st.reshape(r, 4 * c).view(torch.float16)
    return res if out is None else out.copy_(res)


def _merge(bits: torch.Tensor, vals: torch.Tensor) -> torch.Tensor:
    """Stable descending merge of structs (list order = tie order)."""
    return bits[_stable_desc(vals)]


def mrgsort1(src: torch.Tensor, block_len, out: torch.Tensor | None = None) -> torch.Tensor:
    """Format 1: in each row, every group of 4 consecutive runs of ``block_len`` columns (each run
    sorted) becomes one sorted run of ``4 * block_len`` columns; a last, shorter group merges what it
    holds (our decision: the CPU model leaves it unwritten)."""
    bl = int(block_len)
    k = _SLOTS[src.dtype]
    if bl <= 0 or bl % (32 * k):
        raise SimulationError(f"mrgsort: block_len must be a positive multiple of {32 * k}, got {bl}")
    r, c = src.shape[-2], src.shape[-1]
    bits, vals = _structs(src.reshape(r, c))
    bits = bits.clone()
    g = 4 * bl // k                               # structs per merged group
    for row in range(r):
        for lo in range(0, c // k, g):
            bits[row, lo:lo + g] = _merge(bits[row, lo:lo + g], vals[row, lo:lo + g])
    res = _from_structs(bits, src.dtype).reshape(r, c)
    return res if out is None else out.copy_(res)


def mrgsort2(srcs, shape, out: torch.Tensor | None = None) -> torch.Tensor:
    """Format 2: the sorted lists ``srcs`` (each a row of structs) merged into one sorted list of
    ``shape`` (the tmp tile's): its first structs of the merge, zero beyond it."""
    dt = srcs[0].dtype
    parts = [_structs(s.reshape(-1)) for s in srcs]
    merged = _merge(torch.cat([b for b, _ in parts]), torch.cat([v for _, v in parts]))
    total = 1
    for d in shape:
        total *= int(d)
    n = total // _SLOTS[dt]
    res = torch.zeros(n, dtype=torch.int64)
    m = min(n, merged.shape[0])
    res[:m] = merged[:m]
    res = _from_structs(res, dt).reshape(list(shape))
    return res if out is None else out.copy_(res)


# mask patterns (the reference's MaskPattern): (stride, offset); P1111 keeps every column
MASK_PATTERNS = {1: (2, 0), 2: (2, 1), 3: (4, 0), 4: (4, 1), 5: (4, 2), 6: (4, 3), 7: (1, 0)}
_INT_OF = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def gather_mask(src: torch.Tensor, pattern: int, dtype: torch.dtype, out: torch.Tensor | None = None):
    """The columns ``offset, offset + stride, ...`` of every row, reinterpreted as ``dtype`` (same size)."""
    stride, off = MASK_PATTERNS[int(pattern)]
    ib = src.view(_INT_OF[src.element_size()])
    res = ib[..., off::stride].contiguous().view(dtype)
    return res if out is None else out.copy_(res)


def scatter_mask(dst: torch.Tensor, src: torch.Tensor, pattern: int, out: torch.Tensor | None = None):
    """``dst`` with the columns ``offset, offset + stride, ...`` of every row replaced by ``src``'s
    (the inverse of :func:`gather_mask`), moved as bit patterns."""
    stride, off = MASK_PATTERNS[int(pattern)]
    ib = _INT_OF[dst.element_size()]
    r = dst.view(ib).clone()
    r[..., off::stride] = src.to(dst.dtype).view(ib)
    r = r.view(dst.dtype)
    return r if out is None else out.copy_(r)
