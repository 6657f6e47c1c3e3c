"""Shared pieces of op type rules (promotion, shape checks, operand kinds)."""
from __future__ import annotations

import torch

from pypto.errors import InvalidOperationError, Span
from pypto.ir.types import RtDim, ScalarType, TensorType, TileType, Type, describe
from pypto.language.dtypes import FP32, LOW_PRECISION, DataType, dtype_from_torch
from pypto.ir.nodes import BINOPS, BinOp, ConstInt, MakeTuple, Var
from pypto.language.enums import MemorySpace
from pypto.ops.traits import Elementwise, InPlaceSafe, Lockstep, MemorySpaces

# the MemorySpaces trait of a vector-unit tile op: operands and result in Vec
VEC_SPACES = MemorySpaces((MemorySpace.Vec,), MemorySpace.Vec)
# the traits of an elementwise op that may write its result over a dying operand, per level
# (the tile form runs per row in a lockstep gang, in vector memory)
TILE_ELEMENTWISE = (Elementwise(), InPlaceSafe(), Lockstep.ROWS, VEC_SPACES)
TENSOR_ELEMENTWISE = (Elementwise(), InPlaceSafe())


def promote(a: DataType, b: DataType, op: str | None = None, span: Span | None = None) -> DataType:
    """Result dtype of a binary op on two array operands: float beats int, wider beats narrower.

    We use torch's promotion lattice so that the reference executor (which runs torch) and the type
    rule agree by construction. It agrees with the reference compiler's rule (PromoteDataTypes:
    a float over an int, else the wider type) wherever one operand converts exactly into the other.
    Where the two rules part (issue 13, item 15) — FP16 with BF16 (the reference keeps the first
    operand's dtype, torch widens to FP32), a signed with an unsigned int of the same width (the
    reference keeps the signed one, which cannot hold the unsigned values) — there is no silent
    choice: with ``op`` and ``span`` given, such a pair is a located error asking for a cast. Every
    other mixed pair is promoted, and the PTO-W005 diagnostic says so at the op.
    """
    if a == b:
        return a
    if op is not None and span is not None:
        for d in (a, b):
            low_precision(op, d, span)
        pair = {a.name, b.name}
        same_width_ints = a.itemsize == b.itemsize and {a.kind, b.kind} == {"int", "uint"}
        if pair == {"FP16", "BF16"} or same_width_ints:
            expect(False, op, f"operands of dtypes {a.name} and {b.name} have no common type that holds both "
                              "exactly", span, "cast one operand first, e.g. pl.cast(x, pl.FP32)")
    try:
        return dtype_from_torch(torch.promote_types(a.torch, b.torch))
    except (RuntimeError, TypeError):   # (torch has no promotion for the wide unsigned types)
        raise InvalidOperationError(f"{op or 'operation'}: operands of dtypes {a.name} and {b.name} have no "
                                    "common type", span, "cast one operand first, e.g. pl.cast(x, pl.INT32)") from None


def promote_scalar(array: DataType, scalar: DataType) -> DataType:
    """Result dtype of ``array <op> scalar``: the scalar adopts the array's dtype, except that a
    float scalar on an integer array gives FP32 (torch does the same with a Python float)."""
    if scalar.is_float() and not array.is_float():
        return FP32
    return array


def array_type(t: Type) -> bool:
    """True for tensors and tiles."""
    return isinstance(t, (TensorType, TileType))


def expect(cond: bool, op: str, message: str, span: Span, hint: str | None = None) -> None:
    """Raise :class:`InvalidOperationError` ``<op>: <message>`` unless ``cond``."""
    if not cond:
        raise InvalidOperationError(f"{op}: {message}", span, hint)


# Element types the vector unit does no arithmetic, comparison or selection on. The reference's type
# rules accept any dtype at this level and leave the rest to the instruction set, whose vector
# instructions (TADD/TSUB/TMAX/TABS/TRELU/TCMP/TSEL/TSUBS..., e.g. TSUBS: INT8 INT16 INT32 FP16 FP32
# BF16; TSELS adds UINT8 UINT16 UINT32 for selection only) have no UINT16/32/64 or BOOL arithmetic.
# Rejecting them in the type rule (issue 13, item 12) gives a located error instead of a torch crash
# deep in the simulator; UINT8 / INT8 / INT64 stay (both executors compute them bit for bit).
NO_ARITHMETIC = frozenset({"UINT16", "UINT32", "UINT64", "BOOL"})


def arith_dtype(op: str, dtype: DataType, span: Span) -> None:
    """Reject an element type the vector unit has no arithmetic for (:data:`NO_ARITHMETIC`, and
    the low-precision types, which only move, cast and feed ``matmul_mx``)."""
    low_precision(op, dtype, span)
    expect(dtype.name not in NO_ARITHMETIC, op,
           f"{dtype.name} operands are not supported: the vector unit has no arithmetic on "
           f"{'BOOL' if dtype.name == 'BOOL' else 'unsigned 16/32/64-bit'} elements", span,
           "cast the operand first, e.g. pl.cast(x, pl.INT32) or pl.cast(x, pl.FP32)")


def low_precision(op: str, dtype: DataType, span: Span) -> None:
    """Reject a low-precision element type (FP8*, FP4, HF8, HF4, INT4, UINT4) in an op that computes
    on its elements: the vector unit has no arithmetic, comparison or reduction on them (pto-isa's
    vector instructions take FP16 / BF16 / FP32 and the 8..32-bit integers)."""
    expect(dtype.name not in LOW_PRECISION, op,
           f"{dtype.name} operands are not supported: the vector unit does not compute on {dtype.name} "
           "elements (low-precision types are only loaded, stored, moved and cast)", span,
           "cast to a compute type first, e.g. pl.cast(x, pl.FP32), and back with pl.cast(y, "
           f"pl.{dtype.name}) if needed")


# Ops that take low-precision data (they move bytes, convert, or are the MX matmuls that consume
# FP8 / FP4 with FP8E8M0 scales). Every other op refuses a low-precision operand or result dtype in
# one place (low_precision_guard), so an op added later cannot compute on FP8 by accident.
LOW_PRECISION_OPS = frozenset({
    "load", "store", "move", "cast", "create", "reshape", "transpose", "slice", "concat", "assemble",
    "extract", "matmul_mx", "matmul_mx_acc", "matmul_mx_bias",
})
# No storage for these anywhere: the reference refuses every 4-bit type but FP4 in kernel code (a5)
# and every 4-bit type on a2a3, where FP16 <-> INT4 is an isolated conversion with no 4-bit load/store.
NO_STORAGE = frozenset({"INT4", "UINT4", "HF4"})


def low_precision_guard(op, values: tuple, span: Span) -> None:
    """Refuse low-precision element types in ``op`` unless it is one of :data:`LOW_PRECISION_OPS`,
    and INT4 / UINT4 / HF4 everywhere (see :data:`NO_STORAGE`). Looks at array operands and dtype
    attributes. Also refuses a packed MX scale tensor (layout MX_A_ZZ / MX_B_NN) anywhere but in
    ``tile.load``, the one op that unpacks it: any other op would read the packed bytes as if they
    were the logical scales."""
    base = op.name.split(".", 1)[-1]
    if op.name != "tile.load":
        for v in values:
            layout = getattr(getattr(v, "type", None), "layout", None)
            # a DN tensor holds logical elements (its view addresses them): only MX packing is refused
            expect(layout is None or layout.name not in ("MX_A_ZZ", "MX_B_NN"), op.name,
                   f"'{getattr(v, 'name', v)}' is an MX scale tensor in the packed layout {getattr(layout, 'name', '')}; "
                   "only pl.load reads it (unpacking the layout into a tile)", span,
                   "load it whole with pl.load(..., target_memory=pl.Mem.Mat) and work on the tile")
    for p, v in zip(op.params, values):
        if p.kind == "dtype":
            dt = v if isinstance(v, DataType) else None
        else:
            dt = getattr(getattr(v, "type", None), "dtype", None) if array_type(getattr(v, "type", None)) else None
        if dt is None or dt.name not in LOW_PRECISION:
            continue
        expect(dt.name not in NO_STORAGE, op.name,
               f"{dt.name} data cannot be held on the device: the reference has no 4-bit storage but FP4 "
               "(a5 only) -- a2a3's FP16 <-> INT4 conversion cannot be loaded or stored", span,
               "keep the values in INT8 / UINT8 / FP16 (the 4-bit casts are modelled in pypto.numerics and "
               "`pypto cast-check`)")
        if base not in LOW_PRECISION_OPS:
            low_precision(op.name, dt, span)


def same_shape(op: str, a: Type, b: Type, span: Span) -> None:
    """Elementwise operands must have equal shapes (no implicit broadcast at this level)."""
    expect(tuple(a.shape) == tuple(b.shape), op,
           f"operand shapes differ: {describe(a)} vs {describe(b)}", span,
           "use the row_expand_* / col_expand_* ops to broadcast")


def scalar_dtype(t: Type) -> DataType:
    """dtype of a scalar operand."""
    assert isinstance(t, ScalarType)
    return t.dtype


def with_dtype(t: Type, dtype: DataType) -> Type:
    """The array type ``t`` with another element type; a tile result is not yet placed in memory."""
    if isinstance(t, TileType):
        return TileType(t.shape, dtype, t.memory_space, t.valid_shape)
    return TensorType(t.shape, dtype)


def const_ints(t) -> list:
    """Elements of an index list (a ``MakeTuple``) as Python ints, ``None`` where not constant."""
    if t is None:
        return None
    assert isinstance(t, MakeTuple)
    return [e.value if isinstance(e, ConstInt) else None for e in t.elements]


def static_ints(op: str, what: str, t, span: Span) -> tuple[int, ...]:
    """An index list that must be all constants (tile shapes); error naming ``what`` otherwise."""
    vals = const_ints(t)
    expect(all(v is not None for v in vals), op, f"{what} must be constant integers", span)
    expect(all(v > 0 for v in vals), op, f"{what} must be positive, got {vals}", span)
    return tuple(vals)


def _rt_text(e) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, ConstInt):
        return str(e.value)
    if isinstance(e, BinOp):
        a, b = _rt_text(e.lhs), _rt_text(e.rhs)
        return f"{e.op}({a}, {b})" if e.op in ("min", "max") else f"({a} {BINOPS[e.op]} {b})"
    return type(e).__name__.lower()


def tensor_extents(op: str, what: str, t, span: Span) -> tuple:
    """A tensor shape list (``tensor.create`` / ``tensor.slice``): each constant extent must be
    positive; an integer scalar computed at run time becomes a :class:`RtDim` the executor
    evaluates (the reference's runtime-shaped ``pl.create_tensor([q_tile, head_dim_cfg])``)."""
    out = []
    for e in t.elements:
        if isinstance(e, ConstInt):
            expect(e.value > 0, op, f"{what} must be positive, got {[_rt_text(x) for x in t.elements]}", span)
            out.append(e.value)
        else:
            et = getattr(e, "type", None)
            expect(isinstance(et, ScalarType) and et.dtype.is_int(), op,
                   f"{what} must be integers, got {describe(et) if et is not None else type(e).__name__}", span)
            out.append(RtDim(_rt_text(e)))
    return tuple(out)


def check_region(op: str, offsets, extent, shape, span: Span) -> None:
    """Reject a region that provably leaves a tensor of ``shape``."""
    offs = const_ints(offsets)
    if len(extent) == 2 and len(offs) == len(shape) != 2 and len(shape) >= 1:
        # a 2-D tile at an N-D tensor's N offsets: the tensor's row-major 2-D view (leading dims
        # flattened into rows), the form the executors' region() and FlattenTileNdTo2D give it
        rows = 1
        for n in shape[:-1]:
            rows = rows * n if isinstance(n, int) and isinstance(rows, int) else None
        row = 0
        for o, n in zip(offs[:-1], shape[:-1]):
            row = row * n + o if None not in (row, o) and isinstance(n, int) else None
        offs, shape = [row, offs[-1]], (rows if rows is not None else "?", shape[-1])
    expect(len(offs) == len(shape) == len(extent), op,
           f"rank mismatch: tensor rank {len(shape)}, offsets {len(offs)}, shape {len(extent)}", span)
    for axis, (o, e, n) in enumerate(zip(offs, extent, shape)):
        if o is not None and isinstance(n, int) and isinstance(e, int):  # dynamic dims: checked at run time
            shown = "[" + ", ".join("?" if x is None else str(x) for x in offs) + "]"  # ?: a run-time offset
            why = f"offset {o} is negative" if o < 0 else f"offset {o} + extent {e} > size {n}"
            expect(0 <= o and o + e <= n, op,
                   f"the region leaves the tensor on axis {axis}: {why} "
                   f"(region offsets {shown} + shape {list(extent)}, tensor shape {list(shape)})", span)


def scratch_tile_hint(dsl: str, x) -> str:
    """The fix for a tile reduction called without its scratch tile, in the user's terms: the
    ``create_tile`` line with the operand's own shape and dtype, and the call with its own name."""
    t = getattr(x, "type", None)
    name = getattr(x, "name", None) or "t"
    if isinstance(t, TileType):
        shape, dtype = list(t.shape), f"pl.{t.dtype.name}"
    else:
        shape, dtype = "<input shape>", "<input dtype>"
    return f"tmp = pl.create_tile({shape}, dtype={dtype}, target_memory=pl.Mem.Vec); pl.{dsl}({name}, tmp)"
