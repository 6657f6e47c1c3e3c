"""FP16 sort32 / mrgsort and the sort32 tie order: simulator == reference bit for bit, and both equal
an oracle (Python sorts): FP16 structs are [value, 0, index low half, index high half]; descending,
NaN first; ties (+-0 included) by the index VALUE ascending within a sort32 block (the pto-isa CPU
model's rule), by list order in a merge."""
from __future__ import annotations

import math

import pytest
import torch

import kernels_sort16 as K
import ops_harness as H
from pypto.errors import InvalidOperationError

COVERED_OPS: set = set()   # tile.sort32 / tile.mrgsort are listed by test_sort; these are their FP16 forms
POOL = [-1.0, -0.0, 0.0, 2.0, 65504.0, float("inf"), float("-inf"), float("nan"), 6e-8]


def vals16(seed, n):
    g = torch.Generator().manual_seed(seed)
    return torch.tensor(POOL, dtype=torch.float16)[torch.randint(0, len(POOL), (n,), generator=g)]


def key(v: float, i: int):
    return ((0, 0.0) if math.isnan(v) else (1, -v)), i


def structs16(res):
    """(value bits, pad, index) of each FP16 struct of a row."""
    h = res.reshape(-1).view(torch.int16)
    idx = res.reshape(-1).view(torch.int16).reshape(-1, 4)[:, 2:].contiguous().view(torch.int32).reshape(-1)
    return h[0::4], h[1::4], idx


def both(kernel, args):
    ref = H.run_ref(kernel, args)[-1]
    for platform in H.PLATFORMS:
        H.assert_same_bits(H.run_sim(kernel, args, platform)[-1], ref, f"{kernel.__name__} on {platform}")
    return ref


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sort32_fp16_layout_and_ties_by_index_value(seed):
    src = vals16(seed, 4 * 64).reshape(4, 64)
    g = torch.Generator().manual_seed(seed + 9)
    idx = torch.randperm(4 * 64, generator=g).to(torch.int32).reshape(4, 64)     # not ascending
    out = both(K.sort32_any, [src, idx, torch.zeros(4, 256, dtype=torch.float16)])
    for r in range(4):
        v, pad, ix = structs16(out[r])
        assert torch.all(pad == 0)
        for blk in range(2):
            lo = blk * 32
            order = sorted(range(lo, lo + 32), key=lambda j: key(float(src[r, j]), int(idx[r, j])))
            assert ix[lo:lo + 32].tolist() == [int(idx[r, j]) for j in order]
            assert torch.equal(v[lo:lo + 32], src[r, order].view(torch.int16))


def test_sort32_fp32_ties_by_index_value():
    """FP32 too: equal values come out by ascending index value, not by position."""
    src = torch.tensor([1.0, -0.0, 0.0, 1.0] * 64).reshape(4, 64)
    idx = torch.arange(255, -1, -1, dtype=torch.int32).reshape(4, 64)
    out = both(K.sort32_any, [src, idx, torch.zeros(4, 128)])
    ib = out.view(torch.int32).reshape(4, 128)[:, 1::2]
    for r in range(4):
        for blk in range(2):
            lo = blk * 32
            order = sorted(range(lo, lo + 32), key=lambda j: key(float(src[r, j]), int(idx[r, j])))
            assert ib[r, lo:lo + 32].tolist() == [int(idx[r, j]) for j in order]


def test_fp16_merges():
    src = vals16(5, 128).reshape(1, 128)
    idx = torch.arange(128, dtype=torch.int32).reshape(1, 128)
    out = both(K.sort_merge16, [src, idx, torch.zeros(1, 512, dtype=torch.float16)])
    _, _, ix = structs16(out)
    assert ix.tolist() == sorted(range(128), key=lambda j: key(float(src[0, j]), j))
    a, b = vals16(6, 128).reshape(1, 128), vals16(7, 128).reshape(1, 128)
    ia = torch.arange(128, dtype=torch.int32).reshape(1, 128)
    ib = torch.arange(128, 256, dtype=torch.int32).reshape(1, 128)
    out = both(K.merge_two16, [a, ia, b, ib, torch.zeros(1, 1024, dtype=torch.float16)])
    allv = torch.cat([a, b], 1)[0]
    _, _, ix = structs16(out)
    assert ix.tolist() == sorted(range(256), key=lambda j: key(float(allv[j]), j))


def test_fp16_block_len_rule():
    from pypto.errors import PyptoError

    with pytest.raises((InvalidOperationError, PyptoError), match="multiple of 128"):
        H.run_sim(K.bad_block16, [torch.zeros(1, 128, dtype=torch.float16), torch.zeros(1, 128, dtype=torch.int32),
                                  torch.zeros(1, 512, dtype=torch.float16)], "a5sim")
