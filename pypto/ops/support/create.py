"""Run-time helpers of the creation ops (:mod:`pypto.ops.creation`): ``ci`` and ``tri``, shared by both
executors (re-exported by :mod:`pypto.ops.support` as ``_pto.<name>``)."""
from __future__ import annotations

import numpy as np
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


__all__ = ["ci", "random", "tri", "wrap_scalar"]


def random(seeds, shape, valid, dtype: torch.dtype, rounds: int, out: torch.Tensor | None = None) -> torch.Tensor:
    """``random``: TRANDOM's Philox-4x32 values (:mod:`pypto.numerics.philox`) in the valid region of a
    ``shape`` tile (row stride ``shape[-1]``), as INT32 / UINT32 bit patterns; 0 outside the valid
    region (the device leaves it unwritten; both executors write 0 there so that they agree)."""
    from pypto.numerics.philox import trandom

    k0, k1, c0, c1, c2, c3 = (int(s) & 0xFFFFFFFF for s in seeds)
    rows, cols = (int(v) for v in (valid if valid is not None else shape))
    vals = trandom((k0, k1), (c0, c1, c2, c3), rows, cols, int(shape[-1]), int(rounds))
    r = torch.zeros(list(shape), dtype=dtype)
    r[:rows, :cols] = torch.from_numpy(vals.view(np.int32).copy()).view(dtype)
    return r if out is None else out.copy_(r)
