"""Integer bit operations of the vector unit, bit-exact, for every integer dtype.

Used verbatim by both executors (through :mod:`pypto.ops.support`, as ``_pto.bitwise`` etc.), so
the reference and the simulator agree by construction; the tests check them against Python's own
integer arithmetic (an independent oracle).

Semantics (the reference's, plus our decisions where it leaves a case open):

* ``and`` / ``or`` / ``xor`` / ``not``: on the two's-complement bit patterns. Array operands are
  first converted to the result dtype (the type rule's promotion; integer narrowing wraps).
* A scalar operand is converted to the tile's dtype by keeping its low ``w`` bits (``0xFF`` on an
  INT8 tile is ``-1``), which is what the hardware's ``i32`` scalar register does for the low
  bits of narrower lanes.
* ``shl``: bits shifted out are lost; zeros come in. ``shr``: *arithmetic* for signed dtypes
  (the sign bit is replicated), *logical* for unsigned ones (zeros come in), as the reference
  defines. The result has the dtype of the shifted operand.
* Shift amounts: a negative amount is undefined on the device (the reference rejects a negative
  constant when the op is built); here a negative amount met at run time raises
  :class:`SimulationError` naming the op. An amount >= the bit width ``w`` is *our decision*:
  the mathematical limit, i.e. ``shl`` gives 0, ``shr`` gives 0 (unsigned, or a non-negative
  signed value) or -1 (a negative signed value), exactly as if the shift were done one bit at a
  time. (The device's behaviour there is not specified by the reference.)

Unsigned dtypes are computed on their signed views (``uint16`` as ``int16``...): torch has no
shift or not for ``uint16/32/64``, and the bit patterns are what the operation is defined on.
"""
from __future__ import annotations

import torch

from pypto.errors import SimulationError

_SIGNED = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_UNSIGNED = (torch.uint8, torch.uint16, torch.uint32, torch.uint64)


def _signed(x: torch.Tensor) -> torch.Tensor:
    """The signed integer view of an integer tensor (itself when already signed)."""
    sd = _SIGNED[x.element_size()]
    return x if x.dtype == sd else x.view(sd)


def wrap_scalar(s, dtype: torch.dtype) -> int:
    """The Python int ``s`` reduced to the low bits of ``dtype``, as a value of ``dtype``'s
    *signed view* (two's complement). ``wrap_scalar(0xFF, torch.int8) == -1``."""
    if isinstance(s, bool) or not isinstance(s, int):
        if isinstance(s, float) and s.is_integer():
            s = int(s)
        else:
            raise SimulationError(f"bitwise op: the scalar operand must be an integer, got {s!r}")
    w = 8 * torch.empty((), dtype=dtype).element_size()
    v = s & ((1 << w) - 1)
    return v - (1 << w) if v >= 1 << (w - 1) else v


def _as(x, dtype: torch.dtype) -> torch.Tensor:
    """An array operand converted to ``dtype`` (wrapping), in its signed view."""
    if x.dtype != dtype:
        x = _convert_int(x, dtype)
    return _signed(x)


def _convert_int(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Integer conversion that keeps the low bits (two's complement wrap), for every pair of
    integer dtypes (torch cannot convert some unsigned pairs directly)."""
    wide = _signed(x).to(torch.int64)
    if x.dtype in _UNSIGNED and x.element_size() < 8:
        wide = wide & ((1 << (8 * x.element_size())) - 1)   # zero-extend the unsigned source
    return wide.to(_SIGNED[torch.empty((), dtype=dtype).element_size()]).view(dtype)


_BITWISE = {"and": torch.bitwise_and, "or": torch.bitwise_or, "xor": torch.bitwise_xor}


def _finish(r: torch.Tensor, dtype: torch.dtype, out: torch.Tensor | None) -> torch.Tensor:
    r = r if r.dtype == dtype else r.view(dtype)
    if out is None:
        return r
    return out.copy_(r)


def bitwise(kind: str, a: torch.Tensor, b, dtype: torch.dtype, out: torch.Tensor | None = None) -> torch.Tensor:
    """``a <kind> b`` (``and`` / ``or`` / ``xor``) in ``dtype``; ``b`` is a tensor or a Python int."""
    fn = _BITWISE[kind]
    x = _as(a, dtype)
    y = torch.tensor(wrap_scalar(b, dtype), dtype=x.dtype) if not isinstance(b, torch.Tensor) else _as(b, dtype)
    return _finish(fn(x, y), dtype, out)


def bitwise_not(a: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``~a`` on the bit pattern."""
    return _finish(torch.bitwise_not(_signed(a)), a.dtype, out)


def _amounts(op: str, k, width: int):
    """Shift amounts as int64 clamped to ``[0, width]`` (see the module doc); negative: error."""
    if isinstance(k, torch.Tensor):
        kk = _signed(k).to(torch.int64)
        if k.dtype in _UNSIGNED and k.element_size() < 8:
            kk = kk & ((1 << (8 * k.element_size())) - 1)
        elif k.dtype == torch.uint64:
            kk = torch.where(kk < 0, torch.full_like(kk, width), kk)  # >= 2**63: a huge amount
        if bool((kk < 0).any()):
            bad = int(kk[kk < 0][0])
            raise SimulationError(f"{op}: negative shift amount {bad} (undefined on the device; shift "
                                  f"amounts must be >= 0)")
        return kk.clamp_max(width)
    if isinstance(k, bool) or not isinstance(k, int):
        raise SimulationError(f"{op}: the shift amount must be an integer, got {k!r}")
    if k < 0:
        raise SimulationError(f"{op}: negative shift amount {k} (undefined on the device; shift amounts must be >= 0)")
    return min(k, width)


def shift(op: str, x: torch.Tensor, k, out: torch.Tensor | None = None) -> torch.Tensor:
    """``shl`` / ``shr`` of ``x`` by ``k`` (a tensor of ``x``'s shape or a Python int); the
    result has ``x``'s dtype. ``shr`` is arithmetic on signed, logical on unsigned dtypes."""
    dtype = x.dtype
    xs = _signed(x)
    w = 8 * x.element_size()
    kk = _amounts(op, k, w)
    # the amounts in xs's dtype (they are <= w <= 64, so they fit even in int8): no promotion
    kt = kk.to(xs.dtype) if isinstance(kk, torch.Tensor) else torch.tensor(kk, dtype=xs.dtype)
    if op == "shl":
        r = torch.bitwise_left_shift(xs, kt)           # torch: an amount >= w gives 0
    else:
        r = torch.bitwise_right_shift(xs, kt)          # arithmetic; an amount >= w gives 0 / -1
        if dtype in _UNSIGNED:
            # logical: clear the k copies of the sign bit that came in (mask = low w-k bits;
            # (-1 << w) is 0 in torch, so k = 0 keeps every bit)
            ones = torch.full((), -1, dtype=xs.dtype)
            mask = torch.bitwise_not(torch.bitwise_left_shift(ones, (w - kt) if isinstance(kk, torch.Tensor)
                                                              else torch.tensor(w - kk, dtype=xs.dtype)))
            r = torch.bitwise_and(r, mask)
    return _finish(r, dtype, out)
