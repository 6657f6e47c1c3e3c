"""reinterpret_view, write, set_validshape, transpose_view, tensor.view, tensor.dim: simulator ==
reference bit for bit on both platforms, and == a torch oracle (bit views, element writes) on special
values (NaN payloads, -0, inf, subnormals); the type rules' refusals."""
from __future__ import annotations

import pytest
import torch

import kernels_views as K
import ops_harness as H
from pypto.errors import InvalidOperationError, PyptoError

COVERED_OPS = {"tile.reinterpret_view", "tensor.reinterpret_view", "tile.write", "tensor.write",
               "tile.set_validshape", "tile.transpose_view", "tensor.view", "tensor.dim"}


def both(kernel, args):
    ref = H.run_ref(kernel, args)
    for platform in H.PLATFORMS:
        sim = H.run_sim(kernel, args, platform)
        H.assert_same_bits(sim[-1], ref[-1], f"{kernel.__name__} on {platform}")
    return ref[-1]


def _fp32_payloads(shape):
    a = H.make_data(3, shape, torch.float32, "special")
    a.view(torch.int32).view(-1)[:4] = torch.tensor([0x7FC00001, 0x7F800001, -1, -0x80000000], dtype=torch.int32)
    return a


def test_reinterpret_narrower_and_same_width():
    a = _fp32_payloads((8, 16))
    H.assert_same_bits(both(K.rv_i16, [a, torch.zeros(8, 32, dtype=torch.int16)]), a.view(torch.int16))
    H.assert_same_bits(both(K.rv_same, [a, torch.zeros(8, 16, dtype=torch.int32)]), a.view(torch.int32))
    H.assert_same_bits(both(K.rv_tensor, [a, torch.zeros(8, 32, dtype=torch.int16)]), a.view(torch.int16))


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16, torch.int16), ids=str)
def test_reinterpret_wider(dtype):
    a = H.make_data(4, (8, 32), dtype, "special") if dtype.is_floating_point else \
        torch.randint(-30000, 30000, (8, 32), dtype=torch.int16)
    H.assert_same_bits(both(K.rv_wider, [a, torch.zeros(8, 16)]), a.view(torch.float32))


def test_reinterpret_explicit_shape_and_partial():
    a = _fp32_payloads((8, 16))
    H.assert_same_bits(both(K.rv_shape, [a, torch.zeros(16, 32, dtype=torch.uint8)]),
                       a.view(torch.uint8).reshape(16, 32))
    init = torch.full((8, 32), 7.0, dtype=torch.bfloat16)
    out = both(K.rv_partial, [a, init])
    want = init.clone()
    want[:5, :12] = a.view(torch.bfloat16)[:5, :12]      # valid [5, 6] FP32 -> [5, 12] BF16
    H.assert_same_bits(out, want)


def test_reinterpret_refusals():
    with pytest.raises(InvalidOperationError, match="source has 512 bytes, target shape"):
        H.run_sim(K.rv_bad_shape, [torch.zeros(8, 16), torch.zeros(8, 16, dtype=torch.int16)], "a2a3sim")
    with pytest.raises(InvalidOperationError, match="source and target dtypes are both INT32"):
        H.run_sim(K.rv_same, [torch.zeros(8, 16, dtype=torch.int32), torch.zeros(8, 16, dtype=torch.int32)], "a2a3sim")
    with pytest.raises(InvalidOperationError, match="not divisible by 2"):
        H.run_sim(K.rv_wider_odd, [torch.zeros(8, 32, dtype=torch.int16), torch.zeros(8, 16)], "a2a3sim")


def test_write_tile():
    a = _fp32_payloads((8, 16))
    out = both(K.write_tile, [a, -0.0, torch.zeros(8, 16)])
    want = a.clone()
    want[3, 5] = -0.0
    want[7, 15] = 2.5
    H.assert_same_bits(out, want)


def test_write_tensor_scalar_store():
    vals = torch.arange(8, dtype=torch.int32) + 100
    table = torch.full((4, 8), -1, dtype=torch.int32)
    out = both(K.write_tensor, [vals, table.clone()])
    want = table.clone()
    for k in range(2):
        for t in range(4):
            want[t, k] = vals[k * 4 + t]
    H.assert_same_bits(out, want)
    # special values through a scalar read and a scalar store (a subnormal, -0, -inf). Not NaN
    # payloads: a scalar is a Python float in both executors, which quiets them to 0x7E00
    for bits16 in (0x0001, -0x8000, -0x0400):
        v16 = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float16)
        v16.view(torch.int16)[3] = bits16
        t16 = torch.zeros(16, dtype=torch.float16)
        out = both(K.write_flat, [v16, t16.clone()])
        want = t16.clone()
        want.view(torch.int16)[5] = bits16
        H.assert_same_bits(out, want)


def test_write_out_of_range_is_a_compile_error():
    with pytest.raises(InvalidOperationError, match=r"indices \[8, 0\] out of bounds for shape \[8, 16\]"):
        H.run_sim(K.write_oob, [torch.zeros(8, 16), torch.zeros(8, 16)], "a5sim")


def test_set_validshape():
    a = _fp32_payloads((8, 16))
    out = both(K.set_valid, [a, torch.zeros(8, 16)])
    want = torch.full((8, 16), float("-inf"))
    want[:3, :10] = a[:3, :10]
    H.assert_same_bits(out, want)
    init = torch.full((8, 16), 5.0)
    out = both(K.set_valid_store, [a, init.clone()])
    want = init.clone()
    want[:2, :7] = a[:2, :7]
    H.assert_same_bits(out, want)
    with pytest.raises(InvalidOperationError, match=r"valid_rows 9 is outside \[0, 8\]"):
        H.run_sim(K.set_valid_bad, [a, torch.zeros(8, 16)], "a5sim")


def test_transpose_view():
    a = _fp32_payloads((8, 16))
    init = torch.full((16, 8), 3.0)
    out = both(K.transpose_view, [a, init.clone()])
    want = init.clone()
    want[:12, :] = a.t()[:12, :]                           # valid [8, 12] -> [12, 8]
    H.assert_same_bits(out, want)


def test_tensor_view_and_dim():
    a = _fp32_payloads((8, 16))
    H.assert_same_bits(both(K.tensor_view, [a, torch.zeros(4, 32)]), a.reshape(4, 32))
    b = torch.randn(8, 16)
    H.assert_same_bits(both(K.tensor_dim, [b, torch.zeros(8, 16)]), b * 16.0 + 8.0)


@pytest.mark.parametrize("kernel,args", [
    ("rv_i16", [torch.zeros(8, 16), torch.zeros(8, 32, dtype=torch.int16)]),
    ("write_tile", [torch.zeros(8, 16), 1.0, torch.zeros(8, 16)]),
    ("set_valid", [torch.zeros(8, 16), torch.zeros(8, 16)]),
    ("transpose_view", [torch.zeros(8, 16), torch.zeros(16, 8)]),
])
def test_printed_programs_parse_back(kernel, args):
    from catalog_harness import assert_roundtrips

    assert_roundtrips(getattr(K, kernel), args)


COVERED_OPS |= {"tensor.expand_clone"}


@pytest.mark.parametrize("shape", [(2, 1, 32), (1, 4, 32), (2, 4, 1), (2, 4, 32)])
def test_expand_clone(shape):
    a = _fp32_payloads(shape)
    out = both(K.expand_clone_d1, [a, torch.zeros(2, 4, 32)])
    H.assert_same_bits(out, a.expand(2, 4, 32).contiguous())


def test_expand_clone_refusals():
    with pytest.raises(InvalidOperationError, match="clones along at most one dimension, got 2"):
        H.run_sim(K.expand_clone_bad, [torch.zeros(1, 1, 32), torch.zeros(2, 4, 32)], "a2a3sim")
    with pytest.raises(InvalidOperationError, match="only a dimension of extent 1 can be cloned"):
        H.run_sim(K.expand_clone_bad, [torch.zeros(2, 3, 32), torch.zeros(2, 4, 32)], "a2a3sim")


@pytest.mark.parametrize("s,want", [(-7, 3), (10, 10), (99, 40)])
def test_level_spellings(s, want):
    a = torch.randn(8, 16)
    H.assert_same_bits(both(K.level_names, [a, s, torch.zeros(8, 16)]), a + float(want))
