"""Torch helpers of the MX matmul family and of loading a packed MX scale tensor, called by both
executors from generated code (re-exported by :mod:`pypto.ops.support` as ``_pto.<name>``). The
numerics are :mod:`pypto.numerics.mx`'s: both executors run the very same function."""
from __future__ import annotations

import torch

from pypto.numerics.mx import matmul_mx as _mx, unpack_index
from pypto.ops.support import core


def matmul_mx(lhs, lhs_scale, rhs, rhs_scale, acc=None, bias=None) -> torch.Tensor:
    """``tile.matmul_mx`` / ``_acc`` / ``_bias``: the FP32 MX product (``acc +`` / ``bias +`` it)."""
    return _mx(lhs, lhs_scale, rhs, rhs_scale, acc, bias)


def matmul_mx_into(dst, lhs, lhs_scale, rhs, rhs_scale, acc=None, bias=None) -> None:
    """Simulator form of :func:`matmul_mx` into core memory (``dst`` may be ``acc``'s buffer: the
    result is computed whole before it is written)."""
    dst.copy_(_mx(lhs, lhs_scale, rhs, rhs_scale, acc, bias))


def _gather(t: torch.Tensor, layout: str, offsets, extent) -> torch.Tensor:
    idx = unpack_index(layout, t.shape, offsets, extent)
    flat = t.reshape(-1)
    return flat.view(torch.uint8)[idx.reshape(-1)].view(t.dtype).reshape(idx.shape)


def load_mx(t: torch.Tensor, layout: str, offsets, shape, valid=None) -> torch.Tensor:
    """Reference ``tile.load`` from a packed MX scale tensor: a new tile of ``shape`` holding the
    LOGICAL scales of the window (unpacked through :func:`unpack_index`); the padding is zero."""
    valid = list(shape) if valid is None else list(valid)
    core.region(t, offsets, valid, "tile.load")      # bounds check of the logical window
    out = torch.zeros(list(shape), dtype=t.dtype)
    out[:valid[0], :valid[1]] = _gather(t, layout, offsets, valid)
    return out


def load_mx_into(dst: torch.Tensor, t: torch.Tensor, layout: str, offsets, valid=None) -> None:
    """Simulator ``tile.load`` from a packed MX scale tensor into core memory (see :func:`load_mx`)."""
    valid = list(dst.shape) if valid is None else list(valid)
    core.region(t, offsets, valid, "tile.load")
    rec = core._RECORDER.get()
    if rec is not None:
        rec(core.LOAD, t)          # the window's bytes are scattered over the packed tensor
    if tuple(valid) != tuple(dst.shape):
        dst.zero_()
    dst[:valid[0], :valid[1]].copy_(_gather(t, layout, offsets, valid))
