"""Run-time helpers of the further elementwise ops (:mod:`pypto.ops.elementwise_ext`), shared by both
executors (re-exported by :mod:`pypto.ops.support` as ``_pto.<name>``).

Every vector instruction rounds once to the operand dtype (FP16/BF16 computed in FP32, as torch's
CPU half kernels do for + - * /); an op that is several instructions on the device is written
here as those instructions, so that its roundings are the device's, not a fused ideal.
"""
from __future__ import annotations

import torch

from pypto.errors import SimulationError
from pypto.ops.support import core as _s


def _out(r: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    return r if out is None else out.copy_(r)


def _scalar(x: torch.Tensor, s) -> torch.Tensor:
    """The scalar ``s`` as a 0-d tensor of ``x``'s dtype (a float rounded once from its double)."""
    return _s.scalar_operand(x, s, x.dtype)[1]


def fmod(a: torch.Tensor, b, dtype: torch.dtype, out: torch.Tensor | None = None) -> torch.Tensor:
    """``TFMOD`` / ``TFMODS``: ``a - trunc(a / b) * b`` as four instructions (divide, truncate,
    multiply, subtract), each rounded to ``dtype``. Not C's exact ``fmod``: when ``a / b`` rounds,
    the result can differ from it (and ``b = inf`` gives NaN, not ``a``). Float dtypes only."""
    a = a.to(dtype)
    b = b.to(dtype) if isinstance(b, torch.Tensor) else _scalar(a, b)
    q = torch.trunc(torch.div(a, b))
    return _out(torch.sub(a, torch.mul(q, b)), out)


def rem(a: torch.Tensor, b, dtype: torch.dtype, valid=None, out: torch.Tensor | None = None) -> torch.Tensor:
    """``TREM`` / ``TREMS``: the remainder with the sign of the divisor (Python's ``%``).

    Integers: exact (``a - floor(a / b) * b`` in unbounded arithmetic; INT_MIN % -1 is 0). A zero
    divisor inside the valid region (``valid``: the result's valid shape, None = the whole tile) is
    undefined on the device and raises :class:`SimulationError`; in the padding it gives 0 (those
    elements are never stored). Floats: the instruction sequence ``a - floor(a / b) * b``, each step
    rounded to ``dtype`` (as :func:`fmod`)."""
    a = a.to(dtype)
    b = b.to(dtype) if isinstance(b, torch.Tensor) else _scalar(a, b)
    if dtype.is_floating_point:
        q = torch.floor(torch.div(a, b))
        return _out(torch.sub(a, torch.mul(q, b)), out)
    zero = b == 0
    if bool(zero.any()):
        if bool((zero & _inside(a, valid)).any()):
            raise SimulationError("rem: integer division by zero in the valid region (undefined on the device)")
        b = torch.where(zero, torch.ones_like(b), b)
    # int64 holds every quotient of the narrower dtypes; INT64 itself: torch.remainder (floor mode)
    if dtype == torch.int64:
        r = torch.remainder(a, b)
    else:
        r = torch.remainder(a.to(torch.int64), b.to(torch.int64)).to(dtype)
    if bool(zero.any()):
        r = torch.where(zero, torch.zeros_like(r), r)
    return _out(r, out)


def prelu(x: torch.Tensor, slope: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``x`` where ``x > 0``, else ``x * slope`` (rounded to the dtype). NaN stays NaN; -0.0 is
    not > 0, so it gives ``-0.0 * slope``."""
    return _out(torch.where(x > 0, x, torch.mul(x, slope)), out)


def lrelu(x: torch.Tensor, slope, out: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`prelu` with a scalar slope (converted to ``x``'s dtype first)."""
    return _out(torch.where(x > 0, x, torch.mul(x, _scalar(x, slope))), out)


def add3(kind: str, a: torch.Tensor, b, c: torch.Tensor, dtype: torch.dtype,
         out: torch.Tensor | None = None) -> torch.Tensor:
    """``addc`` / ``subc`` (``b`` a tile) and ``addsc`` / ``subsc`` (``b`` a scalar): ``(a + b) + c``
    / ``(a - b) - c``, two instructions, each rounded to ``dtype``."""
    a = a.to(dtype)
    b = b.to(dtype) if isinstance(b, torch.Tensor) else _s.scalar_operand(a, b, dtype)[1]
    fn = torch.add if kind == "add" else torch.sub
    return _out(fn(fn(a, b), c.to(dtype)), out)


_PART = {"add": torch.add, "mul": torch.mul, "max": torch.maximum, "min": torch.minimum}


def part(kind: str, a: torch.Tensor, b: torch.Tensor, va, vb, dtype: torch.dtype,
         out: torch.Tensor | None = None) -> torch.Tensor:
    """``part_<kind>``: where both operands are valid (``va`` / ``vb``: their valid shapes, None =
    the whole tile) the op; where only one is, a copy of that one; elsewhere (padding of both) the
    op as well (those elements lie outside the result's valid region)."""
    a, b = a.to(dtype), b.to(dtype)
    r = _PART[kind](a, b)
    if va is not None or vb is not None:
        ina, inb = _inside(a, va), _inside(b, vb)
        r = torch.where(ina & ~inb, a, r)
        r = torch.where(inb & ~ina, b, r)
    return _out(r, out)


def _inside(x: torch.Tensor, valid) -> torch.Tensor:
    """A bool mask of ``x``'s shape: True inside the valid region (``valid`` counted from the last
    axis, so a gang view with a leading task axis works too)."""
    m = torch.ones(x.shape, dtype=torch.bool)
    if valid is None:
        return m
    for k, v in enumerate(reversed(list(valid))):
        axis = x.dim() - 1 - k
        idx = torch.arange(x.shape[axis]) < int(v)
        shape = [1] * x.dim()
        shape[axis] = x.shape[axis]
        m = m & idx.view(shape)
    return m
