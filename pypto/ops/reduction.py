"""Reductions at tensor and tile level: ``row_sum row_max row_min`` (reduce the last axis, keepdim:
``[M, N] -> [M, 1]``) and ``col_sum col_max col_min`` (reduce axis -2: ``[M, N] -> [1, N]``).

Semantics (identical in the reference and the simulator: both call
:func:`pypto.ops.support._reduce_last`):

* **Order is part of the meaning.** With a ``tmp_tile`` the reduction is a *binary tree*, one
  vectorised op per level. Row reductions halve (with ``n`` elements left and ``h = n // 2``, the
  upper ``h`` elements are combined onto the lower ``h``; an odd middle element is carried). Column
  reductions pair ADJACENT rows as the device's TCOLSUM does (``w[i] = w[2i] + w[2i+1]``; an odd
  level's last row is added onto ``w[0]``; ``n -> n // 2``: ``support._pairs_tree``). Without a
  ``tmp_tile`` it is *sequential*: ``acc = x[:, 0]; acc = acc + x[:, 1]; ...`` left to right.
  Every step rounds to the tile dtype (FP16 sums accumulate in FP16, as on the vector unit). For
  max/min the order does not change the result; the same code path is used anyway.
* ``tmp_tile``: same dtype and rank as the input, every dimension at least as large. The simulator
  uses its leading region as scratch (its contents afterwards are unspecified; the reference
  leaves it untouched).
* ``pl.row_*(tile)`` must be given ``tmp_tile`` (the spec's parse error); ``pl.col_*(tile)`` may
  omit it (sequential). The explicit op ``pl.tile.row_sum(x)`` (what the printer writes for the
  sequential form) is accepted and means sequential.
* **Tensor level** (``pl.row_sum(tensor)``) takes no ``tmp_tile`` and lowers to the *sequential*
  tile form (no scratch tile, so nothing extra to fit on chip). The tree order is reachable only
  at tile level by passing ``tmp_tile``.
* **Reductions read the padding** (docs/language.md, "Sum, max and min reductions"): the whole physical tile participates, including
  elements outside ``valid_shape`` (zero after a ``pl.load`` with a narrower ``valid_shape``).
  Pad with the reduction's identity first: ``pl.fillpad(t, pl.PadValue.min)`` before ``row_max``.
* Result ``valid_shape``: a row reduction keeps the input's valid rows (``[vr, 1]``), a column
  reduction its valid columns (``[1, vc]``).
* dtypes: FP32, FP16, BF16, INT32, INT16 (integer sums wrap, two's complement).
* Not ``inplace_safe``: the result is written after the whole input has been read.
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.types import TensorType, TileType, describe
from pypto.language.dtypes import INT16, INT32
from pypto.language.enums import MemorySpace
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.traits import Lockstep, MemorySpaces, Reduction, Scratch
from pypto.ops.rules import expect, scratch_tile_hint
from pypto.errors import InvalidOperationError

_VEC = MemorySpaces((MemorySpace.Vec,), MemorySpace.Vec)
_INTS = (INT32, INT16)

# axis reduced by each family (negative: counted from the last axis)
_AXIS = {"row": -1, "col": -2}


def _tmp_message(dsl: str) -> str:
    return (f"pl.{dsl}: Tile inputs require tmp_tile with the same dtype and rank as the input, and every "
            f"dimension at least as large as the input's")


def _check_input(op: str, t, axis: int, span: Span) -> None:
    expect(t.dtype.is_float() or t.dtype in _INTS, op,
           f"needs a float, INT32 or INT16 operand, got {t.dtype.name}", span,
           "cast the operand with pl.cast(x, pl.FP32)")
    expect(len(t.shape) >= -axis, op, f"needs an operand of rank >= {-axis}, got {describe(t)}", span)


def _reduced(shape, axis: int) -> tuple:
    shape = list(shape)
    shape[axis] = 1
    return tuple(shape)


def _tile_rule(op: str, dsl: str, axis: int):
    def infer(a: OpArgs, span: Span) -> TileType:
        t = a.x.type
        _check_input(op, t, axis, span)
        tmp = a.tmp_tile
        if tmp is not None:
            tt = tmp.type
            ok = (isinstance(tt, TileType) and tt.dtype == t.dtype and len(tt.shape) == len(t.shape)
                  and all(d >= s for d, s in zip(tt.shape, t.shape)))
            if not ok:
                raise InvalidOperationError(
                    _tmp_message(dsl) + f" (input {describe(t)}, tmp_tile {describe(tt)})", span,
                    f"tmp = pl.create_tile({list(t.shape)}, dtype=pl.{t.dtype.name}, target_memory=pl.Mem.Vec)")
        valid = None if t.valid_shape is None else _reduced(t.valid_shape, axis)
        return TileType(_reduced(t.shape, axis), t.dtype, None, valid)
    return infer


def _tensor_rule(op: str, axis: int):
    def infer(a: OpArgs, span: Span) -> TensorType:
        t = a.x.type
        _check_input(op, t, axis, span)
        expect(a.tmp_tile is None, op, "tmp_tile is not supported for Tensor operands", span,
               "tensor reductions are sequential; to get the binary-tree order load a tile and pass "
               "tmp_tile to the tile form")
        return TensorType(_reduced(t.shape, axis), t.dtype)
    return infer


def _dsl_check(dsl: str):
    """``pl.row_*(tile)`` dispatched from the DSL must name its scratch tile (a located error)."""
    def check(args: list, kwargs: dict, span: Span) -> None:
        if len(args) < 2 and kwargs.get("tmp_tile") is None:
            raise InvalidOperationError(
                _tmp_message(dsl), span,
                scratch_tile_hint(dsl, args[0] if args else kwargs.get("tile")))
    return check


def _define(family: str, kind: str) -> None:
    dsl = f"{family}_{kind}"
    axis = _AXIS[family]
    register(OpDef(
        name=f"tensor.{dsl}",
        params=(Param("x", "tensor"), Param("tmp_tile", "tensor", None)),
        infer=_tensor_rule(f"tensor.{dsl}", axis),
        ref=lambda a, axis=axis, kind=kind: f"_pto.reduce({a.x}, None, {axis}, {kind!r})",
        dsl=dsl, operand_kinds=("tensor",),
        lowers_to=f"tile.{dsl}",
        traits=(Reduction(axis, kind),),
        doc=f"{kind} over axis {axis}, keepdim (sequential order)",
    ))
    register(OpDef(
        name=f"tile.{dsl}",
        params=(Param("x", "tile"), Param("tmp_tile", "tile", None)),
        infer=_tile_rule(f"tile.{dsl}", dsl, axis),
        ref=lambda a, axis=axis, kind=kind: f"_pto.reduce({a.x}, {a.tmp_tile}, {axis}, {kind!r})",
        sim=lambda a, dst, keep_scratch=True, axis=axis, kind=kind: (
            f"_pto.reduce_into({dst}, {a.x}, {a.tmp_tile}, {axis}, {kind!r}"
            + ("" if keep_scratch else ", clobber=False") + ")"),
        traits=(Reduction(axis, kind), Scratch("tmp_tile"), Lockstep.ROWS, _VEC),
        dsl=dsl, operand_kinds=("tile",),
        dsl_check=_dsl_check(dsl) if family == "row" else None,
        doc=f"{kind} over axis {axis}, keepdim (binary tree with tmp_tile, else sequential)",
    ))


for _family in ("row", "col"):
    for _kind in ("sum", "max", "min"):
        _define(_family, _kind)
