"""cmp / cmps (every cmp_type) and sel / sels at tensor and tile level: simulator == reference bit
for bit on both platforms, for FP32/FP16/BF16/INT32, full tensors (``t_*``, random shapes in the
hypothesis tests) and partial tiles (``p_*``, valid [13, 37] of [16, 64], the padding of the output
untouched); the reference equal to an exact torch computation.

Exactness (0 ULP, asserted): a comparison involves no rounding, so ``cmp`` equals the torch
comparison of the operands widened to float64 (int64 for INT32); ``cmps`` compares with the scalar
converted to the operand dtype (``_pto.scalar_operand``), as documented in pypto/ops/compare.py.
``sel`` / ``sels`` copy one of their operands: they equal ``torch.where`` bit for bit (NaN payloads
and -0.0 included). NaN compares unequal to everything (NE true, all others false).
"""
from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import kernels_ext as K
import ops_harness as H
import pypto.language as pl
from pypto.errors import InvalidOperationError
from pypto.ops import support as S

COVERED_OPS = {f"{lvl}.{op}" for lvl in ("tensor", "tile") for op in ("cmp", "cmps", "sel", "sels")}

DTYPES = H.FLOAT_DTYPES + (torch.int32,)
TORCH_CMP = (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge)  # EQ0 NE1 LT2 LE3 GT4 GE5
SCALARS = (0.0, -0.5, 2.0, 0.1, 1e30, -3.0)
SETTINGS = settings(max_examples=15, report_multiple_bugs=False, phases=(Phase.explicit, Phase.reuse, Phase.generate),
                    deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- kernels for the error tests ------------------------------------------------------------------

@pl.jit
def bad_cmp_type(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cmp(a, b, cmp_type=7)
    return out


@pl.jit
def sel_not_bool(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.sel(a, a, b)
    return out


# -- helpers --------------------------------------------------------------------------------------

def valid_mask(shape=(16, 64)):
    return torch.arange(shape[0])[:, None].lt(13) & torch.arange(shape[1]).lt(37)


def wide(x):
    return x.to(torch.int64) if x.dtype == torch.int32 else x.double()


def operands(seed, shape, dtype, kind):
    a = H.make_data(seed, shape, dtype, kind)
    b = H.make_data(seed + 1, shape, dtype, kind)
    b[::3] = a[::3]  # equal pairs, so EQ/LE/GE are exercised
    return a, b


def scalar_for(dtype, s):
    return (int(s * 10) if abs(s) < 1e6 else 2 ** 20 - 5) if dtype == torch.int32 else s


def check(kernel, args, platform):
    sim, ref = H.run_sim(kernel, args, platform), H.run_ref(kernel, args)
    H.assert_same_bits(sim[-1], ref[-1], f"{kernel.__name__} on {platform}")
    return ref[-1]


def expect_region(out, exact, init, partial):
    if partial:
        exact = torch.where(valid_mask(out.shape), exact, init)
    H.assert_same_bits(out, exact, "vs exact torch")


def cmp_case(ct, dtype, platform, seed, kind, partial, scalar, s, shape):
    shape = (16, 64) if partial else shape
    a, b = operands(seed, shape, dtype, kind)
    init = torch.rand(shape, generator=torch.Generator().manual_seed(seed)) < 0.5
    i32 = "_i32" if dtype == torch.int32 else ""
    pre = "p_" if partial else "t_"
    if scalar:
        sv = scalar_for(dtype, s)
        out = check(getattr(K, f"{pre}cmps{ct}{i32}"), [a, sv, init], platform)
        conv = S.scalar_operand(a, sv, dtype)[1]
        exact = TORCH_CMP[ct](wide(a), wide(conv))
    else:
        out = check(getattr(K, f"{pre}cmp{ct}"), [a, b, init], platform)
        exact = TORCH_CMP[ct](wide(a), wide(b))
    assert out.dtype == torch.bool
    expect_region(out, exact, init, partial)


# -- tests ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("scalar", (False, True), ids=("cmp", "cmps"))
@pytest.mark.parametrize("partial", (False, True), ids=("full", "partial"))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("ct", range(6))
def test_cmp_sweep(ct, dtype, partial, scalar):
    """Every cmp_type x dtype x shape class, on both platforms, specials (NaN, inf, -0) included."""
    kind = "int" if dtype == torch.int32 else "special"
    for i, platform in enumerate(H.PLATFORMS):
        cmp_case(ct, dtype, platform, 100 * ct + i, kind, partial, scalar, SCALARS[(ct + i) % len(SCALARS)], (16, 64))


@SETTINGS
@given(ct=st.integers(0, 5), dtype=st.sampled_from(DTYPES), platform=st.sampled_from(H.PLATFORMS),
       seed=st.integers(0, 2 ** 30), kind=st.sampled_from(("normal", "wide", "special")), partial=st.booleans(),
       scalar=st.booleans(), s=st.sampled_from(SCALARS), shape=st.tuples(st.integers(1, 20), st.integers(1, 80)))
def test_cmp_random(ct, dtype, platform, seed, kind, partial, scalar, s, shape):
    cmp_case(ct, dtype, platform, seed, kind, partial, scalar, s, shape)


def sel_case(dtype, platform, seed, kind, partial, scalar, s, shape):
    shape = (16, 64) if partial else shape
    a, b = operands(seed, shape, dtype, kind)
    init = H.make_data(seed + 2, shape, dtype, "normal")
    i32 = "_i32" if dtype == torch.int32 else ""
    pre = "p_" if partial else "t_"
    if scalar:
        sv = scalar_for(dtype, s)
        out = check(getattr(K, f"{pre}sels{i32}"), [a, sv, init], platform)
        conv = S.scalar_operand(a, sv, dtype)[1].expand(shape)
        # t_sels: sels(cmps(a, s, LE), a, s); p_sels: sels(cmps(a, s, GE), a, s)
        exact = torch.where((a >= conv) if partial else (a <= conv), a, conv)
    else:
        out = check(getattr(K, f"{pre}sel"), [a, b, init], platform)
        # t_sel: sel(cmp(a, b, LT), a, b); p_sel: sel(cmp(a, b, GT), a, b)
        exact = torch.where((a > b) if partial else (a < b), a, b)
    expect_region(out, exact, init, partial)


@pytest.mark.parametrize("scalar", (False, True), ids=("sel", "sels"))
@pytest.mark.parametrize("partial", (False, True), ids=("full", "partial"))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_sel_sweep(dtype, partial, scalar):
    kind = "int" if dtype == torch.int32 else "special"
    for i, platform in enumerate(H.PLATFORMS):
        sel_case(dtype, platform, 7 + i, kind, partial, scalar, SCALARS[i + 1], (16, 64))


@SETTINGS
@given(dtype=st.sampled_from(DTYPES), platform=st.sampled_from(H.PLATFORMS), seed=st.integers(0, 2 ** 30),
       kind=st.sampled_from(("normal", "wide", "special")), partial=st.booleans(), scalar=st.booleans(),
       s=st.sampled_from(SCALARS), shape=st.tuples(st.integers(1, 20), st.integers(1, 80)))
def test_sel_random(dtype, platform, seed, kind, partial, scalar, s, shape):
    sel_case(dtype, platform, seed, kind, partial, scalar, s, shape)


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_cmp_nan_and_signed_zero(platform):
    """IEEE semantics on hand-picked pairs: NaN is unequal to everything (itself included), -0 == +0."""
    nan, inf = float("nan"), float("inf")
    a = torch.tensor([[nan, nan, 1.0, -0.0, inf, -inf, 1.0, 2.0]]).repeat(2, 1)
    b = torch.tensor([[nan, 1.0, nan, 0.0, inf, inf, 2.0, 1.0]]).repeat(2, 1)
    want = {0: [0, 0, 0, 1, 1, 0, 0, 0], 1: [1, 1, 1, 0, 0, 1, 1, 1], 2: [0, 0, 0, 0, 0, 1, 1, 0],
            3: [0, 0, 0, 1, 1, 1, 1, 0], 4: [0, 0, 0, 0, 0, 0, 0, 1], 5: [0, 0, 0, 1, 1, 0, 0, 1]}
    for ct, row in want.items():
        out = check(getattr(K, f"t_cmp{ct}"), [a, b, torch.zeros(2, 8, dtype=torch.bool)], platform)
        assert out[0].tolist() == [bool(v) for v in row], f"cmp_type {ct}: {out[0].tolist()}"


def test_cmp_lowers_to_tile_ops():
    a = torch.zeros(4, 8)
    src = H.ref_source(K.t_sels, [a, 1.0, a])
    assert "_pto.cmp(" in src and "_pto.sels(" in src


def test_bad_cmp_type_is_reported_with_caret():
    a = torch.zeros(4, 8)
    with pytest.raises(InvalidOperationError, match=r"cmp_type must be an int in 0\.\.5") as ei:
        bad_cmp_type.lower(a, a, torch.zeros(4, 8, dtype=torch.bool))
    msg = str(ei.value)
    assert "^" in msg and "cmp_type=7" in msg, msg


def test_sel_needs_bool_mask():
    a = torch.zeros(4, 8)
    with pytest.raises(InvalidOperationError, match="mask must be BOOL") as ei:
        sel_not_bool.lower(a, a, a)
    assert "^" in str(ei.value)


def test_cmp_shape_mismatch():
    with pytest.raises(InvalidOperationError) as ei:
        K.t_cmp0.lower(torch.zeros(4, 8), torch.zeros(4, 16), torch.zeros(4, 8, dtype=torch.bool))
    assert "tensor.cmp" in str(ei.value) and "^" in str(ei.value)
