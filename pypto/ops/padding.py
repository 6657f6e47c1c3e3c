"""``fillpad``: fill every element outside a tile's ``valid_shape`` with a constant, so that a
following reduction (which reads the whole physical tile, spec §6.2) sees the reduction's identity.

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
from pypto.language.enums import MemorySpace, PadValue
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.rules import expect

_VEC = (MemorySpace.Vec,)
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
    input_spaces=_VEC, result_space=MemorySpace.Vec,
    inplace_safe=True,
    doc="fill the elements outside the valid region with zero / max / min; result fully valid",
))
