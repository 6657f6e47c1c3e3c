"""Bit-exact, vectorised model of the hardware element cast (``pto.tcvt`` / ``pl.cast``).

Public API
----------
``ROUNDING_MODES``
    ``("none", "rint", "round", "floor", "ceil", "trunc", "odd")``; the integer code of a mode is
    its index in this tuple (``0..6``).
``normalize_mode(mode)``
    Name (case-insensitive) or integer code -> canonical name.
``cast_tensor(x, dst, mode="round")``
    Cast a torch tensor to the torch dtype ``dst`` under a rounding mode.
``cast_into(dst, x, mode)``
    The same cast written into an existing tensor ``dst`` (its dtype is the destination).

Supported dtypes (source and destination): ``bool``, ``int8``, ``int16``, ``int32``, ``int64``,
``uint8``, ``uint16``, ``uint32``, ``float16``, ``bfloat16``, ``float32``.  ``float64`` is also
accepted as a *source* (it is rounded once, like any other source).  The low-precision formats
(:mod:`pypto.numerics.formats`) are sources and destinations too, through their torch carriers
(:data:`CARRIERS`: ``float8_e4m3fn``, ``float8_e5m2``, ``float8_e8m0fnu``, and the unpacked FP4 /
HF8 carriers) or by name (``cast_tensor(x, "FP4")``, ``"HF8"``, ``"INT4"``, ``"UINT4"``; INT4 / UINT4
results are int8 / uint8 integers, and an INT4 source is just its int8 values). A destination may be
a torch dtype, a :class:`~pypto.language.dtypes.DataType` or a DataType name.

Rounding modes (the design decision of this project)
----------------------------------------------------
* ``rint``  - round to nearest, ties to even.
* ``round`` - round to nearest, ties away from zero.
* ``floor`` / ``ceil`` / ``trunc`` - directed rounding toward -inf / +inf / zero.
* ``odd``   - round to odd: truncate toward zero; if the conversion was inexact, force the last
  kept bit to 1 (for integers: an even truncated result moves one step away from zero).
* ``none``  - the hardware's CAST_NONE, the instruction's default per (src, dst) pair: a float ->
  integer conversion (INT4 / UINT4 included) TRUNCATES toward zero, every other conversion rounds
  like ``rint``. That is pto-isa's TCVT on both A5 (``tcvtDispatchByRound``: "float -> integer:
  truncate toward zero (RoundZType), everything else: round-to-nearest-even") and a2a3 (the
  ``default:`` of each ``GenCastCall*``: ``vconv_f322s32z``, ``vconv_f162s16z``, ...,
  ``vconv_f322f16r``), and it is what torch's ``.to(int)`` does.

Every rounding is a *single* rounding of the exact source value: fp16/bf16/fp32 and all integers
of at most 32 bits are exact in float64; int64 values of magnitude >= 2**53 are replaced by an
exactly representable stand-in that lies in the same open interval between consecutive multiples
of 2**29 (all destination grid points and ties at that magnitude are multiples of 2**29), so the
rounding decision is unchanged in every mode.

Conversions
-----------
* **float -> float** (any pair, incl. fp32->fp16, fp32->bf16, fp16<->bf16): correctly rounded to
  the destination precision under the mode, including the destination's subnormals (values below
  the smallest subnormal round to 0 or to the smallest subnormal as the mode dictates).  Widening
  conversions are exact.  Overflow, i.e. when the value rounded with an unbounded exponent range
  exceeds the largest finite value ``MAX`` (so fp16 overflow starts at 65520 under nearest modes,
  not at 65504):

  =========================  ==========================  ==========================
  mode                       positive                    negative
  =========================  ==========================  ==========================
  rint / round / none        +inf                        -inf
  trunc / odd                +MAX                        -MAX
  floor                      +MAX                        -inf
  ceil                       +inf                        -MAX
  =========================  ==========================  ==========================

  NaN becomes the destination's canonical quiet NaN (fp32 ``0x7FC00000``, fp16 ``0x7E00``, bf16
  ``0x7FC0``; sign and payload are not propagated); +-inf stay +-inf in every mode; the sign of
  zero is preserved (a non-zero value that rounds to zero keeps its sign, e.g. ``-1e-30`` -> ``-0``).
* **float -> int**: round to an integer under the mode, then SATURATE to the destination range;
  NaN -> 0, +-inf -> max/min.
* **int -> float**: single rounding of the exact integer under the mode (exact when
  representable), with the same overflow rules as float -> float (e.g. int32 -> fp16).
* **int -> int**: widening is exact; narrowing SATURATES to the destination range (also between
  signed and unsigned types, e.g. ``-1 -> uint8`` gives 0, ``300 -> uint8`` gives 255).
* **bool**: a bool destination is ``x != 0`` (so NaN -> True, -0.0 -> False); a bool source is the
  integer 0/1.
* **same dtype**: identity (a copy).

The implementation is one pass of whole-tensor torch operations (no per-element Python loops).
"""
from __future__ import annotations

import threading
import weakref

import torch

from pypto.numerics import formats as _fmt

__all__ = ["ROUNDING_MODES", "CARRIERS", "normalize_mode", "cast_tensor", "cast_into", "device_mode", "format_of"]

ROUNDING_MODES: tuple[str, ...] = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")

# torch dtype -> (min, max) of an integer destination.
_INT_RANGE: dict[torch.dtype, tuple[int, int]] = {
    torch.int8: (-(2**7), 2**7 - 1),
    torch.int16: (-(2**15), 2**15 - 1),
    torch.int32: (-(2**31), 2**31 - 1),
    torch.int64: (-(2**63), 2**63 - 1),
    torch.uint8: (0, 2**8 - 1),
    torch.uint16: (0, 2**16 - 1),
    torch.uint32: (0, 2**32 - 1),
}


class _FloatFormat:
    """Parameters of a binary floating-point destination format."""

    __slots__ = ("p", "emin", "emax", "max_finite", "nan_bits", "int_view")

    def __init__(self, p: int, emin: int, emax: int, nan_bits: int, int_view: torch.dtype):
        self.p = p                      # significand bits including the implicit one
        self.emin = emin                # exponent of the smallest normal
        self.emax = emax                # exponent of the largest finite binade
        self.max_finite = float((2**p - 1) * 2.0 ** (emax - p + 1))
        self.nan_bits = nan_bits        # canonical quiet NaN bit pattern
        self.int_view = int_view        # same-width integer dtype used to write the NaN pattern


_FLOAT_FMT: dict[torch.dtype, _FloatFormat] = {
    torch.float16: _FloatFormat(11, -14, 15, 0x7E00, torch.int16),
    torch.bfloat16: _FloatFormat(8, -126, 127, 0x7FC0, torch.int16),
    torch.float32: _FloatFormat(24, -126, 127, 0x7FC00000, torch.int32),
}

_FLOAT_SRC = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

#: torch dtype -> low-precision format it carries (see :mod:`pypto.numerics.formats`): torch's own
#: float8 formats bit for bit; float4_e2m1fn_x2 UNPACKED (one FP4 code per byte) and float8_e5m2fnuz
#: as an opaque carrier of HF8 codes.
CARRIERS: dict[torch.dtype, str] = {
    torch.float8_e4m3fn: "FP8E4M3FN",
    torch.float8_e5m2: "FP8E5M2",
    torch.float8_e8m0fnu: "FP8E8M0",
    torch.float4_e2m1fn_x2: "FP4",
    torch.float8_e5m2fnuz: "HF8",
}
_CARRIER_OF = {v: k for k, v in CARRIERS.items()}
_SUPPORTED_DST = (torch.bool, *_INT_RANGE, *_FLOAT_FMT)
_SUPPORTED_SRC = (*_SUPPORTED_DST, torch.float64, *CARRIERS)

# The rounding the device applies whatever mode is asked (pto-isa a5 TCvt.hpp): FP32 -> FP8E4M3FN /
# FP8E5M2 always round to nearest-even (ROUND_R), FP32 / FP16 -> HF8 always ties away (ROUND_A),
# BF16 -> FP4 honours the mode but has no round-to-odd (CAST_ODD falls back to nearest-even).
_DEVICE_MODE = {"FP8E4M3FN": {m: "rint" for m in ROUNDING_MODES},
                "FP8E5M2": {m: "rint" for m in ROUNDING_MODES},
                "HF8": {m: "round" for m in ROUNDING_MODES},
                "FP4": {"odd": "rint"}}


def device_mode(dst, mode: str | int) -> str:
    """The rounding mode the device actually applies for a cast into ``dst`` (a DataType, its name
    or a torch dtype) when ``mode`` is requested; the requested mode itself for every destination
    whose conversion honours it. See ``_DEVICE_MODE`` for the pairs that do not."""
    mode = normalize_mode(mode)
    name = format_of(dst)
    return _DEVICE_MODE.get(name, {}).get(mode, mode) if name else mode


def format_of(dtype) -> str | None:
    """The low-precision format name of ``dtype`` (a torch dtype, a DataType or a name):
    ``"FP8E4M3FN"``, ..., ``"INT4"``, ``"UINT4"``, or ``None`` for the other types."""
    if isinstance(dtype, torch.dtype):
        return CARRIERS.get(dtype)
    name = getattr(dtype, "name", dtype)
    if isinstance(name, str) and (name in _fmt.FORMAT_NAMES or name in _fmt.INT_RANGES):
        return name
    return None


def normalize_mode(mode: str | int) -> str:
    """Return the canonical name of a rounding mode.

    Accepts one of :data:`ROUNDING_MODES` (case-insensitive, an optional ``cast_`` prefix is
    allowed, e.g. ``"CAST_RINT"``) or its integer code ``0..6``.  Raises :class:`ValueError`
    listing the valid modes otherwise.
    """
    if isinstance(mode, int) and not isinstance(mode, bool):
        if 0 <= mode < len(ROUNDING_MODES):
            return ROUNDING_MODES[mode]
    elif isinstance(mode, str):
        name = mode.strip().lower()
        if name.startswith("cast_"):
            name = name[len("cast_"):]
        if name in ROUNDING_MODES:
            return name
    valid = ", ".join(f"{i}={m!r}" for i, m in enumerate(ROUNDING_MODES))
    raise ValueError(f"invalid rounding mode {mode!r}; expected one of {valid}")


def _pow2(k: torch.Tensor) -> torch.Tensor:
    """Exact ``2.0**k`` (float64) for an int64 tensor ``k`` in [-1022, 1023], built from bits."""
    return ((k + 1023) << 52).view(torch.float64)


def int_mode(mode: str) -> str:
    """The mode a float -> integer conversion applies: CAST_NONE truncates there (module docstring)."""
    return "trunc" if mode == "none" else mode


def _round_integral(s: torch.Tensor, mode: str) -> torch.Tensor:
    """Round float64 ``s`` to an integral float64 under ``mode`` (signs of zeros preserved)."""
    if mode in ("none", "rint"):
        return torch.round(s)  # round half to even
    if mode == "floor":
        return torch.floor(s)
    if mode == "ceil":
        return torch.ceil(s)
    t = torch.trunc(s)
    if mode == "trunc":
        return t
    away = t + torch.sign(s)
    if mode == "round":
        return torch.where((s - t).abs() >= 0.5, away, t)  # s - t is exact
    # odd: inexact and even -> one step away from zero
    return torch.where((s != t) & (torch.fmod(t, 2.0) == 0), away, t)


def _overflow_to_inf(v: torch.Tensor, mode: str) -> torch.Tensor | bool:
    """Whether an overflowing value of sign ``sign(v)`` becomes inf (else max finite)."""
    if mode in ("none", "rint", "round"):
        return True
    if mode in ("trunc", "odd"):
        return False
    if mode == "floor":
        return v < 0
    return v > 0  # ceil


def _round_to_float(v: torch.Tensor, fmt: _FloatFormat, mode: str) -> torch.Tensor:
    """Round exact float64 values ``v`` to the grid of ``fmt``; returns float64 (inf on overflow)."""
    finite = torch.isfinite(v)
    vf = torch.where(finite, v, 0.0)
    _, e = torch.frexp(vf)  # vf = m * 2**e, 0.5 <= |m| < 1  (e = 0 for zero)
    lead = e.to(torch.int64) - 1
    q = lead.clamp_min(fmt.emin) - (fmt.p - 1)  # exponent of the destination's unit in last place
    r = _round_integral(vf * _pow2(-q), mode) * _pow2(q)  # both scalings are exact
    over = r.abs() > fmt.max_finite
    to_inf = _overflow_to_inf(vf, mode)
    if isinstance(to_inf, bool):
        big = torch.full_like(vf, float("inf") if to_inf else fmt.max_finite)
    else:
        big = torch.where(to_inf, float("inf"), fmt.max_finite)
    r = torch.where(over, big, r.abs())
    r = torch.copysign(r, vf)  # rounding never changes the sign; keeps -0
    return torch.where(finite, r, v)  # inf / nan pass through


def _exact_float64_of_int(x: torch.Tensor) -> torch.Tensor:
    """float64 values whose rounding to any <=24-bit-significand format equals that of ``x``.

    Integers of at most 32 bits are exact.  For int64, |x| >= 2**53 is replaced by the odd multiple
    of 2**28 in the same open interval between multiples of 2**29 (or kept if x is a multiple of
    2**29): at that magnitude every destination grid point and every tie is a multiple of 2**29,
    so the rounding decision is unchanged, and the stand-in needs at most 35 significant bits.
    """
    if x.dtype != torch.int64:
        return x.to(torch.int64).to(torch.float64)
    low = x & (2**29 - 1)  # x = H * 2**29 + low, 0 <= low < 2**29 (two's complement)
    stand_in = (x - low) + torch.where(low != 0, 2**28, 0)
    big = (x >= 2**53) | (x <= -(2**53))
    return torch.where(big, stand_in, x).to(torch.float64)


def _canonicalize_nan(out: torch.Tensor, nan_mask: torch.Tensor, fmt: _FloatFormat) -> torch.Tensor:
    """Write the canonical quiet NaN pattern of ``fmt`` where ``nan_mask`` is set, in place: ``out``
    is the fresh result of a conversion (one masked pass instead of a ``where`` into a new tensor)."""
    out.view(fmt.int_view).masked_fill_(nan_mask, fmt.nan_bits)
    return out


def _to_int(v: torch.Tensor, dst: torch.dtype) -> torch.Tensor:
    """Saturate integral float64 values (NaN -> 0) and convert them to integer dtype ``dst``."""
    lo, hi = _INT_RANGE[dst]
    v = torch.where(torch.isnan(v), 0.0, v)
    if dst == torch.int64:
        # 2**63 - 1 is not a double: clamp below the largest double < 2**63, patch the top.
        top = v >= 2.0**63
        out = v.clamp(float(lo), 2.0**63 - 1024).to(torch.int64)
        return torch.where(top, torch.tensor(hi, dtype=torch.int64, device=v.device), out)
    return v.clamp(float(lo), float(hi)).to(torch.int64).to(dst)


def cast_tensor(x: torch.Tensor, dst: torch.dtype, mode: str | int = "round") -> torch.Tensor:
    """Cast ``x`` to torch dtype ``dst`` exactly as the hardware does under rounding ``mode``.

    See the module docstring for the full semantics (single correct rounding under the mode,
    overflow rules, saturation of float->int and narrowing int->int, NaN handling).  ``dst`` may
    also be a :class:`pypto.language.dtypes.DataType` (its ``.torch`` is used).  Raises
    :class:`TypeError` for unsupported dtypes and :class:`ValueError` for an invalid mode.
    Returns a new tensor of the same shape (a copy when ``x.dtype == dst``).
    """
    mode = normalize_mode(mode)
    dst_fmt = None
    if not isinstance(dst, torch.dtype):
        dst_fmt = format_of(dst)
        if dst_fmt is None:
            if isinstance(dst, str):  # a DataType name ("BF16")
                from pypto.language.dtypes import dtype_from_name  # noqa: PLC0415 - a leaf module

                try:
                    dst = dtype_from_name(dst.upper())
                except KeyError:
                    raise TypeError(f"cast_tensor: unknown destination dtype {dst!r}") from None
            if isinstance(getattr(dst, "torch", None), torch.dtype):
                dst = dst.torch
            else:
                raise TypeError(f"cast_tensor: unsupported destination dtype {dst}")
        elif dst_fmt in _fmt.FORMAT_NAMES:
            dst = _CARRIER_OF[dst_fmt]
            dst_fmt = None
    src = x.dtype
    if src not in _SUPPORTED_SRC:
        raise TypeError(f"cast_tensor: unsupported source dtype {src}")
    if dst_fmt is None and dst not in _SUPPORTED_DST and dst not in CARRIERS:
        raise TypeError(f"cast_tensor: unsupported destination dtype {dst}")
    if src == dst and dst_fmt is None:
        return x.clone()
    if src in CARRIERS:
        # a low-precision source: its exact value in float64 (NaN / inf included), cast from there
        v = _fmt.decode(x.view(torch.uint8), CARRIERS[src])
        if dst == torch.bool and dst_fmt is None:
            return v != 0
        return cast_tensor(v, dst if dst_fmt is None else dst_fmt, mode)
    if dst_fmt is not None or dst in CARRIERS:
        return _to_low_precision(x, dst_fmt or CARRIERS[dst], mode)

    if src == dst:
        return x.clone()
    if dst == torch.bool:
        return x != 0
    if src == torch.bool:
        x = x.to(torch.uint8)
        src = torch.uint8
        if src == dst:
            return x

    src_is_float = src in _FLOAT_SRC
    if dst in _INT_RANGE:
        if src_is_float:
            return _to_int(_round_integral(x.to(torch.float64), int_mode(mode)), dst)
        lo, hi = _INT_RANGE[dst]
        x64 = x.to(torch.int64)
        if src == torch.int64 or lo > _INT_RANGE[src][0] or hi < _INT_RANGE[src][1]:
            x64 = x64.clamp(max(lo, -(2**63)), min(hi, 2**63 - 1))
        return x64.to(dst)

    fmt = _FLOAT_FMT[dst]
    if src == torch.float32 and dst == torch.bfloat16 and mode in _BF16_FAST:
        return _fp32_to_bf16(x, mode)
    if src_is_float:
        sfmt = _FLOAT_FMT.get(src)
        if sfmt is not None and sfmt.p <= fmt.p and sfmt.emin >= fmt.emin and sfmt.emax <= fmt.emax:
            # widening (every source value is representable): exact; NaN still canonicalised
            out = x.to(dst)
            return _canonicalize_nan(out, torch.isnan(out), fmt)   # (out is NaN where x is; its test is cheaper)
        v = x.to(torch.float64)
    else:
        v = _exact_float64_of_int(x)
    r = _round_to_float(v, fmt, mode)
    out = r.to(torch.float32)  # exact: r is representable in dst (or +-inf / nan)
    if dst != torch.float32:
        out = out.to(dst)
    if src_is_float:
        out = _canonicalize_nan(out, torch.isnan(v), fmt)
    return out


# FP32 -> BF16 under a nearest mode, on the bits (the models' hot cast: P of an attention step).
# BF16 keeps FP32's exponent range, so rounding the 31-bit magnitude field at bit 16 as an integer is
# the correct rounding in every binade, subnormals included: a carry out of the kept mantissa bits
# steps the exponent (to the next binade, or from the largest finite value to the infinity pattern
# 0x7F80, which is the overflow rule of these modes), and the sign is put back unchanged (-0, and
# values rounding to zero keep their sign). +-inf stay inf (their low bits are zero); NaN is
# canonicalised afterwards. Same results as the float64 path (tests/numerics: every FP32 exponent
# with boundary, tie and random mantissas, all specials).
_BF16_FAST = frozenset(("round", "rint", "none"))


def _bf16_nearest_bits(x: torch.Tensor, mode: str) -> torch.Tensor:
    """int32 tensor whose low 16 bits are the BF16 pattern of FP32 ``x`` rounded under a nearest
    ``mode`` (NaN lanes: unspecified, the caller canonicalises them).

    Done on the signed FP32 bits in int32 without overflow (no int64 copies: ~15x faster than the
    int64 form this replaces, same bits): ``h = bits >> 16`` (arithmetic) is the sign-extended
    pattern of the value truncated to BF16 -- its low 16 bits are sign | exponent | kept mantissa
    also for negative values -- and rounding adds the carry ``c`` in {0, 1} out of the dropped low
    half. For negative values the +1 reaches the low 16 bits' magnitude field exactly as for the
    magnitude (two's complement of a sign-extended value), and it reaches the sign bit only from
    the all-ones magnitude, a NaN. ``round`` (ties away): ``c`` is the first dropped bit, and
    ``h + c == ((bits >> 15) + 1) >> 1`` (floor halving of ``2h + c + 1``). ``rint`` / ``none``
    (ties to even): ``c = (low + 0x7FFF + (h & 1)) >> 16``."""
    bits = x.view(torch.int32)
    if mode == "round":
        r = bits >> 15
        r += 1
        r >>= 1
        return r
    h = bits >> 16
    r = bits & 0xFFFF
    r += 0x7FFF
    r += h & 1
    r >>= 16
    r += h
    return r


def _has_nan(x: torch.Tensor) -> bool:
    """Whether float tensor ``x`` may hold a NaN: its sum is NaN (IEEE: a NaN operand makes every
    sum NaN; ``inf + -inf`` also gives NaN, a false alarm that only costs the exact check). One
    vectorised reduction (~20 us for 400k FP32 elements) instead of an ``isnan`` mask (~300 us)."""
    s = float(x.sum())
    return s != s


def _fp32_to_bf16(x: torch.Tensor, mode: str) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=torch.bfloat16)
    _fp32_to_bf16_into(out, x, mode)
    return out


# FP32 -> BF16 into a tile, by torch's own conversion (``Tensor.copy_`` into a BF16 tensor). That
# conversion is round-to-nearest-even computed on the bits, ``(u + 0x7FFF + ((u >> 16) & 1)) >> 16``
# for every non-NaN ``u`` (ATen: ``c10::round_to_nearest_even`` in its scalar loops, the same integer
# steps in its AVX2 / AVX-512 vector loops, ``cvtfp32_bf16``: no hardware BF16 instruction, so no
# denormals-are-zero), i.e. exactly ``rint`` / ``none`` here, subnormals and overflow to inf included;
# only its NaN differs between loops (0x7FC0 scalar, 0xFFFF vector), and tensors with a NaN take the
# bit path below. Ties away (``round``) is that conversion of ``u | 1``: setting the lowest (dropped)
# bit makes a tie (low half 0x8000) round up and moves no other low half across the tie, so the carry
# is ``low >= 0x8000``, rounding half away on the magnitude. ``inf | 1`` is a NaN: tensors with an inf
# take the bit path too. Other builds may convert otherwise (aarch64 uses the BFCVT instruction, which
# flushes subnormals when FPCR.FZ is set): the first use checks torch's conversion against the bit
# formula on every rounding class (:func:`_torch_bf16_is_rne`) and keeps the bit path if they differ.
# Pinned against the independent oracle (ml_dtypes / bit arithmetic) in tests/numerics/test_cast.py:
# every high half with its rounding-deciding low halves, strided and contiguous, vector and scalar loops.
_TORCH_RNE: list = []   # [bool] once checked
# ``bitwise_or(t, 1)`` takes torch's composite Scalar overload (boxed dispatch, a wrapped scalar
# tensor converted to int32: ~3x the cost of the operation on a tile); a 0-d int32 operand calls the
# structured kernel directly
_ONE_I32 = torch.tensor(1, dtype=torch.int32)
_ROUND_BUF = threading.local()   # shape -> (contiguous int32 scratch of ``bits | 1``, its FP32 view), per thread


def _torch_bf16_is_rne() -> bool:
    """Whether torch's FP32 -> BF16 conversion gives :func:`_bf16_nearest_bits`' ``rint`` bits, and
    of ``bits | 1`` its ``round`` bits, on non-NaN, non-inf inputs: checked once, on both signs of
    subnormal, normal, near-overflow and largest patterns with each rounding-deciding low half, in a
    length that runs torch's vector loop and its scalar tail."""
    if not _TORCH_RNE:
        highs = torch.tensor([0x0000, 0x0001, 0x0040, 0x007F, 0x0080, 0x0081, 0x3F80, 0x3F81, 0x4049, 0x7F7E,
                              0x7F7F], dtype=torch.int32)
        highs = torch.cat([highs, highs | 0x8000]) << 16
        lows = torch.tensor([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=torch.int32)
        bits = (highs[:, None] | lows[None, :]).reshape(-1)
        bits = torch.cat([bits, bits[:1]])   # 133 patterns: no multiple of a vector's width
        x = bits.view(torch.float32)
        ok = True
        for mode, src in (("rint", x), ("round", torch.bitwise_or(bits, 1).view(torch.float32))):
            got = torch.empty(x.shape, dtype=torch.bfloat16).copy_(src).view(torch.int16)
            ok = ok and torch.equal(got, _bf16_nearest_bits(x, mode).to(torch.int16))
        _TORCH_RNE.append(ok)
    return _TORCH_RNE[0]


def _bits_view(x: torch.Tensor) -> torch.Tensor:
    """``x.view(torch.int32)`` of an FP32 tensor, made once per view object: the simulator casts the
    same tile views call after call (:class:`pypto.runtime.cores.CoreMemory` caches them), and a
    view costs a torch call of several microseconds inside a model's call. Kept for views only
    (``x._base`` set: the int32 view then refers to the root tensor, not to ``x``), keyed by ``id``
    and checked by a weak reference to ``x`` whose callback drops the entry when ``x`` dies, so an
    id is never taken for another tensor and nothing is kept alive by the cache; a base tensor (a
    caller's temporary) gets its view made each call."""
    hit = _BITS.get(id(x))
    if hit is not None and hit[0]() is x:
        return hit[1]
    xv = x.view(torch.int32)
    if x._base is not None:
        k = id(x)
        if len(_BITS) >= 4096:
            _BITS.clear()
        _BITS[k] = (weakref.ref(x, lambda _, k=k: _BITS.pop(k, None)), xv)
    return xv


_BITS: dict = {}   # id(x) -> (weakref to x, x.view(torch.int32)), x a view


def _fp32_to_bf16_into(dst: torch.Tensor, x: torch.Tensor, mode: str) -> None:
    """FP32 ``x`` cast into BF16 ``dst`` under a nearest ``mode`` (see above)."""
    if _TORCH_RNE and _TORCH_RNE[0] or _torch_bf16_is_rne():
        # a temporary either way: dst may overlap x (the planner may place a cast over its source)
        if mode == "round":
            buf = _ROUND_BUF.__dict__.get(x.shape)   # (a per-thread scratch per shape: no allocation)
            if buf is None:
                if len(_ROUND_BUF.__dict__) > 64:
                    _ROUND_BUF.__dict__.clear()
                ti = torch.empty(x.shape, dtype=torch.int32)
                buf = _ROUND_BUF.__dict__[x.shape] = (ti, ti.view(torch.float32))
            torch.bitwise_or(_bits_view(x), _ONE_I32, out=buf[0])
            t = buf[1]
        else:
            t = x.clone()
        # one reduction over the tensor about to be converted: finite unless ``x`` holds a NaN or an
        # inf (``inf | 1`` is a NaN) -- or the sum overflowed, a false alarm that costs the bit path
        s = float(t.sum())
        if s - s == 0:
            dst.copy_(t)
            return
    r = _bf16_nearest_bits(x, mode)        # x is intact: dst is written only below
    if _has_nan(x):
        r.masked_fill_(torch.isnan(x), 0x7FC0)
    dst.view(torch.int16).copy_(r)


def cast_into(dst: torch.Tensor, x: torch.Tensor, mode: str) -> None:
    """``dst.copy_(cast_tensor(x, dst.dtype, mode))`` (the simulator's ``tile.cast`` into a tile), with
    direct forms for the hot pairs: FP32 -> BF16 under a nearest mode (torch's round-to-nearest-even
    conversion, of ``bits | 1`` for ties away: :func:`_fp32_to_bf16_into`; tensors with a NaN or an
    inf take the bit path of :func:`_bf16_nearest_bits`) and exact float widening (BF16 / FP16 ->
    FP32, ...: torch's conversion, NaN canonicalised only when :func:`_has_nan` says there may be
    one; converted straight into ``dst`` when the two share no byte, :func:`_disjoint`). Same bits as
    the general path. ``x`` and ``dst`` may share memory (the memory planner may place a cast's
    result over its source): every form then reads all of ``x`` into a temporary before writing
    ``dst``. ``mode`` may be any spelling :func:`cast_tensor` accepts."""
    if mode not in _MODE_SET:
        mode = normalize_mode(mode)
    src, dt = x.dtype, dst.dtype
    if dst.shape == x.shape and src != dt:
        if src == torch.float32 and dt == torch.bfloat16 and mode in _BF16_FAST:
            _fp32_to_bf16_into(dst, x, mode)
            return
        sfmt, fmt = _FLOAT_FMT.get(src), _FLOAT_FMT.get(dt)
        if sfmt is not None and fmt is not None and sfmt.p <= fmt.p and sfmt.emin >= fmt.emin \
                and sfmt.emax <= fmt.emax:
            if dt == torch.float32 and src in _HALF_SRC and _disjoint(dst, x):
                # torch's conversion straight into the tile (the kernel ``x.to`` runs, without the
                # temporary), then the NaN check on the result: x is intact (no shared byte), so
                # a possible NaN redoes the cast below with the canonical NaN
                dst.copy_(x)
                if not _has_nan(dst):
                    return
            out = x.to(dt)   # widening: exact
            if _has_nan(out):
                out = _canonicalize_nan(out, torch.isnan(out), fmt)
            dst.copy_(out)
            return
    dst.copy_(cast_tensor(x, dt, mode))


_MODE_SET = frozenset(ROUNDING_MODES)
_HALF_SRC = (torch.bfloat16, torch.float16)


def _disjoint(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether tensors ``a`` and ``b`` (of one shape) certainly share no byte of memory (``False``
    when unsure). Cached per layout (data pointers, shape, strides, element sizes: a tile view's
    are fixed, so a kernel's casts pay the test once). Exact for what the simulator hands over:
    two byte ranges apart, or two gang views (``[n, *tile]``, the same byte stride between the
    members' memories, each member's part within one stride), whose members' parts are checked
    against each other's nearest members; anything else counts as overlapping."""
    key = (a.data_ptr(), b.data_ptr(), a.shape, a.stride(), b.stride(), a.dtype, b.dtype)
    r = _DISJOINT.get(key)
    if r is None:
        r = _disjoint_layout(a, b)
        if len(_DISJOINT) > 1024:
            _DISJOINT.clear()
        _DISJOINT[key] = r
    return r


_DISJOINT: dict = {}


def _span(t: torch.Tensor, first: int = 0) -> int:
    """Bytes from ``t``'s first element to just past its last one, over dims ``first`` onwards."""
    return (sum((n - 1) * s for n, s in zip(t.shape[first:], t.stride()[first:])) + 1) * t.element_size()


def _disjoint_layout(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.numel() == 0 or b.numel() == 0:
        return True
    if any(s < 0 for s in a.stride()) or any(s < 0 for s in b.stride()):
        return False
    pa, pb = a.data_ptr(), b.data_ptr()
    if pa + _span(a) <= pb or pb + _span(b) <= pa:
        return True
    if a.dim() < 2 or a.shape != b.shape:
        return False
    stride = a.stride(0) * a.element_size()
    n = a.shape[0]
    if stride <= 0 or b.stride(0) * b.element_size() != stride:
        return False
    ea, eb = _span(a, 1), _span(b, 1)
    if ea > stride or eb > stride:
        return False
    # member i of a: [pa + i*stride, + ea); member j of b: [pb + j*stride, + eb). They meet iff
    # -eb < d + k*stride < ea for d = pb - pa, k = j - i, |k| < n: with ea, eb <= stride only the
    # two k nearest -d / stride can
    d = pb - pa
    m = d % stride
    for off in (m, m - stride):
        k = (off - d) // stride
        if -n < k < n and -eb < off < ea:
            return False
    return True


def _exact_float64(x: torch.Tensor) -> torch.Tensor:
    """float64 values standing for ``x`` exactly (int64 beyond 2**53: the rounding-equivalent
    stand-in of :func:`_exact_float64_of_int`, valid for every low-precision grid)."""
    if x.dtype == torch.bool:
        return x.to(torch.float64)
    if x.dtype in _FLOAT_SRC:
        return x.to(torch.float64)
    return _exact_float64_of_int(x)


def _to_low_precision(x: torch.Tensor, name: str, mode: str) -> torch.Tensor:
    """Cast a torch-typed ``x`` into a low-precision format: INT4 / UINT4 as int8 / uint8 integers,
    the float formats as their carrier dtype (see :data:`CARRIERS`)."""
    if name in _fmt.INT_RANGES:
        lo, hi = _fmt.INT_RANGES[name]
        out_dt = torch.int8 if name == "INT4" else torch.uint8
        if x.dtype in _FLOAT_SRC:
            return _fmt.encode_int(x.to(torch.float64), name, int_mode(mode))
        return x.to(torch.int64).clamp(lo, hi).to(out_dt)
    codes = _fmt.encode(_exact_float64(x), name, mode)
    return codes.view(_CARRIER_OF[name])
