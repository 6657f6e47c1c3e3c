"""``fillpad``: fill every element outside a tile's ``valid_shape`` with a constant, so that a
following reduction (which reads the whole physical tile, docs/language.md, "Sum, max and min reductions") sees the reduction's identity.

* ``pad_value``: ``pl.PadValue.zero`` (default) -> 0; ``pl.PadValue.max`` -> +inf for floats, the
  dtype's largest value for integers; ``pl.PadValue.min`` -> -inf for floats, the smallest value
  for integers. For floats these are the identities of min- and max-reductions (``PadValue.min``
  before ``row_max``, ``PadValue.max`` before ``row_min``, ``zero`` before ``row_sum``).
  ``PadValue.null`` is rejected. DSL sugar: ``0`` / ``0.0`` -> zero, ``math.inf`` -> max,
  ``-math.inf`` -> min (converted by the parser).
* The result has the input's shape, dtype and memory space; its ``valid_shape`` is the full shape.
* Tensor level: a tensor has no padding, so ``pl.fillpad(tensor)`` is a copy; it lowers to
  ``tile.fillpad`` on the whole-tensor tile.
* ``inplace_safe``: each result element depends only on the same element of the input.
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.types import TensorType, TileType
from pypto.language.enums import PadValue
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.traits import InPlaceSafe
from pypto.ops.rules import VEC_SPACES, expect, static_ints

_PAD_NAME = {repr(p): p.value for p in PadValue}


def _check_pad(op: str, a: OpArgs, span: Span) -> None:
    t = a.x.type
    expect(a.pad_value != PadValue.null, op, "pad_value PadValue.null does not fill anything", span,
           "use pl.PadValue.zero, pl.PadValue.max or pl.PadValue.min")
    expect(t.dtype.is_float() or t.dtype.is_int(), op, f"needs a float or integer operand, got {t.dtype.name}",
           span)


def _tile_infer(a: OpArgs, span: Span) -> TileType:
    _check_pad("tile.fillpad", a, span)
    t = a.x.type
    return TileType(t.shape, t.dtype, None, None)


def _tensor_infer(a: OpArgs, span: Span) -> TensorType:
    _check_pad("tensor.fillpad", a, span)
    return TensorType(a.x.type.shape, a.x.type.dtype)


def _valid(x) -> str:
    if getattr(x, "valid", None) is not None:   # a run-time valid shape: its scalar source (codegen.common)
        return x.valid
    t = x.type
    return repr(list(t.valid_shape)) if isinstance(t, TileType) and t.valid_shape is not None else "None"


register(OpDef(
    name="tensor.fillpad",
    params=(Param("x", "tensor"), Param("pad_value", "pad", PadValue.zero)),
    infer=_tensor_infer,
    ref=lambda a: f"_pto.fillpad({a.x}, None, {_PAD_NAME[a.pad_value]!r})",
    dsl="fillpad", operand_kinds=("tensor",),
    lowers_to="tile.fillpad",
    doc="a copy of the tensor (a tensor has no padding)",
))

register(OpDef(
    name="tile.fillpad",
    params=(Param("x", "tile"), Param("pad_value", "pad", PadValue.zero)),
    infer=_tile_infer,
    ref=lambda a: f"_pto.fillpad({a.x}, {_valid(a.x)}, {_PAD_NAME[a.pad_value]!r})",
    sim=lambda a, dst: f"_pto.fillpad_into({dst}, {a.x}, {_valid(a.x)}, {_PAD_NAME[a.pad_value]!r})",
    dsl="fillpad", operand_kinds=("tile",),
    traits=(VEC_SPACES, InPlaceSafe()),
    doc="fill the elements outside the valid region with zero / max / min; result fully valid",
))


# ------------------------------------------------------------------ fillpad_inplace / fillpad_expand
# ``fillpad_inplace(tile, pad_value)``: fillpad whose result is the input's own buffer (the device's
# TFILLPAD_INPLACE). In SSA form it is fillpad returning a NEW VERSION of the operand (``updates``):
# a statement call ``pl.tile.fillpad_inplace(t)`` rebinds ``t``. Values are fillpad's.
#
# ``fillpad_expand(x, shape, pad_value)``: a new, larger tile (TFILLPAD_EXPAND): the source's valid
# region copied to the top-left, every other element ``pad_value``; each destination dimension >= the
# source's; the result is fully valid. Not inplace-safe (the destination is wider than the source).
def _inplace_infer(a: OpArgs, span: Span) -> TileType:
    _check_pad("tile.fillpad_inplace", a, span)
    t = a.x.type
    return TileType(t.shape, t.dtype, None, None)


def _expand_rule(level: str):
    op = f"{level}.fillpad_expand"

    def infer(a: OpArgs, span: Span):
        _check_pad(op, a, span)
        t = a.x.type
        shape = static_ints(op, "shape", a.shape, span)
        expect(len(shape) == len(t.shape), op, f"shape rank {len(shape)} must match the source rank {len(t.shape)}",
               span)
        for i, (d, s) in enumerate(zip(shape, t.shape)):
            expect(d > 0, op, f"shape dimension {i} must be positive, got {d}", span)
            expect(not isinstance(s, int) or d >= s, op,
                   f"destination dimension {i} ({d}) must be >= the source dimension ({s})", span,
                   "fillpad_expand only grows a tile; slice it to shrink")
        return TileType(shape, t.dtype) if level == "tile" else TensorType(shape, t.dtype)
    return infer


register(OpDef(
    name="tile.fillpad_inplace",
    params=(Param("x", "tile", aliases=("tile",)), Param("pad_value", "pad", PadValue.zero)),
    infer=_inplace_infer,
    ref=lambda a: f"_pto.fillpad({a.x}, {_valid(a.x)}, {_PAD_NAME[a.pad_value]!r})",
    sim=lambda a, dst: f"_pto.fillpad_into({dst}, {a.x}, {_valid(a.x)}, {_PAD_NAME[a.pad_value]!r})",
    dsl="fillpad_inplace", operand_kinds=("tile",),
    traits=(VEC_SPACES, InPlaceSafe()),
    updates="x",
    doc="fillpad into the operand's own buffer (a new version of it); result fully valid",
))

register(OpDef(
    name="tile.fillpad_expand",
    params=(Param("x", "tile", aliases=("tile",)), Param("shape", "ints"), Param("pad_value", "pad", PadValue.zero)),
    infer=_expand_rule("tile"),
    ref=lambda a: f"_pto.fillpad_expand({a.x}, {_valid(a.x)}, {a.shape}, {_PAD_NAME[a.pad_value]!r})",
    sim=lambda a, dst: f"_pto.fillpad_expand({a.x}, {_valid(a.x)}, {a.shape}, {_PAD_NAME[a.pad_value]!r}, out={dst})",
    dsl="fillpad_expand", operand_kinds=("tile",),
    traits=(VEC_SPACES,),
    doc="a larger tile: the source's valid region top-left, pad_value elsewhere; result fully valid",
))

register(OpDef(
    name="tensor.fillpad_expand",
    params=(Param("x", "tensor", aliases=("tensor",)), Param("shape", "ints"),
            Param("pad_value", "pad", PadValue.zero)),
    infer=_expand_rule("tensor"),
    ref=lambda a: f"_pto.fillpad_expand({a.x}, None, {a.shape}, {_PAD_NAME[a.pad_value]!r})",
    dsl="fillpad_expand", operand_kinds=("tensor",),
    lowers_to="tile.fillpad_expand",
    doc="a larger tensor: the source top-left, pad_value elsewhere",
))
