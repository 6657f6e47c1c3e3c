"""Unary math (log sqrt rsqrt recip relu) and maximum/minimum (array and scalar rhs): simulator ==
reference bit for bit on both platforms, for FP32/FP16/BF16 (and INT32 for relu, maximum, minimum),
full tensors (``t_*``) and partial tiles (``p_*``, valid [13, 37] of [16, 64]); the reference within
a measured ULP bound of float64.

FP16/BF16 are computed in FP32 and rounded once (``_pto.unary_f32``): torch's CPU FP16 ``sqrt``
does not do that (15 of 65536 inputs differ), so the contract is explicit in ref and sim.

ULP bounds vs ``f(x.double()).to(dtype)``, measured on this torch build (CPU) over 2**20 uniform
[0, 100) plus wide/normal/special FP32 inputs, and all 65536 FP16/BF16 bit patterns:

* log: FP32 1, FP16 0, BF16 0      * sqrt: FP32 1 (MAX vs inf rounding of huge inputs), FP16 1, BF16 0
* rsqrt: FP32 1, FP16 0, BF16 0     * recip: 0 everywhere (correctly rounded)
* relu, maximum, minimum: exact (0).
Asserted bounds: 1 ULP for log/sqrt/rsqrt/recip in every dtype (recip: 0), 0 for relu/max/min.
"""
from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import kernels_ext as K
import ops_harness as H
from pypto.ops import support as S

COVERED_OPS = {f"{lvl}.{op}" for lvl in ("tensor", "tile")
               for op in ("log", "sqrt", "rsqrt", "recip", "relu", "maximum", "minimum", "maximums", "minimums")}

UNARY = ("log", "sqrt", "rsqrt", "recip", "relu")
ULP = {"log": 1, "sqrt": 1, "rsqrt": 1, "recip": 0, "relu": 0}
TORCH = {"log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "recip": torch.reciprocal, "relu": torch.relu}
DTYPES = H.FLOAT_DTYPES + (torch.int32,)
SETTINGS = settings(max_examples=15, report_multiple_bugs=False, phases=(Phase.explicit, Phase.reuse, Phase.generate), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check(kernel, args, platform):
    sim, ref = H.run_sim(kernel, args, platform), H.run_ref(kernel, args)
    H.assert_same_bits(sim[-1], ref[-1], f"{kernel.__name__} on {platform}")
    return ref[-1]


def untouched(out, init):
    mask = torch.ones(out.shape, dtype=torch.bool)
    mask[:13, :37] = False
    H.assert_same_bits(out[mask], init[mask], "outside the valid region")


@SETTINGS
@given(op=st.sampled_from(UNARY), dtype=st.sampled_from(DTYPES), platform=st.sampled_from(H.PLATFORMS),
       seed=st.integers(0, 2 ** 30), kind=st.sampled_from(("normal", "wide", "special")), partial=st.booleans(),
       shape=st.tuples(st.integers(1, 20), st.integers(1, 80)))
def test_unary_sim_equals_ref(op, dtype, platform, seed, kind, partial, shape):
    if dtype == torch.int32 and op != "relu":
        return
    shape = (16, 64) if partial else shape
    a = H.make_data(seed, shape, dtype, kind)
    init = H.make_data(seed + 1, shape, dtype, "normal")
    out = check(getattr(K, ("p_" if partial else "t_") + op), [a, init], platform)
    if partial:
        untouched(out, init)


@SETTINGS
@given(op=st.sampled_from(("maximum", "minimum")), dtype=st.sampled_from(DTYPES),
       platform=st.sampled_from(H.PLATFORMS), seed=st.integers(0, 2 ** 30),
       kind=st.sampled_from(("normal", "wide", "special")), partial=st.booleans(), scalar=st.booleans(),
       s=st.sampled_from([0.0, -0.5, 2.0, 1e30, 0.1]))
def test_binary_sim_equals_ref(op, dtype, platform, seed, kind, partial, scalar, s):
    a, b = H.make_data(seed, (16, 64), dtype, kind), H.make_data(seed + 1, (16, 64), dtype, kind)
    init = H.make_data(seed + 2, (16, 64), dtype, "normal")
    pre = "p_" if partial else "t_"
    if scalar:
        i32 = dtype == torch.int32
        args = [a, max(-(2 ** 31), min(2 ** 31 - 1, int(s * 100))) if i32 else s, init]
        out = check(getattr(K, pre + op + "s" + ("_i32" if i32 else "")), args, platform)
        sv = S.scalar_operand(a, args[1], dtype)[1]
        exact = (torch.maximum if op == "maximum" else torch.minimum)(a, sv)
    else:
        out = check(getattr(K, pre + op), [a, b, init], platform)
        exact = (torch.maximum if op == "maximum" else torch.minimum)(a, b)
    if partial:
        untouched(out, init)
        exact = torch.where(torch.arange(16)[:, None].lt(13) & torch.arange(64).lt(37), exact, init)
    H.assert_same_bits(out, exact, f"{op} exact")


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_maximum_literal_scalar_and_nan(platform):
    """``pl.maximum(x, 2.0)`` dispatches to maximums; NaN in x propagates."""
    a = torch.tensor([[1.0, 3.0, float("nan"), -0.0]]).repeat(2, 1)
    out = check(K.t_maximum_const, [a, torch.zeros_like(a)], platform)
    assert out[0, :2].tolist() == [2.0, 3.0] and bool(torch.isnan(out[0, 2]))
    src = H.ref_source(K.t_maximum_const, [a, torch.zeros_like(a)])
    assert "_pto.maximums" in src


@pytest.mark.parametrize("op", ("log", "sqrt", "rsqrt", "recip"))
@pytest.mark.parametrize("dtype", H.FLOAT_DTYPES)
def test_reference_ulp_bound(op, dtype):
    """Reference within ULP[op] of float64; half types exhaustively (all 65536 bit patterns)."""
    if dtype == torch.float32:
        x = torch.cat([H.make_data(s, (32, 256), dtype, k).reshape(-1)
                       for s, k in ((1, "wide"), (2, "normal"), (3, "special"))]).reshape(96, 256)
    else:
        x = torch.arange(-(2 ** 15), 2 ** 15, dtype=torch.int32).to(torch.int16).view(dtype).reshape(256, 256)
    got = H.run_ref(getattr(K, "t_" + op), [x, torch.zeros_like(x)])[1]
    d = H.ulp_distance(got, TORCH[op](x.double()).to(dtype))
    assert int(d.max()) <= ULP[op], f"{op} {dtype}: max {int(d.max())} ULP"


def test_half_computed_in_fp32_once():
    """The contract is not torch's half kernel: FP16 sqrt differs from torch.sqrt on some inputs, and
    our result equals sqrt(x.float()).half() on all of them (the test can fail)."""
    x = torch.arange(0, 2 ** 15, dtype=torch.int32).to(torch.int16).view(torch.float16)
    ours = S.unary_f32("sqrt", x)
    assert torch.equal(H.bits(ours), H.bits(torch.sqrt(x.float()).half()))
    assert not torch.equal(H.bits(ours), H.bits(torch.sqrt(x)))


def test_math_float_only():
    from pypto.errors import InvalidOperationError

    with pytest.raises(InvalidOperationError, match="float"):
        K.t_log.lower(torch.zeros(4, 8, dtype=torch.int32), torch.zeros(4, 8, dtype=torch.int32))
