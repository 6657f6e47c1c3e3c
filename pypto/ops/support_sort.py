"""Run-time helpers of the sort ops (:mod:`pypto.ops.sort`): ``sort32``, ``mrgsort``, ``gather_mask``;
shared by both executors (re-exported by :mod:`pypto.ops.support` as ``_pto.<name>``).

A sorted list is a row of **(value, index) pairs**: FP32 value bits at even columns, the UINT32
index bits at odd columns (in FP32 storage, as the device writes them). Order: **descending** by
value; NaN sorts before +inf; ties (and -0.0 vs +0.0) keep their input order: within a sort32 block
the lower position first, in a merge the earlier run / list first (a stable sort; the device's
tie order is not documented by the reference, this is our decision). Data moves as bit patterns.
"""
from __future__ import annotations

import torch

from pypto.errors import SimulationError


def _stable_desc(vals: torch.Tensor) -> torch.Tensor:
    """Permutation sorting the last axis descending, stably, NaN first (torch.sort's NaN rule)."""
    return torch.sort(vals, dim=-1, descending=True, stable=True).indices


def sort32(src: torch.Tensor, idx: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Each 32-element block of each row sorted descending; result ``[R, 2C]`` of pairs."""
    r, c = src.shape[-2], src.shape[-1]
    if c % 32:
        raise SimulationError(f"sort32: the row length {c} is not a multiple of 32")
    v = src.reshape(r, c // 32, 32)
    perm = _stable_desc(v)
    sb = src.view(torch.int32).reshape(r, c // 32, 32)
    ib = idx.to(torch.int64).to(torch.int32) if idx.dtype not in (torch.int32, torch.uint32) else idx.view(torch.int32)
    ib = ib.reshape(r, c // 32, 32)
    pairs = torch.stack((torch.gather(sb, -1, perm), torch.gather(ib, -1, perm)), dim=-1)
    res = pairs.reshape(r, 2 * c).view(torch.float32)
    return res if out is None else out.copy_(res)


def _merge_rows(rows: torch.Tensor) -> torch.Tensor:
    """Stable descending merge of the pairs of one [n_pairs, 2] int32 block (list order = tie order)."""
    vals = rows[:, 0].view(torch.float32)
    return rows[_stable_desc(vals)]


def mrgsort1(src: torch.Tensor, block_len, out: torch.Tensor | None = None) -> torch.Tensor:
    """Format 1: in each row, every group of 4 consecutive runs of ``block_len`` columns
    (``block_len / 2`` pairs, each run sorted) becomes one sorted run of ``4 * block_len`` columns;
    a last, shorter group merges what it holds."""
    bl = int(block_len)
    if bl <= 0 or bl % 64:
        raise SimulationError(f"mrgsort: block_len must be a positive multiple of 64, got {bl}")
    r, c = src.shape[-2], src.shape[-1]
    bits = src.view(torch.int32).reshape(r, c // 2, 2).clone()
    g = 4 * bl // 2                               # pairs per merged group
    for row in range(r):
        for lo in range(0, c // 2, g):
            bits[row, lo:lo + g] = _merge_rows(bits[row, lo:lo + g])
    res = bits.reshape(r, c).view(torch.float32)
    return res if out is None else out.copy_(res)


def mrgsort2(srcs, shape, out: torch.Tensor | None = None) -> torch.Tensor:
    """Format 2: the sorted lists ``srcs`` (each ``[1, 2n]`` pairs) merged into one sorted list of
    ``shape`` (the tmp tile's): the first ``shape[-1] / 2`` pairs of the merge, zero beyond it."""
    lists = [s.view(torch.int32).reshape(-1, 2) for s in srcs]
    merged = _merge_rows(torch.cat(lists, 0))
    total = 1
    for d in shape:
        total *= int(d)
    res = torch.zeros(total // 2, 2, dtype=torch.int32)
    k = min(total // 2, merged.shape[0])
    res[:k] = merged[:k]
    res = res.reshape(list(shape)).view(torch.float32)
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
