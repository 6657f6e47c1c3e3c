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
from pypto.ops.rules import const_ints, expect

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


# -- the reference's two variants ----------------------------------------------------------------
# ``tile.fillpad_inplace``: fillpad into the input's own buffer on the device (TFILLPAD_INPLACE). The
# values are fillpad's; which buffer the result takes is MemoryReuse's choice here (inplace_safe lets
# it take the input's), so it is the same op with the reference's name kept in printed IR.
register(OpDef(
    name="tile.fillpad_inplace",
    params=(Param("x", "tile", aliases=("tile",)), Param("pad_value", "pad", PadValue.zero)),
    infer=lambda a, span: (_check_pad("tile.fillpad_inplace", a, span), TileType(a.x.type.shape, a.x.type.dtype,
                                                                                 None, None))[1],
    ref=lambda a: f"_pto.fillpad({a.x}, {_valid(a.x)}, {_PAD_NAME[a.pad_value]!r})",
    sim=lambda a, dst: f"_pto.fillpad_into({dst}, {a.x}, {_valid(a.x)}, {_PAD_NAME[a.pad_value]!r})",
    dsl="fillpad_inplace", operand_kinds=("tile",),
    input_spaces=_VEC, result_space=MemorySpace.Vec,
    inplace_safe=True,
    doc="fillpad, in the input's buffer on the device (same values as tile.fillpad)",
))


def _expand_infer(op: str):
    def infer(a: OpArgs, span: Span):
        _check_pad(op, a, span)
        t = a.x.type
        shape = tuple(const_ints(a.shape))
        expect(len(shape) == len(t.shape) and all(isinstance(d, int) for d in shape), op,
               f"shape must be {len(t.shape)} constant integers, got {list(shape)}", span)
        expect(all(d >= s for d, s in zip(shape, t.shape)), op,
               f"the destination shape {list(shape)} must be at least the source's {list(t.shape)} on every axis",
               span, "use pl.tile.fillpad for a same-shape fill, or a smaller source")
        if isinstance(t, TensorType):
            return TensorType(shape, t.dtype)
        return TileType(shape, t.dtype, None, None)
    return infer


register(OpDef(
    name="tensor.fillpad_expand",
    params=(Param("x", "tensor", aliases=("tile",)), Param("shape", "ints"), Param("pad_value", "pad", PadValue.zero)),
    infer=_expand_infer("tensor.fillpad_expand"),
    ref=lambda a: f"_pto.fillpad_expand({a.x}, None, {a.shape}, {_PAD_NAME[a.pad_value]!r})",
    dsl="fillpad_expand", operand_kinds=("tensor",),
    lowers_to="tile.fillpad_expand",
    doc="the tensor copied into the top-left of a larger one, the rest filled with zero / max / min",
))

register(OpDef(
    name="tile.fillpad_expand",
    params=(Param("x", "tile", aliases=("tile",)), Param("shape", "ints"), Param("pad_value", "pad", PadValue.zero)),
    infer=_expand_infer("tile.fillpad_expand"),
    ref=lambda a: f"_pto.fillpad_expand({a.x}, {_valid(a.x)}, {a.shape}, {_PAD_NAME[a.pad_value]!r})",
    sim=lambda a, dst: f"_pto.fillpad_expand({a.x}, {_valid(a.x)}, {a.shape}, {_PAD_NAME[a.pad_value]!r}, out={dst})",
    dsl="fillpad_expand", operand_kinds=("tile",),
    input_spaces=_VEC, result_space=MemorySpace.Vec,
    doc="a larger tile: the source's valid region at the top left, every other element zero / max / min "
        "(TFILLPAD_EXPAND); result fully valid",
))
