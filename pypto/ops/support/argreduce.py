"""Run-time helpers of ``row_prod`` / ``col_prod`` and the arg reductions (``row_argmax`` ...),
shared by both executors (re-exported by :mod:`pypto.ops.support` as ``_pto.<name>``).

These reductions see only the tile's **valid region along the reduced axis**: a product over the
zero padding would be 0 and an argmin could pick a padding column, so the device's TROWPROD /
TCOLPROD / TROWARGMAX ... take their extent from the tile's valid shape (the reference's tests
reduce ``a[:vr, :vc]``). Elements of the kept axis outside the valid region are reduced too (from
their padding): their results lie outside the result's valid region and are never stored.
"""
from __future__ import annotations

import torch

from pypto.ops.support import core as _s


def _narrow(x: torch.Tensor, axis: int, valid) -> torch.Tensor:
    if valid is None:
        return x
    n = int(valid[axis])   # valid is indexed from the end (axis < 0), so gang views work too
    return x if n == x.shape[axis] else x.narrow(axis, 0, n)


def reduce_valid(x: torch.Tensor, tmp, axis: int, kind: str, valid) -> torch.Tensor:
    """Reference reduction (:func:`pypto.ops.support.reduce`, same order rules: a binary tree
    with ``tmp``, sequential without) over the valid extent of the reduced axis."""
    return _s.reduce(_narrow(x, axis, valid), tmp, axis, kind)


def reduce_valid_into(dst: torch.Tensor, x: torch.Tensor, tmp, axis: int, kind: str, valid,
                      clobber: bool = True) -> None:
    """Simulator form of :func:`reduce_valid` (the tree works in ``tmp``'s leading region)."""
    _s.reduce_into(dst, _narrow(x, axis, valid), tmp, axis, kind, clobber)


def arg_reduce(x: torch.Tensor, axis: int, kind: str, valid) -> torch.Tensor:
    """Index (INT32, keepdim) of the ``max`` / ``min`` along ``axis`` over the valid extent.

    Ties: the **lowest** index (the first occurrence). NaN: a NaN is the extreme for both kinds
    (as ``torch.maximum`` / ``minimum`` propagate it), so the index of the first NaN is returned.
    -0.0 and +0.0 are equal (a tie). Exact: no arithmetic, so the order of evaluation cannot matter.
    """
    xs = _narrow(x, axis, valid)
    m = torch.amax(xs, axis, keepdim=True) if kind == "max" else torch.amin(xs, axis, keepdim=True)
    hit = xs == m
    if xs.dtype.is_floating_point:
        hit = hit | (torch.isnan(xs) & torch.isnan(m))
    # the first True along the axis: argmax of a 0/1 tensor returns the first maximal index
    return hit.to(torch.uint8).argmax(axis, keepdim=True).to(torch.int32)


def arg_reduce_into(dst: torch.Tensor, x: torch.Tensor, axis: int, kind: str, valid) -> None:
    """Simulator form of :func:`arg_reduce` into core memory."""
    dst.copy_(arg_reduce(x, axis, kind, valid))
