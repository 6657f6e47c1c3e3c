"""Scalar floating-point arithmetic as the device does it.

Generated code computes scalar expressions with Python numbers, which are float64. The device's
scalar unit computes an FP32 ``a * b + c`` in FP32, rounding after every operation (the reference
lowers each scalar ``+ - * /`` of an FP32 value to one ``arith.*f`` on ``f32``); a float64 chain
rounded once at the end can differ in the last bits (``(1 + 2**-12) ** 2 - 1`` is ``2**-11`` in
FP32 and ``2**-11 + 2**-24`` in float64). So every floating-point scalar operation's result is
rounded to the operation's dtype (:func:`pypto.codegen.common.py_expr` wraps it in :func:`sround`).

One rounding of the exact float64 result is the correctly rounded FP32 / FP16 / BF16 result for
``+ - * /``: float64 carries more than twice the target's significand bits plus two, so rounding
twice (exact -> float64 -> target) equals rounding once (the classic double-rounding bound). Division
by zero follows IEEE 754 (``x / 0`` is a signed infinity, ``0 / 0`` NaN) instead of Python's
``ZeroDivisionError``: that is what the device's ``divf`` gives.
"""
from __future__ import annotations

import math
import struct

import torch

_F32 = struct.Struct("<f")
_F16 = struct.Struct("<e")


def f32(x: float) -> float:
    """``x`` rounded to FP32 (to nearest, ties to even; past the largest finite FP32, ``inf``)."""
    try:
        return _F32.unpack(_F32.pack(x))[0]
    except OverflowError:   # struct refuses what rounds past the largest finite value; IEEE gives inf
        return math.copysign(math.inf, x)


def _f16(x: float) -> float:
    try:
        return _F16.unpack(_F16.pack(x))[0]
    except OverflowError:   # (as in f32: past 65504 + half an ulp)
        return math.copysign(math.inf, x)


def _bf16(x: float) -> float:
    from pypto.ops.support.core import scalar_cast

    return scalar_cast(float(x), torch.bfloat16, "rint")   # (to nearest, ties to even: "round" is ties away)


# the scalar rounding of each floating-point dtype (float64 needs none; FP8 scalars are not arithmetic)
_ROUND = {torch.float32: f32, torch.float16: _f16, torch.bfloat16: _bf16}


def rounding(dtype: torch.dtype):
    """The function rounding a Python float to ``dtype``'s values, or ``None`` when nothing needs it."""
    return _ROUND.get(dtype)


def sround(x, dtype: torch.dtype):
    """``x`` (a Python number) rounded to the floating-point ``dtype`` (unchanged for other dtypes)."""
    r = _ROUND.get(dtype)
    return x if r is None else r(float(x))


def sdiv(a, b, dtype: torch.dtype):
    """The scalar ``a / b`` of a floating-point ``dtype``: IEEE 754 for a zero divisor (a signed
    infinity, NaN for ``0 / 0`` and NaN operands), rounded to ``dtype``."""
    a, b = float(a), float(b)
    if b == 0.0:
        if a == 0.0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return sround(a / b, dtype)


def sfloordiv(a, b, dtype: torch.dtype):
    """The scalar ``a // b`` of a floating-point ``dtype``: ``floor(a / b)`` as Python defines it,
    with a zero divisor giving IEEE's ``floor(a / 0)`` (a signed infinity, or NaN) instead of an
    exception."""
    a, b = float(a), float(b)
    if b == 0.0:
        return sdiv(a, b, dtype)
    return sround(a // b, dtype)


def smod(a, b, dtype: torch.dtype):
    """The scalar ``a % b`` of a floating-point ``dtype`` (Python's sign rule: the divisor's), NaN for
    a zero divisor as IEEE's remainder gives, rounded to ``dtype``."""
    a, b = float(a), float(b)
    if b == 0.0:
        return math.nan
    return sround(a % b, dtype)
