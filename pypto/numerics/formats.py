"""Bit-exact model of the low-precision element formats: FP8E4M3FN, FP8E5M2, FP8E8M0, FP4 (E2M1),
HF8 (HiFloat8), and of the 4-bit integers INT4 / UINT4.

A format is described by the exact value of every code (built here from the format's definition,
never from a library), so decoding is a table lookup and encoding is one rounding of an exact float64
value onto the sorted grid of representable magnitudes under a rounding mode.

Representation
--------------
Codes are ``uint8`` tensors holding one element per byte (FP4: the 4-bit code in the low nibble).
``pypto.numerics.cast`` maps the torch dtypes that carry these formats to them: ``float8_e4m3fn``,
``float8_e5m2``, ``float8_e8m0fnu`` (torch's own formats, bit-identical), ``float4_e2m1fn_x2`` (used
UNPACKED as a carrier: one FP4 code per byte, high nibble zero; the packed x2 form exists only at the
call boundary) and ``float8_e5m2fnuz`` (a carrier for HF8 codes: torch's reading of those bits is
meaningless and never used). INT4 / UINT4 values are held as int8 / uint8 integers.

Rounding (one rounding of the exact value, the modes of :mod:`pypto.numerics.cast`)
-------------------------------------------------------------------------------------
``rint``/``none`` nearest, ties to the neighbour with the even code (the even last significand
bit; HF8: the even last bit of the code); ``round`` nearest, ties away from zero; ``floor``, ``ceil``,
``trunc`` directed; ``odd`` truncate and, if inexact, take the neighbour with the odd code.
FP8E8M0 has no significand bits, so there is no "even" neighbour: ties go up (away from zero) under
``rint``/``none``, and ``odd`` equals ``trunc`` (every power of two already ends in the implicit 1);
this is what ml_dtypes and torch do.

Overflow, specials (the design decisions; see docs/numerics.md)
----------------------------------------------------------------
========== ======== ============ ===================================== ===============================
format     max      inf          overflow / +-inf input                NaN input, -0
========== ======== ============ ===================================== ===============================
FP8E4M3FN  448      none         saturates to +-448 in every mode      0x7F (sign dropped); -0 kept
FP8E5M2    57344    0x7C         as FP16: inf or max by mode; inf->inf 0x7E (sign dropped); -0 kept
FP8E8M0    2**127   none         NaN (0xFF)                            NaN; 0, -0 and negatives -> NaN
FP4        6        none         saturates to +-6 in every mode        +0 (FP4 has no NaN); -0 kept
HF8        32768    0x6F         as FP16: inf or max by mode; inf->inf 0x80; -0 -> 0 (no -0 code)
========== ======== ============ ===================================== ===============================

"inf or max by mode" is the rule of the other float formats: a value overflows when, rounded with an
unbounded exponent range, it exceeds ``max`` (so the overflow threshold is the midpoint to the next
grid point under the nearest modes: FP8E5M2 61440, HF8 40960); it then becomes inf under
rint/round/none, ``max`` under trunc/odd, and inf toward the direction of floor/ceil. FP8E4M3FN and
FP4 saturate, as the device's conversion into them does with its default saturation (pto-isa's
``TCVT`` tests clip to the format's range before converting). FP8E8M0 has no hardware conversion at
all: it follows ml_dtypes (the OCP MX scale: NaN for what it cannot hold), and positive values below
2**-127 (it has no zero) become 2**-127 in every mode.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

__all__ = ["FORMAT_NAMES", "INT_RANGES", "Format", "get_format", "decode", "encode", "encode_int", "fp4_pack",
           "fp4_unpack"]

#: the small float formats modelled here
FORMAT_NAMES: tuple[str, ...] = ("FP8E4M3FN", "FP8E5M2", "FP8E8M0", "FP4", "HF8")
#: the 4-bit integers: name -> (min, max)
INT_RANGES: dict[str, tuple[int, int]] = {"INT4": (-8, 7), "UINT4": (0, 15)}

_NAN = float("nan")
_INF = float("inf")


def _ieee_value(code: int, e_bits: int, m_bits: int, bias: int) -> float:
    """Value of an IEEE-style code (subnormals when the exponent field is 0), specials ignored."""
    sign = -1.0 if code >> (e_bits + m_bits) & 1 else 1.0
    e = (code >> m_bits) & ((1 << e_bits) - 1)
    m = code & ((1 << m_bits) - 1)
    if e == 0:
        return sign * m * 2.0 ** (1 - bias - m_bits)
    return sign * (1 + m / (1 << m_bits)) * 2.0 ** (e - bias)


def _e4m3fn(code: int) -> float:
    return _NAN if code & 0x7F == 0x7F else _ieee_value(code, 4, 3, 7)


def _e5m2(code: int) -> float:
    if (code >> 2) & 0x1F == 0x1F:
        return _NAN if code & 3 else (-_INF if code & 0x80 else _INF)
    return _ieee_value(code, 5, 2, 15)


def _e8m0(code: int) -> float:
    return _NAN if code == 0xFF else 2.0 ** (code - 127)


def _fp4(code: int) -> float:
    return _ieee_value(code, 2, 1, 1)


def _hf8(code: int) -> float:
    """HiFloat8: sign, a prefix-coded 'dot' field giving the exponent width D, a D-bit
    sign-magnitude exponent with a hidden leading 1 (|E| = 2**(D-1) + rest), the rest mantissa.
    dot 11: D=4, 1 mantissa bit; 10: D=3, 2 bits; 01: D=2, 3 bits; 001: D=1, 3 bits; 0001: D=0,
    3 bits; 0000: denormal 2**(M - 23) (M = 0: zero). 0x80 is NaN, 0x6F / 0xEF are +-inf."""
    if code == 0x80:
        return _NAN
    if code & 0x7F == 0x6F:
        return -_INF if code & 0x80 else _INF
    sign = -1.0 if code & 0x80 else 1.0
    r = code & 0x7F
    if r >> 5 == 0b11:
        d, m_bits = 4, 1
    elif r >> 5 == 0b10:
        d, m_bits = 3, 2
    elif r >> 5 == 0b01:
        d, m_bits = 2, 3
    elif r >> 4 == 0b001:
        d, m_bits = 1, 3
    elif r >> 3 == 0b0001:
        d, m_bits = 0, 3
    else:  # dot 0000: denormal
        m = r & 7
        return sign * (2.0 ** (m - 23) if m else 0.0)
    m = r & ((1 << m_bits) - 1)
    e_field = (r >> m_bits) & ((1 << d) - 1)
    if d == 0:
        e = 0
    else:
        mag = (1 << (d - 1)) | (e_field & ((1 << (d - 1)) - 1))
        e = -mag if e_field >> (d - 1) else mag
    return sign * (1 + m / (1 << m_bits)) * 2.0 ** e


@dataclass(frozen=True)
class Format:
    """One small float format: the value of every code and its special-value rules."""

    name: str
    n_codes: int              # 256, or 16 for FP4
    values: tuple[float, ...]  # value of every code (NaN / +-inf where the code means that)
    sign_bit: int             # 0 for unsigned formats (FP8E8M0)
    nan_code: int             # canonical NaN (-1: no NaN, NaN -> +0)
    inf_code: int             # +inf code (-1: no infinity)
    saturate: bool            # overflow -> +-max in every mode
    overflow_nan: bool        # overflow -> NaN (FP8E8M0)
    neg_zero: bool            # has a -0 code
    ties_up: bool             # FP8E8M0: no significand bits, ties go up

    @property
    def max_finite(self) -> float:
        """The largest finite value."""
        return max(v for v in self.values if v == v and abs(v) != _INF)


_BUILDERS = {
    "FP8E4M3FN": (256, _e4m3fn, 0x80, 0x7F, -1, True, False, True, False),
    "FP8E5M2": (256, _e5m2, 0x80, 0x7E, 0x7C, False, False, True, False),
    "FP8E8M0": (256, _e8m0, 0, 0xFF, -1, False, True, False, True),
    "FP4": (16, _fp4, 0x8, -1, -1, True, False, True, False),
    "HF8": (256, _hf8, 0x80, 0x80, 0x6F, False, False, False, False),
}


@lru_cache(maxsize=None)
def get_format(name: str) -> Format:
    """The :class:`Format` of ``name`` (one of :data:`FORMAT_NAMES`); ``KeyError`` otherwise."""
    n, fn, sign_bit, nan_code, inf_code, sat, ovf_nan, neg_zero, ties_up = _BUILDERS[name]
    return Format(name, n, tuple(fn(c) for c in range(n)), sign_bit, nan_code, inf_code, sat, ovf_nan,
                  neg_zero, ties_up)


# the virtual grid point above max (see _tables)
_VIRTUAL = {"FP8E4M3FN": 480.0, "FP8E5M2": 65536.0, "FP8E8M0": 2.0 ** 128, "FP4": 8.0, "HF8": 49152.0}


@lru_cache(maxsize=None)
def _tables(name: str):
    """(value of every code, the sorted non-negative finite grid followed by the virtual point above
    max, the code of each grid entry (the virtual point's: the inf code, or -1))."""
    f = get_format(name)
    vals = torch.tensor(f.values, dtype=torch.float64)
    # the non-negative finite values, -0 codes excluded (the sign is applied after rounding)
    pos = sorted((v, c) for c, v in enumerate(f.values)
                 if v == v and v >= 0 and v != _INF and not (c & f.sign_bit))
    grid = [v for v, _ in pos]
    codes = [c for _, c in pos]
    # The next grid point above max with an unbounded exponent range: max's binade continued by one
    # step (for FP8E5M2 and HF8 the value the inf code would have if it were finite). It decides
    # ties at the overflow threshold; every format clamps or overflows beyond it.
    virtual = _VIRTUAL[name]
    grid.append(virtual)
    codes.append(f.inf_code)
    return vals, torch.tensor(grid, dtype=torch.float64), torch.tensor(codes, dtype=torch.int64)


def decode(codes: torch.Tensor, name: str) -> torch.Tensor:
    """Exact float64 values of a tensor of codes (any integer dtype; FP4 uses the low nibble)."""
    vals, _, _ = _tables(name)
    f = get_format(name)
    idx = codes.to(torch.int64) & (f.n_codes - 1)
    return vals[idx]


def _to_inf(mode: str, neg: torch.Tensor) -> torch.Tensor:
    """Whether an overflowing value of sign ``neg`` becomes infinite under ``mode`` (else max)."""
    if mode in ("none", "rint", "round"):
        return torch.ones_like(neg)
    if mode in ("trunc", "odd"):
        return torch.zeros_like(neg)
    return neg if mode == "floor" else ~neg


def encode(v: torch.Tensor, name: str, mode: str) -> torch.Tensor:
    """Round exact float64 values ``v`` to the codes of format ``name`` under ``mode`` (a canonical
    name of :data:`pypto.numerics.cast.ROUNDING_MODES`); returns ``uint8`` codes (see the module
    docstring for overflow, NaN, zero and sign rules)."""
    f = get_format(name)
    _, grid, gcodes = _tables(name)
    v = v.to(torch.float64)
    nan = torch.isnan(v)
    inf = torch.isinf(v)
    neg = torch.signbit(v)
    a = torch.where(nan | inf, 0.0, v.abs())
    top = grid.numel() - 1          # index of the virtual point
    i = (torch.searchsorted(grid, a, right=True) - 1).clamp(0, top)
    lo = grid[i]
    hi = grid[(i + 1).clamp(max=top)]
    inexact = (a != lo) & (i < top)
    lo_odd = (gcodes[i] & 1) == 1
    mid = (lo + hi) / 2             # exact: the grid points have few significant bits
    if mode in ("none", "rint"):
        tie_up = torch.ones_like(lo_odd) if f.ties_up else lo_odd
        up = inexact & ((a > mid) | ((a == mid) & tie_up))
    elif mode == "round":
        up = inexact & (a >= mid)
    elif mode == "floor":
        up = inexact & neg
    elif mode == "ceil":
        up = inexact & ~neg
    elif mode == "trunc":
        up = torch.zeros_like(inexact)
    elif mode == "odd":
        up = inexact & ~lo_odd & torch.full_like(inexact, not f.ties_up)
    else:
        raise ValueError(f"unknown rounding mode {mode!r}")
    k = i + up.to(torch.int64)
    over = (k >= top) | (a >= grid[top])
    code = gcodes[k.clamp(max=top - 1)]
    # below the smallest magnitude (FP8E8M0 only: every other format holds zero) -> the smallest
    code = torch.where(a < grid[0], gcodes[0], code)
    max_code = gcodes[top - 1]
    if f.saturate:
        code = torch.where(over | inf, max_code, code)
    elif f.overflow_nan:
        code = torch.where(over | inf, f.nan_code, code)
    else:
        code = torch.where(over, torch.where(_to_inf(mode, neg), f.inf_code, max_code), code)
        code = torch.where(inf, f.inf_code, code)
    if f.sign_bit:
        zero = code == 0
        signed = neg & (~zero | torch.full_like(zero, f.neg_zero))
        code = torch.where(signed, code | f.sign_bit, code)
    else:  # FP8E8M0: unsigned and without zero; 0, -0 and negatives are NaN, tiny positives -> 2**-127
        code = torch.where(neg | (v == 0), f.nan_code, code)
    code = torch.where(nan, max(f.nan_code, 0), code)
    return code.to(torch.uint8)


def encode_int(v: torch.Tensor, name: str, mode: str) -> torch.Tensor:
    """Round float64 values to INT4 / UINT4 under ``mode`` and saturate (NaN -> 0); returns the
    integers as int8 (INT4) or uint8 (UINT4)."""
    from pypto.numerics.cast import _round_integral  # noqa: PLC0415 - cast imports this module

    lo, hi = INT_RANGES[name]
    r = _round_integral(v.to(torch.float64), mode)
    r = torch.where(torch.isnan(r), 0.0, r).clamp(lo, hi)
    return r.to(torch.int8 if name == "INT4" else torch.uint8)


def fp4_unpack(packed: torch.Tensor) -> torch.Tensor:
    """The reference's packed FP4 tensor (``float4_e2m1fn_x2``, two codes per byte along the last
    axis: element ``2j`` in the low nibble, ``2j+1`` in the high one) as the unpacked carrier used
    inside the simulator: the last axis doubled, one code per byte."""
    b = packed.contiguous().view(torch.uint8)
    out = torch.stack([b & 0xF, b >> 4], dim=-1).reshape(*b.shape[:-1], 2 * b.shape[-1])
    return out.view(torch.float4_e2m1fn_x2)


def fp4_pack(carrier: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`fp4_unpack` (the last axis must be even)."""
    c = carrier.contiguous().view(torch.uint8) & 0xF
    return (c[..., 0::2] | (c[..., 1::2] << 4)).contiguous().view(torch.float4_e2m1fn_x2)
