"""Creation ops: ``ci`` (alias ``arange``: a contiguous integer sequence) at tensor and tile level, and
``tri`` (a triangular 0/1 mask tile). Helpers: :mod:`pypto.ops.support.create`.

* ``ci(start, shape, dtype=INT32, descending=False)``: ``dst[0, k] = start + k`` (``start - k``
  descending), dtype INT16 / INT32 / UINT16 / UINT32, shape ``[1, ..., 1, N]`` with ``N != 1`` (the
  device's TCI fills one row; leading dimensions must be 1, as in the reference). Values wrap in
  the dtype (two's complement). ``pl.arange`` / ``pl.tensor.arange`` / ``pl.tile.arange`` are the
  same op. ``start``: an integer scalar (a runtime value too), converted to the dtype.
* ``pl.tile.tri(diagonal, shape, valid_shape=None, dtype=INT32, upper=False)``: 1 where
  ``j <= i + diagonal`` (``upper``: ``j >= i + diagonal``) inside ``valid_shape``, 0 elsewhere;
  rank 2; dtypes INT8 UINT8 INT16 UINT16 INT32 UINT32 FP16 BF16 FP32; the result's valid shape is
  ``valid_shape``. (The device does not write outside the valid region; here it is 0.)
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.types import TensorType, TileType
from pypto.language.dtypes import BF16, FP16, FP32, INT8, INT16, INT32, UINT8, UINT16, UINT32
from pypto.language.enums import MemorySpace
from pypto.ir.pysource import py_literal
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.traits import MemorySpaces
from pypto.ops.rules import expect, scalar_dtype, static_ints

_CI_DTYPES = (INT16, INT32, UINT16, UINT32)
_TRI_DTYPES = (INT8, UINT8, INT16, UINT16, INT32, UINT32, FP16, BF16, FP32)


def _ci_rule(level: str):
    op = f"{level}.ci"

    def infer(a: OpArgs, span: Span):
        expect(a.dtype in _CI_DTYPES, op, f"dtype must be INT16, INT32, UINT16 or UINT32, got {a.dtype!r}", span)
        expect(scalar_dtype(a.start.type).is_int(), op,
               f"start must be an integer scalar, got {scalar_dtype(a.start.type).name}", span)
        shape = static_ints(op, "shape", a.shape, span)
        expect(shape[-1] != 1, op, f"the innermost dimension must be != 1, got {list(shape)}", span,
               "use a row shape like [1, N]")
        expect(all(d == 1 for d in shape[:-1]), op,
               f"leading dimensions must be 1 (the device fills one row), got {list(shape)}", span,
               "generate [1, N] and broadcast it with pl.col_expand")
        return TileType(shape, a.dtype) if level == "tile" else TensorType(shape, a.dtype)
    return infer


def _py(v) -> str:
    return py_literal(v)


for _level in ("tensor", "tile"):
    register(OpDef(
        name=f"{_level}.ci",
        params=(Param("start", "scalar"), Param("shape", "ints"), Param("dtype", "dtype", INT32),
                Param("descending", "bool", False)),
        infer=_ci_rule(_level),
        ref=lambda a: f"_pto.ci({a.start}, {a.shape}, {a.dtype}, {a.descending})",
        sim=(lambda a, dst: f"_pto.ci({a.start}, {a.shape}, {a.dtype}, {a.descending}, out={dst})")
        if _level == "tile" else None,
        dsl="ci" if _level == "tensor" else None, operand_kinds=(),
        lowers_to="tile.ci" if _level == "tensor" else None,
        traits=(MemorySpaces((), MemorySpace.Vec),) if _level == "tile" else (),
        doc="start + k (descending: start - k) along a [1, N] row, wrapping in the dtype",
    ))


def _tri_rule(a: OpArgs, span: Span) -> TileType:
    op = "tile.tri"
    expect(a.dtype in _TRI_DTYPES, op, f"dtype {a.dtype!r} is not supported (INT8..INT32, UINT8..UINT32, FP16, "
           "BF16, FP32)", span)
    expect(scalar_dtype(a.diagonal.type).is_int(), op,
           f"diagonal must be an integer scalar, got {scalar_dtype(a.diagonal.type).name}", span)
    shape = static_ints(op, "shape", a.shape, span)
    expect(len(shape) == 2, op, f"needs a 2-D shape, got {list(shape)}", span)
    valid = None
    if a.valid_shape is not None:
        valid = static_ints(op, "valid_shape", a.valid_shape, span)
        expect(len(valid) == 2 and all(v <= s for v, s in zip(valid, shape)), op,
               f"valid_shape {list(valid)} must be 2-D and within shape {list(shape)}", span)
        if tuple(valid) == tuple(shape):
            valid = None
    return TileType(shape, a.dtype, None, valid)


register(OpDef(
    name="tile.tri",
    params=(Param("diagonal", "scalar"), Param("shape", "ints"), Param("valid_shape", "ints", None, optional=True),
            Param("dtype", "dtype", INT32), Param("upper", "bool", False)),
    infer=_tri_rule,
    ref=lambda a: f"_pto.tri({a.diagonal}, {a.shape}, {a.valid_shape}, {a.dtype}, {a.upper})",
    sim=lambda a, dst: f"_pto.tri({a.diagonal}, {a.shape}, {a.valid_shape}, {a.dtype}, {a.upper}, out={dst})",
    dsl="tri", operand_kinds=(), traits=(MemorySpaces((), MemorySpace.Vec),),
    doc="a lower (upper) triangular 0/1 mask tile",
))


# ------------------------------------------------------------------ random
# ``random(key0, key1, counter0, counter1, counter2, counter3, shape, valid_shape=None, dtype=UINT32,
# rounds=10)``: the device's TRANDOM (A5 only, as in the reference): Philox-4x32 counter-based values,
# reproduced bit for bit (pypto.numerics.philox, which documents the counter layout). The six seeds
# are integer scalars (runtime values too), taken as 32-bit words; shape rank 2 (the generator works
# on rows and columns); dtype INT32 or UINT32; rounds 7 or 10. ``tile.random`` fills only
# ``valid_shape`` (the result's valid shape; 0 elsewhere here, unwritten on the device).
_SEEDS = ("key0", "key1", "counter0", "counter1", "counter2", "counter3")


def _random_rule(level: str):
    op = f"{level}.random"

    def infer(a: OpArgs, span: Span):
        for n in _SEEDS:
            d = scalar_dtype(getattr(a, n).type)
            expect(d.is_int(), op, f"{n} must be an integer scalar, got {d.name}", span)
        expect(a.dtype in (INT32, UINT32), op, f"dtype must be INT32 or UINT32, got {a.dtype!r}", span)
        expect(a.rounds in (7, 10), op, f"rounds must be 7 or 10, got {a.rounds!r}", span)
        shape = static_ints(op, "shape", a.shape, span)
        expect(len(shape) == 2, op, f"needs a 2-D shape (the generator fills rows and columns), got {list(shape)}",
               span, "generate [rows, cols] and reshape")
        if level == "tensor":
            return TensorType(shape, a.dtype)
        valid = None
        if a.valid_shape is not None:
            valid = static_ints(op, "valid_shape", a.valid_shape, span)
            expect(len(valid) == 2 and all(0 <= v <= s for v, s in zip(valid, shape)), op,
                   f"valid_shape {list(valid)} must be 2-D and within shape {list(shape)}", span)
            if tuple(valid) == tuple(shape):
                valid = None
        return TileType(shape, a.dtype, None, valid)
    return infer


def _seeds(a: OpArgs) -> str:
    return "(" + ", ".join(getattr(a, n) for n in _SEEDS) + ")"


_SEED_PARAMS = tuple(Param(n, "scalar") for n in _SEEDS)
register(OpDef(
    name="tile.random",
    params=_SEED_PARAMS + (Param("shape", "ints"), Param("valid_shape", "ints", None, optional=True),
                           Param("dtype", "dtype", UINT32), Param("rounds", "str", 10)),
    infer=_random_rule("tile"),
    ref=lambda a: f"_pto.random({_seeds(a)}, {a.shape}, {a.valid_shape}, {a.dtype}, {a.rounds})",
    sim=lambda a, dst: f"_pto.random({_seeds(a)}, {a.shape}, {a.valid_shape}, {a.dtype}, {a.rounds}, out={dst})",
    # pl.random (no operand to dispatch on) is the tensor op, as in the reference's pl namespace;
    # the tile op is spelled pl.tile.random
    dsl=None, operand_kinds=(), traits=(MemorySpaces((), MemorySpace.Vec),), platforms=frozenset({"a5"}),
    doc="TRANDOM: Philox-4x32 counter-based random INT32 / UINT32 values (A5)",
))
register(OpDef(
    name="tensor.random",
    params=_SEED_PARAMS + (Param("shape", "ints"), Param("dtype", "dtype", UINT32), Param("rounds", "str", 10)),
    infer=_random_rule("tensor"),
    ref=lambda a: f"_pto.random({_seeds(a)}, {a.shape}, None, {a.dtype}, {a.rounds})",
    dsl="random", operand_kinds=(), lowers_to="tile.random", platforms=frozenset({"a5"}),
    lower=lambda call, result, conv: _lower_random(call, result, conv),
    doc="TRANDOM: Philox-4x32 counter-based random INT32 / UINT32 values (A5)",
))


def _lower_random(call, result, conv):
    from pypto.ir.nodes import AssignStmt, Call, Var
    from pypto.ops.registry import get_op

    *seeds, shape, dtype, rounds = (conv.expr(x) if x is not None and not isinstance(x, (int, str)) and
                                    hasattr(x, "type") else x for x in call.args)
    args = (*seeds, shape, None, dtype, rounds)
    t = get_op("tile.random").infer_type(args, call.span)
    nv = Var(result.name, t, result.span)
    return [AssignStmt(nv, Call("tile.random", args, t, call.span), call.span)], nv
