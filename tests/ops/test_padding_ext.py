"""fillpad_expand (tile and tensor) and fillpad_inplace: the valid region copied bit for bit, the rest
zero / max / min (floats 0, +inf, -inf; ints 0, iinfo.max, iinfo.min); simulator == reference bit for
bit on both platforms and == a Python oracle on special values; the shape rule's refusals. (The
reference's fillpad-variant cases, once a module of their own, are the ``t_expand_min`` and
``inplace_zero_result`` cases here; the rest of that module repeated these ones.)"""
from __future__ import annotations

import pytest
import torch

import kernels_padding_ext as K
import ops_harness as H
from pypto.errors import InvalidOperationError

COVERED_OPS = {"tile.fillpad_expand", "tensor.fillpad_expand", "tile.fillpad_inplace"}
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int16)


def _fill(dtype, pad):
    if pad == "zero":
        return 0
    if dtype.is_floating_point:
        return float("inf") if pad == "max" else float("-inf")
    return torch.iinfo(dtype).max if pad == "max" else torch.iinfo(dtype).min


def _data(seed, shape, dtype):
    if dtype.is_floating_point:
        return H.make_data(seed, shape, dtype, "special")
    return torch.randint(-30000, 30000, shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _both(kernel, args):
    ref = H.run_ref(kernel, args)[-1]
    for platform in H.PLATFORMS:
        H.assert_same_bits(H.run_sim(kernel, args, platform)[-1], ref, f"{kernel.__name__} on {platform}")
    return ref


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kernel,pad", [(K.expand_zero, "zero"), (K.expand_max, "max"), (K.expand_min_sugar, "min")])
def test_fillpad_expand(kernel, pad, dtype):
    a = _data(5, (16, 32), dtype)
    out = _both(kernel, [a, _data(6, (24, 64), dtype)])
    want = torch.full((24, 64), _fill(dtype, pad), dtype=dtype)
    want[:11, :23] = a[:11, :23]
    H.assert_same_bits(out, want, "fillpad_expand vs oracle")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kernel,pad", [(K.t_expand, "max"), (K.t_expand_min, "min")])
def test_tensor_fillpad_expand(kernel, pad, dtype):
    a = _data(7, (16, 32), dtype)
    out = _both(kernel, [a, torch.zeros(24, 64, dtype=dtype)])
    want = torch.full((24, 64), _fill(dtype, pad), dtype=dtype)
    want[:16, :32] = a
    H.assert_same_bits(out, want, "tensor.fillpad_expand vs oracle")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kernel,pad", [(K.inplace_min, "min"), (K.inplace_zero_result, "zero")])
def test_fillpad_inplace(kernel, pad, dtype):
    """Stored as the rebound tile (inplace_min) or as the op's result (inplace_zero_result): the
    whole physical tile either way, the pad outside the valid region."""
    a = _data(8, (16, 32), dtype)
    init = _data(9, (16, 32), dtype)
    out = _both(kernel, [a, init])
    want = torch.full((16, 32), _fill(dtype, pad), dtype=dtype)
    want[:9, :30] = a[:9, :30]
    H.assert_same_bits(out, want, "fillpad_inplace vs oracle")


def test_fillpad_inplace_feeds_a_reduction():
    a = torch.randn(16, 32)
    a[:, 5:] = -1e30                            # padding that a missing fill would let win
    out = _both(K.inplace_max_then_row_min, [a, torch.zeros(16, 1)])
    H.assert_same_bits(out, a[:, :5].min(dim=1, keepdim=True).values, "row_min after fillpad_inplace")


def test_fillpad_expand_refuses_to_shrink():
    with pytest.raises(InvalidOperationError, match=r"destination dimension 0 \(8\) must be >= the source dimension "
                                                    r"\(16\)"):
        H.run_sim(K.expand_shrinks, [torch.zeros(16, 32), torch.zeros(8, 64)], "a2a3sim")


@pytest.mark.parametrize("kernel", ("expand_zero", "t_expand", "inplace_min"))
def test_printed_programs_parse_back(kernel):
    from catalog_harness import assert_roundtrips

    shape = {"expand_zero": (24, 64), "t_expand": (24, 64), "inplace_min": (16, 32)}[kernel]
    assert_roundtrips(getattr(K, kernel), [torch.zeros(16, 32), torch.zeros(*shape)])
