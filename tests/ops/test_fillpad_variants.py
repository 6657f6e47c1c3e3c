"""The reference's fillpad variants: fillpad_inplace (fillpad's values; the buffer is the planner's
choice) and fillpad_expand (the source's valid region at the top left of a larger tile, the pad
value everywhere else). Simulator == reference bit for bit, and the reference == an independent
construction (a copy plus a constant: exact)."""
from __future__ import annotations

import pytest
import torch

import kernels_fillpad_variants as K
import ops_harness as H
from pypto.errors import InvalidOperationError

COVERED_OPS = {"tile.fillpad_inplace", "tile.fillpad_expand", "tensor.fillpad_expand"}
DTYPES = (torch.float32, torch.float16, torch.int32)


def _big(dtype, pad):
    if dtype.is_floating_point:
        return float("inf") if pad == "max" else float("-inf")
    return torch.iinfo(dtype).max if pad == "max" else torch.iinfo(dtype).min


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_expand_copies_the_valid_region_and_pads_the_rest(dtype):
    a = H.make_data(5, (16, 48), dtype, "int" if dtype == torch.int32 else "special")
    init = torch.zeros(32, 64, dtype=dtype)
    want = torch.full((32, 64), _big(dtype, "max"), dtype=dtype)
    want[:13, :37] = a[:13, :37]
    ref = H.run_ref(K.expand_valid_max, [a, init])[-1]
    H.assert_same_bits(ref, want, "reference")
    for platform in H.PLATFORMS:
        H.assert_same_bits(H.run_sim(K.expand_valid_max, [a, init], platform)[-1], ref, platform)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_tensor_expand(dtype):
    a = H.make_data(6, (16, 48), dtype, "int" if dtype == torch.int32 else "normal")
    want = torch.full((32, 64), _big(dtype, "min"), dtype=dtype)
    want[:16, :48] = a
    for platform in H.PLATFORMS:
        H.assert_same_bits(H.run_sim(K.expand_tensor_min, [a, torch.zeros(32, 64, dtype=dtype)], platform)[-1],
                           want, platform)


def test_inplace_has_fillpads_values():
    a = H.make_data(7, (16, 64), torch.float32, "special")
    want = torch.zeros(16, 64)
    want[:13, :37] = a[:13, :37]
    for platform in H.PLATFORMS:
        H.assert_same_bits(H.run_sim(K.inplace_zero, [a, torch.full((16, 64), 5.0)], platform)[-1], want, platform)


def test_expand_to_a_smaller_shape_is_refused():
    with pytest.raises(InvalidOperationError, match="must be >= the source dimension"):
        K.err_expand_smaller.lower(torch.zeros(16, 48), torch.zeros(8, 64))
