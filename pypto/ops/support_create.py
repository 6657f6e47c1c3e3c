"""Run-time helpers of the creation ops (:mod:`pypto.ops.creation`): ``ci`` and ``tri``, shared by both
executors (re-exported by :mod:`pypto.ops.support` as ``_pto.<name>``)."""
from __future__ import annotations

import torch

from pypto.numerics.intops import wrap_scalar

_SIGNED = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def ci(start, shape, dtype: torch.dtype, descending: bool, out: torch.Tensor | None = None) -> torch.Tensor:
    """``start + k`` (``start - k`` descending) along the last axis, in ``dtype`` with two's
    complement wrap-around (``start`` and every element reduced to the dtype's bits)."""
    n = int(shape[-1])
    k = torch.arange(n, dtype=torch.int64)
    v = int(start) - k if descending else int(start) + k
    w = 8 * torch.empty((), dtype=dtype).element_size()
    v = v & ((1 << w) - 1)
    v = torch.where(v >= 1 << (w - 1), v - (1 << w), v)          # the signed view's values
    row = v.to(_SIGNED[w // 8]).view(dtype)
    r = row.reshape([1] * (len(shape) - 1) + [n]).expand(list(shape)).clone()
    return r if out is None else out.copy_(r.expand(out.shape))


def tri(diagonal, shape, valid, dtype: torch.dtype, upper: bool, out: torch.Tensor | None = None) -> torch.Tensor:
    """1 where ``j <= i + diagonal`` (``upper``: ``j >= i + diagonal``) inside the valid region, 0
    elsewhere. (The device leaves the elements outside the valid region unwritten; both executors
    write 0 there, so that they agree on every element.)"""
    rows, cols = int(shape[-2]), int(shape[-1])
    i = torch.arange(rows)[:, None]
    j = torch.arange(cols)[None, :]
    d = int(diagonal)
    m = (j >= i + d) if upper else (j <= i + d)
    if valid is not None:
        m = m & (i < int(valid[-2])) & (j < int(valid[-1]))
    r = m.to(dtype)
    return r if out is None else out.copy_(r.expand(out.shape))


__all__ = ["ci", "tri", "wrap_scalar"]
