"""``pypto.language.distributed`` (imported as ``pld``): programs over several ranks (cards).

Three levels, as in the reference:

* ``@pl.jit.host`` — the host orchestrator. It allocates window buffers
  (``pld.alloc_window_buffer``), takes per-rank views of them (``pld.window``) and launches one
  ``@pl.jit`` per-rank program per rank with ``device=r``.
* ``@pl.jit`` — the per-rank (per-card) orchestration, as for one card.
* ``@pl.jit.incore`` — kernels; inside them the ``pld.*`` ops reach other ranks: ``get_comm_ctx`` /
  ``rank`` / ``nranks``, signals (``pld.system.notify`` / ``wait``), ``pld.tile.remote_load`` /
  ``remote_store``, ``pld.tensor.put`` / ``get`` and the collectives (``pld.tensor.allreduce`` ...).

On the simulators each rank is a simulated card (its own global memory, cores and scheduler);
see docs/distributed.md for the engine, the seeded reduction order and deadlock reports.
"""
from __future__ import annotations

import enum

from pypto.language.constructs import DslOp, OpNamespace
from pypto.language.enums import AtomicType

__all__ = [
    "AtomicType", "CommCtx", "CommCtxType", "DistributedTensor", "NotifyOp", "ReduceOp", "WaitCmp",
    "alloc_window_buffer", "get_comm_ctx", "nranks", "rank", "remote_load", "remote_store", "system", "tensor",
    "tile", "window", "world_size",
    # the short forms of the sub-namespaces' ops (issue 17 lists them at top level)
    "put", "get", "notify", "wait", "defer_wait", "barrier", "allreduce", "allgather", "reduce_scatter",
    "broadcast", "all_to_all", "all_to_all_v",
]


class _PldEnum(enum.Enum):
    """An enum spelled ``pld.<Class>.<member>``."""

    def __repr__(self) -> str:
        return f"pld.{type(self).__name__}.{self.name}"

    __str__ = __repr__


class NotifyOp(_PldEnum):
    """How ``pld.system.notify`` changes the peer's signal cell."""

    Set = 0
    AtomicAdd = 1


class WaitCmp(_PldEnum):
    """The comparison ``pld.system.wait`` waits for (``cell <cmp> expected``)."""

    Eq = 0
    Ne = 1
    Gt = 2
    Ge = 3
    Lt = 4
    Le = 5


class ReduceOp(_PldEnum):
    """The reduction of ``pld.tensor.allreduce`` / ``reduce_scatter``."""

    Sum = 0
    Max = 1
    Min = 2
    Prod = 3


# A window view is a global-memory tensor of its rank: the annotation is pl.Tensor's (the parser
# reads ``pld.DistributedTensor[[shape], dtype]`` as a TensorType). Which window, and so which
# communication context, a kernel argument belongs to is known at run time, from the buffer.
class DistributedTensor:
    """``pld.DistributedTensor[[shape], dtype]``: a kernel parameter that is a view of a window buffer.
    The parser reads it as a GM tensor of the rank running the kernel, passed InOut (any rank may
    write it); which window, and so which communication context, it is comes from the buffer at
    run time."""

    pypto_window = True

    def __class_getitem__(cls, item):
        return cls


class CommCtx:
    """The type of ``pld.get_comm_ctx(t)``: a handle of the window's communication group (an INT32
    scalar in the IR; ``pld.rank(ctx)`` / ``pld.nranks(ctx)`` read it)."""


CommCtxType = CommCtx


class HostOp:
    """A host-orchestrator-only operation (``pld.alloc_window_buffer`` / ``pld.window``): the
    ``@pl.jit.host`` interpreter (:mod:`pypto.runtime.distributed.host`) evaluates it; elsewhere it
    is an error."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"pld.{self.name}"

    def __call__(self, *args, **kwargs):
        from pypto.errors import PyptoError

        raise PyptoError(f"pld.{self.name} is part of a @pl.jit.host orchestrator body (parsed, not executed)",
                         hint="call it inside a @pl.jit.host function")


class _Namespace(OpNamespace):
    """``pld.system`` / ``pld.tensor`` / ``pld.tile``: the ops each answers to."""

    def __init__(self, label: str, names: dict):
        self._label = label
        self._names = names

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._names[name]
        except KeyError:
            raise AttributeError(f"pld.{self._label} has no op '{name}' "
                                 f"(it has {', '.join(sorted(self._names))})") from None

    def __dir__(self):
        return sorted(self._names)

    def __repr__(self) -> str:
        return f"pld.{self._label}"


alloc_window_buffer = HostOp("alloc_window_buffer")
window = HostOp("window")
world_size = DslOp("dist.world_size")
get_comm_ctx = DslOp("dist.get_comm_ctx")
rank = DslOp("dist.rank")
nranks = DslOp("dist.nranks")
notify = DslOp("dist.notify")
wait = DslOp("dist.wait")
defer_wait = DslOp("dist.defer_wait")
remote_load = DslOp("dist.remote_load")
remote_store = DslOp("dist.remote_store")
put = DslOp("dist.put")
get = DslOp("dist.get")
barrier = DslOp("dist.barrier")
allreduce = DslOp("dist.allreduce")
allgather = DslOp("dist.allgather")
reduce_scatter = DslOp("dist.reduce_scatter")
broadcast = DslOp("dist.broadcast")
all_to_all = DslOp("dist.all_to_all")
all_to_all_v = DslOp("dist.all_to_all_v")

system = _Namespace("system", {"world_size": world_size, "get_comm_ctx": get_comm_ctx, "rank": rank,
                               "nranks": nranks, "notify": notify, "wait": wait, "defer_wait": defer_wait})
tensor = _Namespace("tensor", {"alloc_window_buffer": alloc_window_buffer, "window": window, "get": get, "put": put,
                               "barrier": barrier, "allreduce": allreduce, "allgather": allgather,
                               "reduce_scatter": reduce_scatter, "broadcast": broadcast, "all_to_all": all_to_all,
                               "all_to_all_v": all_to_all_v, "remote_store": remote_store})
tile = _Namespace("tile", {"remote_load": remote_load, "remote_store": remote_store})
