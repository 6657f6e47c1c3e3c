"""row/col_prod and row/col_argmax/argmin: simulator == reference bit for bit on both platforms
(FP32, FP16, BF16, INT32, INT16; random, wide and special values: NaN, +-0, inf, subnormals, ties),
and both equal an independent oracle:

* prod: numpy (ml_dtypes for BF16) multiplying in the documented order (sequential left to right,
  or the binary tree: upper half onto lower half, odd middle carried), one rounding to the dtype per
  step (numpy computes FP16/BF16 products in FP32 and rounds once, like the vector unit). With the
  same order the result must be bit-identical, so the oracle asserts 0 ULP.
* arg reductions: a Python loop over the values (first index of the extreme; NaN is the extreme).

Only the valid extent of the reduced axis takes part (a partial tile is [16, 64] with valid
[13, 37]).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernels_argreduce as K
from kernel_templates import filename   # the kernels' (generated) source file
import ops_harness as H
from pypto.errors import InvalidOperationError

COVERED_OPS = {f"{lvl}.{fam}_{k}" for lvl in ("tensor", "tile") for fam in ("row", "col")
               for k in ("prod", "argmax", "argmin")}

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int16)
NP = {torch.float32: np.float32, torch.float16: np.float16, torch.bfloat16: ml_dtypes.bfloat16,
      torch.int32: np.int32, torch.int16: np.int16}
SETTINGS = settings(max_examples=30, deadline=None, report_multiple_bugs=False,
                    suppress_health_check=[HealthCheck.too_slow])


def to_np(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def from_np(a: np.ndarray, dtype) -> torch.Tensor:
    if dtype == torch.bfloat16:
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a))


def prod_oracle(x: torch.Tensor, axis: int, tree: bool) -> torch.Tensor:
    """Product along ``axis`` (keepdim) in numpy, in the documented order."""
    a = to_np(x)
    a = np.moveaxis(a, axis, -1).copy()
    with np.errstate(all="ignore"):
        if tree:
            n = a.shape[-1]
            while n > 1:
                h = n // 2
                r = n - h
                a[..., :h] = a[..., :h] * a[..., r:n]
                n = r
            res = a[..., :1]
        else:
            acc = a[..., 0].copy()
            for j in range(1, a.shape[-1]):
                acc = (acc * a[..., j]).astype(a.dtype)
            res = acc[..., None]
    return from_np(np.moveaxis(res, -1, axis), x.dtype)


def arg_oracle(x: torch.Tensor, axis: int, kind: str) -> torch.Tensor:
    xs = x.movedim(axis, -1).double()
    rows = []
    for row in xs.reshape(-1, xs.shape[-1]).tolist():
        best = 0
        for j, v in enumerate(row):
            b = row[best]
            if b != b:            # a NaN is already the extreme
                break
            if v != v or (v > b if kind == "max" else v < b):
                best = j
        rows.append(best)
    out = torch.tensor(rows, dtype=torch.int32).reshape(xs.shape[:-1] + (1,))
    return out.movedim(-1, axis)


def data(seed, shape, dtype, kind):
    if not dtype.is_floating_point:
        g = torch.Generator().manual_seed(seed)
        x = torch.randint(-50, 50, shape, generator=g).to(dtype)
        x[torch.rand(shape, generator=g) < 0.05] = torch.iinfo(dtype).max
        x[torch.rand(shape, generator=g) < 0.05] = torch.iinfo(dtype).min
        return x
    if kind == "ties":   # few distinct values: many ties, +-0
        g = torch.Generator().manual_seed(seed)
        return torch.tensor([-1.0, -0.0, 0.0, 1.0, 2.0])[torch.randint(0, 5, shape, generator=g)].to(dtype)
    if kind == "near1":  # products that stay finite
        g = torch.Generator().manual_seed(seed)
        return (torch.rand(shape, generator=g) * 0.4 + 0.8).to(dtype)
    return H.make_data(seed, shape, dtype, kind)


def same_up_to_nan_payload(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    """Bit equality, except that any two NaNs match: the oracle's NaN payloads (numpy on this CPU)
    are not a contract; the simulator == reference comparison stays bit for bit."""
    if got.dtype.is_floating_point:
        both = torch.isnan(got) & torch.isnan(want)
        got, want = torch.where(both, torch.zeros_like(got), got), torch.where(both, torch.zeros_like(want), want)
    H.assert_same_bits(got, want, what)


def check(kernel, args, platform):
    sim, ref = H.run_sim(kernel, args, platform), H.run_ref(kernel, args)
    H.assert_same_bits(sim[-1], ref[-1], f"{kernel.__name__} on {platform}")
    return ref[-1]


def out_like(shape, family, dtype):
    return torch.full((shape[0], 1) if family == "row" else (1, shape[1]), 7, dtype=dtype)


KINDS = ("normal", "wide", "special", "ties", "near1")


@SETTINGS
@given(family=st.sampled_from(("row", "col")), dtype=st.sampled_from(DTYPES), platform=st.sampled_from(H.PLATFORMS),
       seed=st.integers(0, 2 ** 30), kind=st.sampled_from(KINDS),
       mode=st.sampled_from(("tensor", "tree", "seq")), shape=st.tuples(st.integers(1, 16), st.integers(1, 64)))
def test_prod(family, dtype, platform, seed, kind, mode, shape):
    axis = -1 if family == "row" else -2
    if mode != "tensor":
        shape = (16, 64)
    a = data(seed, shape, dtype, kind)
    kernel = {"tensor": f"t_{family}_prod", "tree": f"p_{family}_prod", "seq": f"p_{family}_prod_seq"}[mode]
    out = check(getattr(K, kernel), [a, out_like(shape, family, dtype)], platform)
    if mode == "tensor":
        same_up_to_nan_payload(out, prod_oracle(a, axis, tree=False), "prod vs numpy")
    else:
        want = prod_oracle(a[:13, :37], axis, tree=(mode == "tree" and family == "row"))
        got = out[:13] if family == "row" else out[:, :37]
        same_up_to_nan_payload(got, want, f"{mode} prod vs numpy")
        # the stored result covers only the valid region: the rest keeps its initial value
        rest = out[13:] if family == "row" else out[:, 37:]
        assert torch.all(rest == 7)


@SETTINGS
@given(family=st.sampled_from(("row", "col")), kind=st.sampled_from(("max", "min")),
       dtype=st.sampled_from(DTYPES), platform=st.sampled_from(H.PLATFORMS), seed=st.integers(0, 2 ** 30),
       data_kind=st.sampled_from(("normal", "special", "ties")), tensor=st.booleans(),
       shape=st.tuples(st.integers(1, 16), st.integers(1, 64)))
def test_arg(family, kind, dtype, platform, seed, data_kind, tensor, shape):
    axis = -1 if family == "row" else -2
    if not tensor:
        shape = (16, 64)
    a = data(seed, shape, dtype, data_kind)
    kernel = getattr(K, f"{'t' if tensor else 'p'}_{family}_arg{kind}")
    out = check(kernel, [a, out_like(shape, family, torch.int32)], platform)
    if tensor:
        assert torch.equal(out, arg_oracle(a, axis, kind))
    else:
        want = arg_oracle(a[:13, :37], axis, kind)
        got = out[:13] if family == "row" else out[:, :37]
        assert torch.equal(got, want)
        rest = out[13:] if family == "row" else out[:, 37:]
        assert torch.all(rest == 7)


def test_arg_tie_and_nan_rules():
    a = torch.tensor([[3.0, 5.0, 5.0, 1.0], [0.0, -0.0, -1.0, -1.0],
                      [1.0, float("nan"), 9.0, float("nan")], [-0.0, 0.0, 2.0, -3.0]])
    o = torch.zeros(4, 1, dtype=torch.int32)
    assert H.run_sim(K.t_row_argmax, [a, o], "a2a3sim")[-1].flatten().tolist() == [1, 0, 1, 2]
    assert H.run_sim(K.t_row_argmin, [a, o], "a5sim")[-1].flatten().tolist() == [3, 2, 1, 3]
    oc = torch.zeros(1, 4, dtype=torch.int32)
    assert H.run_sim(K.t_col_argmax, [a, oc], "a2a3sim")[-1].flatten().tolist() == [0, 2, 2, 2]


def test_prod_ignores_padding():
    """A zero in the padding must not zero the product (only the valid extent is reduced)."""
    a = torch.full((16, 64), 1.5)
    out = H.run_sim(K.p_row_prod, [a, torch.zeros(16, 1)], "a2a3sim")[-1]
    assert torch.all(out[:13] == torch.tensor(1.5).pow(37).float())


def _msg(kernel, args):
    with pytest.raises(InvalidOperationError) as ei:
        H.run_sim(kernel, args, "a2a3sim")
    return str(ei.value)


def test_dispatched_tile_forms_need_tmp():
    a, o = torch.zeros(16, 64), torch.zeros(16, 1, dtype=torch.int32)
    assert "require tmp_tile" in _msg(K.row_argmax_no_tmp, [a, o])
    assert "tmp_tile" in _msg(K.row_prod_no_tmp, [a, torch.zeros(16, 1)])
    msg = _msg(K.row_argmax_bad_tmp, [a, o])
    assert "exactly the input's shape and dtype" in msg and filename(K.row_argmax_bad_tmp) in msg


def test_unsupported_dtype_is_refused():
    a = torch.zeros(4, 8, dtype=torch.int8)
    assert "needs a float, INT32 or INT16 operand, got INT8" in _msg(K.t_row_argmax, [a, torch.zeros(4, 1, dtype=torch.int32)])


@pytest.mark.parametrize("kernel", ("p_row_prod", "p_col_prod_seq", "t_row_argmin", "p_col_argmax"))
def test_printed_programs_parse_back(kernel):
    from catalog_harness import assert_roundtrips

    shape = (16, 1) if "row" in kernel else (1, 64)
    dt = torch.int32 if "arg" in kernel else torch.float32
    assert_roundtrips(getattr(K, kernel), [torch.zeros(16, 64), torch.zeros(shape, dtype=dt)])
