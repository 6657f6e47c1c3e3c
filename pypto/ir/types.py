"""IR types: scalars, tensors (global memory), tiles (on-chip), tuples.

Types are frozen values compared field by field. A dimension is a Python ``int`` (static); a
``MemRef`` on a tile names the buffer the memory planner put it in (and, once AllocateMemoryAddr has
run, that buffer's address).
"""
from __future__ import annotations
from pypto import pyast  # ast.parse behind a lock (CPython 3.11 is not thread-safe there)

from dataclasses import dataclass, field, replace
from typing import Optional

from pypto.language.dtypes import DataType
from pypto.language.enums import MemorySpace, TensorLayout


@dataclass(frozen=True)
class DynDim:
    """A symbolic (dynamic) dimension, ``M = pl.dynamic("M")``: the extent is known only at run time.

    Two DynDims with the same name are the same symbol: bound to one extent where the tensors
    agree on it, left unbound where parameters give it different extents (each keeps its own, see
    :func:`bind_extents`). Printed as the bare name, with a ``M = pl.dynamic("M")`` line before the
    program.
    """

    name: str

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    # ``M * 2``, ``M + 1``, ``2 * M``, ``M // 4``, ``M * N``: a composite dimension (DynExpr)
    def __mul__(self, o):
        return _dyn_op("*", self, o)

    def __rmul__(self, o):
        return _dyn_op("*", o, self)

    def __add__(self, o):
        return _dyn_op("+", self, o)

    def __radd__(self, o):
        return _dyn_op("+", o, self)

    def __sub__(self, o):
        return _dyn_op("-", self, o)

    def __rsub__(self, o):
        return _dyn_op("-", o, self)

    def __floordiv__(self, o):
        return _dyn_op("//", self, o)


@dataclass(frozen=True)
class DynExpr(DynDim):
    """A composite dynamic dimension: ``lhs op rhs`` with ``op`` one of ``* + - //`` and operands
    DynDims, DynExprs or ints (``pl.Tensor[[M * 2, N], ...]``). It *is* a DynDim (every check
    "is this extent dynamic" holds for it); ``name`` is its printed form, which the parser reads back
    as the same expression. Its value is known once the bare dims it uses are bound
    (:func:`eval_dim`)."""

    op: str = "*"
    lhs: object = None
    rhs: object = None


@dataclass(frozen=True, repr=False)
class RtDim(DynDim):
    """An extent given by a scalar value computed at run time in an orchestration function
    (``pl.create_tensor([16, n])``, ``pl.slice(t, [bs, n], ...)`` with ``n = pl.tensor.read(cfg, [3])``).

    ``name`` is the printed scalar expression (``head_dim_cfg``, ``(cur_seq - bn)``). Unlike a
    ``pl.dynamic`` dim it is not a parameter of the program: no ``pl.dynamic`` line declares it and
    nothing binds it; the executor evaluates the expression (the op's own shape operand) when it
    runs. Such a tensor is accepted for a static kernel parameter (``[16, 128]``) at compile time;
    at run time the kernel's loads and stores are bounds-checked against the actual tensor (a
    too-small region is a located SimulationError, never a read past it).
    """


def _dyn_text(x, parent_op: str | None = None, right: bool = False) -> str:
    if isinstance(x, DynExpr):
        prec = {"+": 1, "-": 1, "*": 2, "//": 2}
        t = f"{_dyn_text(x.lhs, x.op)} {x.op} {_dyn_text(x.rhs, x.op, True)}"
        if parent_op is not None and (prec[x.op] < prec[parent_op] or (right and prec[x.op] == prec[parent_op])):
            return f"({t})"
        return t
    return x.name if isinstance(x, DynDim) else str(int(x))


def _dyn_op(op: str, a, b):
    for x in (a, b):
        if not (isinstance(x, DynDim) or (isinstance(x, int) and not isinstance(x, bool))):
            return NotImplemented
    probe = DynExpr("", op, a, b)
    return DynExpr(_dyn_text(probe), op, a, b)


def dim_names(d) -> set[str]:
    """The names of the bare dynamic dims extent ``d`` (an int, DynDim or DynExpr) uses."""
    if isinstance(d, DynExpr):
        return dim_names(d.lhs) | dim_names(d.rhs)
    if isinstance(d, DynDim):
        return {d.name}
    return set()


def eval_dim(d, env: dict):
    """The value of extent ``d`` under ``env`` (name -> int); ``None`` when a dim it uses is unbound."""
    if isinstance(d, DynExpr):
        a, b = eval_dim(d.lhs, env), eval_dim(d.rhs, env)
        if a is None or b is None:
            return None
        return {"*": a * b, "+": a + b, "-": a - b, "//": a // b if b else None}[d.op]
    if isinstance(d, DynDim):
        v = env.get(d.name)
        return v if isinstance(v, int) else None
    return int(d)


def solve_dim(d, extent: int, env: dict) -> bool:
    """Bind the one unbound dim of ``d`` so that ``d == extent`` (``d`` linear in it: ``M``, ``M * 2``,
    ``M + 1``, ``2 * M - 1`` ...), adding it to ``env``. False when ``d`` cannot equal ``extent`` under
    ``env`` (a bound value disagrees, or no integer solves it); True when it does, or when it cannot be
    solved for (two unbound dims: checked once they are bound)."""
    known = eval_dim(d, env)
    if known is not None:
        return known == extent
    free = dim_names(d) - {k for k, v in env.items() if isinstance(v, int)}
    if len(free) != 1:
        return True
    name = next(iter(free))
    # d(x) is affine in x when x appears once; probe two points to find slope and intercept
    if _occurrences(d, name) != 1 or _has_div(d):
        return True
    f0 = eval_dim(d, {**env, name: 0})
    f1 = eval_dim(d, {**env, name: 1})
    slope = f1 - f0
    if slope == 0 or (extent - f0) % slope:
        return False
    x = (extent - f0) // slope
    if x < 1:
        return False
    env[name] = x
    return True


def _occurrences(d, name: str) -> int:
    if isinstance(d, DynExpr):
        return _occurrences(d.lhs, name) + _occurrences(d.rhs, name)
    return int(isinstance(d, DynDim) and d.name == name)


def _has_div(d) -> bool:
    return isinstance(d, DynExpr) and (d.op == "//" or _has_div(d.lhs) or _has_div(d.rhs))


def substitute_dims(shape, env: dict) -> tuple:
    """``shape`` with every extent whose dims ``env`` binds replaced by its value; bare dims bound
    to another DynDim (a dynamic caller) are replaced by it."""
    out = []
    for d in shape:
        if isinstance(d, DynDim):
            v = eval_dim(d, env)
            if v is not None:
                d = v
            elif not isinstance(d, DynExpr) and isinstance(env.get(d.name), DynDim):
                d = env[d.name]
        out.append(d)
    return tuple(out)


def dim_from_text(text: str):
    """The extent printed as ``text`` (``"M"``, ``"M * 2"``, ``"64"``): the inverse of ``str(d)``
    (compiled_meta.json records a dynamic parameter's dims this way)."""
    import ast as _ast

    ops = {_ast.Mult: "*", _ast.Add: "+", _ast.Sub: "-", _ast.FloorDiv: "//"}

    def build(n):
        if isinstance(n, _ast.Constant) and type(n.value) is int:
            return n.value
        if isinstance(n, _ast.Name):
            return DynDim(n.id)
        if isinstance(n, _ast.BinOp) and type(n.op) in ops:
            return _dyn_op(ops[type(n.op)], build(n.left), build(n.right))
        raise ValueError(f"not a dimension: {text!r}")
    return build(pyast.parse(text, mode="eval").body)


def bind_extents(named_shapes) -> str | None:
    """Check the extents ``[(what, dims, shape)]`` of tensors bound together (the entry's arguments):
    a bare dim whose occurrences agree gets that one extent, and every composite dim must evaluate to
    its extent. Returns ``None`` when they fit, else a sentence naming the first that does not.

    A bare dim whose occurrences disagree (``a_flat: [M]`` given 256 elements next to ``c: [M, N]``
    given 16 rows) is not an error: as in the reference, each parameter's extent is what its tensor
    has (the program reads extents with ``pl.tensor.dim``, never a dim's value), so nothing is bound
    for that dim (:func:`ambiguous_dims`) and the composite dims that use it are not checked."""
    env: dict = {}
    later = []
    ambiguous = ambiguous_dims((dims, shape) for _, dims, shape in named_shapes)
    for what, dims, shape in named_shapes:
        for axis, (d, n) in enumerate(zip(dims, shape)):
            if isinstance(d, DynExpr):
                later.append((what, axis, d, n))
            elif isinstance(d, DynDim) and d.name not in ambiguous:
                env.setdefault(d.name, n)
    for what, axis, d, n in later:
        if dim_names(d) & ambiguous:
            continue
        if not solve_dim(d, n, env):
            bound = ", ".join(f"{k} = {env[k]}" for k in sorted(dim_names(d)) if isinstance(env.get(k), int))
            return (f"argument '{what}' has extent {n} in dimension {axis}, which '{d.name}' cannot be"
                    + (f" with {bound}" if bound else ""))
    return None


def ambiguous_dims(shapes) -> set:
    """Names of the bare dynamic dims that get different extents from ``shapes`` (pairs of declared
    dims and actual extents): the dims whose value is not one number (each parameter keeps its own
    extent there)."""
    seen: dict = {}
    out = set()
    for dims, shape in shapes:
        for d, n in zip(dims, shape):
            if isinstance(d, DynDim) and not isinstance(d, DynExpr):
                if d.name in seen and seen[d.name] != n:
                    out.add(d.name)
                seen.setdefault(d.name, n)
    return out


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
    """A tensor in global memory (DDR).

    ``layout``: ``None`` for the ordinary row-major (ND) tensor; ``TensorLayout.DN`` for a tensor
    whose trailing pair of axes is column-major in global memory (element ``[..., i, j]`` at
    ``i + j * shape[-2]`` of its ``[..., :, :]`` page; the reference's DN, the layout a
    ``pl.transpose(x, -2, -1)`` view of an ND tensor has); ``TensorLayout.MX_A_ZZ`` / ``MX_B_NN``
    for an MX scale tensor (FP8E8M0) held in the reference's packed GM layout of the ``matmul_mx``
    A / B scales. Only ``tile.load`` reads an MX tensor (it unpacks the layout into the logical
    tile, :func:`pypto.numerics.mx.unpack_index`); every other op refuses it. A DN tensor's values
    are its logical elements everywhere (loads, stores and views address them through its strides);
    the layout matters where bytes are reinterpreted: the host boundary (a DN parameter reads the
    caller's contiguous buffer column-major) and ``tensor.view``."""

    shape: tuple[int, ...]
    dtype: DataType
    layout: Optional[TensorLayout] = None
    # a view of a window buffer (a ``pld.DistributedTensor`` parameter, issue 17): other ranks may
    # read and write it, so InsertCommFence marks the writes that publish into it. Not part of the
    # type's identity (a window view passes where a plain tensor of that shape is declared, as in
    # the reference, whose DistributedTensorType is a TensorType).
    window: bool = field(default=False, compare=False)

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
    when the whole tile is valid (the canonical form, so equal tiles compare equal); an extent of it
    may be a scalar IR expression (a runtime valid shape, ``pl.load(..., valid_shape=[m, n])`` with
    ``m`` a scalar parameter: :func:`runtime_valid`); ``memref`` is
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


def runtime_valid(t) -> bool:
    """Whether tile type ``t`` has a valid extent known only at run time (a scalar expression)."""
    return isinstance(t, TileType) and t.valid_shape is not None and \
        any(not isinstance(d, int) for d in t.valid_shape)


@dataclass(frozen=True)
class ArrayType(Type):
    """An on-core array of ``extent`` integer / BOOL scalars (``pl.Array[extent, dtype]``, made by
    ``pl.array.create``): the scalar unit's stack, local to one kernel (it never crosses a kernel
    boundary). Element writes are functional in the IR (``pl.array.update_element`` gives a new
    version) and in place on the machine, as on the device: every version names one array."""

    extent: int
    dtype: DataType


@dataclass(frozen=True)
class HandleType(Type):
    """An opaque handle of the async-prefetch ops (``pl.prefetch``, :mod:`pypto.ops.prefetch`): ``kind``
    is ``"PrefetchAsyncContext"``, ``"AsyncEvent"`` or ``"AsyncSession"`` (the reference's handle
    types; annotated and printed ``pl.<kind>``). A kernel-local value: never a parameter."""

    kind: str


HANDLE_KINDS = ("PrefetchAsyncContext", "AsyncEvent", "AsyncSession")


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
        layout = "" if t.layout is None else f", {t.layout.name}"
        return f"Tensor[{list(t.shape)}, {t.dtype.name}{layout}]"
    if isinstance(t, TileType):
        return f"Tile[{list(t.shape)}, {t.dtype.name}]"
    if isinstance(t, ScalarType):
        return f"Scalar[{t.dtype.name}]"
    if isinstance(t, TupleType):
        return "Tuple[" + ", ".join(describe(x) for x in t.types) + "]"
    if isinstance(t, ArrayType):
        return f"Array[{t.extent}, {t.dtype.name}]"
    if isinstance(t, HandleType):
        return t.kind
    return type(t).__name__
