"""Elementwise ops: the simulator equals the reference executor bit for bit, and the reference is
within a documented ULP bound of a float64 computation.

Shape classes: *full* (tensor-level kernels ``t_*`` on a tensor of any small shape: the whole
tensor is one tile) and *partial* (tile-level kernels ``p_*``: a [16, 64] load with
``valid_shape=[13, 37]``, the op, a store: only the valid region of the output is written, the
rest keeps its initial value).

ULP bounds of the reference (``torch_codegen`` output) against float64, measured on this torch
build (CPU), over the test data below (normal, wide-exponent and special values):

* ``+ - * /`` on FP32, FP16, BF16: 0 ULP, i.e. correctly rounded: the result equals
  ``(a.double() op b.double()).to(dtype)`` exactly (FP16/BF16 are computed in FP32 and rounded
  once more; FP32 has at least 2p+2 bits of the half types so the double rounding is innocuous).
* ``exp``: measured max 1 ULP on FP32 (2M-point sweep of [-104, 89] plus the test data), 0 ULP on
  FP16 and BF16 over all 65536 inputs each (correctly rounded after the FP32
  computation); asserted bounds: FP32 <= 2 ULP, FP16 <= 1 ULP, BF16 <= 1 ULP.
"""
from __future__ import annotations

import operator

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ops_harness as H
import ops_kernels as K

COVERED_OPS = {
    "tensor.add", "tensor.adds", "tensor.sub", "tensor.subs", "tensor.mul", "tensor.muls",
    "tensor.div", "tensor.divs", "tensor.exp", "tensor.neg", "tensor.abs",
    "tile.add", "tile.adds", "tile.sub", "tile.subs", "tile.mul", "tile.muls",
    "tile.div", "tile.divs", "tile.exp", "tile.neg", "tile.abs",
    "tensor.assemble",  # `out[:] = e` in every t_* kernel
}

BINARY = ("add", "sub", "mul", "div")
INT_OK = {"add", "sub", "mul", "neg", "abs"}
UNARY = ("exp", "neg", "abs")
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32)
KINDS = ("normal", "wide", "special")
EXP_ULP = {torch.float32: 2, torch.float16: 1, torch.bfloat16: 1}

SETTINGS = settings(max_examples=40, deadline=None, report_multiple_bugs=False,
                    suppress_health_check=[HealthCheck.too_slow])

shapes = st.tuples(st.integers(1, 24), st.integers(1, 96))
platforms = st.sampled_from(H.PLATFORMS)
seeds = st.integers(0, 2 ** 31 - 1)
kinds = st.sampled_from(KINDS)


def _scalar(draw_value: float, dtype: torch.dtype):
    """An int scalar for integer tensors (a float one would change the result dtype)."""
    return max(-(2 ** 31), min(2 ** 31 - 1, int(draw_value * 1000))) if dtype == torch.int32 else draw_value


def _check(kernel, args, platform, out_index=-1):
    sim = H.run_sim(kernel, args, platform)
    ref = H.run_ref(kernel, args)
    H.assert_same_bits(sim[out_index], ref[out_index], f"{kernel.__name__} on {platform}")
    return ref[out_index]


@SETTINGS
@given(op=st.sampled_from(BINARY), dtype=st.sampled_from(DTYPES), shape=shapes, platform=platforms,
       seed=seeds, kind=kinds, partial=st.booleans())
def test_binary_tensor_tensor_sim_equals_ref(op, dtype, shape, platform, seed, kind, partial):
    if dtype == torch.int32 and op not in INT_OK:
        return
    shape = (16, 64) if partial else shape
    a, b = H.make_data(seed, shape, dtype, kind), H.make_data(seed + 1, shape, dtype, kind)
    if op == "div" and kind == "normal":
        b = torch.where(b == 0, torch.ones_like(b), b)
    init = H.make_data(seed + 2, shape, dtype, "normal")
    out = _check(getattr(K, ("p_" if partial else "t_") + op), [a, b, init], platform)
    if partial:
        _check_untouched(out, init)


@SETTINGS
@given(op=st.sampled_from(BINARY), dtype=st.sampled_from(DTYPES), shape=shapes, platform=platforms,
       seed=seeds, kind=kinds, partial=st.booleans(),
       s=st.sampled_from([2.0, -0.5, 0.1, 3.0, 1e-3, 65504.0, 1e30]))
def test_binary_tensor_scalar_sim_equals_ref(op, dtype, shape, platform, seed, kind, partial, s):
    if dtype == torch.int32 and op not in INT_OK:
        return
    shape = (16, 64) if partial else shape
    a = H.make_data(seed, shape, dtype, kind)
    init = H.make_data(seed + 2, shape, dtype, "normal")
    suffix = "s_i32" if dtype == torch.int32 else "s"
    out = _check(getattr(K, ("p_" if partial else "t_") + op + suffix), [a, _scalar(s, dtype), init], platform)
    if partial:
        _check_untouched(out, init)


@SETTINGS
@given(op=st.sampled_from(UNARY), dtype=st.sampled_from(DTYPES), shape=shapes, platform=platforms,
       seed=seeds, kind=st.sampled_from(KINDS + ("small",)), partial=st.booleans())
def test_unary_sim_equals_ref(op, dtype, shape, platform, seed, kind, partial):
    if dtype == torch.int32 and op not in INT_OK:
        return
    shape = (16, 64) if partial else shape
    a = H.make_data(seed, shape, dtype, kind)
    init = H.make_data(seed + 2, shape, dtype, "normal")
    out = _check(getattr(K, ("p_" if partial else "t_") + op), [a, init], platform)
    if partial:
        _check_untouched(out, init)


def _check_untouched(out, init):
    """p_* kernels write only the valid region [:13, :37]; the rest keeps its initial value."""
    mask = torch.ones(out.shape, dtype=torch.bool)
    mask[:K.VR, :K.VC] = False
    H.assert_same_bits(out[mask], init[mask], "output outside the valid region")


def test_partial_store_writes_valid_region():
    """The valid region of a partial tile is written (the untouched check above is not vacuous)."""
    a = torch.ones(16, 64)
    init = torch.zeros(16, 64)
    for platform in H.PLATFORMS:
        out = H.run_sim(K.p_add, [a, a, init], platform)[2]
        assert torch.equal(out[:13, :37], torch.full((13, 37), 2.0))
        assert int(out.count_nonzero()) == 13 * 37


def test_int32_ops_wrap_identically():
    """INT32 overflow wraps the same way in both executors (two's complement)."""
    a = torch.tensor([[2 ** 31 - 1, -(2 ** 31), 7, -(2 ** 31)]], dtype=torch.int32)
    out = torch.zeros_like(a)
    for kernel in (K.t_add, K.t_sub, K.t_mul):
        for platform in H.PLATFORMS:
            _check(kernel, [a, a, out], platform)
    for kernel in (K.t_neg, K.t_abs):
        for platform in H.PLATFORMS:
            _check(kernel, [a, out], platform)


# -- reference vs float64 -----------------------------------------------------------------------

_PY_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv}


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(BINARY), dtype=st.sampled_from(H.FLOAT_DTYPES), seed=seeds, kind=kinds)
def test_reference_binary_correctly_rounded(op, dtype, seed, kind):
    """0 ULP: the reference's + - * / equal the float64 result rounded once to the dtype."""
    shape = (16, 64)
    a, b = H.make_data(seed, shape, dtype, kind), H.make_data(seed + 1, shape, dtype, kind)
    got = H.run_ref(getattr(K, "t_" + op), [a, b, torch.zeros(shape, dtype=dtype)])[2]
    exact = _PY_OPS[op](a.double(), b.double()).to(dtype)
    d = H.ulp_distance(got, exact)
    assert int(d.max()) == 0, f"{op} {dtype}: {int((d > 0).sum())} results off, max {int(d.max())} ULP"


@settings(max_examples=60, deadline=None)
@given(dtype=st.sampled_from(H.FLOAT_DTYPES), seed=seeds, kind=st.sampled_from(KINDS + ("small",)))
def test_reference_exp_ulp_bound(dtype, seed, kind):
    """exp within EXP_ULP[dtype] ULP of float64 exp rounded to the dtype (see the module doc)."""
    shape = (16, 64)
    a = H.make_data(seed, shape, dtype, kind)
    got = H.run_ref(K.t_exp, [a, torch.zeros(shape, dtype=dtype)])[1]
    exact = torch.exp(a.double()).to(dtype)
    d = H.ulp_distance(got, exact)
    assert int(d.max()) <= EXP_ULP[dtype], f"exp {dtype}: max {int(d.max())} ULP"


def test_ulp_helper():
    """The ULP helper counts representable values (so the bounds above mean what they say)."""
    one = torch.tensor([1.0])
    nxt = torch.nextafter(one, torch.tensor([2.0]))
    assert int(H.ulp_distance(one, nxt)) == 1
    assert int(H.ulp_distance(torch.tensor([0.0]), torch.tensor([-0.0]))) == 0
    tiny = torch.tensor([torch.finfo(torch.float32).tiny * 2 ** -23])  # smallest subnormal
    assert int(H.ulp_distance(tiny, -tiny)) == 2
    h = torch.tensor([1.0], dtype=torch.float16)
    assert int(H.ulp_distance(h, torch.tensor([1.0009765625], dtype=torch.float16))) == 1
    b = torch.tensor([1.0], dtype=torch.bfloat16)
    assert int(H.ulp_distance(b, torch.tensor([1.0078125], dtype=torch.bfloat16))) == 1
    big = torch.tensor([65504.0], dtype=torch.float16)
    assert int(H.ulp_distance(big, torch.tensor([float("inf")], dtype=torch.float16))) == 1
    assert int(H.ulp_distance(torch.tensor([float("nan")]), one)) > 1000
    assert int(H.ulp_distance(-one, one)) == 2 * 0x3F800000


def test_reference_exp_half_types_exhaustive():
    """Every FP16 and BF16 input (all 65536 bit patterns) through the reference's exp kernel:
    within EXP_ULP (measured: 0 ULP, correctly rounded)."""
    for dtype in (torch.float16, torch.bfloat16):
        x = torch.arange(-(2 ** 15), 2 ** 15, dtype=torch.int32).to(torch.int16).view(dtype).reshape(256, 256)
        got = H.run_ref(K.t_exp, [x, torch.zeros(256, 256, dtype=dtype)])[1]
        d = H.ulp_distance(got, torch.exp(x.double()).to(dtype))
        assert int(d.max()) <= EXP_ULP[dtype], f"exp {dtype}: max {int(d.max())} ULP"
