"""Tests of pypto.numerics.cast against independent oracles.

The oracles below do NOT use pypto.numerics: they work on integer bit patterns with numpy
(explicit exponent / significand handling, shifts, remainder-vs-half comparisons), use exact
``fractions.Fraction`` arithmetic for boundary lists, and ml_dtypes / numpy ``astype`` for the
round-to-nearest-even case.
"""
from __future__ import annotations

import math
import platform
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import torch

from pypto.numerics.cast import ROUNDING_MODES, cast_tensor, normalize_mode

MODES = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")


def one_fast(mode_first: str):
    """The modes of an exhaustive or 10**5-point sweep: ``mode_first`` in the fast tier, the others
    marked slow (CI runs them all). Every mode of each conversion path stays in the fast tier through
    the cheaper boundary tests (test_fp32_to_fp16/bf16_all_modes, test_fp16_to_int_exhaustive,
    test_oracles_agree_on_boundaries); see CONTRIBUTING.md, "Test tiers"."""
    return [pytest.param(m, marks=() if m == mode_first else pytest.mark.slow) for m in MODES]

N_RANDOM = 1 << 20  # >= 10**6

# ----------------------------------------------------------------------------------------------
# Independent oracles
# ----------------------------------------------------------------------------------------------


def _round_mag(kept, rem, half, neg, mode):
    """Round non-negative integer magnitudes ``kept + rem/(2*half)`` (rem < 2*half) under mode."""
    inexact = rem != 0
    if mode == "odd":
        return kept | inexact.astype(np.int64)
    if mode in ("none", "rint"):
        up = (rem > half) | ((rem == half) & ((kept & 1) == 1))
    elif mode == "round":
        up = inexact & (rem >= half)
    elif mode == "floor":
        up = inexact & neg
    elif mode == "ceil":
        up = inexact & ~neg
    elif mode == "trunc":
        up = np.zeros_like(inexact)
    else:
        raise AssertionError(mode)
    return kept + up.astype(np.int64)


def _split(m, shift):
    """kept, rem, half of ``m >> shift`` for int64 arrays (shift >= 0)."""
    shift = shift.astype(np.int64)
    kept = m >> shift
    rem = m & ((np.int64(1) << shift) - 1)
    half = np.where(shift > 0, np.int64(1) << np.maximum(shift - 1, 0), 1)
    return kept, rem, half


def _overflow_bits(neg, mode, inf_bits, max_bits):
    to_inf = {
        "none": np.ones_like(neg), "rint": np.ones_like(neg), "round": np.ones_like(neg),
        "trunc": np.zeros_like(neg), "odd": np.zeros_like(neg), "floor": neg, "ceil": ~neg,
    }[mode]
    return np.where(to_inf, inf_bits, max_bits)


def oracle_f32_to_f16(bits: np.ndarray, mode: str) -> np.ndarray:
    """fp32 bit patterns (uint32) -> fp16 bit patterns (uint16), explicit exponent/mantissa."""
    u = bits.astype(np.int64)
    neg = ((u >> 31) & 1) == 1
    exp = (u >> 23) & 0xFF
    man = u & 0x7FFFFF
    sig = man | (np.int64(exp != 0) << 23)      # value = sig * 2**(e - 23)
    e = np.maximum(exp, 1) - 127
    q = np.maximum(e, -14) - 10                 # fp16 ulp exponent at this magnitude
    shift = np.minimum(q - (e - 23), 40)        # >= 13; sig < 2**24 so 40 is "all bits dropped"
    kept, rem, half = _split(sig, shift)
    r = _round_mag(kept, rem, half, neg, mode)
    mag = (q + 24) * 1024 + r                   # exponent/mantissa encoding incl. subnormals+carry
    mag = np.where(r == 0, 0, mag)
    mag = np.where(mag >= 0x7C00, _overflow_bits(neg, mode, 0x7C00, 0x7BFF), mag)
    out = mag | (neg.astype(np.int64) << 15)
    out = np.where((exp == 255) & (man == 0), 0x7C00 | (neg.astype(np.int64) << 15), out)
    out = np.where((exp == 255) & (man != 0), 0x7E00, out)
    return out.astype(np.uint16)


def oracle_f32_to_bf16(bits: np.ndarray, mode: str) -> np.ndarray:
    """fp32 bit patterns -> bf16 bit patterns by inspecting the low 16 bits."""
    u = bits.astype(np.int64)
    neg = ((u >> 31) & 1) == 1
    hi = (u >> 16) & 0x7FFF
    low = u & 0xFFFF
    r = _round_mag(hi, low, np.int64(0x8000), neg, mode)  # carries ripple into the exponent
    finite = (u & 0x7F800000) != 0x7F800000
    r = np.where(finite & (r >= 0x7F80), _overflow_bits(neg, mode, 0x7F80, 0x7F7F), r)
    out = r | (neg.astype(np.int64) << 15)
    out = np.where(~finite & ((u & 0x7FFFFF) != 0), 0x7FC0, out)
    return out.astype(np.uint16)


def _bit_length(a: np.ndarray) -> np.ndarray:
    """Vectorised int.bit_length for non-negative int64 < 2**33."""
    n = np.zeros_like(a)
    for k in range(34):
        n += (a >> k) > 0
    return n


def oracle_int_to_f16(x: np.ndarray, mode: str) -> np.ndarray:
    """int32 values -> fp16 bit patterns by shifting the integer magnitude."""
    x = x.astype(np.int64)
    neg = x < 0
    a = np.abs(x)
    q = _bit_length(a) - 11                     # fp16 ulp exponent (ints are never subnormal)
    left = np.maximum(-q, 0)
    kept, rem, half = _split(a, np.maximum(q, 0))
    kept = kept << left
    r = _round_mag(kept, rem, half, neg, mode)
    mag = np.where(r == 0, 0, (q + 24) * 1024 + r)
    mag = np.where(mag >= 0x7C00, _overflow_bits(neg, mode, 0x7C00, 0x7BFF), mag)
    return (mag | (neg.astype(np.int64) << 15)).astype(np.uint16)


def oracle_f32_to_int(bits: np.ndarray, mode: str, lo: int, hi: int) -> np.ndarray:
    """fp32 bit patterns -> saturated integers (int64 array); NaN -> 0. CAST_NONE truncates a
    float -> integer conversion (pto-isa TCVT's default for those pairs on A5 and a2a3)."""
    mode = "trunc" if mode == "none" else mode
    u = bits.astype(np.int64)
    neg = ((u >> 31) & 1) == 1
    exp = (u >> 23) & 0xFF
    man = u & 0x7FFFFF
    sig = man | (np.int64(exp != 0) << 23)
    e2 = np.maximum(exp, 1) - 150               # value = sig * 2**e2
    big = sig << np.clip(e2, 0, 39)             # exact below 2**63 (sig < 2**24)
    kept, rem, half = _split(sig, np.minimum(np.maximum(-e2, 0), 40))
    small = _round_mag(kept, rem, half, neg, mode)
    mag = np.where(e2 >= 0, big, small)
    val = np.where(neg, -mag, mag)
    val = np.clip(val, lo, hi)
    val = np.where(e2 >= 40, np.where(neg, lo, hi), val)  # |value| >= 2**63 saturates every dst
    val = np.where((exp == 255) & (man == 0), np.where(neg, lo, hi), val)
    val = np.where((exp == 255) & (man != 0), 0, val)
    return val


# --- exact Fraction oracle --------------------------------------------------------------------

FMT = {  # name: (p, emin, emax)
    "fp16": (11, -14, 15),
    "bf16": (8, -126, 127),
    "fp32": (24, -126, 127),
}


def frac_round(v, fmt: str, mode: str) -> float:
    """Round an exact value (Fraction/int, or a float incl. -0.0/inf/nan) to ``fmt`` -> float."""
    p, emin, emax = FMT[fmt]
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return v
        neg = math.copysign(1.0, v) < 0
        a = abs(Fraction(v))
    else:
        neg = v < 0
        a = abs(Fraction(v))
    if a == 0:
        return -0.0 if neg else 0.0
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    q = max(e, emin) - (p - 1)
    s = a / Fraction(2) ** q
    t = math.floor(s)
    rem = s - t
    if mode == "odd":
        t |= int(rem != 0)
    elif mode in ("none", "rint"):
        t += int(rem > Fraction(1, 2) or (rem == Fraction(1, 2) and t % 2 == 1))
    elif mode == "round":
        t += int(rem >= Fraction(1, 2))
    elif mode == "floor":
        t += int(rem != 0 and neg)
    elif mode == "ceil":
        t += int(rem != 0 and not neg)
    r = t * Fraction(2) ** q
    max_finite = (2**p - 1) * Fraction(2) ** (emax - p + 1)
    if r > max_finite:
        to_inf = {"none": True, "rint": True, "round": True, "trunc": False, "odd": False,
                  "floor": neg, "ceil": not neg}[mode]
        out = math.inf if to_inf else float(max_finite)
    else:
        out = float(r)
    return -out if neg else out


NP_FMT = {"fp16": (np.float16, np.uint16, 0x7E00), "bf16": (ml_dtypes.bfloat16, np.uint16, 0x7FC0),
          "fp32": (np.float32, np.uint32, 0x7FC00000)}


def float_bits(values, fmt: str) -> np.ndarray:
    """Bit patterns of exactly representable float values in ``fmt`` (canonical NaN)."""
    dt, ut, nan_bits = NP_FMT[fmt]
    arr = np.asarray(values, dtype=np.float64)
    bits = arr.astype(dt).view(ut).copy()  # exact: values are representable
    bits[np.isnan(arr)] = nan_bits
    return bits


# ----------------------------------------------------------------------------------------------
# Helpers around the implementation
# ----------------------------------------------------------------------------------------------

TORCH_UINT_VIEW = {torch.float16: (torch.int16, np.uint16), torch.bfloat16: (torch.int16, np.uint16),
                   torch.float32: (torch.int32, np.uint32)}


def impl_bits(t: torch.Tensor, dst: torch.dtype, mode) -> np.ndarray:
    out = cast_tensor(t, dst, mode)
    assert out.dtype == dst and out.shape == t.shape
    iv, nv = TORCH_UINT_VIEW[dst]
    return out.view(iv).numpy().view(nv)


def f32_from_bits(bits: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(bits.astype(np.uint32).view(np.int32).copy()).view(torch.float32)


def bits_of_f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def assert_bits_equal(got, want, inputs=None):
    got, want = np.asarray(got), np.asarray(want)
    bad = np.nonzero(got != want)[0]
    if bad.size:
        i = bad[:8]
        detail = f"inputs={np.asarray(inputs)[i]!r} " if inputs is not None else ""
        raise AssertionError(f"{bad.size} mismatches; {detail}got={got[i]!r} want={want[i]!r}")


# ----------------------------------------------------------------------------------------------
# Boundary values
# ----------------------------------------------------------------------------------------------

def _f32_boundaries() -> np.ndarray:
    f = np.float32
    base = [
        0.0, 2.0**-149, 2.0**-148, 3 * 2.0**-149, 2.0**-126, 2.0**-126 - 2.0**-149,
        2.0**-24, 2.0**-25, 2.0**-26, 3 * 2.0**-25, 5 * 2.0**-26, 2.0**-14, 2.0**-14 - 2.0**-24,
        2.0**-14 - 2.0**-25, 2.0**-25 + 2.0**-40, 2.0**-25 - 2.0**-40,
        2.0**-133, 2.0**-134, 3 * 2.0**-134, 2.0**-135,
        1.0, 1 + 2.0**-11, 1 + 3 * 2.0**-11, 1 + 2.0**-11 + 2.0**-23, 1 + 2.0**-10,
        1 + 2.0**-8, 1 + 3 * 2.0**-8, 1 + 2.0**-8 + 2.0**-23, 1 + 2.0**-7, 2 - 2.0**-23,
        0.5, 1.5, 2.5, 3.5, 1e-8, 0.1, 1 / 3,
        65504.0, 65505.0, 65519.0, 65519.99609375, 65520.0, 65520.00390625, 65535.0, 65536.0,
        65537.0, 131072.0, 1e10,
        3.3895313892515355e38, 3.3961775292304172e38, 3.4028234663852886e38,
        float(np.nextafter(f(3.3961775292304172e38), f(0))), float(np.nextafter(f(3.3961775292304172e38), f(np.inf))),
        2.0**24 + 2, 2.0**31, 2.0**31 - 128, 2.0**63,
    ]
    vals = np.array(base, dtype=np.float32)
    vals = np.concatenate([vals, -vals, np.array([np.inf, -np.inf, np.nan, -np.nan], np.float32)])
    bits = vals.view(np.uint32)
    # extra NaN payloads
    return np.concatenate([bits, np.array([0x7F800001, 0xFFC00001, 0x7FBFFFFF], np.uint32)])


F32_BOUNDARY_BITS = _f32_boundaries()

INT32_BOUNDARIES = np.array(sorted({
    0, 1, -1, 2, 3, 2047, 2048, 2049, 2050, 2051, 2052, 2053, 4097, 4098, 4099, 4100, 4101, 4102,
    65504, 65505, 65519, 65520, 65521, 65535, 65536, 65537, 100000,
    2**24 - 1, 2**24, 2**24 + 1, 2**24 + 2, 2**24 + 3, 2**25 + 2, 2**25 + 6,
    2**31 - 1, 2**31 - 64, 2**31 - 128, 2**31 - 129, 2**30 + 64, 2**30 + 65,
} | {-v for v in [1, 2049, 2051, 65519, 65520, 65521, 2**24 + 1, 2**24 + 3, 2**31 - 1, 2**31 - 64]}
    | {-(2**31)}), dtype=np.int64)


# ----------------------------------------------------------------------------------------------
# Mode names
# ----------------------------------------------------------------------------------------------

def test_rounding_modes_and_normalize():
    assert ROUNDING_MODES == MODES
    for i, m in enumerate(MODES):
        assert normalize_mode(i) == m
        assert normalize_mode(m) == m
        assert normalize_mode(m.upper()) == m
    for bad in (7, -1, "nearest", True, 1.0, None):
        with pytest.raises(ValueError, match="rint"):
            normalize_mode(bad)
    with pytest.raises(ValueError):
        cast_tensor(torch.zeros(2), torch.float16, "banker")


# ----------------------------------------------------------------------------------------------
# Oracle self-consistency: bit oracles vs Fraction oracle vs ml_dtypes/numpy (RNE)
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_oracles_agree_on_boundaries(mode):
    with np.errstate(invalid="ignore"):
        vals = F32_BOUNDARY_BITS.view(np.float32).astype(np.float64)
    for fmt, oracle in (("fp16", oracle_f32_to_f16), ("bf16", oracle_f32_to_bf16)):
        want = float_bits([frac_round(float(v), fmt, mode) for v in vals], fmt)
        assert_bits_equal(oracle(F32_BOUNDARY_BITS, mode), want, vals)
    want = float_bits([frac_round(int(v), "fp16", mode) for v in INT32_BOUNDARIES], "fp16")
    assert_bits_equal(oracle_int_to_f16(INT32_BOUNDARIES, mode), want, INT32_BOUNDARIES)


def test_rne_oracles_agree_with_numpy_and_ml_dtypes():
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2**32, size=1 << 18, dtype=np.uint64).astype(np.uint32)
    f = bits.view(np.float32)
    finite = np.isfinite(f)
    with np.errstate(over="ignore", invalid="ignore"):
        np16 = f.astype(np.float16).view(np.uint16)
        bf = f.astype(ml_dtypes.bfloat16).view(np.uint16)
    assert_bits_equal(oracle_f32_to_f16(bits, "rint")[finite], np16[finite])
    assert_bits_equal(oracle_f32_to_bf16(bits, "rint")[finite], bf[finite])


# ----------------------------------------------------------------------------------------------
# FP32 -> FP16 / BF16, INT32 -> FP16 under every mode
# ----------------------------------------------------------------------------------------------

def _random_f32_bits(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = N_RANDOM // 2
    uniform = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    # concentrate the other half on exponents around the fp16 / bf16-subnormal ranges
    sign = rng.integers(0, 2, size=n, dtype=np.uint64) << 31
    exp = rng.integers(90, 146, size=n, dtype=np.uint64)
    exp = np.where(rng.random(n) < 0.2, rng.integers(0, 12, size=n, dtype=np.uint64), exp)
    man = rng.integers(0, 2**23, size=n, dtype=np.uint64)
    # make ties and near-ties frequent: clear low mantissa bits of a quarter of them
    man = np.where(rng.random(n) < 0.25, man & ~np.uint64(0xFFF), man)
    focused = (sign | (exp << 23) | man).astype(np.uint32)
    return np.concatenate([uniform, focused])


RANDOM_F32 = _random_f32_bits(12345)


def _random_int32(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    shift = rng.integers(0, 32, size=N_RANDOM)
    mag = rng.integers(0, 2**31, size=N_RANDOM, dtype=np.int64) >> shift
    vals = np.where(rng.random(N_RANDOM) < 0.5, -mag, mag)
    return np.concatenate([vals, INT32_BOUNDARIES]).astype(np.int32)


RANDOM_I32 = _random_int32(777)


@pytest.mark.parametrize("mode", MODES)
def test_fp32_to_fp16_all_modes(mode):
    for bits in (F32_BOUNDARY_BITS, RANDOM_F32):
        got = impl_bits(f32_from_bits(bits), torch.float16, mode)
        assert_bits_equal(got, oracle_f32_to_f16(bits, mode), bits.view(np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_fp32_to_bf16_all_modes(mode):
    for bits in (F32_BOUNDARY_BITS, RANDOM_F32):
        got = impl_bits(f32_from_bits(bits), torch.bfloat16, mode)
        assert_bits_equal(got, oracle_f32_to_bf16(bits, mode), bits.view(np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_int32_to_fp16_all_modes(mode):
    for vals in (INT32_BOUNDARIES.astype(np.int32), RANDOM_I32):
        got = impl_bits(torch.from_numpy(vals), torch.float16, mode)
        assert_bits_equal(got, oracle_int_to_f16(vals, mode), vals)


def test_fp16_overflow_threshold_and_specials():
    x = torch.tensor([65519.99609375, 65520.0, -65520.0, 1e-30, -1e-30, -0.0], dtype=torch.float32)
    expect = {
        "rint": [65504, math.inf, -math.inf, 0.0, -0.0, -0.0],
        "round": [65504, math.inf, -math.inf, 0.0, -0.0, -0.0],
        "none": [65504, math.inf, -math.inf, 0.0, -0.0, -0.0],
        "trunc": [65504, 65504, -65504, 0.0, -0.0, -0.0],
        "odd": [65504, 65504, -65504, 2.0**-24, -(2.0**-24), -0.0],
        "floor": [65504, 65504, -math.inf, 0.0, -(2.0**-24), -0.0],
        "ceil": [math.inf, math.inf, -65504, 2.0**-24, -0.0, -0.0],
    }
    for mode, want in expect.items():
        got = impl_bits(x, torch.float16, mode)
        assert_bits_equal(got, float_bits(want, "fp16"), x.numpy())
    for mode in MODES:
        out = cast_tensor(torch.tensor([math.inf, -math.inf, math.nan]), torch.float16, mode)
        assert out[0] == math.inf and out[1] == -math.inf and torch.isnan(out[2])


# ----------------------------------------------------------------------------------------------
# Exhaustive FP16 / BF16 sources
# ----------------------------------------------------------------------------------------------

ALL16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def _fp16_tensor() -> torch.Tensor:
    return torch.from_numpy(ALL16.view(np.int16).copy()).view(torch.float16)


def _fp16_as_f32_bits() -> np.ndarray:
    f = ALL16.view(np.float16).astype(np.float32)  # exact
    bits = f.view(np.uint32).copy()
    return bits


@pytest.mark.parametrize("mode", MODES)
def test_fp16_to_fp32_exhaustive_exact(mode):
    want = _fp16_as_f32_bits()
    want[np.isnan(ALL16.view(np.float16))] = 0x7FC00000
    assert_bits_equal(impl_bits(_fp16_tensor(), torch.float32, mode), want)


@pytest.mark.parametrize("mode", MODES)
def test_fp16_to_int_exhaustive(mode):
    src = _fp16_tensor()
    f32bits = _fp16_as_f32_bits()
    for dst, (lo, hi) in ((torch.int32, (-(2**31), 2**31 - 1)), (torch.int16, (-(2**15), 2**15 - 1)),
                          (torch.int8, (-128, 127)), (torch.uint8, (0, 255))):
        got = cast_tensor(src, dst, mode)
        assert got.dtype == dst
        want = oracle_f32_to_int(f32bits, mode, lo, hi)
        assert_bits_equal(got.to(torch.int64).numpy(), want, ALL16.view(np.float16))


@pytest.mark.parametrize("mode", one_fast("odd"))
def test_bf16_to_fp16_and_fp16_to_bf16_exhaustive(mode):
    bf_src = torch.from_numpy(ALL16.view(np.int16).copy()).view(torch.bfloat16)
    as_f32 = ALL16.astype(np.uint32) << 16  # bf16 bits -> the fp32 with the same value
    assert_bits_equal(impl_bits(bf_src, torch.float16, mode), oracle_f32_to_f16(as_f32, mode))
    assert_bits_equal(impl_bits(_fp16_tensor(), torch.bfloat16, mode),
                      oracle_f32_to_bf16(_fp16_as_f32_bits(), mode))


# ----------------------------------------------------------------------------------------------
# float -> int saturation, int -> int narrowing, int64 / int32 -> fp32
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", one_fast("round"))
def test_fp32_to_int_random_and_saturation(mode):
    rng = np.random.default_rng(5)
    n = 1 << 17
    exp = rng.integers(100, 170, size=n, dtype=np.uint64)
    bits = ((rng.integers(0, 2, size=n, dtype=np.uint64) << 31) | (exp << 23)
            | rng.integers(0, 2**23, size=n, dtype=np.uint64)).astype(np.uint32)
    bits = np.concatenate([bits, F32_BOUNDARY_BITS])
    x = f32_from_bits(bits)
    for dst, (lo, hi) in ((torch.int32, (-(2**31), 2**31 - 1)), (torch.int16, (-(2**15), 2**15 - 1)),
                          (torch.int8, (-128, 127)), (torch.uint8, (0, 255)),
                          (torch.int64, (-(2**63), 2**63 - 1))):
        got = cast_tensor(x, dst, mode).to(torch.int64).numpy()
        assert_bits_equal(got, oracle_f32_to_int(bits, mode, lo, hi), bits.view(np.float32))


def test_fp32_to_int_explicit_saturation_and_nan():
    x = torch.tensor([math.nan, -math.nan, math.inf, -math.inf, 3e9, -3e9, 2.0**31, -(2.0**31),
                      128.0, -129.0, 127.4, 40000.0, -40000.0, 2.5, -2.5], dtype=torch.float32)
    assert cast_tensor(x, torch.int32, "rint").tolist() == [
        0, 0, 2**31 - 1, -(2**31), 2**31 - 1, -(2**31), 2**31 - 1, -(2**31),
        128, -129, 127, 40000, -40000, 2, -2]
    assert cast_tensor(x, torch.int16, "round").tolist() == [
        0, 0, 32767, -32768, 32767, -32768, 32767, -32768, 128, -129, 127, 32767, -32768, 3, -3]
    assert cast_tensor(x, torch.int8, "trunc").tolist() == [
        0, 0, 127, -128, 127, -128, 127, -128, 127, -128, 127, 127, -128, 2, -2]
    assert cast_tensor(x, torch.int64, "floor").tolist()[:4] == [0, 0, 2**63 - 1, -(2**63)]
    assert cast_tensor(torch.tensor([2.5, 3.5, -2.5, 4.0, -0.25, 0.0]), torch.int32, "odd").tolist() == [
        3, 3, -3, 4, -1, 0]


def test_int_narrowing_saturates_and_widening_exact():
    v = torch.tensor([-(2**31), -40000, -129, -128, -1, 0, 1, 127, 128, 255, 256, 40000, 2**31 - 1],
                     dtype=torch.int32)
    for dst, (lo, hi) in ((torch.int8, (-128, 127)), (torch.int16, (-(2**15), 2**15 - 1)),
                          (torch.uint8, (0, 255)), (torch.uint16, (0, 2**16 - 1))):
        for mode in MODES:  # the mode is irrelevant for int -> int
            got = cast_tensor(v, dst, mode)
            assert got.dtype == dst
            assert got.to(torch.int64).tolist() == np.clip(v.numpy(), lo, hi).tolist()
    assert cast_tensor(v, torch.int64).tolist() == v.tolist()
    big = torch.tensor([-(2**63), -(2**40), 2**40, 2**63 - 1], dtype=torch.int64)
    assert cast_tensor(big, torch.int32).tolist() == [-(2**31), -(2**31), 2**31 - 1, 2**31 - 1]
    assert cast_tensor(big, torch.uint32).to(torch.int64).tolist() == [0, 0, 2**32 - 1, 2**32 - 1]
    u8 = torch.tensor([0, 127, 128, 255], dtype=torch.uint8)
    assert cast_tensor(u8, torch.int8).tolist() == [0, 127, 127, 127]
    assert cast_tensor(u8, torch.int16).tolist() == [0, 127, 128, 255]
    u32 = torch.tensor([0, 2**31, 2**32 - 1], dtype=torch.int64).to(torch.uint32)
    assert cast_tensor(u32, torch.int32).tolist() == [0, 2**31 - 1, 2**31 - 1]
    assert cast_tensor(u32, torch.int64).tolist() == [0, 2**31, 2**32 - 1]


@pytest.mark.parametrize("mode", MODES)
def test_int_to_fp32_and_int64_exact_single_rounding(mode):
    rng = np.random.default_rng(99)
    i64 = [0, 1, -1, 2**24 + 1, 2**24 + 3, -(2**24) - 1, 2**53 + 1, 2**53 + 2**29, 2**53 + 2**29 + 1,
           2**60 + 2**36, 2**60 + 2**36 + 1, 2**60 + 2**36 - 1, 2**62 + 2**38 + 1,
           2**63 - 1, -(2**63), -(2**63) + 1, -(2**60) - 2**36, -(2**60) - 2**36 - 1,
           2**29, 2**29 + 1, 3 * 2**28]
    mags = [int(m) >> int(s) for m, s in zip(rng.integers(0, 2**63, size=1500, dtype=np.int64),
                                              rng.integers(0, 63, size=1500))]
    i64 += [m if k % 2 else -m for k, m in enumerate(mags)]
    # ties and near-ties at large magnitude (where float64 is not exact)
    i64 += [(2**62 + 2**38 * k + d) * sg for k in range(1, 6) for d in (-1, 0, 1) for sg in (1, -1)]
    x = torch.tensor(i64, dtype=torch.int64)
    for fmt, dst in (("fp32", torch.float32), ("fp16", torch.float16), ("bf16", torch.bfloat16)):
        want = float_bits([frac_round(v, fmt, mode) for v in i64], fmt)
        assert_bits_equal(impl_bits(x, dst, mode), want, np.array(i64, dtype=object))
    i32 = INT32_BOUNDARIES
    want = float_bits([frac_round(int(v), "fp32", mode) for v in i32], "fp32")
    assert_bits_equal(impl_bits(torch.from_numpy(i32.astype(np.int32)), torch.float32, mode), want, i32)


# ----------------------------------------------------------------------------------------------
# Agreement with torch for round-to-nearest-even
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dst", [torch.float16, torch.bfloat16])
def test_rint_matches_torch_to(dst):
    x = f32_from_bits(RANDOM_F32)
    ours = cast_tensor(x, dst, "rint")
    ref = x.to(dst)
    nan = torch.isnan(ref)
    assert torch.equal(torch.isnan(ours), nan)
    assert torch.equal(ours.view(torch.int16)[~nan], ref.view(torch.int16)[~nan])
    assert torch.equal(cast_tensor(x, dst, "none").view(torch.int16), ours.view(torch.int16))


def test_int32_to_fp16_rint_matches_torch():
    x = torch.from_numpy(RANDOM_I32)
    ours = cast_tensor(x, torch.float16, "rint").view(torch.int16)
    direct = x.to(torch.float16).view(torch.int16)
    via_fp32 = x.to(torch.float32).to(torch.float16).view(torch.int16)
    # torch's int -> half goes through float; the double rounding is innocuous (24 >= 2*11 + 2)
    assert torch.equal(direct, via_fp32)
    assert torch.equal(ours, direct)


# ----------------------------------------------------------------------------------------------
# Misc semantics
# ----------------------------------------------------------------------------------------------

def test_bool_same_dtype_and_shapes():
    x = torch.tensor([[0.0, -0.0, 0.5], [math.nan, -3.0, math.inf]])
    assert cast_tensor(x, torch.bool).tolist() == [[False, False, True], [True, True, True]]
    b = torch.tensor([True, False, True])
    assert cast_tensor(b, torch.float16).tolist() == [1.0, 0.0, 1.0]
    assert cast_tensor(b, torch.int32).tolist() == [1, 0, 1]
    assert cast_tensor(b, torch.uint8).dtype == torch.uint8
    assert cast_tensor(torch.tensor([0, -5, 7], dtype=torch.int8), torch.bool).tolist() == [False, True, True]
    y = torch.arange(6, dtype=torch.float32).reshape(2, 3).t()
    same = cast_tensor(y, torch.float32)
    assert torch.equal(same, y) and same.data_ptr() != y.data_ptr()
    assert cast_tensor(y, torch.float16, "floor").shape == (3, 2)
    assert cast_tensor(torch.tensor(2.5), torch.int32, "round").item() == 3
    assert cast_tensor(torch.empty(0, 4), torch.bfloat16).shape == (0, 4)
    with pytest.raises(TypeError):
        cast_tensor(torch.zeros(2, dtype=torch.complex64), torch.float32)


def test_widening_float_is_exact():
    bf = torch.from_numpy(ALL16.view(np.int16).copy()).view(torch.bfloat16)
    for mode in ("rint", "odd"):
        out = cast_tensor(bf, torch.float32, mode)
        want = (ALL16.astype(np.uint32) << 16)
        want[np.isnan(want.view(np.float32))] = 0x7FC00000
        assert_bits_equal(out.view(torch.int32).numpy().view(np.uint32), want)


def test_cast_none_truncates_float_to_int_and_rounds_the_rest():
    # pto-isa TCVT's CAST_NONE default per pair (A5 tcvtDispatchByRound, a2a3 GenCastCall* default:)
    x = torch.tensor([2.5, -2.5, 2.75, -2.75, 3.5, 1e10, float("nan")])
    assert cast_tensor(x, torch.int32, "none").tolist() == [2, -2, 2, -2, 3, 2 ** 31 - 1, 0]
    assert cast_tensor(x, torch.int32, "rint").tolist() == [2, -2, 3, -3, 4, 2 ** 31 - 1, 0]
    y = torch.tensor([1 + 2 ** -11, 1 + 3 * 2 ** -11])           # fp16 ties: to even, as rint
    assert cast_tensor(y, torch.float16, "none").tolist() == cast_tensor(y, torch.float16, "rint").tolist()


@pytest.mark.parametrize("mode", ["round", "rint", "none"])
def test_fp32_to_bf16_every_high_half(mode):
    """The bit-level FP32 -> BF16 path of the nearest modes (cast._fp32_to_bf16) on every one of the
    65536 sign / exponent / kept-mantissa patterns, each with the low halves that decide rounding
    (0, 1, just below a tie, the tie, just above, all ones), against the independent oracle."""
    high = np.arange(2**16, dtype=np.uint32) << 16
    lows = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
    bits = (high[:, None] | lows[None, :]).reshape(-1)
    got = impl_bits(f32_from_bits(bits), torch.bfloat16, mode)
    assert_bits_equal(got, oracle_f32_to_bf16(bits, mode), bits.view(np.float32))


@pytest.mark.parametrize("mode", ["round", "rint", "none"])
def test_fp32_to_bf16_of_strided_views(mode):
    """The int32 bit path reads its input in place (no contiguous copy): a gang's tile is a strided
    view into core memory, a transposed tile has a non-unit inner stride. Same bits as the oracle."""
    high = np.arange(0, 2**16, 7, dtype=np.uint32) << 16
    lows = np.array([0, 0x7FFF, 0x8000, 0x8001], dtype=np.uint32)
    bits = (high[:, None] | lows[None, :]).reshape(-1)
    bits = bits[: bits.size // 64 * 64]
    want = oracle_f32_to_bf16(bits, mode).reshape(-1, 8, 8)
    flat = f32_from_bits(bits)
    mem = torch.zeros(flat.numel() * 2, dtype=torch.float32)
    mem.view(-1, 128)[:, 32:96] = flat.view(-1, 64)        # every tile 8 x 8 inside a wider row
    strided = mem.view(-1, 128)[:, 32:96].view(-1, 8, 8)
    assert not strided.is_contiguous()
    def as_bits(out):
        return out.contiguous().view(torch.int16).numpy().view(np.uint16).reshape(-1)

    assert_bits_equal(as_bits(cast_tensor(strided, torch.bfloat16, mode)), want.reshape(-1), bits.view(np.float32))
    got_t = cast_tensor(strided.transpose(1, 2), torch.bfloat16, mode).transpose(1, 2)
    assert_bits_equal(as_bits(got_t), want.reshape(-1), bits.view(np.float32))

@pytest.mark.parametrize("mode", [pytest.param(m, marks=() if m in ("rint", "round") else pytest.mark.slow)
                                  for m in MODES])   # fast tier: the two formulas of the direct BF16 form
def test_cast_into_matches_cast_tensor(mode):
    """``cast_into`` (the simulator's tile.cast into a tile, with direct forms for FP32 -> BF16 under
    the nearest modes and exact float widening) writes the bits ``cast_tensor`` returns: FP32 -> BF16 /
    FP16 on the oracle's patterns (every high half with its rounding-deciding low halves; no NaN in a
    second batch, so the NaN check's fast exit is taken), BF16 / FP16 -> FP32 on all 65536 patterns,
    into non-contiguous destinations; and against the oracle directly."""
    from pypto.numerics.cast import cast_into

    high = np.arange(2**16, dtype=np.uint32) << 16
    lows = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
    bits = (high[:, None] | lows[None, :]).reshape(-1)
    finite = bits[~np.isnan(bits.view(np.float32))]
    for b in (bits, finite, RANDOM_F32):
        x = f32_from_bits(b[: len(b) // 128 * 128]).view(-1, 128)
        for dst in (torch.bfloat16, torch.float16):
            want = cast_tensor(x, dst, mode)
            buf = torch.full((x.shape[0], 3, 128), 7.0, dtype=dst)
            cast_into(buf[:, 1], x, mode)   # a strided destination, as a gang's tile view
            assert torch.equal(buf[:, 1].contiguous().view(torch.int16), want.view(torch.int16))
            assert (buf[:, 0] == 7.0).all() and (buf[:, 2] == 7.0).all()
        if mode in ("round", "rint", "none"):
            got = torch.empty(x.shape, dtype=torch.bfloat16)
            cast_into(got, x, mode)
            assert_bits_equal(got.view(torch.int16).numpy().view(np.uint16).reshape(-1),
                              oracle_f32_to_bf16(b[: len(b) // 128 * 128], mode),
                              b[: len(b) // 128 * 128].view(np.float32))
    for src in (torch.bfloat16, torch.float16):
        y = torch.from_numpy(ALL16.view(np.int16).copy()).view(src)
        out = torch.empty(y.shape, dtype=torch.float32)
        cast_into(out, y, mode)
        assert torch.equal(out.view(torch.int32), cast_tensor(y, torch.float32, mode).view(torch.int32))


@pytest.mark.parametrize("mode", ["round", "rint"])
def test_cast_into_over_its_source(mode):
    """The memory planner may place a cast's result over its source: ``cast_into`` reads the whole
    source before writing (FP32 -> BF16 at the source's address, BF16 -> FP32 over the BF16 tile)."""
    from pypto.numerics.cast import cast_into

    buf = torch.randn(64 * 128)
    buf[5], buf[77] = float("nan"), -float("inf")
    x = buf.view(64, 128)
    want = cast_tensor(x, torch.bfloat16, mode)
    dst = buf.view(torch.int16)[: 64 * 128].view(torch.bfloat16).view(64, 128)
    cast_into(dst, x, mode)
    assert torch.equal(dst.view(torch.int16), want.view(torch.int16))
    store = torch.zeros(2 * 64 * 128, dtype=torch.bfloat16)
    store[: 64 * 128] = want.view(-1)
    src = store[: 64 * 128].view(64, 128)
    want32 = cast_tensor(src, torch.float32, mode)
    out = store.view(torch.float32).view(64, 128)
    cast_into(out, src, mode)
    assert torch.equal(out.view(torch.int32), want32.view(torch.int32))


def _finite_f32_patterns() -> np.ndarray:
    """Every non-NaN, non-inf sign / exponent / kept-mantissa pattern (65,024 high halves) with the low
    halves that decide its rounding (0, 1, below / at / above the tie, all ones) and four random ones."""
    high = np.arange(2**16, dtype=np.uint32)
    high = high[(high & 0x7F80) != 0x7F80] << 16
    rng = np.random.default_rng(18)
    lows = np.concatenate([np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32),
                           rng.integers(0, 2**16, 4, dtype=np.uint32)])
    return (high[:, None] | lows[None, :]).reshape(-1)


@pytest.mark.parametrize("mode", ["round", "rint"])
def test_torch_bf16_conversion_is_the_direct_form(mode):
    """The claim cast._fp32_to_bf16_into rests on: torch's FP32 -> BF16 conversion (``copy_`` into a
    BF16 tensor) rounds to nearest even on every finite pattern -- subnormals, ties, overflow to inf --
    and, of ``bits | 1``, rounds ties away: against the independent oracle, in torch's vector loop and
    its scalar tail (an odd length), into a strided destination and from a strided source."""
    from pypto.numerics.cast import _torch_bf16_is_rne

    bits = _finite_f32_patterns()
    src = bits | 1 if mode == "round" else bits
    want = oracle_f32_to_bf16(bits, mode)
    x = f32_from_bits(src)
    got = torch.empty(x.shape, dtype=torch.bfloat16).copy_(x)
    assert_bits_equal(got.view(torch.int16).numpy().view(np.uint16), want, bits.view(np.float32))
    odd = x[: 12345]
    got = torch.empty(odd.shape, dtype=torch.bfloat16).copy_(odd)
    assert_bits_equal(got.view(torch.int16).numpy().view(np.uint16), want[: 12345])
    rows = x.view(-1, 10)                                  # a gang-like destination: rows inside wider rows
    buf = torch.zeros(rows.shape[0], 16, dtype=torch.bfloat16)
    buf[:, 3:13].copy_(rows.t().contiguous().t())          # and a column-major (strided) source
    assert_bits_equal(buf[:, 3:13].contiguous().view(torch.int16).numpy().view(np.uint16).reshape(-1), want)
    assert _torch_bf16_is_rne() or platform.machine().lower() not in ("x86_64", "amd64")


@pytest.mark.parametrize("mode", ["round", "rint", "none"])
def test_cast_into_bf16_direct_form_and_its_fallbacks(mode, monkeypatch):
    """cast_into FP32 -> BF16 takes torch's conversion for tensors of finite values (the bit path is
    not called: a spy raises) and the bit path for a tensor with a NaN, an inf or a sum that overflows;
    same bits as the oracle either way, over a gang-like strided destination, a contiguous tile, and
    when the platform check fails (``_TORCH_RNE`` false: always the bit path)."""
    import pypto.numerics.cast as C

    rng = np.random.default_rng(7)
    vals = (rng.standard_normal(48 * 4 * 128) * 2.0 ** rng.integers(-140, 120, 48 * 4 * 128)).astype(np.float32)
    ties = vals.view(np.uint32) & 0xFFFF0000 | 0x8000      # a quarter of the elements exactly on a tie
    vals.view(np.uint32)[::4] = ties[::4]
    base = vals.view(np.uint32).copy()

    def check(bits, spy):
        x_mem = torch.zeros(48, 1024)
        x = x_mem[:, 256:768].view(48, 4, 128)             # as a gang's [n, *tile] views of core memories
        x.copy_(f32_from_bits(bits).view(48, 4, 128))
        d_mem = torch.full((48, 2048), 7.0, dtype=torch.bfloat16)
        dst = d_mem[:, 512:1024].view(48, 4, 128)
        if spy:
            monkeypatch.setattr(C, "_bf16_nearest_bits", lambda *a: pytest.fail("bit path taken"))
        C.cast_into(dst, x, mode)
        tile = torch.empty(16, 64, dtype=torch.bfloat16)
        C.cast_into(tile, x.reshape(-1)[:1024].view(16, 64), mode)
        monkeypatch.undo()
        want = oracle_f32_to_bf16(bits, mode)
        assert_bits_equal(dst.contiguous().view(torch.int16).numpy().view(np.uint16).reshape(-1), want,
                          bits.view(np.float32))
        assert_bits_equal(tile.view(torch.int16).numpy().view(np.uint16).reshape(-1), want[:1024])
        assert (d_mem[:, :512] == 7.0).all() and (d_mem[:, 1024:] == 7.0).all()

    check(base, spy=True)
    for special in (0x7FC00001, 0xFF800000, 0x7F800000, 0x7F7FFFFF):   # NaN, -inf, inf, sums overflow
        bits = base.copy()
        bits[5::301] = special
        check(bits, spy=False)
    monkeypatch.setattr(C, "_TORCH_RNE", [False])
    check(base, spy=False)


def test_disjoint_layouts_against_byte_sets():
    """cast._disjoint (the widening cast's licence to convert straight into its tile) never answers
    True for views that share a byte: checked against the byte sets of gang-like views ([n, r, c]
    inside [n, stride] core memories, at many offsets, FP32 against BF16 / FP16) and plain tiles."""
    from pypto.numerics.cast import _disjoint_layout

    def bytes_of(t, base):
        idx = torch.arange(t.numel()).view(t.shape) if t.numel() else torch.zeros(0, dtype=torch.long)
        off = torch.zeros(t.shape, dtype=torch.long)
        for d in range(t.dim()):
            shape = [1] * t.dim()
            shape[d] = t.shape[d]
            off = off + torch.arange(t.shape[d]).view(shape) * t.stride(d)
        start = (t.data_ptr() - base) + off.reshape(-1) * t.element_size()
        return set((start[:, None] + torch.arange(t.element_size())).reshape(-1).tolist()) if idx.numel() else set()

    mem = torch.zeros(6 * 64, dtype=torch.float32)
    base = mem.data_ptr()
    seen = {True: 0, False: 0}
    for (r, c) in ((2, 4), (1, 8), (3, 2)):
        for oa in range(0, 40, 3):
            for ob in range(0, 80, 5):
                a = mem.as_strided((6, r, c), (64, c, 1), oa)
                for half in (torch.bfloat16, torch.float16):
                    h = mem.view(half)
                    b = h.as_strided((6, r, c), (128, c, 1), ob)
                    got = _disjoint_layout(a, b)
                    truth = not (bytes_of(a, base) & bytes_of(b, base))
                    assert not got or truth, (r, c, oa, ob)
                    assert got == truth, (r, c, oa, ob)   # exact on gang views
                    seen[got] += 1
    assert seen[True] and seen[False]
    flat = mem[:64].view(8, 8)
    assert _disjoint_layout(flat, mem.view(torch.bfloat16)[128:192].view(8, 8))
    assert not _disjoint_layout(flat, mem.view(torch.bfloat16)[100:164].view(8, 8))


@pytest.mark.parametrize("src", [torch.bfloat16, torch.float16])
def test_widening_cast_into_gang_views(src):
    """BF16 / FP16 -> FP32 cast_into between gang-like views of core memories (converted straight into
    the tile when the views share no byte): every 16-bit pattern, NaNs canonicalised, the same bits as
    cast_tensor; with NaN-free input too (the fast exit), and over an overlapping placement."""
    from pypto.numerics.cast import cast_into

    rows, cols, stride = 16, 256, 16384             # 16 members x 4096 patterns = all 65536
    every = torch.from_numpy(ALL16.view(np.int16).copy()).view(src)
    finite = ALL16[~torch.isnan(every.float()).numpy()]
    for patterns in (ALL16, finite):
        k = len(patterns) // (rows * cols) * rows * cols
        m = k // (rows * cols)
        mem = torch.full((m * stride,), 7.0)
        x = mem.view(src).as_strided((m, rows, cols), (2 * stride, cols, 1), 2 * rows * cols)
        x.copy_(torch.from_numpy(patterns[:k].view(np.int16).copy()).view(src).view(m, rows, cols))
        want = cast_tensor(x, torch.float32, "round")
        dst = mem.as_strided((m, rows, cols), (stride, cols, 1), 2 * rows * cols)
        cast_into(dst, x, "round")
        assert torch.equal(dst.contiguous().view(torch.int32), want.view(torch.int32))
        # over its source: each member's FP32 result starts where its 16-bit tile does
        mem.fill_(7.0)
        x.copy_(torch.from_numpy(patterns[:k].view(np.int16).copy()).view(src).view(m, rows, cols))
        over = mem.as_strided((m, rows, cols), (stride, cols, 1), rows * cols)
        cast_into(over, x, "round")
        assert torch.equal(over.contiguous().view(torch.int32), want.view(torch.int32))
