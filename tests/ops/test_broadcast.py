"""row_expand / col_expand, row_expand_<op> / col_expand_<op> (add sub mul div max min expdif) and
expands, at tensor and tile level: simulator == reference bit for bit on both platforms, for
FP32/FP16/BF16 (and INT32 except div/expdif), full tensors (``t_*``; random shapes in the hypothesis
test) and partial tiles (``p_*``: a [16, 64] tile valid [13, 37] with a [16, 1] row vector valid
[13, 1] or a [1, 64] column vector valid [1, 37]; only the valid region is stored, the padding of
the output is untouched).

Reference vs float64 (``op(t.double(), v.double()).to(dtype)``; int64 wrapped to INT32 for ints):

* expand, expands, add, sub, mul, div, max, min: **0 ULP** (asserted) — one rounding; FP16/BF16
  are computed in FP32 and rounded once, which is innocuous double rounding for + - * / since
  FP32 has >= 2p+2 bits for p = 11 (FP16) and 8 (BF16).
* expdif: ``d = t - v`` is rounded to the dtype first, then ``exp(d)`` (FP16/BF16 in FP32) is
  rounded once, so the error grows with |d|: rounding d costs at most |d| * 2**-p absolute, i.e. a
  relative error of exp of |d| * 2**-p < |d| ULP of the result, plus 1/2 ULP for the final rounding.
  Asserted elementwise: ``ulp(ref, exp(t - v)) <= |t - v| + 1``. Measured on this torch build over
  t, v uniform in [-10, 10] (|d| <= 20; 512 x 4096 elements per dtype, ``test_expdif_ulp_bound``):
  max **FP32 16 ULP, FP16 8 ULP, BF16 15 ULP** (mean 0.47 / 0.84 / 1.58); <= 8 ULP where |d| <= 10
  and <= 1 ULP where |d| <= 1 in every dtype. Asserted global bound for |d| <= 20: 16 ULP.
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

OPS = ("", "_add", "_sub", "_mul", "_div", "_max", "_min", "_expdif")
COVERED_OPS = ({f"{lvl}.{axis}_expand{op}" for lvl in ("tensor", "tile") for axis in ("row", "col") for op in OPS}
               | {"tensor.expands", "tile.expands"})

DTYPES = H.FLOAT_DTYPES + (torch.int32,)
FLOAT_ONLY = ("_div", "_expdif")
EXPDIF_ULP = 16  # for |t - v| <= 20, every float dtype (measured max 16 / 8 / 15 for FP32 / FP16 / BF16)
F64 = {"": lambda t, v: v.expand(t.shape), "_add": torch.add, "_sub": torch.sub, "_mul": torch.mul,
       "_div": torch.div, "_max": torch.maximum, "_min": torch.minimum,
       "_expdif": lambda t, v: torch.exp(t - v)}
SETTINGS = settings(max_examples=15, report_multiple_bugs=False, phases=(Phase.explicit, Phase.reuse, Phase.generate),
                    deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- kernels for the error tests ------------------------------------------------------------------

@pl.jit
def row_expand_wrong_vec(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.slice(a, [8, 1], [0, 0])
        out[:] = pl.row_expand_add(a, v)
    return out


# -- helpers --------------------------------------------------------------------------------------

def valid_mask(shape=(16, 64)):
    return torch.arange(shape[0])[:, None].lt(13) & torch.arange(shape[1]).lt(37)


def check(kernel, args, platform):
    sim, ref = H.run_sim(kernel, args, platform), H.run_ref(kernel, args)
    H.assert_same_bits(sim[-1], ref[-1], f"{kernel.__name__} on {platform}")
    return ref[-1]


def exact(op, t, v):
    """The float64 (int64 for INT32, wrapped) result rounded once to t's dtype."""
    if t.dtype == torch.int32:
        return F64[op](t.to(torch.int64), v.to(torch.int64)).to(torch.int32)
    return F64[op](t.double(), v.double()).to(t.dtype)


def assert_ulp(got, want, bound, what):
    if got.dtype == torch.int32:
        assert torch.equal(got, want), what
        return
    d = H.ulp_distance(got, want)
    assert int(d.max()) <= bound, f"{what}: {int(d.max())} ULP > {bound}"


def bcast_case(op, axis, dtype, platform, seed, kind, partial, shape):
    shape = (16, 64) if partial else shape
    vshape = (shape[0], 1) if axis == "row" else (1, shape[1])
    if dtype == torch.int32:
        kind = "int"
    elif op == "_expdif":
        kind = "small"
    t = H.make_data(seed, shape, dtype, kind)
    v = H.make_data(seed + 1, vshape, dtype, kind)
    init = H.make_data(seed + 2, shape, dtype, "normal" if dtype != torch.int32 else "int")
    out = check(getattr(K, f"{'p' if partial else 't'}_{axis}_expand{op}"), [t, v, init], platform)
    want = exact(op, t, v)
    if partial:
        m = valid_mask()
        H.assert_same_bits(out[~m], init[~m], "outside the valid region")
        out, want = out[m], want[m]
    assert_ulp(out, want, EXPDIF_ULP if op == "_expdif" else 0, f"{axis}_expand{op} {dtype} vs float64")


CASES = [(op, axis, dt) for op in OPS for axis in ("row", "col") for dt in DTYPES
         if not (dt == torch.int32 and op in FLOAT_ONLY)]


@pytest.mark.parametrize("partial", (False, True), ids=("full", "partial"))
@pytest.mark.parametrize("op,axis,dtype", CASES, ids=[f"{a}_expand{o}-{d}" for o, a, d in CASES])
def test_broadcast_sweep(op, axis, dtype, partial):
    """Every op x axis x dtype x shape class, one platform each by alternation, specials included;
    ``test_broadcast_both_platforms`` and the random test cover the other platform."""
    kind = "special" if op != "_expdif" else "small"
    platform = H.PLATFORMS[(CASES.index((op, axis, dtype)) + partial) % 2]
    bcast_case(op, axis, dtype, platform, 11 + 3 * OPS.index(op), kind, partial, (16, 64))


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_broadcast_both_platforms(dtype, platform):
    """Every op (row and column) at tensor and tile level on each platform and dtype."""
    for op in OPS:
        if dtype == torch.int32 and op in FLOAT_ONLY:
            continue
        for axis in ("row", "col"):
            bcast_case(op, axis, dtype, platform, 5, "wide", True, None)
            bcast_case(op, axis, dtype, platform, 6, "normal", False, (7, 19))


@SETTINGS
@given(op=st.sampled_from(OPS), axis=st.sampled_from(("row", "col")), dtype=st.sampled_from(DTYPES),
       platform=st.sampled_from(H.PLATFORMS), seed=st.integers(0, 2 ** 30),
       kind=st.sampled_from(("normal", "wide", "special")), partial=st.booleans(),
       shape=st.tuples(st.integers(1, 20), st.integers(1, 80)))
def test_broadcast_random(op, axis, dtype, platform, seed, kind, partial, shape):
    if dtype == torch.int32 and op in FLOAT_ONLY:
        return
    bcast_case(op, axis, dtype, platform, seed, kind, partial, shape)


@pytest.mark.parametrize("partial", (False, True), ids=("full", "partial"))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_expands(dtype, partial):
    i32 = dtype == torch.int32
    a = H.make_data(3, (16, 64), dtype, "int" if i32 else "normal")
    init = H.make_data(4, (16, 64), dtype, "int" if i32 else "normal")
    for s, platform in zip((-7, 123) if i32 else (0.1, -2.5), H.PLATFORMS):
        out = check(getattr(K, f"{'p' if partial else 't'}_expands{'_i32' if i32 else ''}"), [a, s, init], platform)
        want = torch.full((16, 64), s, dtype=torch.float64 if not i32 else torch.int64).to(dtype)
        assert torch.equal(H.bits(want), H.bits(S.scalar_operand(a, s, dtype)[1].expand(16, 64)))
        if partial:
            want = torch.where(valid_mask(), want, init)
        H.assert_same_bits(out, want, f"expands {dtype}")


@pytest.mark.parametrize("dtype", H.FLOAT_DTYPES, ids=str)
def test_expdif_ulp_bound(dtype):
    """The measured bound of the two-rounding expdif, on the reference helper itself (the emitted
    reference is ``_pto.expdif(t, v)``; a [512, 4096] tile exceeds the Vec buffer, so the helper is
    called directly)."""
    src = H.ref_source(K.t_row_expand_expdif, [torch.zeros(4, 8), torch.zeros(4, 1), torch.zeros(4, 8)])
    assert "_pto.expdif(" in src
    t = torch.cat([H.make_data(s, (64, 4096), dtype, "small") for s in range(8)])
    v = H.make_data(99, (512, 1), dtype, "small")
    got = S.expdif(t, v)
    dist = H.ulp_distance(got, torch.exp(t.double() - v.double()).to(dtype))
    absd = (t.double() - v.double()).abs()
    assert int(dist.max()) <= EXPDIF_ULP, f"{dtype}: {int(dist.max())} ULP"
    assert bool((dist.double() <= absd + 1).all()), "elementwise bound |t - v| + 1 ULP violated"
    assert int(dist[absd <= 1].max()) <= 1
    # the definition: exp of the difference rounded to the dtype (FP16/BF16 exp computed in FP32)
    H.assert_same_bits(got, torch.exp((t - v).float()).to(dtype), "expdif == exp(rounded difference)")
    # ... which is not the fused exp(t - v) (the test can fail): some results differ from it
    assert int(dist.max()) > 1


def test_row_expand_shape_mismatch_is_reported_with_caret():
    a = torch.zeros(16, 64)
    with pytest.raises(InvalidOperationError, match=r"row vector must have shape \[16, 1\].*got \[8, 1\]") as ei:
        row_expand_wrong_vec.lower(a, a)
    msg = str(ei.value)
    assert "^" in msg and "row_expand_add" in msg, msg


def test_col_expand_shape_mismatch():
    a = torch.zeros(16, 64)
    with pytest.raises(InvalidOperationError, match=r"column vector|col vector") as ei:
        K.t_col_expand_mul.lower(a, torch.zeros(16, 1), a)
    assert "^" in str(ei.value)


def test_broadcast_dtype_rules():
    a = torch.zeros(16, 64)
    with pytest.raises(InvalidOperationError, match="dtypes differ") as ei:
        K.t_row_expand_add.lower(a, torch.zeros(16, 1, dtype=torch.float16), a)
    assert "^" in str(ei.value)
    ai = torch.zeros(16, 64, dtype=torch.int32)
    with pytest.raises(InvalidOperationError, match="float"):
        K.t_row_expand_div.lower(ai, torch.zeros(16, 1, dtype=torch.int32), ai)
