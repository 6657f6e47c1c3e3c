"""Where a scalar of one dtype may stand for a scalar of another (the reference's rule).

``INDEX`` is the dtype of loop variables, Python int literals and index arithmetic; users annotate
such values as ``INT64`` or ``INT32`` and kernels take them as ``pl.Scalar[pl.INDEX]``. The reference
treats ``INDEX`` as compatible with every integer dtype, in both directions, in annotations
(``n: pl.Scalar[pl.INT64] = i * 2``) and never inserts a conversion between ``INDEX`` and ``INT64``
(both are 64-bit signed integers, one representation). We follow that:

* :func:`dtypes_compatible` — an annotation accepts the value: equal dtypes, or ``INDEX`` against any
  integer dtype. The value keeps its bits; a simulator scalar is a Python int either way.
* :func:`coerce_call_arg` — a scalar argument of a call of another function: a compatible dtype is
  passed unchanged; an integer (or INDEX) value for a ``BOOL`` parameter is converted as C does
  (``value != 0``), which is what the device kernel's ``if flag:`` reads of a 64-bit scalar slot
  (the reference's ``is_first: pl.Scalar[pl.INT64] = pl.tensor.read(cfg, [0])`` passed to a
  ``pl.Scalar[pl.BOOL]`` kernel parameter). Any other mismatch (float for int, int for float)
  stays an error at the argument: it would change the value.
"""
from __future__ import annotations

from pypto.errors import ParserTypeError
from pypto.ir.nodes import BinOp, ConstBool, ConstInt, Expr
from pypto.ir.types import ScalarType
from pypto.language.dtypes import BOOL, INDEX, INT64, DataType


def dtypes_compatible(annotated: DataType, inferred: DataType) -> bool:
    """Whether a scalar of dtype ``inferred`` may be bound where ``annotated`` is declared."""
    if annotated == inferred:
        return True
    return (annotated == INDEX and inferred.is_int()) or (inferred == INDEX and annotated.is_int())


def same_representation(a, b) -> bool:
    """Whether scalar types ``a`` and ``b`` are INT64 and INDEX (either order): a value of one
    re-assigns a variable of the other (``max_bn: pl.Scalar[pl.INT64] = 0`` then
    ``max_bn = pl.max(max_bn, i)`` in a loop), as the reference inserts no cast between them."""
    return isinstance(a, ScalarType) and isinstance(b, ScalarType) and {a.dtype, b.dtype} == {INT64, INDEX}


def coerce_call_arg(arg, param_type):
    """``arg`` as passed to a parameter of type ``param_type``: unchanged, or an integer turned
    into the ``BOOL`` a bool parameter declares (``arg != 0``). Other arguments are returned as
    they are (the call's type check reports a real mismatch)."""
    if not (isinstance(param_type, ScalarType) and isinstance(arg, Expr) and isinstance(arg.type, ScalarType)):
        return arg
    want, have = param_type.dtype, arg.type.dtype
    if want == have:
        return arg
    if dtypes_compatible(want, have):
        if isinstance(arg, ConstInt):
            if want.kind in ("int", "uint") and want.bits < 64:
                lo, hi = (-(1 << (want.bits - 1)), (1 << (want.bits - 1)) - 1) if want.kind == "int" \
                    else (0, (1 << want.bits) - 1)
                if not lo <= arg.value <= hi:
                    raise ParserTypeError(f"the constant {arg.value} does not fit a {want.name} parameter "
                                          f"(range {lo}..{hi})", arg.span)
            return ConstInt(arg.value, want, arg.span)
        return arg
    if want == BOOL and have.is_int():
        if isinstance(arg, ConstInt):
            return ConstBool(arg.value != 0, arg.span)
        return BinOp("ne", arg, ConstInt(0, have, arg.span), ScalarType(BOOL), arg.span)
    return arg


def scalar_arg_fits(param_type, arg_type) -> bool:
    """Whether a call's type check accepts a scalar argument of ``arg_type`` for ``param_type``."""
    return isinstance(param_type, ScalarType) and isinstance(arg_type, ScalarType) and \
        dtypes_compatible(param_type.dtype, arg_type.dtype)
