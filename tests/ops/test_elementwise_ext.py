"""fmod(s), rem(s), sin, cos, prelu, lrelu, addc/subc/addsc/subsc, part_add/mul/max/min and scalar
pl.min / pl.max: simulator == reference bit for bit on both platforms (FP32/FP16/BF16 and integer
dtypes where accepted; normal, wide and special values: NaN, +-0, inf, subnormals), and both
against an independent oracle:

* the multi-instruction ops (fmod, float rem, addc ...) against numpy (ml_dtypes for BF16) doing the
  same instruction sequence, one rounding to the dtype per instruction: bit-identical (NaN payloads
  aside, which are not a contract of the oracle);
* integer rem against Python's ``%``;
* sin / cos against float64: measured max 1 ULP (FP32: 2**20 points in [-100, 100) plus wide and
  special values) and 0 ULP for FP16 / BF16 over all 65536 inputs; asserted: FP32 <= 1, others 0.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernels_elementwise_ext as K
from kernel_templates import filename
import ops_harness as H
import pypto.language as pl
from pypto.errors import InvalidOperationError, PyptoError

COVERED_OPS = ({f"{lvl}.{op}" for lvl in ("tensor", "tile") for op in
                ("fmod", "fmods", "sin", "cos", "part_add", "part_mul", "part_max", "part_min")}
               | {f"tile.{op}" for op in ("rem", "rems", "prelu", "lrelu", "addc", "subc", "addsc", "subsc")})

FLOATS = H.FLOAT_DTYPES
NP = {torch.float32: np.float32, torch.float16: np.float16, torch.bfloat16: ml_dtypes.bfloat16}
SETTINGS = settings(max_examples=25, deadline=None, report_multiple_bugs=False,
                    suppress_health_check=[HealthCheck.too_slow])
KINDS = ("normal", "wide", "special")
V = (slice(0, 13), slice(0, 37))


def np_of(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def torch_of(a: np.ndarray, dtype) -> torch.Tensor:
    a = np.ascontiguousarray(a)
    if dtype == torch.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def same(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    """Bit equality, any two NaNs matching (see the module doc)."""
    if got.dtype.is_floating_point:
        both = torch.isnan(got) & torch.isnan(want)
        got = torch.where(both, torch.zeros_like(got), got)
        want = torch.where(both, torch.zeros_like(want), want)
    H.assert_same_bits(got, want, what)


def check(kernel, args, platform):
    sim, ref = H.run_sim(kernel, args, platform), H.run_ref(kernel, args)
    H.assert_same_bits(sim[-1], ref[-1], f"{kernel.__name__} on {platform}")
    return ref[-1]


def seq_oracle(dtype, fn, *xs):
    """``fn`` on numpy arrays of the dtype (numpy rounds every FP16/BF16 op once from FP32)."""
    with np.errstate(all="ignore"):
        args = [np_of(x) if isinstance(x, torch.Tensor) else NP[dtype](x) for x in xs]
        return torch_of(np.asarray(fn(*args), dtype=NP[dtype]), dtype)


def fmod_np(a, b):
    return a - np.trunc(a / b) * b


def rem_np(a, b):
    return a - np.floor(a / b) * b


def untouched(out, init):
    mask = torch.ones(out.shape, dtype=torch.bool)
    mask[V] = False
    H.assert_same_bits(out[mask], init[mask], "outside the valid region")


# ------------------------------------------------------------------ fmod / rem
@SETTINGS
@given(dtype=st.sampled_from(FLOATS), platform=st.sampled_from(H.PLATFORMS), seed=st.integers(0, 2 ** 30),
       kind=st.sampled_from(KINDS), form=st.sampled_from(("t_fmod", "p_fmod", "t_fmods", "p_fmods", "p_rem", "p_rems_f")),
       s=st.sampled_from((1.5, -2.25, 0.0, 1e-3, float("inf"), 3.0)))
def test_fmod_rem_float(dtype, platform, seed, kind, form, s):
    shape = (16, 64) if form.startswith("p_") else (7, 29)
    a = H.make_data(seed, shape, dtype, kind)
    b = H.make_data(seed + 1, shape, dtype, kind)
    init = H.make_data(seed + 2, shape, dtype, "normal")
    scalar = form.endswith("s") or form.endswith("_f")
    args = [a, s, init] if scalar else [a, b, init]
    out = check(getattr(K, form), args, platform)
    fn = rem_np if "rem" in form else fmod_np
    want = seq_oracle(dtype, fn, a, s if scalar else b)
    if form.startswith("p_"):
        same(out[V], want[V], f"{form} vs numpy")
        untouched(out, init)
    else:
        same(out, want, f"{form} vs numpy")


def test_fmod_is_the_instruction_sequence_not_exact_fmod():
    """trunc(a / b) * b rounds (FP32 here): the device's result, not C's exact fmod."""
    a = torch.tensor([[636961.6875, 7.0, -7.0, 5.5]])
    b = torch.tensor([[2.320986032485962, 2.0, 2.0, float("inf")]])
    out = H.run_sim(K.t_fmod, [a, b, torch.zeros_like(a)], "a2a3sim")[-1]
    assert out[0, 0].item() == 1.875                                  # exact fmod: 1.8856747...
    assert out[0, 1].item() == 1.0 and out[0, 2].item() == -1.0       # sign of the dividend
    assert torch.isnan(out[0, 3])                                     # inf divisor: NaN (0 * inf)


@SETTINGS
@given(dtype=st.sampled_from((torch.int32, torch.int16, torch.int8, torch.int64)), platform=st.sampled_from(H.PLATFORMS),
       seed=st.integers(0, 2 ** 30), s=st.sampled_from((1, -1, 7, -7, 2 ** 15 - 1, -(2 ** 15))))
def test_rem_int(dtype, platform, seed, s):
    g = torch.Generator().manual_seed(seed)
    info = torch.iinfo(dtype)
    a = torch.randint(info.min, info.max, (16, 64), generator=g, dtype=torch.int64).to(dtype)
    a[0, :4] = torch.tensor([info.min, info.max, 0, -1], dtype=dtype)
    b = torch.randint(-9, 10, (16, 64), generator=g).to(dtype)
    b[b == 0] = 3
    b[0, 0] = -1                              # INT_MIN % -1
    init = torch.zeros_like(a)
    out = check(K.p_rem, [a, b, init], platform)
    want = [[x % y for x, y in zip(r1, r2)] for r1, r2 in zip(a[V].tolist(), b[V].tolist())]
    assert out[V].tolist() == want
    if dtype != torch.int8 or -128 <= s <= 127:
        out = check(K.p_rems_i, [a, s, init], platform)
        sv = int(torch.tensor(s).to(dtype))   # the scalar in the tile's dtype
        assert out[V].tolist() == [[x % sv for x in r] for r in a[V].tolist()]


def test_rem_by_zero_is_a_run_time_error_only_in_the_valid_region():
    a = torch.full((16, 64), 5, dtype=torch.int32)
    b = torch.full((16, 64), 3, dtype=torch.int32)
    b[14, 60] = 0                             # padding: fine
    out = H.run_sim(K.p_rem, [a, b, torch.zeros_like(a)], "a2a3sim")[-1]
    assert torch.all(out[V] == 2)
    b[2, 3] = 0
    with pytest.raises(PyptoError, match="division by zero in the valid region"):
        H.run_sim(K.p_rem, [a, b, torch.zeros_like(a)], "a2a3sim")


# ------------------------------------------------------------------ sin / cos
@SETTINGS
@given(fn=st.sampled_from(("sin", "cos")), dtype=st.sampled_from(FLOATS), platform=st.sampled_from(H.PLATFORMS),
       seed=st.integers(0, 2 ** 30), kind=st.sampled_from(KINDS), partial=st.booleans())
def test_trig(fn, dtype, platform, seed, kind, partial):
    shape = (16, 64) if partial else (9, 50)
    a = H.make_data(seed, shape, dtype, kind)
    init = H.make_data(seed + 1, shape, dtype, "normal")
    out = check(getattr(K, ("p_" if partial else "t_") + fn), [a, init], platform)
    want = getattr(torch, fn)(a.double()).to(dtype)
    got, want = (out[V], want[V]) if partial else (out, want)
    bound = 1 if dtype == torch.float32 else 0
    assert int(H.ulp_distance(got, want).max()) <= bound


# ------------------------------------------------------------------ activations
@SETTINGS
@given(dtype=st.sampled_from((torch.float32, torch.float16)), platform=st.sampled_from(H.PLATFORMS),
       seed=st.integers(0, 2 ** 30), kind=st.sampled_from(KINDS), s=st.sampled_from((0.1, 0.01, 2.0, -0.5, 0.0)))
def test_prelu_lrelu(dtype, platform, seed, kind, s):
    a = H.make_data(seed, (16, 64), dtype, kind)
    slope = H.make_data(seed + 1, (16, 64), dtype, kind)
    init = torch.zeros(16, 64, dtype=dtype)
    out = check(K.p_prelu, [a, slope, init], platform)
    same(out[V], seq_oracle(dtype, lambda x, y: np.where(x > 0, x, x * y), a, slope)[V], "prelu vs numpy")
    out = check(K.p_lrelu, [a, s, init], platform)
    same(out[V], seq_oracle(dtype, lambda x, y: np.where(x > 0, x, x * y), a, s)[V], "lrelu vs numpy")


def test_prelu_signed_zero_and_nan():
    a = torch.zeros(16, 64)
    a[0, :3] = torch.tensor([-0.0, float("nan"), -2.0])
    slope = torch.full((16, 64), 0.5)
    out = H.run_sim(K.p_prelu, [a, slope, torch.ones(16, 64)], "a5sim")[-1]
    assert str(out[0, 0].item()) == "-0.0" and torch.isnan(out[0, 1]) and out[0, 2].item() == -1.0


# ------------------------------------------------------------------ addc / subc / addsc / subsc
@SETTINGS
@given(op=st.sampled_from(("addc", "subc", "addsc", "subsc")), dtype=st.sampled_from(FLOATS + (torch.int32,)),
       platform=st.sampled_from(H.PLATFORMS), seed=st.integers(0, 2 ** 30), kind=st.sampled_from(KINDS))
def test_three_operand_add_sub(op, dtype, platform, seed, kind):
    a, b, c = (H.make_data(seed + k, (16, 64), dtype, kind) for k in range(3))
    init = torch.zeros(16, 64, dtype=dtype)
    sub = op.startswith("sub")
    if op.endswith("sc"):
        s = 3 if dtype == torch.int32 else 1.375
        out = check(getattr(K, f"p_{op}" + ("_i" if dtype == torch.int32 else "")), [a, s, c, init], platform)
        second = s
    else:
        out = check(getattr(K, f"p_{op}"), [a, b, c, init], platform)
        second = b
    if dtype == torch.int32:
        bb = second if isinstance(second, int) else second.to(torch.int64)
        want = ((a.to(torch.int64) - bb - c) if sub else (a.to(torch.int64) + bb + c)).to(torch.int32)
        assert torch.equal(out[V], want[V])
    else:
        fn = (lambda x, y, z: (x - y) - z) if sub else (lambda x, y, z: (x + y) + z)
        same(out[V], seq_oracle(dtype, fn, a, second, c)[V], f"{op} vs numpy")


# ------------------------------------------------------------------ part ops
PART_NP = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _zero_sign_free(x: torch.Tensor) -> torch.Tensor:
    """``x`` with -0.0 made +0.0: max/min of +0.0 and -0.0 may return either zero (IEEE 754 leaves the
    tie open and torch's own kernels differ between their vector and scalar paths; docs/simulator.md),
    so those two results are compared by value; every other bit still has to match."""
    return x + 0.0 if x.is_floating_point() else x


@SETTINGS
@given(k=st.sampled_from(("add", "mul", "max", "min")), dtype=st.sampled_from(FLOATS + (torch.int32,)),
       platform=st.sampled_from(H.PLATFORMS), seed=st.integers(0, 2 ** 30), kind=st.sampled_from(KINDS),
       partial=st.booleans())
def test_part_ops(k, dtype, platform, seed, kind, partial):
    shape = (16, 64) if partial else (5, 33)
    a, b = H.make_data(seed, shape, dtype, kind), H.make_data(seed + 1, shape, dtype, kind)
    init = H.make_data(seed + 2, shape, dtype, "normal")
    out = check(getattr(K, ("p_" if partial else "t_") + f"part_{k}"), [a, b, init], platform)
    if dtype == torch.int32:
        want = {"add": a + b, "mul": a * b, "max": torch.maximum(a, b), "min": torch.minimum(a, b)}[k]
    else:
        want = seq_oracle(dtype, PART_NP[k], a, b)
    if partial:
        # b is valid in [16, 20]: columns 20..36 of the result's valid [13, 37] copy a
        want = want.clone()
        want[:, 20:] = a[:, 20:]
    got = out
    if k in ("max", "min"):
        got, want = _zero_sign_free(out), _zero_sign_free(want)
    if partial:
        same(got[V], want[V], f"part_{k} vs oracle")
        untouched(out, init)
    else:
        same(got, want, f"part_{k} vs oracle")


# ------------------------------------------------------------------ scalar pl.min / pl.max, spellings
def test_scalar_min_max():
    a = torch.zeros(16, 64)
    for n, k in ((100, 48), (20, 20), (3, 16)):
        out = H.run_sim(K.scalar_min_max, [a, n, torch.zeros_like(a)], "a2a3sim")[-1]
        assert torch.all(out == k)
    cfg = pl.RUNTIME
    compiled = K.scalar_min_max.compile(a, cfg, torch.zeros_like(a))
    out = torch.zeros_like(a)
    compiled(a, 30, out)
    assert torch.all(out == 30)


def test_scalar_form_spellings():
    assert pl.fmods is pl.fmod or repr(pl.fmods) == "pl.fmod"
    assert repr(pl.maximums) == "pl.maximum" and repr(pl.ands) == "pl.and_"
    with pytest.raises(AttributeError):
        pl.no_such_ops


# ------------------------------------------------------------------ errors
def _msg(kernel, args):
    with pytest.raises(InvalidOperationError) as ei:
        H.run_sim(kernel, args, "a2a3sim")
    return str(ei.value)


def test_errors_name_the_problem():
    i = torch.zeros(16, 64, dtype=torch.int32)
    f = torch.zeros(16, 64)
    assert "needs float operands" in _msg(K.t_fmod, [i, i, i])
    assert "needs a float operand, got INT32" in _msg(K.t_sin, [i, i])
    assert "FP16 or FP32" in _msg(K.p_prelu, [f.bfloat16(), f.bfloat16(), f.bfloat16()])
    assert "integer tile takes an integer divisor" in _msg(K.p_rems_f, [i, 2.5, i])
    assert filename(K.t_cos) + ":" in _msg(K.t_cos, [i, i])   # located in its (generated) source


@pytest.mark.parametrize("kernel", ("p_fmods", "p_rem", "p_prelu", "p_addsc", "p_part_max", "t_part_mul", "t_sin"))
def test_printed_programs_parse_back(kernel):
    from catalog_harness import assert_roundtrips

    z = torch.zeros(16, 64)
    n = {"p_fmods": [z, 2.0, z], "p_rem": [z, z, z], "p_prelu": [z, z, z], "p_addsc": [z, 2.0, z, z],
         "p_part_max": [z, z, z], "t_part_mul": [z, z, z], "t_sin": [z, z]}[kernel]
    assert_roundtrips(getattr(K, kernel), n)
