"""Memory ops: ``tile.load`` with ``valid_shape`` zero-fills the padding in both executors,
``tile.store`` writes only the valid region, constant out-of-bounds offsets are rejected at parse
time, and ``pl.create_tile`` can be used. Both platforms, simulator vs reference bit for bit."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ops_harness as H
import ops_kernels as K
from pypto.errors import InvalidOperationError
import pypto.ops.support as support

COVERED_OPS = {"tile.load", "tile.store", "tile.create", "tile.move", "tensor.create", "tensor.assemble"}

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32)


def _pad_args(seed, dtype):
    a = H.make_data(seed, (16, 64), dtype, "normal") + 5  # no zeros in the dirty tile
    a = torch.where(a == 0, torch.ones_like(a), a)
    b = H.make_data(seed + 1, (16, 64), dtype, "normal")
    z = torch.zeros(16, 64, dtype=dtype)
    return [a, b, z, torch.zeros(16, 64, dtype=dtype), H.make_data(seed + 2, (16, 64), dtype, "normal")]


@settings(max_examples=20, deadline=None)
@given(dtype=st.sampled_from(DTYPES), platform=st.sampled_from(H.PLATFORMS), seed=st.integers(0, 2 ** 30))
def test_load_valid_shape_zero_fills_padding(dtype, platform, seed):
    args = _pad_args(seed, dtype)
    sim, ref = H.run_sim(K.m_pad, args, platform), H.run_ref(K.m_pad, args)
    H.assert_same_bits(sim[4], ref[4], "m_pad")
    out, b = ref[4], args[1]
    H.assert_same_bits(out[:13, :37], (b + 0)[:13, :37], "valid region")
    pad = torch.ones(16, 64, dtype=torch.bool)
    pad[:13, :37] = False
    assert torch.equal(H.bits(out[pad]), torch.zeros_like(H.bits(out[pad]))), "padding is not +0"


def test_padding_check_is_sensitive(monkeypatch):
    """Without the zero-fill the simulator's padding would hold the stale bytes of the dead tile,
    so the test above can fail."""
    def load_without_zero_fill(dst, t, offsets, valid=None):
        valid = list(dst.shape) if valid is None else list(valid)
        support.region(dst, [0] * dst.dim(), valid).copy_(support.region(t, offsets, valid))

    monkeypatch.setattr(support, "load_into", load_without_zero_fill)
    args = _pad_args(0, torch.float32)
    out = H.run_sim(K.m_pad, args, "a5sim")[4]
    assert bool((out[13:, :] != 0).any())


@settings(max_examples=20, deadline=None)
@given(dtype=st.sampled_from(DTYPES), platform=st.sampled_from(H.PLATFORMS), seed=st.integers(0, 2 ** 30))
def test_store_writes_only_valid_region(dtype, platform, seed):
    a = H.make_data(seed, (16, 64), dtype, "normal")
    init = H.make_data(seed + 1, (32, 96), dtype, "normal")
    sim, ref = H.run_sim(K.m_store_offset, [a, init], platform), H.run_ref(K.m_store_offset, [a, init])
    H.assert_same_bits(sim[1], ref[1], "m_store_offset")
    expected = init.clone()
    expected[8:21, 16:53] = a[:13, :37]
    H.assert_same_bits(ref[1], expected, "store region")


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_load_at_offset(platform, dtype):
    a = H.make_data(3, (32, 96), dtype, "normal")
    out = torch.zeros(16, 64, dtype=dtype)
    sim, ref = H.run_sim(K.m_load_offset, [a, out], platform), H.run_ref(K.m_load_offset, [a, out])
    H.assert_same_bits(sim[1], ref[1], "m_load_offset")
    H.assert_same_bits(ref[1], a[5:21, 7:71], "loaded region")


@pytest.mark.parametrize("kernel, op, offsets", [(K.m_load_oob, "tile.load", "[8, 3]"),
                                                 (K.m_store_oob, "tile.store", "[4, 40]")])
def test_out_of_bounds_offsets_rejected_at_parse_time(kernel, op, offsets):
    a, out = torch.zeros(16, 64), torch.zeros(16, 64)
    with pytest.raises(InvalidOperationError) as info:
        kernel.lower(a, out)
    msg = str(info.value)
    assert op in msg and "offsets" in msg and offsets in msg, msg


def test_in_bounds_offsets_accepted_on_larger_tensor():
    """The same offsets are fine when the tensor is large enough (the rejection is about bounds)."""
    K.m_load_oob.lower(torch.zeros(24, 67), torch.zeros(16, 64))
    K.m_store_oob.lower(torch.zeros(16, 64), torch.zeros(20, 104))


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_create_tile_and_use(platform):
    """``pl.create_tile`` gives a [16, 64] FP32 tile usable as an operand. Its contents are
    unspecified on the device; the kernel multiplies it by 0, so with the simulator's fresh
    (finite) core memory both executors give exactly ``a``."""
    a = H.make_data(5, (16, 64), torch.float32, "normal")
    out = torch.zeros(16, 64)
    sim, ref = H.run_sim(K.m_create_tile, [a, out], platform), H.run_ref(K.m_create_tile, [a, out])
    H.assert_same_bits(sim[1], ref[1], "m_create_tile")
    H.assert_same_bits(ref[1], a, "create_tile * 0 + a")
    src = H.ref_source(K.m_create_tile, [a, out])
    assert "torch.zeros([16, 64], dtype=torch.float32)" in src


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_move_mat_to_vec(platform, dtype):
    """``tile.move`` copies a (partial) tile between memories; the valid shape travels with it."""
    a = H.make_data(7, (16, 64), dtype, "normal")
    init = H.make_data(8, (16, 64), dtype, "normal")
    sim, ref = H.run_sim(K.m_move, [a, init], platform), H.run_ref(K.m_move, [a, init])
    H.assert_same_bits(sim[1], ref[1], "m_move")
    expected = init.clone()
    expected[:13, :37] = a[:13, :37]
    H.assert_same_bits(ref[1], expected, "moved tile")


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_create_tensor_in_orchestration(platform):
    """``pl.create_tensor`` allocates an intermediate global tensor between two device scopes."""
    a = H.make_data(9, (16, 64), torch.float32, "wide")
    out = torch.zeros(16, 64)
    sim, ref = H.run_sim(K.m_create_tensor, [a, out], platform), H.run_ref(K.m_create_tensor, [a, out])
    H.assert_same_bits(sim[1], ref[1], "m_create_tensor")
    H.assert_same_bits(ref[1], (a + a) * 3.0, "(a + a) * 3")
