"""N-D ``transpose`` (any two axes of a rank >= 2 operand, as the reference's type rule) and N-D
``tile.transpose_view`` (per-page transpose of the last two axes): simulator == reference bit for
bit on both platforms and == torch's ``transpose`` on special values (NaN payloads, -0, inf,
subnormals), for every byte width; the flattened form round-trips; bad axes are located errors."""
from __future__ import annotations

import pytest
import torch

import kernels_transpose_nd as K
import ops_harness as H
from pypto.errors import PyptoError

COVERED_OPS: set = set()      # tile/tensor.transpose, tile.transpose_view: covered in test_layout / test_views

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.int32)


def _data(shape, dtype, seed=0):
    if dtype.is_floating_point:
        a = H.make_data(seed, shape, dtype, "special")
        return a
    g = torch.Generator().manual_seed(seed)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=g, dtype=dtype)


def both(kernel, args, n_out=1):
    ref = H.run_ref(kernel, args)
    for platform in H.PLATFORMS:
        sim = H.run_sim(kernel, args, platform)
        for i in range(1, n_out + 1):
            H.assert_same_bits(sim[-i], ref[-i], f"{kernel.__name__} on {platform}")
    return ref


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_swap_trailing_axes_3d(dtype):
    a = _data((4, 24, 8), dtype)
    out = both(K.t3_swap12, [a, torch.zeros(4, 8, 24, dtype=dtype)])[-1]
    H.assert_same_bits(out, a.transpose(1, 2).contiguous(), "== torch transpose(1, 2)")


def test_swap_batch_axes_3d_and_4d():
    a = _data((4, 6, 8), torch.float32, 1)
    H.assert_same_bits(both(K.t3_swap01, [a, torch.zeros(6, 4, 8)])[-1], a.transpose(0, 1).contiguous())
    b = _data((2, 3, 4, 8), torch.bfloat16, 2)
    H.assert_same_bits(both(K.t4_swap_neg, [b, torch.zeros(4, 3, 2, 8, dtype=torch.bfloat16)])[-1],
                       b.transpose(0, 2).contiguous())


def test_deinterleave_via_3d_transpose():
    x = torch.arange(8 * 32, dtype=torch.float32).reshape(8, 32)
    out = both(K.deinterleave, [x, torch.zeros(8, 16), torch.zeros(8, 16)], n_out=2)
    H.assert_same_bits(out[-2], x[:, 0::2].contiguous(), "even columns")
    H.assert_same_bits(out[-1], x[:, 1::2].contiguous(), "odd columns")


@pytest.mark.parametrize("dtype", (torch.float32, torch.float16), ids=str)
def test_transpose_view_3d_pages(dtype):
    a = _data((3, 16, 8), dtype, 3)
    H.assert_same_bits(both(K.view3, [a, torch.zeros(3, 8, 16, dtype=dtype)])[-1], a.transpose(-2, -1).contiguous())


def test_tensor_transpose_3d():
    a = _data((2, 4, 8), torch.float32, 4)
    H.assert_same_bits(both(K.tensor_t3, [a, torch.zeros(8, 4, 2)])[-1], a.transpose(0, 2).contiguous())


def test_bad_axes_are_located_errors():
    with pytest.raises(PyptoError, match=r"axes must be ints in -3\.\.2 for a rank-3 operand, got 3") as e:
        H.run_sim(K.bad_axes, [torch.zeros(4, 6, 8), torch.zeros(4, 6, 8)], "a5sim")
    assert "kernels_transpose_nd.py" in str(e.value)
    with pytest.raises(PyptoError, match="axes must differ, got 1 and -2"):
        H.run_sim(K.same_axes, [torch.zeros(4, 6, 8), torch.zeros(4, 6, 8)], "a5sim")


@pytest.mark.parametrize("kernel,args", [
    ("t3_swap12", [torch.zeros(4, 24, 8), torch.zeros(4, 8, 24)]),
    ("view3", [torch.zeros(3, 16, 8), torch.zeros(3, 8, 16)]),
])
def test_printed_programs_parse_back(kernel, args):
    from catalog_harness import assert_roundtrips

    assert_roundtrips(getattr(K, kernel), args)


def test_orchestration_transpose_is_a_view():
    # column h of x through row h of the transposed view (the reference's metadata-only swap)
    x = _data((16, 8), torch.float32, 5)
    H.assert_same_bits(both(K.orch_transpose_cols, [x, torch.zeros(16, 4)])[-1], x[:, :4].contiguous())
