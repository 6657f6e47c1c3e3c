"""The low-precision formats of pypto.numerics (FP8E4M3FN, FP8E5M2, FP8E8M0, FP4, HF8, INT4, UINT4)
against independent oracles: ml_dtypes (float8_e4m3fn, float8_e5m2, float8_e8m0fnu, float4_e2m1fn,
int4, uint4), en_dtypes (hifloat8) and torch's own float8 conversions.

Every source of at most 16 bits is enumerated (every FP16 / BF16 / INT16 / UINT16 bit pattern and
every code of each small format); FP32 sources are sampled (a million random patterns plus the
points next to every grid midpoint). The all-modes oracle is a brute force over the library's value
table (nearest neighbours by comparison with every representable value), a different algorithm
from the model's sorted-grid search.
"""
from __future__ import annotations

import en_dtypes
import ml_dtypes
import numpy as np
import pytest
import torch

from pypto.numerics.cast import CARRIERS, ROUNDING_MODES, cast_tensor, device_mode
from pypto.numerics.formats import decode, encode, get_format

ORACLE = {"FP8E4M3FN": ml_dtypes.float8_e4m3fn, "FP8E5M2": ml_dtypes.float8_e5m2,
          "FP8E8M0": ml_dtypes.float8_e8m0fnu, "FP4": ml_dtypes.float4_e2m1fn, "HF8": en_dtypes.hifloat8}
NAMES = tuple(ORACLE)
TORCH_FP8 = {"FP8E4M3FN": torch.float8_e4m3fn, "FP8E5M2": torch.float8_e5m2, "FP8E8M0": torch.float8_e8m0fnu}
CARRIER = {v: k for k, v in CARRIERS.items()}
MAX = {"FP8E4M3FN": 448.0, "FP8E5M2": 57344.0, "FP8E8M0": 2.0 ** 127, "FP4": 6.0, "HF8": 32768.0}


def _oracle_values(name: str) -> np.ndarray:
    n = get_format(name).n_codes
    return np.arange(n, dtype=np.uint8).view(ORACLE[name]).astype(np.float64)


def _all16(dtype) -> torch.Tensor:
    return torch.arange(65536, dtype=torch.int32).to(torch.int16).view(dtype)


def _sources16() -> list[np.ndarray]:
    return [_all16(torch.float16).double().numpy(), _all16(torch.bfloat16).double().numpy(),
            np.arange(-32768, 32768, dtype=np.float64), np.arange(65536, dtype=np.float64)]


def _fp32_samples() -> np.ndarray:
    g = np.random.default_rng(15)
    rnd = g.integers(0, 2 ** 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return rnd.astype(np.float64)


# ------------------------------------------------------------------------------------------------
# decoding: the value of every code
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_decode_every_code_matches_the_oracle(name):
    ref = _oracle_values(name)
    mine = decode(torch.arange(len(ref), dtype=torch.uint8), name).numpy()
    both_nan = np.isnan(ref) & np.isnan(mine)
    assert np.all(both_nan | (mine == ref)), np.nonzero(~(both_nan | (mine == ref)))
    assert np.all(both_nan | (np.signbit(mine) == np.signbit(ref)))   # -0 codes


@pytest.mark.parametrize("name", tuple(TORCH_FP8))
def test_torch_float8_reads_back_as_the_model(name):
    codes = torch.arange(256, dtype=torch.uint8)
    via_torch = codes.view(TORCH_FP8[name]).to(torch.float64)
    mine = cast_tensor(codes.view(TORCH_FP8[name]), torch.float32, "rint").double()
    nan = torch.isnan(via_torch)
    assert torch.equal(torch.isnan(mine), nan)
    assert torch.equal(mine[~nan], via_torch[~nan])


# ------------------------------------------------------------------------------------------------
# encoding under round-to-nearest: the libraries' own conversions
# ------------------------------------------------------------------------------------------------

def _oracle_rne(x: np.ndarray, name: str) -> np.ndarray:
    """The library conversion with our documented overflow convention applied first: the saturating
    formats clip to +-max (inf included), as pto-isa's TCVT tests do before converting."""
    if name in ("FP8E4M3FN", "FP4"):
        x = np.clip(x, -MAX[name], MAX[name])
    with np.errstate(invalid="ignore", over="ignore"):
        return x.astype(ORACLE[name]).view(np.uint8)


def _check_nearest(x: np.ndarray, name: str, mode: str) -> None:
    mine = encode(torch.from_numpy(x), name, mode).numpy()
    ref = _oracle_rne(x, name)
    f = get_format(name)
    vals = _oracle_values(name)
    nan_in = np.isnan(x)
    # NaN inputs: the canonical NaN (FP4 has none: +0)
    assert np.all(mine[nan_in] == max(f.nan_code, 0))
    ok = ~nan_in
    same = (mine == ref) | (np.isnan(vals[mine & (f.n_codes - 1)]) & np.isnan(vals[ref & (f.n_codes - 1)]))
    bad = ok & ~same
    assert not bad.any(), (name, mode, x[bad][:8], mine[bad][:8], ref[bad][:8])


@pytest.mark.parametrize("name", ("FP8E4M3FN", "FP8E5M2", "FP8E8M0", "FP4"))
def test_rint_matches_ml_dtypes_exhaustively(name):
    for x in _sources16():
        _check_nearest(x, name, "rint")
    for other in NAMES:   # every code of every other small format
        _check_nearest(_oracle_values(other), name, "rint")


def test_hf8_round_matches_en_dtypes_exhaustively():
    """HiFloat8's conversion rounds ties away from zero (what the device does: ROUND_A)."""
    for x in _sources16():
        _check_nearest(x, "HF8", "round")
    for other in NAMES:
        _check_nearest(_oracle_values(other), "HF8", "round")


@pytest.mark.parametrize("name", NAMES)
def test_fp32_sources_sampled(name):
    x = _fp32_samples()
    vals = _oracle_values(name)
    fin = np.sort(np.unique(np.abs(vals[np.isfinite(vals)])))
    mids = (fin[1:] + fin[:-1]) / 2
    near = np.concatenate([mids, np.nextafter(mids.astype(np.float32), np.float32(np.inf)).astype(np.float64),
                           np.nextafter(mids.astype(np.float32), np.float32(0)).astype(np.float64)])
    x = np.concatenate([x, near, -near]).astype(np.float32).astype(np.float64)
    _check_nearest(x, name, "round" if name == "HF8" else "rint")


# ------------------------------------------------------------------------------------------------
# every rounding mode: brute force over the library's value table
# ------------------------------------------------------------------------------------------------

def _brute(x: np.ndarray, name: str, mode: str) -> np.ndarray:
    """Expected codes by comparing each input with every representable value."""
    vals = _oracle_values(name)
    f = get_format(name)
    codes = np.arange(len(vals))
    finite = np.isfinite(vals)
    if f.sign_bit:  # drop -0 codes: the sign is applied at the end
        finite &= ~((vals == 0) & (codes & f.sign_bit != 0))
    finite &= vals >= 0
    grid, gcode = vals[finite], codes[finite]
    order = np.argsort(grid)
    grid, gcode = grid[order], gcode[order]
    a = np.abs(x)
    neg = np.signbit(x)
    le = grid[None, :] <= a[:, None]
    ge = grid[None, :] >= a[:, None]
    has_lo, has_hi = le.any(1), ge.any(1)
    lo_i = np.where(has_lo, le.sum(1) - 1, 0)
    hi_i = np.where(has_hi, len(grid) - ge.sum(1), len(grid) - 1)
    lo, hi = grid[lo_i], grid[hi_i]
    virtual = {"FP8E4M3FN": 480.0, "FP8E5M2": 65536.0, "FP8E8M0": 2.0 ** 128, "FP4": 8.0, "HF8": 49152.0}[name]
    hi = np.where(has_hi, hi, virtual)      # above max: the next point of max's binade
    exact = a == lo
    mid = (lo + hi) / 2
    lo_odd = gcode[lo_i] & 1 == 1
    if mode in ("none", "rint"):
        tie_up = np.ones_like(lo_odd) if name == "FP8E8M0" else lo_odd
        up = (a > mid) | ((a == mid) & tie_up)
    elif mode == "round":
        up = a >= mid
    elif mode == "floor":
        up = neg.copy()
    elif mode == "ceil":
        up = ~neg
    elif mode == "trunc":
        up = np.zeros_like(neg)
    else:
        up = ~lo_odd if name != "FP8E8M0" else np.zeros_like(neg)
    up &= ~exact
    over = (up & ~has_hi) | (a > virtual) | ((a == virtual))
    out = np.where(up & has_hi, gcode[hi_i], gcode[lo_i])
    max_code = gcode[-1]
    to_inf = {"none": True, "rint": True, "round": True, "trunc": False, "odd": False}.get(mode)
    to_inf = np.full_like(neg, to_inf) if to_inf is not None else (neg if mode == "floor" else ~neg)
    if name in ("FP8E4M3FN", "FP4"):
        out = np.where(over | np.isinf(x), max_code, out)
    elif name == "FP8E8M0":
        out = np.where(over | np.isinf(x), 0xFF, out)
    else:
        out = np.where(over, np.where(to_inf, f.inf_code, max_code), out)
        out = np.where(np.isinf(x), f.inf_code, out)
    if name == "FP8E8M0":
        out = np.where(~has_lo & (a > 0), gcode[0], out)   # below 2**-127: the smallest
        out = np.where(neg | (x == 0), 0xFF, out)
    else:
        keep_sign = neg & ((out != 0) | f.neg_zero)
        out = np.where(keep_sign, out | f.sign_bit, out)
    out = np.where(np.isnan(x), max(f.nan_code, 0), out)
    return out.astype(np.uint8)


# the fast tier sweeps every format in one directed mode ("floor"; rint is test_rint_matches_ml_dtypes'
# in the fast tier); the other modes are slow
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("mode", [pytest.param(m, marks=() if m == "floor" else pytest.mark.slow)
                                  for m in ROUNDING_MODES])
def test_every_mode_exhaustive_16_bit_sources(name, mode):
    srcs = [*_sources16(), *(_oracle_values(o) for o in NAMES)]
    for x in srcs:
        for chunk in np.array_split(x, 8):
            mine = encode(torch.from_numpy(chunk), name, mode).numpy()
            ref = _brute(chunk, name, mode)
            bad = mine != ref
            assert not bad.any(), (name, mode, chunk[bad][:6], mine[bad][:6], ref[bad][:6])


def test_directed_overflow_rules():
    big = torch.tensor([1e9, -1e9, 60000.0, -60000.0], dtype=torch.float64)
    e5 = {m: decode(encode(big, "FP8E5M2", m), "FP8E5M2").tolist() for m in ("rint", "floor", "ceil", "trunc")}
    assert e5["rint"][:2] == [float("inf"), float("-inf")]
    assert e5["floor"][:2] == [57344.0, float("-inf")] and e5["ceil"][:2] == [float("inf"), -57344.0]
    assert e5["trunc"] == [57344.0, -57344.0, 57344.0, -57344.0]
    assert e5["rint"][2:] == [57344.0, -57344.0]           # below the 61440 overflow threshold
    for m in ROUNDING_MODES:                                 # saturating formats: max in every mode
        assert decode(encode(big, "FP8E4M3FN", m), "FP8E4M3FN").tolist() == [448.0, -448.0, 448.0, -448.0]
        assert decode(encode(big, "FP4", m), "FP4").tolist() == [6.0, -6.0, 6.0, -6.0]
    hf = decode(encode(torch.tensor([40959.0, 40960.0]), "HF8", "round"), "HF8").tolist()
    assert hf == [32768.0, float("inf")]


# ------------------------------------------------------------------------------------------------
# INT4 / UINT4
# ------------------------------------------------------------------------------------------------

# float -> integer under CAST_NONE truncates (pto-isa TCVT's per-pair default; numerics/cast.py)
_NP_ROUND = {"none": np.trunc, "rint": np.rint, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
             }


@pytest.mark.parametrize("name,lo,hi,oracle", [("INT4", -8, 7, ml_dtypes.int4), ("UINT4", 0, 15, ml_dtypes.uint4)])
@pytest.mark.parametrize("mode", ROUNDING_MODES)
def test_int4_from_every_fp16(name, lo, hi, oracle, mode):
    x = _all16(torch.float16)
    mine = cast_tensor(x, name, mode).to(torch.int64).numpy()
    v = x.double().numpy()
    with np.errstate(invalid="ignore"):
        if mode == "odd":
            t = np.trunc(v)
            r = np.where((t != v) & (np.fmod(t, 2) == 0), t + np.sign(v), t)
        elif mode == "round":
            r = np.where(np.abs(v - np.trunc(v)) >= 0.5, np.trunc(v) + np.sign(v), np.trunc(v))
        else:
            r = _NP_ROUND[mode](v)
        r = np.where(np.isnan(v), 0, np.clip(r, lo, hi)).astype(np.int64)
    assert np.array_equal(mine, r)
    # ml_dtypes holds the same integers (its in-range conversion)
    assert np.array_equal(r.astype(oracle).astype(np.int64), r)


def test_int4_from_integers_saturates():
    x = torch.arange(-40000, 40000, 7, dtype=torch.int32)
    assert torch.equal(cast_tensor(x, "INT4").to(torch.int32), x.clamp(-8, 7))
    assert torch.equal(cast_tensor(x, "UINT4").to(torch.int32), x.clamp(0, 15))


# ------------------------------------------------------------------------------------------------
# sources: every code of each format into every existing dtype, every mode
# ------------------------------------------------------------------------------------------------

_DSTS = (torch.bool, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32,
         torch.float16, torch.bfloat16, torch.float32)


@pytest.mark.parametrize("name", NAMES)
def test_every_code_into_every_dtype(name):
    n = get_format(name).n_codes
    codes = torch.arange(n, dtype=torch.uint8).view(CARRIER[name])
    exact = torch.from_numpy(_oracle_values(name))   # the oracle's value of each code
    for dst in _DSTS:
        for mode in ROUNDING_MODES:
            got = cast_tensor(codes, dst, mode)
            want = cast_tensor(exact, dst, mode)
            if dst.is_floating_point:
                iview = {2: torch.int16, 4: torch.int32}[got.element_size()]
                same = got.view(iview) == want.view(iview)
                assert bool(same.all()), (name, dst, mode)
            else:
                assert torch.equal(got, want), (name, dst, mode)
    # every value of every small format fits FP32: widening is exact
    f32 = cast_tensor(codes, torch.float32, "rint").double()
    nan = torch.isnan(exact)
    assert torch.equal(f32[~nan], exact[~nan]) and bool(torch.isnan(f32[nan]).all())


@pytest.mark.parametrize("name", NAMES)
def test_low_precision_to_low_precision(name):
    for other in NAMES:
        n = get_format(other).n_codes
        src = torch.arange(n, dtype=torch.uint8).view(CARRIER[other])
        for mode in ROUNDING_MODES:
            got = cast_tensor(src, name, mode).view(torch.uint8)
            want = encode(torch.from_numpy(_oracle_values(other)), name, mode)
            if other == name:   # the same dtype is a copy (NaN payloads kept)
                want = src.view(torch.uint8)
            assert torch.equal(got, want), (other, name, mode)


# ------------------------------------------------------------------------------------------------
# the device's rounding
# ------------------------------------------------------------------------------------------------

def test_device_mode():
    for m in ROUNDING_MODES:
        assert device_mode("FP8E4M3FN", m) == "rint" and device_mode(torch.float8_e5m2, m) == "rint"
        assert device_mode("HF8", m) == "round"
        assert device_mode("FP16", m) == m and device_mode(torch.float32, m) == m
    assert device_mode("FP4", "odd") == "rint" and device_mode("FP4", "floor") == "floor"


def test_support_cast_applies_the_device_rounding():
    from pypto.ops.support import cast

    x = torch.tensor([1.0625, 1.1875, -1.0625], dtype=torch.float32)   # E4M3 ties / HF8 ties
    assert cast(x, torch.float8_e4m3fn, "floor").float().tolist() == [1.0, 1.25, -1.0]       # RNE
    hf = cast(x, CARRIER["HF8"], "rint")
    assert decode(hf.view(torch.uint8), "HF8").tolist() == [1.125, 1.25, -1.125]            # ties away
