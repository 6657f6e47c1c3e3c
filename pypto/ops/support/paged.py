"""Run-time helpers of :mod:`pypto.ops.paged` (gather_row, paged_gather), shared by both executors
(re-exported by :mod:`pypto.ops.support` as ``_pto.<name>``)."""
from __future__ import annotations

import torch

from pypto.errors import SimulationError


def _window(t: torch.Tensor, offs, ext, what: str) -> torch.Tensor:
    o = [int(x) for x in offs]
    e = [int(x) for x in ext]
    for i, (x, n, b) in enumerate(zip(o, e, t.shape)):
        if x < 0 or x + n > b:
            raise SimulationError(f"gather_row: the {what} window at {o} of extent {e} leaves the {list(t.shape)} "
                                  f"operand on axis {i}")
    return t[o[0]:o[0] + e[0], o[1]:o[1] + e[1]]


def gather_row(acc: torch.Tensor, src: torch.Tensor, dst_offset, src_offset, shapes, transpose: bool, valid=None,
               out: torch.Tensor | None = None) -> torch.Tensor:
    """``gather_row``: ``acc`` with ``src``'s ``shapes`` window at ``src_offset`` (narrowed to
    ``valid``, runtime values allowed) copied to ``dst_offset`` (transposed when ``transpose``)."""
    r = acc.clone() if out is None else (out if out.data_ptr() == acc.data_ptr() else out.copy_(acc))
    ext = [int(x) for x in (valid if valid is not None else shapes)]
    for x, n in zip(ext, shapes):
        if not 0 <= x <= int(n):
            raise SimulationError(f"gather_row: valid_shape {ext} outside shapes {list(shapes)}")
    w = _window(src, src_offset, ext, "source")
    if transpose:
        w = w.t()
        ext = ext[::-1]
    _window(r, dst_offset, ext, "destination").copy_(w)
    return r


def paged_gather(src: torch.Tensor, indices: torch.Tensor, block_table: torch.Tensor, block_size: int, size: int,
                 max_indices: int, col_off: int, is_trans: bool, out: torch.Tensor | None = None) -> torch.Tensor:
    """``paged_gather``: row i = ``src[block_table[idx // bs] * bs + idx % bs, col_off : col_off + size]``
    for ``idx = indices.flat[i]``; ``[max_indices, size]`` (``is_trans``: transposed), zero past the
    indices."""
    idx = indices.reshape(-1).tolist()
    nblocks = block_table.numel()
    bt = block_table.reshape(-1).tolist()
    r = torch.zeros((max_indices, size), dtype=src.dtype)
    for i, li in enumerate(idx):
        if li < 0 or li // block_size >= nblocks:
            raise SimulationError(f"paged_gather: logical index {li} (entry {i}) is outside the block table's "
                                  f"{nblocks} blocks of {block_size}")
        phys = bt[li // block_size] * block_size + li % block_size
        if not 0 <= phys < src.shape[0]:
            raise SimulationError(f"paged_gather: index {li} (entry {i}) maps to row {phys}, outside src's "
                                  f"{src.shape[0]} rows (block {li // block_size} -> {bt[li // block_size]})")
        r[i] = src[phys, col_off:col_off + size]
    if is_trans:
        r = r.t().contiguous()
    return r if out is None else out.copy_(r)
