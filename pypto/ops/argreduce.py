"""Product and arg reductions at tensor and tile level: ``row_prod`` / ``col_prod`` (keepdim, like
``row_sum`` / ``col_sum``) and ``row_argmax row_argmin`` (``[M, N] -> [M, 1]``: the column index of
each row's extreme) / ``col_argmax col_argmin`` (``[M, N] -> [1, N]``: the row index), INT32.

Semantics (helpers in :mod:`pypto.ops.support.argreduce`, used by both executors):

* Only the **valid extent of the reduced axis** takes part (unlike ``row_sum`` & co., which read
  the padding, see :mod:`pypto.ops.reduction`): a product over zero padding would be 0, and the
  device's TROWPROD / TROWARGMAX ... take their extent from the tile's valid shape.
* ``row_prod`` order: a binary tree with ``tmp_tile``, sequential without, exactly as ``row_sum``
  (every step rounds to the dtype; FP16/BF16 products computed in FP32 and rounded once per step).
  The dispatched ``pl.row_prod(tile, tmp)`` needs ``tmp_tile`` (the reference's rule); the explicit
  ``pl.tile.row_prod(x)`` is the sequential form. ``col_prod(x)`` takes no scratch (the
  reference's signature) and is sequential: row 0 times row 1, times row 2, ...
  The tensor forms lower to the sequential tile forms. Integer products wrap (two's complement).
* Arg reductions: ties give the **lowest** index; a NaN is the extreme of both kinds (the first
  NaN's index); -0.0 ties with +0.0. The result is exact whatever the evaluation order.
  ``tmp_tile`` (the device's scratch): required by the dispatched tile form (``pl.row_argmax(t,
  tmp)``); for the row forms it must have exactly the input's shape and dtype (the reference's
  rule); its contents afterwards are unspecified (the simulator leaves it untouched).
  The tensor forms take none.
* dtypes: FP32, FP16, BF16, INT32, INT16 (as the other reductions).
"""
from __future__ import annotations

from pypto.errors import InvalidOperationError, Span
from pypto.ir.types import TensorType, TileType, describe
from pypto.language.dtypes import INT32
from pypto.language.enums import MemorySpace
from pypto.ops.reduction import _check_input, _dsl_check, _reduced, _tensor_rule, _tile_rule
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.traits import Lockstep, MemorySpaces, Reduction, Scratch
from pypto.ops.rules import expect, scratch_tile_hint

_VEC = MemorySpaces((MemorySpace.Vec,), MemorySpace.Vec)
_AXIS = {"row": -1, "col": -2}


def _valid_src(x) -> str:
    if getattr(x, "valid", None) is not None:   # a run-time valid shape: its scalar source (codegen.common)
        return x.valid
    t = x.type
    return repr(list(t.valid_shape)) if isinstance(t, TileType) and t.valid_shape is not None else "None"


# ------------------------------------------------------------------ row_prod / col_prod
def _define_prod(family: str) -> None:
    dsl = f"{family}_prod"
    axis = _AXIS[family]
    # col_prod takes no scratch tile (the reference's TCOLPROD): always sequential, one row after
    # the other, as a column reduction runs on the vector unit
    scratch = family == "row"
    tparams = (Param("x", "tensor"),) + ((Param("tmp_tile", "tensor", None),) if scratch else ())
    register(OpDef(
        name=f"tensor.{dsl}",
        params=tparams,
        infer=_tensor_rule(f"tensor.{dsl}", axis) if scratch else _plain_rule(f"tensor.{dsl}", axis, "tensor"),
        ref=lambda a, axis=axis: f"_pto.reduce_valid({a.x}, None, {axis}, 'prod', None)",
        dsl=dsl, operand_kinds=("tensor",), lowers_to=f"tile.{dsl}",
        traits=(Reduction(axis, "prod", reads_padding=False),),
        doc=f"product over axis {axis}, keepdim (sequential order)",
    ))
    tmp = (lambda a: a.tmp_tile) if scratch else (lambda a: None)
    register(OpDef(
        name=f"tile.{dsl}",
        params=(Param("x", "tile"),) + ((Param("tmp_tile", "tile", None),) if scratch else ()),
        infer=_tile_rule(f"tile.{dsl}", dsl, axis) if scratch else _plain_rule(f"tile.{dsl}", axis, "tile"),
        ref=lambda a, axis=axis, tmp=tmp: (
            f"_pto.reduce_valid({a.x}, {tmp(a)}, {axis}, 'prod', {_valid_src(a.x)})"),
        sim=lambda a, dst, keep_scratch=True, axis=axis, tmp=tmp: (
            f"_pto.reduce_valid_into({dst}, {a.x}, {tmp(a)}, {axis}, 'prod', {_valid_src(a.x)}"
            + ("" if keep_scratch else ", clobber=False") + ")"),
        traits=(Reduction(axis, "prod", reads_padding=False), Lockstep.ROWS, _VEC)
        + ((Scratch("tmp_tile"),) if scratch else ()),
        dsl=dsl, operand_kinds=("tile",),
        dsl_check=_dsl_check(dsl) if scratch else None,
        doc=(f"product over the valid extent of axis {axis}, keepdim "
             + ("(binary tree with tmp_tile, else sequential)" if scratch else "(sequential)")),
    ))


def _plain_rule(op: str, axis: int, level: str):
    """A reduction without a scratch operand (col_prod)."""
    def infer(a: OpArgs, span: Span):
        t = a.x.type
        _check_input(op, t, axis, span)
        if level == "tensor":
            return TensorType(_reduced(t.shape, axis), t.dtype)
        valid = None if t.valid_shape is None else _reduced(t.valid_shape, axis)
        return TileType(_reduced(t.shape, axis), t.dtype, None, valid)
    return infer


# ------------------------------------------------------------------ arg reductions
def _arg_tile_rule(op: str, family: str):
    axis = _AXIS[family]

    def infer(a: OpArgs, span: Span) -> TileType:
        t = a.x.type
        _check_input(op, t, axis, span)
        tmp = a.tmp_tile
        if tmp is not None and family == "row":
            tt = tmp.type
            if not (isinstance(tt, TileType) and tt.dtype == t.dtype and tuple(tt.shape) == tuple(t.shape)):
                raise InvalidOperationError(
                    f"{op}: tmp_tile must have exactly the input's shape and dtype (input {describe(t)}, "
                    f"tmp_tile {describe(tt)})", span,
                    f"tmp = pl.create_tile({list(t.shape)}, dtype=pl.{t.dtype.name}, target_memory=pl.Mem.Vec)")
        valid = None if t.valid_shape is None else _reduced(t.valid_shape, axis)
        return TileType(_reduced(t.shape, axis), INT32, None, valid)
    return infer


def _arg_tensor_rule(op: str, family: str):
    axis = _AXIS[family]

    def infer(a: OpArgs, span: Span) -> TensorType:
        t = a.x.type
        _check_input(op, t, axis, span)
        expect(a.tmp_tile is None, op, "tmp_tile is not supported for Tensor operands", span,
               "the tensor form needs no scratch; pass tmp_tile only to the tile form")
        return TensorType(_reduced(t.shape, axis), INT32)
    return infer


def _arg_dsl_check(dsl: str):
    """``pl.<family>_arg*(tile)`` dispatched from the DSL must name its scratch tile (the reference)."""
    def check(args: list, kwargs: dict, span: Span) -> None:
        if len(args) < 2 and kwargs.get("tmp_tile") is None:
            raise InvalidOperationError(
                f"pl.{dsl}: Tile inputs require tmp_tile (the device's scratch tile)", span,
                scratch_tile_hint(dsl, args[0] if args else kwargs.get("tile")))
    return check


def _define_arg(family: str, kind: str) -> None:
    dsl = f"{family}_arg{kind}"
    axis = _AXIS[family]
    register(OpDef(
        name=f"tensor.{dsl}",
        params=(Param("x", "tensor"), Param("tmp_tile", "tensor", None)),
        infer=_arg_tensor_rule(f"tensor.{dsl}", family),
        ref=lambda a, axis=axis, kind=kind: f"_pto.arg_reduce({a.x}, {axis}, {kind!r}, None)",
        dsl=dsl, operand_kinds=("tensor",), lowers_to=f"tile.{dsl}",
        traits=(Reduction(axis, f"arg{kind}", reads_padding=False),),
        doc=f"index of the {kind} along axis {axis} (INT32, keepdim)",
    ))
    register(OpDef(
        name=f"tile.{dsl}",
        params=(Param("x", "tile"), Param("tmp_tile", "tile", None)),
        infer=_arg_tile_rule(f"tile.{dsl}", family),
        ref=lambda a, axis=axis, kind=kind: f"_pto.arg_reduce({a.x}, {axis}, {kind!r}, {_valid_src(a.x)})",
        sim=lambda a, dst, axis=axis, kind=kind: (
            f"_pto.arg_reduce_into({dst}, {a.x}, {axis}, {kind!r}, {_valid_src(a.x)})"),
        traits=(Reduction(axis, f"arg{kind}", reads_padding=False), Lockstep.ROWS, _VEC),
        dsl=dsl, operand_kinds=("tile",),
        dsl_check=_arg_dsl_check(dsl),
        doc=f"index of the {kind} over the valid extent of axis {axis} (INT32, keepdim; ties: lowest index)",
    ))


for _family in ("row", "col"):
    _define_prod(_family)
    for _kind in ("max", "min"):
        _define_arg(_family, _kind)
