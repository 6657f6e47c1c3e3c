"""The argument form of a sub-worker override: ``prepare(sub_worker_overrides={"verify": fn})``
replaces the program's ``role=pl.Role.SubWorker`` function ``verify`` by ``fn(args)``, called with
one list: each tensor argument as a :class:`ContinuousTensor` (the runtime's descriptor of a
contiguous host buffer: address, shape, dtype), other arguments as they are.
:func:`tensor_from_continuous` (``pypto.runtime.distributed_runner._tensor_from_continuous``) gives
the torch tensor back — the same memory, so the override's writes reach the caller."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class ContinuousTensor:
    """A contiguous tensor argument: ``data`` (its address), ``shapes`` and ``dtype``."""

    data: int
    shapes: tuple
    dtype: torch.dtype
    _tensor: torch.Tensor = field(repr=False, compare=False, default=None)


def to_continuous(t: torch.Tensor) -> ContinuousTensor:
    """The descriptor of tensor ``t`` (refused when it is not contiguous: a descriptor has no strides)."""
    if not t.is_contiguous():
        raise ValueError(f"a sub-worker argument must be contiguous; got a {list(t.shape)} view with strides "
                         f"{list(t.stride())}")
    return ContinuousTensor(t.data_ptr(), tuple(t.shape), t.dtype, t)


def tensor_from_continuous(c: ContinuousTensor) -> torch.Tensor:
    """The torch tensor a :class:`ContinuousTensor` describes (its memory, not a copy)."""
    if not isinstance(c, ContinuousTensor):
        raise TypeError(f"expected a ContinuousTensor (a sub-worker override's tensor argument), got "
                        f"{type(c).__name__}")
    t = c._tensor
    if t is None or t.data_ptr() != c.data or tuple(t.shape) != c.shapes or t.dtype != c.dtype:
        raise ValueError("this ContinuousTensor was not made by the runtime from a live tensor")
    return t


def override_call(fn):
    """A sub-worker function calling override ``fn`` with the descriptor list."""
    def call(*args, **kwargs):
        return fn([to_continuous(a) if isinstance(a, torch.Tensor) else a for a in [*args, *kwargs.values()]])
    return call
