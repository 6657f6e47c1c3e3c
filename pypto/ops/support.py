"""Runtime support shared by the reference executor and the simulator's generated kernels.

Both kinds of generated code (``torch_codegen`` output and simulator kernel modules) import this
module as ``_pto``; its functions are the few op semantics that are more than one torch call
(region copies with a valid shape, bounds checks, casts with rounding modes).
"""
from __future__ import annotations

from typing import Sequence

import torch

from pypto.errors import SimulationError
from pypto.numerics.cast import cast_tensor

__all__ = ["region", "load", "load_into", "store", "assemble", "cast"]


def region(t: torch.Tensor, offsets: Sequence[int], shape: Sequence[int], what: str = "access") -> torch.Tensor:
    """The view ``t[o0:o0+s0, o1:o1+s1, ...]``; raises when the region leaves the tensor."""
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


def load(t: torch.Tensor, offsets, shape, valid=None) -> torch.Tensor:
    """Reference ``tile.load``: a new tile of ``shape``; the valid extent is read, the rest is zero."""
    valid = list(shape) if valid is None else list(valid)
    out = torch.zeros(list(shape), dtype=t.dtype)
    region(out, [0] * len(shape), valid).copy_(region(t, offsets, valid, "tile.load"))
    return out


def load_into(dst: torch.Tensor, t: torch.Tensor, offsets, valid=None) -> None:
    """Simulator ``tile.load`` into core memory: zero the tile (what the DMA leaves in the padding
    by default), then copy the valid extent from global memory."""
    valid = list(dst.shape) if valid is None else list(valid)
    src = region(t, offsets, valid, "tile.load")
    if list(valid) != list(dst.shape):
        dst.zero_()
    region(dst, [0] * dst.dim(), valid).copy_(src)


def store(tile: torch.Tensor, offsets, t: torch.Tensor, valid=None, atomic: bool = False) -> torch.Tensor:
    """``tile.store``: write the tile's valid extent into ``t`` at ``offsets`` (``+=`` when atomic)."""
    valid = list(tile.shape) if valid is None else list(valid)
    dst = region(t, offsets, valid, "tile.store")
    src = region(tile, [0] * tile.dim(), valid)
    if atomic:
        dst.add_(src.to(dst.dtype))
    else:
        dst.copy_(src)
    return t


def assemble(target: torch.Tensor, src: torch.Tensor, offsets) -> torch.Tensor:
    """Reference ``tensor.assemble``: write ``src`` into ``target`` at ``offsets``, in place."""
    region(target, offsets, list(src.shape), "tensor.assemble").copy_(src)
    return target


def cast(x: torch.Tensor, dtype: torch.dtype, mode: str = "round") -> torch.Tensor:
    """``cast`` with the hardware's rounding mode and overflow rules (see :mod:`pypto.numerics.cast`)."""
    return cast_tensor(x, dtype, mode)
