"""``DeviceTensor`` / ``StackedDeviceTensor``: handles to buffers resident in a worker's (simulated)
device memory. Passed to a compiled program in place of a ``torch.Tensor``, a DeviceTensor is used
where it lies: nothing is copied in, and results written to it stay there until
``worker.copy_from(...)`` reads them back (as on the device)."""
from __future__ import annotations

import math
from typing import Any, Sequence

import torch


class DeviceTensor:
    """A ``shape`` x ``dtype`` tensor at ``data_ptr`` in a worker's device memory.

    ``buffer`` is the allocation it lives in (set by :meth:`Worker.alloc_tensor`); a DeviceTensor
    built by hand without one cannot be passed to a program (there is nothing to run on).
    """

    __slots__ = ("data_ptr", "shape", "dtype", "buffer")

    def __init__(self, data_ptr: int, shape: Sequence[int], dtype: torch.dtype, *, buffer: Any = None):
        if isinstance(data_ptr, bool) or not isinstance(data_ptr, int) or data_ptr <= 0:
            raise ValueError(f"DeviceTensor.data_ptr must be a positive int, got {data_ptr!r}")
        shape_t = tuple(shape)
        if not shape_t or any(isinstance(d, bool) or not isinstance(d, int) or d <= 0 for d in shape_t):
            raise ValueError(f"DeviceTensor.shape must be a non-empty tuple of positive ints, got {shape_t!r}")
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"DeviceTensor.dtype must be a torch.dtype, got {type(dtype).__name__}")
        object.__setattr__(self, "data_ptr", data_ptr)
        object.__setattr__(self, "shape", shape_t)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "buffer", buffer)

    def __setattr__(self, name, value):
        raise AttributeError("DeviceTensor is immutable")

    @property
    def nbytes(self) -> int:
        """Bytes the tensor covers."""
        return math.prod(self.shape) * torch.empty((), dtype=self.dtype).element_size()

    def device_view(self) -> torch.Tensor:
        """The device memory of this tensor as a ``torch.Tensor`` view (what a program runs on)."""
        if self.buffer is None:
            raise TypeError("this DeviceTensor was built by hand: allocate it with worker.alloc_tensor(...) "
                            "to pass it to a program")
        return self.buffer.tensor(self.shape, self.dtype, self.data_ptr)

    def __eq__(self, other) -> bool:
        return isinstance(other, DeviceTensor) and (self.data_ptr, self.shape, self.dtype) == \
            (other.data_ptr, other.shape, other.dtype)

    def __hash__(self) -> int:
        return hash((self.data_ptr, self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"DeviceTensor(data_ptr=0x{self.data_ptr:x}, shape={self.shape}, dtype={self.dtype})"


class StackedDeviceTensor:
    """A ``[B, *tail]`` tensor whose ``B`` shards are DeviceTensors on (possibly different) workers
    (``worker_ids[i]`` holds ``shards[i]``). Used by multi-rank programs, which this package does
    not simulate: the class validates and indexes, and a single-chip program refuses it."""

    def __init__(self, shards: Sequence[DeviceTensor], full_shape: Sequence[int], worker_ids: Sequence[int]):
        shards_t, full_t, workers_t = tuple(shards), tuple(full_shape), tuple(worker_ids)
        if len(full_t) < 2 or full_t[0] < 1:
            raise ValueError(f"StackedDeviceTensor.full_shape must be [B >= 1, ...] of rank >= 2, got {full_t}")
        if len(shards_t) != full_t[0] or len(workers_t) != full_t[0]:
            raise ValueError(f"StackedDeviceTensor expects {full_t[0]} shards and worker ids, got "
                             f"{len(shards_t)} and {len(workers_t)}")
        if len(set(workers_t)) != len(workers_t):
            raise ValueError(f"StackedDeviceTensor.worker_ids must be distinct, got {workers_t}")
        dtypes = {s.dtype for s in shards_t if isinstance(s, DeviceTensor)}
        for i, s in enumerate(shards_t):
            if not isinstance(s, DeviceTensor):
                raise TypeError(f"shard {i} must be a DeviceTensor, got {type(s).__name__}")
            if s.shape != full_t[1:]:
                raise ValueError(f"shard {i} has shape {s.shape}; expected {full_t[1:]}")
        if len(dtypes) != 1:
            raise ValueError(f"StackedDeviceTensor shards must share one dtype, got {sorted(map(str, dtypes))}")
        self.shards, self.full_shape, self.worker_ids = shards_t, full_t, workers_t

    @property
    def dtype(self) -> torch.dtype:
        """The shards' dtype."""
        return self.shards[0].dtype

    @property
    def shape(self) -> tuple[int, ...]:
        """``full_shape``."""
        return self.full_shape

    def __getitem__(self, idx) -> DeviceTensor:
        if isinstance(idx, tuple):
            if len(idx) != 1:
                raise IndexError("StackedDeviceTensor supports indexing the leading dimension only")
            idx = idx[0]
        return self.shards[idx]

    def __repr__(self) -> str:
        return f"StackedDeviceTensor(full_shape={self.full_shape}, worker_ids={self.worker_ids})"


__all__ = ["DeviceTensor", "StackedDeviceTensor"]
