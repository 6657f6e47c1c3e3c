"""Type annotations of the DSL: ``pl.Tensor``, ``pl.Tile``, ``pl.Scalar``, ``pl.Tuple``,
``pl.Out`` / ``pl.InOut``, and the tile attributes ``pl.TileView`` / ``pl.MemRef``.

The frontend reads annotations from the kernel's source text; these classes exist so the same
spellings are valid Python at import time (``a: pl.Tensor[[64], pl.FP32]`` evaluates without error)
and so the frontend can recognise them when it resolves a name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Annotation:
    """The value of a subscripted annotation such as ``pl.Tensor[[64, 64], pl.FP32]``.

    Used only to detect annotations written through an alias (``T = pl.Tensor[...]; a: T``), which
    the frontend rejects because it reads annotations from source.
    """

    kind: str
    args: Any


class _Subscriptable:
    kind = ""

    def __class_getitem__(cls, item):
        return Annotation(cls.kind, item)


class Tensor(_Subscriptable):
    """A global-memory tensor: ``pl.Tensor[[d0, d1], dtype]``, or bare ``pl.Tensor`` in ``@pl.jit``
    signatures (shape and dtype then come from the argument)."""

    kind = "Tensor"


class Tile(_Subscriptable):
    """An on-chip tile: ``pl.Tile[[d0, d1], dtype, pl.Mem.Vec, pl.TileView(...), pl.MemRef(...)]``."""

    kind = "Tile"


class Scalar(_Subscriptable):
    """A by-value scalar: ``pl.Scalar[pl.FP32]`` (a bare dtype annotation means the same)."""

    kind = "Scalar"


class Array(_Subscriptable):
    """An on-core array of integer scalars: ``pl.Array[16, pl.INT32]`` (made by ``pl.array.create``)."""

    kind = "Array"


class Tuple(_Subscriptable):
    """Several return values: ``pl.Tuple[T0, T1]``."""

    kind = "Tuple"


class Out(_Subscriptable):
    """Direction wrapper: the parameter is written (and not read) by the function."""

    kind = "Out"


class InOut(_Subscriptable):
    """Direction wrapper: the parameter is read and written by the function."""

    kind = "InOut"


@dataclass(frozen=True)
class TileView:
    """Tile view attributes of a tile annotation, ``pl.Tile[[M, N], dtype, space, pl.TileView(...)]``:
    ``valid_shape`` narrows the valid region. The reference's layout attributes ``blayout`` /
    ``slayout`` (``pl.TileLayout``) and ``fractal`` (the box size in bytes) say where the device puts
    each element in the buffer; the simulators hold a tile as its logical matrix, so they are checked
    (types, the fixed layouts of the scale buffers) and change no value. ``pad`` / ``compact`` /
    ``stride`` / ``start_offset`` other than their defaults are refused (see docs/compatibility.md)."""

    valid_shape: Any = None
    stride: Any = None
    start_offset: Any = None
    blayout: Any = None
    slayout: Any = None
    fractal: Any = None
    pad: Any = None
    compact: Any = None


@dataclass(frozen=True)
class TensorView:
    """The reference's tensor view attributes, ``pl.Tensor[[M, N], dtype, pl.TensorView(...)]``:
    ``stride``, ``layout``, ``valid_shape``, ``pad``.

    The annotation is accepted for packed views: ``layout`` ND (row-major) or DN (the trailing pair
    column-major, docs/language.md "Layouts"), ``stride`` absent / empty or the packed strides of that
    layout, ``pad`` unset (or zero).
    ``valid_shape`` (at most the shape, constants or ``pl.dynamic`` dims) documents the part of the
    tensor the caller filled; a kernel states what it reads with ``pl.load(..., valid_shape=...)``,
    which is what the simulator honours (the reference does the same: the view's valid shape is
    not applied implicitly by a load)."""

    stride: Any = None
    layout: Any = None
    valid_shape: Any = None
    pad: Any = None


@dataclass(frozen=True)
class MemRef:
    """The buffer a tile lives in, in printed IR: ``pl.MemRef("mem_vec_3", offset, size)`` after
    InitMemRef / MemoryReuse, ``pl.MemRef("mem_vec_3", offset, size, addr=32768)`` after
    AllocateMemoryAddr (see :class:`pypto.ir.types.MemRef`)."""

    # Defaults only so that a malformed printed MemRef reaches the parser's own check (which names
    # the expected form) instead of failing with a bare Python TypeError while it is evaluated.
    base: Any = None
    offset: Any = None
    size: Any = None
    addr: Any = None
    # the reference's slot placement ``pl.MemRef([name,] slots=N)[index]`` (a planner hint; see
    # pypto.frontend.parser._slot_memref): indexing it names one slot
    slots: Any = None

    def __getitem__(self, index):
        return self


class PrefetchAsyncContext:
    """``ctx: pl.PrefetchAsyncContext = pl.prefetch.make_context()``: the handle of an async GM -> L2
    prefetch context (annotation only)."""

    kind = "PrefetchAsyncContext"


class AsyncEvent:
    """``evt: pl.AsyncEvent = pl.prefetch.async_prefetch(t, ctx)``: an in-flight prefetch's completion
    event (annotation only)."""

    kind = "AsyncEvent"


class AsyncSession:
    """``s: pl.AsyncSession = pl.prefetch.session(ctx)``: the session of a prefetch context, waited on
    with its events (annotation only)."""

    kind = "AsyncSession"


HANDLES = (PrefetchAsyncContext, AsyncEvent, AsyncSession)
