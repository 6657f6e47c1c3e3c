"""mscatter, gatherb, gather_row, paged_gather, gather_compare: simulator == reference bit for bit
(both platforms, every dtype they take, special float values), both equal a Python-loop oracle;
duplicates, boundary indices, out-of-range indices (a run-time error where the device is undefined).
"""
from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernels_index_ext as K
import ops_harness as H
from pypto.errors import InvalidOperationError, PyptoError

COVERED_OPS = {"tile.mscatter"}

SETTINGS = settings(max_examples=12, deadline=None, report_multiple_bugs=False,
                    suppress_health_check=[HealthCheck.too_slow])
MSCATTER_DTYPES = (torch.float32, torch.float16, torch.int32, torch.int16)


def data(seed, shape, dtype):
    if dtype.is_floating_point:
        return H.make_data(seed, shape, dtype, "special")
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-1000, 1000, shape, generator=g).to(dtype)


def both(kernel, args, platform, out_index=-1):
    sim, ref = H.run_sim(kernel, args, platform), H.run_ref(kernel, args)
    H.assert_same_bits(sim[out_index], ref[out_index], f"{kernel.__name__} on {platform}")
    return ref[out_index]


# ------------------------------------------------------------------ mscatter
@SETTINGS
@given(dtype=st.sampled_from(MSCATTER_DTYPES), platform=st.sampled_from(H.PLATFORMS),
       seed=st.integers(0, 2 ** 30), n=st.sampled_from((256, 300, 1024)), dup=st.booleans())
def test_mscatter(dtype, platform, seed, n, dup):
    g = torch.Generator().manual_seed(seed)
    src = data(seed, (8, 32), dtype)
    hi = 6 if dup else n
    idx = torch.randint(0, hi, (8, 32), generator=g, dtype=torch.int32)
    idx[0, 0], idx[7, 31] = 0, n - 1           # both boundaries
    base = data(seed + 1, (n,), dtype)
    out = both(K.mscatter, [src, idx, base.clone()], platform)
    want = base.clone()
    for i in range(8):
        for j in range(32):                    # row-major: the last duplicate wins
            want[int(idx[i, j])] = src[i, j]
    H.assert_same_bits(out, want, "mscatter vs oracle")


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_mscatter_valid_region_only(platform):
    src = torch.randn(8, 32)
    idx = torch.arange(256, dtype=torch.int32).reshape(8, 32)
    idx[5:, :] = -1                            # outside the valid [5, 17]: never used
    idx[:, 17:] = 99999
    base = torch.full((16, 16), 7.0)           # a rank-2 output: indexed flat
    out = both(K.mscatter_partial, [src, idx, base.clone()], platform)
    want = base.clone().reshape(-1)
    for i in range(5):
        for j in range(17):
            want[int(idx[i, j])] = src[i, j]
    H.assert_same_bits(out, want.reshape(16, 16), "mscatter partial vs oracle")


def test_mscatter_out_of_range():
    src = torch.randn(8, 32)
    idx = torch.zeros(8, 32, dtype=torch.int32)
    idx[3, 4] = 256
    with pytest.raises(PyptoError, match=r"mscatter: index 256 at \[3, 4\] is out of range \[0, 256\)"):
        H.run_sim(K.mscatter, [src, idx, torch.zeros(256)], "a5sim")
    idx[3, 4] = -1
    with pytest.raises(PyptoError, match="index 4294967295"):
        H.run_ref(K.mscatter, [src, idx, torch.zeros(256)])


def test_mscatter_type_errors():
    with pytest.raises(InvalidOperationError, match="src dtype must be FP16, FP32, INT16 or INT32"):
        H.run_sim(K.mscatter, [torch.zeros(8, 32, dtype=torch.bfloat16), torch.zeros(8, 32, dtype=torch.int32),
                               torch.zeros(256, dtype=torch.bfloat16)], "a5sim")
    with pytest.raises(InvalidOperationError, match="output_tensor dtype FP16 differs from src dtype FP32"):
        H.run_sim(K.mscatter, [torch.zeros(8, 32), torch.zeros(8, 32, dtype=torch.int32),
                               torch.zeros(256, dtype=torch.float16)], "a5sim")
    with pytest.raises(InvalidOperationError, match="idx must be INT32"):
        H.run_sim(K.mscatter, [torch.zeros(8, 32), torch.zeros(8, 32, dtype=torch.int16), torch.zeros(256)], "a5sim")


def test_mscatter_roundtrip():
    from catalog_harness import assert_roundtrips

    assert_roundtrips(K.mscatter, [torch.zeros(8, 32), torch.zeros(8, 32, dtype=torch.int32), torch.zeros(256)])


# ------------------------------------------------------------------ gather_compare
COVERED_OPS |= {"tile.gather_compare"}
_OPS = {"eq": lambda a, k: a == k, "ne": lambda a, k: a != k, "lt": lambda a, k: a < k,
        "le": lambda a, k: a <= k, "gt": lambda a, k: a > k, "ge": lambda a, k: a >= k}


def gc_oracle(src, k, mode, rows, cols, offset, out_cols):
    dst = torch.zeros(src.shape[0], out_cols, dtype=torch.int32)
    cnt = torch.zeros(1, src.shape[0], dtype=torch.int64)
    for r in range(rows):
        js = [j for j in range(cols) if _OPS[mode](src[r, j].item(), k)]
        dst[r, :len(js)] = torch.tensor(js, dtype=torch.int32) + offset
        cnt[0, r] = len(js)
    return dst, cnt


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_gather_compare_tile(platform):
    g = torch.Generator().manual_seed(3)
    src = torch.randint(0, 5, (16, 64), generator=g, dtype=torch.int32)
    src[:, 50:] = 7                                    # fewer than 16 matches of 2 per valid row
    src[0, :] = 2                                      # row 0: columns 0..59 match -> too many: fix
    src[0, 10:] = 9
    kv = torch.tensor([2], dtype=torch.int32)
    args = [src, kv, torch.zeros(16, 16, dtype=torch.int32), torch.zeros(1, 16, dtype=torch.int32)]
    sim, ref = H.run_sim(K.gc_tile_eq, args, platform), H.run_ref(K.gc_tile_eq, args)
    for s, r in zip(sim[-2:], ref[-2:]):
        H.assert_same_bits(s, r)
    dst, cnt = gc_oracle(src, 2, "eq", 12, 60, 3, 16)
    H.assert_same_bits(ref[-2], dst, "dst vs oracle")
    H.assert_same_bits(ref[-1], cnt.to(torch.int32), "cdst vs oracle")


@pytest.mark.parametrize("mode", list(_OPS))
def test_gather_compare_tensor_fp16_special(mode):
    """FP16 against the threshold 0.0 with -0, NaN, +-inf and subnormals in the data; UINT32 counts."""
    src = H.make_data(11, (8, 64), torch.float16, "special")
    kv = torch.tensor([0.0], dtype=torch.float16)
    args = [src, kv, list(_OPS).index(mode), torch.zeros(8, 64, dtype=torch.int32), torch.zeros(1, 8, dtype=torch.uint32)]
    ref = H.run_ref(K.gc_tensor, args)
    for platform in H.PLATFORMS:
        sim = H.run_sim(K.gc_tensor, args, platform)
        for s, r in zip(sim[-2:], ref[-2:]):
            H.assert_same_bits(s, r)
    dst, cnt = gc_oracle(src, 0.0, mode, 8, 64, 0, 64)
    H.assert_same_bits(ref[-2], dst, "dst vs oracle")
    assert torch.equal(ref[-1].to(torch.int64), cnt)


def test_gather_compare_overflow_is_a_run_time_error():
    src = torch.zeros(4, 32, dtype=torch.int32)
    src[2, :5] = 1
    with pytest.raises(PyptoError, match="gather_compare: row 0 has 32 matches but out_cols is 4"):
        H.run_sim(K.gc_overflow, [src, torch.tensor([0], dtype=torch.int32), torch.zeros(4, 4, dtype=torch.int32),
                                  torch.zeros(1, 4, dtype=torch.int32)], "a2a3sim")


def test_gather_compare_roundtrip():
    from catalog_harness import assert_roundtrips

    assert_roundtrips(K.gc_tile_eq, [torch.zeros(16, 64, dtype=torch.int32), torch.zeros(1, dtype=torch.int32),
                                     torch.zeros(16, 16, dtype=torch.int32), torch.zeros(1, 16, dtype=torch.int32)])
