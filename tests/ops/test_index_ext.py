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


# ------------------------------------------------------------------ paged_gather, gather_row
COVERED_OPS |= {"tensor.paged_gather", "tile.paged_gather", "tensor.gather_row", "tile.gather_row",
                "tensor.create_l1"}


def _pool(rows, cols, dtype=torch.float16):
    """src[r, c] = r + c / 256: every element tells its row and column (FP16-exact for r < 256? no:
    FP32 pools keep it exact; FP16 pools use the row id only)."""
    if dtype == torch.float16:
        return torch.arange(rows, dtype=torch.float32).reshape(rows, 1).expand(rows, cols).to(dtype).contiguous()
    return (torch.arange(rows).reshape(rows, 1) * 1000 + torch.arange(cols)).to(dtype)


def paged_oracle(src, idx, bt, bs, size, col_off, m):
    out = torch.zeros(m, size, dtype=src.dtype)
    for i, li in enumerate(idx.reshape(-1).tolist()):
        out[i] = src[bt[li // bs] * bs + li % bs, col_off:col_off + size]
    return out


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_paged_gather_vec(platform):
    src = _pool(256, 128, torch.float32)
    bt = torch.tensor([15 - b for b in range(16)], dtype=torch.int32)
    idx = torch.tensor([0, 255, 16, 15, 17, 3, 3, 200, 1, 254, 100, 101, 0, 31, 32, 250], dtype=torch.int32)
    out = both(K.paged_vec, [src, idx, bt, torch.zeros(16, 64)], platform)
    H.assert_same_bits(out, paged_oracle(src, idx, bt, 16, 64, 32, 16))
    bad = idx.clone()
    bad[5] = 256                                # block 16 of a 16-entry table
    with pytest.raises(PyptoError, match="logical index 256 .entry 5. is outside the block table"):
        H.run_sim(K.paged_vec, [src, bad, bt, torch.zeros(16, 64)], platform)
    bt2 = bt.clone()
    bt2[3] = 40                                 # a physical block past the pool
    with pytest.raises(PyptoError, match="maps to row 640, outside src's 256 rows"):
        H.run_ref(K.paged_vec, [src, torch.full((16,), 48, dtype=torch.int32), bt2, torch.zeros(16, 64)])


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_paged_gather_mat_feeds_a_matmul(platform):
    src = _pool(256, 128)
    bt = torch.tensor([(b * 5) % 16 for b in range(16)], dtype=torch.int32)
    idx = torch.tensor([(i * 7 + 3) % 256 for i in range(16)], dtype=torch.int32)
    out = both(K.paged_mat, [src, idx, bt, torch.eye(16, dtype=torch.float16), torch.zeros(16, 128)], platform)
    H.assert_same_bits(out, paged_oracle(src, idx, bt, 16, 128, 0, 16).float())


@pytest.mark.parametrize("r", [0, 1, 17, 32])
def test_gather_row_runtime_valid_rows(r):
    src = _pool(96, 128)
    args = [src, torch.tensor([r], dtype=torch.int32), torch.eye(32, dtype=torch.float16), torch.zeros(32, 128)]
    ref = H.run_ref(K.gather_row_l1, args)[-1]
    for platform in H.PLATFORMS:
        H.assert_same_bits(H.run_sim(K.gather_row_l1, args, platform)[-1], ref)
    want = src[64:96].clone()
    want[:r] = src[:r]
    H.assert_same_bits(ref, want.float())


def test_gather_row_tile_and_transpose():
    src = _pool(32, 80, torch.float32)
    out = both(K.gather_row_tile, [src, torch.zeros(8, 64)], "a5sim")
    want = torch.full((8, 64), -1.0)
    for r in range(6):
        want[r] = src[20 - r * 3, 8:72]
    H.assert_same_bits(out, want)
    s16 = _pool(16, 16)
    s16 = (s16 + torch.arange(16, dtype=torch.float16) / 32).to(torch.float16)
    out = both(K.gather_row_trans, [s16, torch.eye(16, dtype=torch.float16), torch.zeros(16, 8)], "a2a3sim")
    want = torch.stack([s16[c * 2, :16] for c in range(8)], dim=1).float()
    H.assert_same_bits(out, want)


def test_gather_row_window_outside_is_a_run_time_error():
    """The source row 20 - 3 r comes from a loop variable: checked when the row is read."""
    with pytest.raises(PyptoError, match=r"the source window at \[20, 8\] of extent \[1, 64\] leaves the \[16, 80\]"):
        H.run_sim(K.gather_row_tile, [torch.zeros(16, 80), torch.zeros(8, 64)], "a5sim")


@pytest.mark.parametrize("kernel", ("paged_mat", "gather_row_l1", "gather_row_tile"))
def test_paged_and_gather_row_roundtrip(kernel):
    from catalog_harness import assert_roundtrips

    z = torch.zeros
    args = {"paged_mat": [z(256, 128, dtype=torch.float16), z(16, dtype=torch.int32), z(16, dtype=torch.int32),
                          z(16, 16, dtype=torch.float16), z(16, 128)],
            "gather_row_l1": [z(96, 128, dtype=torch.float16), z(1, dtype=torch.int32), z(32, 32, dtype=torch.float16),
                              z(32, 128)],
            "gather_row_tile": [z(32, 80), z(8, 64)]}[kernel]
    assert_roundtrips(getattr(K, kernel), args)


# ------------------------------------------------------------------ gatherb
COVERED_OPS |= {"tile.gatherb"}


def gatherb_oracle(src, off, rows, dtype):
    sb = src.contiguous().view(torch.uint8).reshape(-1)
    out = torch.zeros(off.shape[0], off.shape[1] * 32, dtype=torch.uint8)
    for r in range(rows):
        for c in range(off.shape[1]):
            o = int(off[r, c])
            out[r, c * 32:(c + 1) * 32] = sb[o:o + 32]
    return out.view(dtype)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int16,
                                   torch.int8, torch.uint8), ids=str)
def test_gatherb(dtype):
    src = H.make_data(5, (16, 64), dtype, "special") if dtype.is_floating_point else \
        torch.randint(-100, 100, (16, 64)).to(dtype)
    nbytes = src.numel() * src.element_size()
    g = torch.Generator().manual_seed(1)
    off = torch.randint(0, nbytes - 32 + 1, (4, 8), generator=g, dtype=torch.int64)
    off[0, 0], off[0, 1], off[1, 2] = 0, nbytes - 32, 3      # both ends, and an unaligned offset
    off = off.to(torch.uint32)
    b = 32 // src.element_size()
    ref = H.run_ref(K.gatherb_same, [src, off, torch.zeros(4, 8 * b, dtype=dtype)])[-1]
    for platform in H.PLATFORMS:
        H.assert_same_bits(H.run_sim(K.gatherb_same, [src, off, torch.zeros(4, 8 * b, dtype=dtype)], platform)[-1],
                           ref)
    want = gatherb_oracle(src, off, 3, dtype)
    H.assert_same_bits(ref, want)
    out8 = both(K.gatherb_as_i8, [src, off, torch.zeros(4, 256, dtype=torch.int8)], "a5sim")
    H.assert_same_bits(out8, gatherb_oracle(src, off, 4, torch.int8))


def test_gatherb_block_past_the_end():
    src = torch.zeros(16, 64)
    off = torch.zeros(4, 8, dtype=torch.uint32)
    off[2, 3] = 4096 - 31
    with pytest.raises(PyptoError, match=r"gatherb: byte offset 4065 at \[2, 3\]: the 32-byte block leaves the "
                                         r"4096-byte source tile"):
        H.run_sim(K.gatherb_as_i8, [src, off, torch.zeros(4, 256, dtype=torch.int8)], "a2a3sim")


def test_paged_gather_fewer_indices_than_max():
    src = _pool(256, 64, torch.float32)
    bt = torch.arange(16, dtype=torch.int32)
    idx = torch.tensor([5, 250, 17, 0, 1, 2, 3, 99, 100, 255], dtype=torch.int32)
    init = torch.full((16, 64), 7.0)
    out = both(K.paged_short, [src, idx, bt, init.clone()], "a2a3sim")
    want = torch.zeros(16, 64)
    want[:10] = paged_oracle(src, idx, bt, 16, 64, 0, 10)
    H.assert_same_bits(out, want)                 # rows 10.. are stored as zeros, not left at 7
