"""Workers: ``ChipWorker`` (one simulated chip with its own device memory) and the ``Worker`` base.

On the device a worker owns the chip, its memory and the registered programs. Here the chip is the
simulator and its memory is host memory the worker allocates (:meth:`Worker.malloc`), so device
pointers are real addresses: ``copy_to`` / ``copy_from`` move bytes between them and host pointers
(``tensor.data_ptr()``), and a :class:`DeviceTensor` lives in one of the worker's buffers until
freed. Inside ``with ChipWorker(config) as w:`` a plain ``compiled(...)`` call runs with ``w``'s
config, as in the reference.
"""
from __future__ import annotations

import contextvars
import ctypes
import weakref
from abc import ABC, abstractmethod
from typing import Any, Sequence

import torch

from pypto.runtime.config import RunConfig
from pypto.runtime.device_tensor import DeviceTensor
from pypto.backend.platforms import get_platform

_CURRENT: contextvars.ContextVar = contextvars.ContextVar("pypto_current_worker", default=None)


def current_worker():
    """The worker of the innermost active ``with worker:`` block, or ``None``."""
    return _CURRENT.get()


class _DeviceBuffer:
    """One allocation of simulated device memory."""

    def __init__(self, owner: "Worker", nbytes: int):
        self.owner = weakref.ref(owner)
        self.bytes = torch.zeros(max(int(nbytes), 1), dtype=torch.uint8)
        self.base = self.bytes.data_ptr()
        self.nbytes = int(nbytes)
        self.freed = False

    def contains(self, ptr: int, nbytes: int) -> bool:
        return self.base <= ptr and ptr + nbytes <= self.base + self.nbytes

    def tensor(self, shape, dtype: torch.dtype, ptr: int | None = None) -> torch.Tensor:
        """A view of ``shape`` x ``dtype`` at ``ptr`` (default: the start) into this buffer."""
        if self.freed:
            raise RuntimeError(f"device buffer 0x{self.base:x} was freed (free_tensor / worker.close()); "
                               "allocate a new DeviceTensor")
        off = (ptr or self.base) - self.base
        n = 1
        for d in shape:
            n *= d
        size = n * torch.empty((), dtype=dtype).element_size()
        if off < 0 or off + size > self.nbytes:
            raise ValueError(f"a {list(shape)} {dtype} view at offset {off} overruns the {self.nbytes}-byte buffer")
        return self.bytes[off:off + size].view(dtype).reshape(tuple(shape))


class Worker(ABC):
    """Base of the workers: memory management (``malloc`` / ``free`` / ``copy_to`` / ``copy_from``), resident
    tensors (``alloc_tensor`` / ``free_tensor``) and dispatch (``run`` / ``register``)."""

    def __init__(self):
        self._owned_tensors: dict[tuple[int, int], DeviceTensor] = {}

    @abstractmethod
    def malloc(self, nbytes: int, *, worker_id: int = 0) -> int:
        """Allocate ``nbytes`` of device memory; returns its device pointer."""

    @abstractmethod
    def free(self, ptr: int, *, worker_id: int = 0) -> None:
        """Free an allocation made by :meth:`malloc`."""

    @abstractmethod
    def copy_to(self, dst_dev_ptr: int, src_host_ptr: int, nbytes: int, *, worker_id: int = 0) -> None:
        """Copy ``nbytes`` from host memory to device memory."""

    @abstractmethod
    def copy_from(self, dst_host_ptr: int, src_dev_ptr: int, nbytes: int, *, worker_id: int = 0) -> None:
        """Copy ``nbytes`` from device memory to host memory."""

    @abstractmethod
    def run(self, compiled, *args, config=None):
        """Run a compiled program once."""

    @abstractmethod
    def register(self, compiled) -> "RegistrationHandle":
        """Register a compiled program; the handle runs it."""

    @abstractmethod
    def _buffer_for_ptr(self, ptr: int, *, worker_id: int = 0):
        """The allocation starting at ``ptr``."""

    def alloc_tensor(self, shape: Sequence[int], dtype: torch.dtype, *, init: torch.Tensor | None = None,
                     worker_id: int = 0) -> DeviceTensor:
        """Allocate a resident tensor, filled from ``init`` (same shape and dtype) when given, else zeros."""
        shape_t = tuple(int(d) for d in shape)
        if init is not None:
            if not isinstance(init, torch.Tensor):
                raise TypeError(f"alloc_tensor(init=...) must be a torch.Tensor, got {type(init).__name__}")
            if tuple(init.shape) != shape_t or init.dtype != dtype:
                raise ValueError(f"alloc_tensor: init is {list(init.shape)} {init.dtype}, the tensor is "
                                 f"{list(shape_t)} {dtype}")
        probe = DeviceTensor(1, shape_t, dtype)  # validates shape and dtype
        ptr = self.malloc(probe.nbytes, worker_id=worker_id)
        try:
            t = DeviceTensor(ptr, shape_t, dtype, buffer=self._buffer_for_ptr(ptr, worker_id=worker_id))
            if init is not None:
                host = init.detach().contiguous().cpu()
                self.copy_to(ptr, host.data_ptr(), t.nbytes, worker_id=worker_id)
        except BaseException:
            self.free(ptr, worker_id=worker_id)
            raise
        self._owned_tensors[(worker_id, ptr)] = t
        return t

    def free_tensor(self, t: DeviceTensor, *, worker_id: int = 0) -> None:
        """Free a tensor from :meth:`alloc_tensor` (a second free is a no-op)."""
        key = (worker_id, t.data_ptr)
        if key not in self._owned_tensors:
            owners = sorted(w for w, p in self._owned_tensors if p == t.data_ptr)
            if owners:
                raise ValueError(f"free_tensor(worker_id={worker_id}): 0x{t.data_ptr:x} was allocated on worker(s) "
                                 f"{owners}; pass the same worker_id")
            return
        if self._owned_tensors[key] is not t and self._owned_tensors[key] != t:
            raise ValueError(f"free_tensor: a stale DeviceTensor for 0x{t.data_ptr:x} (the address now belongs to a "
                             "newer allocation)")
        self.free(t.data_ptr, worker_id=worker_id)
        del self._owned_tensors[key]

    def _close_owned_tensors(self) -> None:
        leaked, self._owned_tensors = self._owned_tensors, {}
        for worker_id, ptr in leaked:
            self.free(ptr, worker_id=worker_id)


class ChipWorker(Worker):
    """One simulated chip (``level=2``) for the platform of ``config`` (a :class:`RunConfig`)."""

    def __init__(self, config: RunConfig | None = None, *, level: int = 2, runtime: str = "tensormap_and_ringbuffer",
                 enable_sdma: bool = False, auto_init: bool | None = None):
        if level != 2:
            raise ValueError(f"ChipWorker only supports level=2 (one chip); got level={level}. Multi-rank (L3) "
                             "programs are not simulated by this package")
        super().__init__()
        self._config = config or RunConfig()
        if not isinstance(self._config, RunConfig):
            raise TypeError(f"ChipWorker(config=...) must be a RunConfig, got {type(self._config).__name__}")
        self._runtime = runtime
        self._enable_sdma = bool(enable_sdma)  # recorded: the simulator moves data without SDMA engines
        self._buffers: dict[int, _DeviceBuffer] = {}
        self._handles: list[RegistrationHandle] = []
        self._tokens: list = []
        self._initialized = False
        self._closed = False
        if auto_init is None or auto_init:
            self.init()

    # -- lifecycle
    def init(self) -> None:
        """Bring the (simulated) chip up; idempotent."""
        if self._closed:
            raise RuntimeError("ChipWorker is closed; create a new one")
        self._initialized = True

    def close(self) -> None:
        """Release registrations and every resident tensor; the worker is unusable afterwards."""
        if self._closed:
            return
        for h in self._handles:
            h._mark_closed()
        self._handles.clear()
        self._close_owned_tensors()
        for buf in self._buffers.values():
            buf.freed = True
        self._buffers.clear()
        self._closed = True
        self._initialized = False

    def __enter__(self) -> "ChipWorker":
        self.init()
        self._tokens.append(_CURRENT.set(self))
        return self

    def __exit__(self, *exc) -> None:
        _CURRENT.reset(self._tokens.pop())
        self.close()

    @staticmethod
    def current():
        """The worker of the innermost active ``with`` block, or ``None``."""
        return current_worker()

    # -- properties
    @property
    def config(self) -> RunConfig:
        """The worker's run configuration."""
        return self._config

    @property
    def level(self) -> int:
        """2 (one chip)."""
        return 2

    @property
    def platform(self) -> str:
        """The platform the worker runs (as given in its config)."""
        return self._config.platform

    @property
    def device_id(self) -> int:
        """The configured device id (no effect on the simulator)."""
        return self._config.device_id

    @property
    def runtime(self) -> str:
        """The runtime name given at construction (recorded only)."""
        return self._runtime

    @property
    def initialized(self) -> bool:
        """Whether :meth:`init` ran and :meth:`close` did not."""
        return self._initialized

    def _require_ready(self, op: str) -> None:
        if self._closed or not self._initialized:
            raise RuntimeError(f"ChipWorker.{op}: the worker is {'closed' if self._closed else 'not initialized'}")

    # -- memory
    def malloc(self, nbytes: int, *, worker_id: int = 0) -> int:
        self._require_ready("malloc")
        _local(worker_id, "malloc")
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
            raise ValueError(f"malloc: nbytes must be a positive int, got {nbytes!r}")
        buf = _DeviceBuffer(self, nbytes)
        self._buffers[buf.base] = buf
        return buf.base

    def free(self, ptr: int, *, worker_id: int = 0) -> None:
        _local(worker_id, "free")
        buf = self._buffers.pop(ptr, None)
        if buf is None:
            raise ValueError(f"free: 0x{ptr:x} is not an allocation of this worker")
        buf.freed = True

    def _buffer_for_ptr(self, ptr: int, *, worker_id: int = 0):
        _local(worker_id, "lookup")
        return self._buffers.get(ptr)

    def _find(self, ptr: int, nbytes: int, op: str) -> _DeviceBuffer:
        for buf in self._buffers.values():
            if buf.contains(ptr, nbytes):
                return buf
        raise ValueError(f"{op}: [0x{ptr:x}, +{nbytes}) is not inside an allocation of this worker")

    def copy_to(self, dst_dev_ptr: int, src_host_ptr: int, nbytes: int, *, worker_id: int = 0) -> None:
        self._require_ready("copy_to")
        _local(worker_id, "copy_to")
        self._find(dst_dev_ptr, nbytes, "copy_to")
        ctypes.memmove(dst_dev_ptr, src_host_ptr, nbytes)

    def copy_from(self, dst_host_ptr: int, src_dev_ptr: int, nbytes: int, *, worker_id: int = 0) -> None:
        self._require_ready("copy_from")
        _local(worker_id, "copy_from")
        self._find(src_dev_ptr, nbytes, "copy_from")
        ctypes.memmove(dst_host_ptr, src_dev_ptr, nbytes)

    # -- dispatch
    def _check_binding(self, compiled) -> None:
        want = get_platform(self._config.platform).name
        if compiled.platform != want:
            raise ValueError(f"ChipWorker for {self._config.platform} cannot run a program compiled for "
                             f"{compiled.platform}; compile it for {want}")

    def run(self, compiled, *args, config: RunConfig | None = None, **kwargs):
        """Run ``compiled`` once with ``args`` (``torch.Tensor``, this worker's ``DeviceTensor``, scalars)."""
        self._require_ready("run")
        self._check_binding(compiled)
        for a in args:
            if isinstance(a, DeviceTensor) and (a.buffer is None or a.buffer.owner() is not self):
                raise ValueError(f"{a!r} does not belong to this ChipWorker: only the worker that allocated a "
                                 "DeviceTensor can use it")
        return compiled(*args, config=config or self._config, **kwargs)

    def register(self, compiled) -> "RegistrationHandle":
        """Check ``compiled`` against this worker now and return a handle that runs it."""
        self._require_ready("register")
        self._check_binding(compiled)
        h = RegistrationHandle(self, compiled)
        self._handles.append(h)
        return h

    def __repr__(self) -> str:
        return f"ChipWorker(platform={self.platform!r}, device_id={self.device_id})"


def _local(worker_id: int, op: str) -> None:
    if worker_id != 0:
        raise ValueError(f"ChipWorker.{op}(worker_id={worker_id}): a ChipWorker has one chip, worker_id 0")


class RegistrationHandle:
    """A program registered on a worker: call it like the program; ``unregister()`` or ``with`` releases it."""

    def __init__(self, worker: ChipWorker, compiled):
        self._worker = worker
        self._compiled = compiled
        self._closed = False

    @property
    def compiled(self):
        """The registered program."""
        return self._compiled

    @property
    def closed(self) -> bool:
        """Whether the handle was released."""
        return self._closed

    def __call__(self, *args, config: RunConfig | None = None):
        if self._closed:
            raise RuntimeError("this RegistrationHandle was unregistered (or its worker closed)")
        return self._worker.run(self._compiled, *args, config=config)

    def unregister(self) -> None:
        """Release the registration (idempotent)."""
        self._closed = True

    def _mark_closed(self) -> None:
        self._closed = True

    def __enter__(self) -> "RegistrationHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.unregister()


__all__ = ["ChipWorker", "RegistrationHandle", "Worker", "current_worker"]
