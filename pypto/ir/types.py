"""IR types: scalars, tensors (global memory), tiles (on-chip), tuples.

Types are frozen values compared field by field. A dimension is a Python ``int`` (static); a
``MemRef`` on a tile names the buffer the memory planner put it in (and, once AllocateMemoryAddr has
run, that buffer's address).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from pypto.language.dtypes import DataType
from pypto.language.enums import MemorySpace


@dataclass(frozen=True)
class DynDim:
    """A symbolic (dynamic) dimension, ``M = pl.dynamic("M")``: the extent is known only at run time.

    Two DynDims with the same name are the same extent. Printed as the bare name, with a
    ``M = pl.dynamic("M")`` line before the program.
    """

    name: str

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__


def is_static_shape(shape) -> bool:
    """True when no dimension is a :class:`DynDim`."""
    return not any(isinstance(d, DynDim) for d in shape)


class Type:
    """Base class of IR types."""

    def with_(self, **changes):
        """A copy with some fields replaced (types are immutable)."""
        return replace(self, **changes)


@dataclass(frozen=True)
class ScalarType(Type):
    """A by-value scalar (loop index, literal, runtime parameter)."""

    dtype: DataType


@dataclass(frozen=True)
class TensorType(Type):
    """A tensor in global memory (DDR)."""

    shape: tuple[int, ...]
    dtype: DataType

    @property
    def nbytes(self) -> int:
        """Size in bytes."""
        return _numel(self.shape) * self.dtype.itemsize


@dataclass(frozen=True)
class MemRef:
    """Where a tile lives: ``size`` bytes at byte ``offset`` inside the buffer ``base``.

    ``base`` names a buffer of one memory space of an InCore function (``"mem_vec_3"``, unique per
    function); tiles with the same base share that buffer's bytes, which the memory passes allow only
    when their lifetimes do not overlap (InitMemRef gives every tile its own buffer except values
    that must share one, MemoryReuse merges buffers). ``addr`` is the buffer's byte address in its
    memory space of one core: ``None`` until AllocateMemoryAddr assigns it; the tile's bytes are then
    ``[addr + offset, addr + offset + size)`` (:attr:`physical_addr`).
    """

    base: str
    offset: int
    size: int
    addr: Optional[int] = None

    @property
    def physical_addr(self) -> int:
        """Byte address of the tile in its memory space (requires an allocated buffer)."""
        if self.addr is None:
            raise ValueError(f"buffer '{self.base}' has no address yet (AllocateMemoryAddr has not run)")
        return self.addr + self.offset

    @property
    def end(self) -> int:
        """One past the tile's last byte inside its buffer (``offset + size``)."""
        return self.offset + self.size


@dataclass(frozen=True)
class TileType(Type):
    """An on-chip tile.

    ``memory_space`` is ``None`` until InferTileMemorySpace decides it; ``valid_shape`` is ``None``
    when the whole tile is valid (the canonical form, so equal tiles compare equal); ``memref`` is
    set by InitMemRef (buffer), rebased by MemoryReuse and given an address by AllocateMemoryAddr.
    """

    shape: tuple[int, ...]
    dtype: DataType
    memory_space: Optional[MemorySpace] = None
    valid_shape: Optional[tuple[int, ...]] = None
    memref: Optional[MemRef] = None

    def __post_init__(self):
        if self.valid_shape is not None and tuple(self.valid_shape) == tuple(self.shape):
            object.__setattr__(self, "valid_shape", None)

    @property
    def nbytes(self) -> int:
        """Size of the physical tile in bytes."""
        return _numel(self.shape) * self.dtype.itemsize

    @property
    def effective_valid_shape(self) -> tuple[int, ...]:
        """``valid_shape``, or ``shape`` when the whole tile is valid."""
        return self.valid_shape if self.valid_shape is not None else self.shape


@dataclass(frozen=True)
class TupleType(Type):
    """Several values, e.g. the results of a call to a function returning more than one tensor."""

    types: tuple[Type, ...]


def _numel(shape) -> int:
    n = 1
    for d in shape:
        if isinstance(d, DynDim):
            raise TypeError(f"the size of a shape with dynamic dimension '{d.name}' is not known at compile time")
        n *= int(d)
    return n


def is_tensor(t: Type) -> bool:
    """True for :class:`TensorType`."""
    return isinstance(t, TensorType)


def is_tile(t: Type) -> bool:
    """True for :class:`TileType`."""
    return isinstance(t, TileType)


def is_scalar(t: Type) -> bool:
    """True for :class:`ScalarType`."""
    return isinstance(t, ScalarType)


def describe(t: Type) -> str:
    """A short human description used in error messages (``Tile[[64, 64], FP32]``)."""
    if isinstance(t, TensorType):
        return f"Tensor[{list(t.shape)}, {t.dtype.name}]"
    if isinstance(t, TileType):
        return f"Tile[{list(t.shape)}, {t.dtype.name}]"
    if isinstance(t, ScalarType):
        return f"Scalar[{t.dtype.name}]"
    if isinstance(t, TupleType):
        return "Tuple[" + ", ".join(describe(x) for x in t.types) + "]"
    return type(t).__name__
