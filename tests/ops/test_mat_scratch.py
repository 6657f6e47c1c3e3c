"""AutoTileMatmulL0's on-chip placement of a matmul result read only by matmuls: the Mat scratch
(per-sub-tile Acc -> Mat ``tile.assemble`` when the result exceeds Acc) and the FIXPIPE cast fold
(``pl.cast(c, BF16|FP16, mode="rint")`` of an FP32 accumulator becomes the narrowing drain).

Oracles are independent of the simulator: ml_dtypes' round-to-nearest-even FP32 -> BF16/FP16
narrowing, exact small-integer/dyadic products, and an identity consumer (``x @ I`` is exact in
FP32 whatever the summation order), so the intermediate is observed bit for bit."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

import kernels_mm_scratch as K
import ops_harness as H
from pypto.errors import CapacityError, PassError

_NP = {torch.bfloat16: ml_dtypes.bfloat16, torch.float16: np.float16}


def _narrow(x: torch.Tensor, dtype) -> torch.Tensor:
    """FP32 -> ``dtype`` round-half-to-even (ml_dtypes / numpy, not torch), back in FP32."""
    return torch.from_numpy(x.numpy().astype(_NP[dtype]).astype(np.float32))


def _tie_operands(dtype):
    """``a @ b`` (K = 16, only two non-zero terms per output) whose FP32 values are exact and sit on
    ``dtype`` rounding ties (and near them), with signed zeros. No inf/NaN: the identity consumer
    would spread them over whole rows (inf * 0)."""
    ulp = 2.0 ** (-8 if dtype == torch.bfloat16 else -11)  # half an ulp of 1.0 in dtype
    m = n = k = 16
    a = torch.zeros(m, k)
    a[:, 0], a[:, 1] = 1.0, 1.0
    b = torch.zeros(k, n)
    # column j of c is b[0, j] + b[1, j]: exact in FP32
    pairs = [(1.0, ulp), (1.0, 3 * ulp), (-1.0, -ulp), (-1.0, -3 * ulp), (1.0, ulp / 2), (2.0, 2 * ulp),
             (0.0, -0.0), (-0.0, -0.0), (1.0, 5 * ulp), (1.0, -ulp / 2), (1.0, -1.0), (3.0, 3 * ulp),
             (0.5, ulp / 2 * 3), (4.0, 4 * ulp), (-2.0, -6 * ulp), (0.25, ulp / 4)]
    for j, (x, y) in enumerate(pairs):
        b[0, j], b[1, j] = x, y
    e = torch.eye(n)
    return a.to(torch.bfloat16), b.to(torch.bfloat16), e.to(dtype)


def _exact_sum(a, b):
    return (a.double() @ b.double()).float()


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("kernel, dtype", [(K.chain_bf16, torch.bfloat16), (K.chain_fp16, torch.float16)])
def test_cast_fold_rounds_half_to_even(kernel, dtype, platform):
    """Fits-Acc fold: ties go to even, signed zeros survive; the second matmul multiplies by I so
    ``out`` is the narrowed intermediate."""
    a, b, e = _tie_operands(dtype)
    out = torch.zeros(16, 16)
    sim = H.run_sim(kernel, [a, b, e, out], platform)
    ref = H.run_ref(kernel, [a, b, e, out]) if platform == "a2a3sim" else sim
    H.assert_same_bits(sim[3], ref[3], f"{kernel.__name__} sim vs ref")
    c = _exact_sum(a, b)
    H.assert_same_bits(sim[3], _narrow(c, dtype),
                       "round-half-to-even narrowing (ml_dtypes)")


def test_cast_fold_ties_observably_differ_from_round():
    """On a5 (which has Acc -> Vec) mode="round" keeps the vector cast: ties away from zero, so the
    same data differs from the folded rint chain exactly at the ties."""
    a, b, e = _tie_operands(torch.bfloat16)
    out = torch.zeros(16, 16)
    rint = H.run_sim(K.chain_bf16, [a, b, e, out], "a5sim")[3]
    rnd = H.run_sim(K.chain_round, [a, b, e, out], "a5sim")[3]
    c = _exact_sum(a, b)
    assert rint[0, 0] == 1.0 and rnd[0, 0] == 1.0 + 2.0 ** -7      # 1 + half ulp
    assert rint[0, 1] == 1.0 + 2.0 ** -6 == rnd[0, 1]              # 1 + 3 half ulps: even is up
    H.assert_same_bits(rint, _narrow(c, torch.bfloat16), "rint")


def test_cast_fold_refused_on_a2a3_without_rint():
    """a2a3 has no Acc -> Vec path, so a non-rint cast of a matmul result feeding a matmul is a
    located error naming mode="rint"."""
    a, b, e = _tie_operands(torch.bfloat16)
    with pytest.raises(PassError, match="rounds half to even only") as info:
        K.chain_round.lower(a, b, e, torch.zeros(16, 16))
    assert 'mode="rint"' in str(info.value) and "kernels_mm_scratch.py" in str(info.value)


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("kdim", [32, 192])
def test_mat_scratch_oversized_intermediate(kdim, platform):
    """[256, K] @ [K, 256] (256 KiB FP32: over a2a3's Acc, and a5's once K needs a loop) read by a
    matmul: sub-tiles drain into one BF16 Mat scratch (a5 with K = 32: one whole-tile fold). With e = I the output is the scratch itself: == ml_dtypes narrowing of the per-sub-tile
    K-chunk oracle, bit for bit; sim == ref."""
    from test_matmul import _mn_expected, _tile_for

    torch.manual_seed(3)
    a = (torch.randint(-8, 9, (256, kdim)) / 8).to(torch.bfloat16)
    b = torch.randn(kdim, 256).to(torch.bfloat16)
    e = torch.eye(256, 16).to(torch.bfloat16)
    e[100:116, :] = torch.eye(16)  # out[:, j] = scratch[:, j] + scratch[:, 100 + j]
    out = torch.zeros(256, 16)
    sim = H.run_sim(K.chain_bf16, [a, b, e, out], platform)
    ref = H.run_ref(K.chain_bf16, [a, b, e, out]) if platform == "a2a3sim" else sim
    H.assert_same_bits(sim[3], ref[3], "sim vs ref")
    tile = _tile_for(a, b, platform)
    c = _narrow(_mn_expected(a, b, tile), torch.bfloat16)
    expect = (c.double() @ e.double()).float()  # two non-zero terms per output: exact
    H.assert_same_bits(sim[3], expect, "narrowed scratch (ml_dtypes) through an exact consumer")
    text = K.chain_bf16.lower(a, b, e, out, config=__import__("pypto.runtime", fromlist=["RunConfig"]).RunConfig(
        platform=platform)).as_python()
    assert "tile.assemble" in text and "tile.cast" not in text


def test_fp32_scratch_a5_exact_and_refused_on_a2a3():
    """An FP32 intermediate fed straight to a matmul: a5 keeps an FP32 Mat scratch (no narrowing,
    exact with small integers); a2a3 drains Acc -> Mat only as BF16/FP16, a CapacityError naming the cast."""
    torch.manual_seed(4)
    a = torch.randint(-4, 5, (256, 32)).float()
    b = torch.randint(-4, 5, (32, 384)).float()
    e = torch.randint(-2, 3, (384, 16)).float()
    out = torch.zeros(256, 16)
    sim = H.run_sim(K.chain_fp32, [a, b, e, out], "a5sim")
    assert torch.equal(sim[3].double(), (a.double() @ b.double()) @ e.double())
    with pytest.raises(CapacityError, match="BF16/FP16"):
        K.chain_fp32.lower(a, b, e, out)


def test_mat_scratch_over_mat_is_located_capacity_error():
    """A scratch that with its operands exceeds Mat (L1) is a CapacityError at the matmul naming the
    live buffers, never a wrong result."""
    a, b = torch.zeros(256, 192, dtype=torch.bfloat16), torch.zeros(192, 512, dtype=torch.bfloat16)
    e = torch.zeros(512, 16, dtype=torch.bfloat16)
    with pytest.raises(CapacityError, match="Mat buffer usage.*c__mat") as info:
        K.chain_bf16.lower(a, b, e, torch.zeros(256, 16))
    assert "kernels_mm_scratch.py:13" in str(info.value)


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("dtype", [torch.int8, torch.bfloat16])
def test_split_k_chain_over_acc_is_mn_tiled(dtype, platform):
    """matmul -> matmul_acc -> store over Acc: the grid runs both links per sub-tile (M and N
    boundary tiles: 272 = 256 + 16, 144 = 128 + 16). INT8: == the exact int64 product; BF16: ==
    the per-sub-tile oracle (FP32 chunk products added in K order), sim == ref bit for bit."""
    torch.manual_seed(5)
    if dtype == torch.int8:
        a = torch.randint(-128, 128, (272, 256), dtype=torch.int8)
        b = torch.randint(-128, 128, (256, 144), dtype=torch.int8)
        c = torch.zeros(272, 144, dtype=torch.int32)
    else:
        a, b = torch.randn(272, 256).to(dtype), torch.randn(256, 144).to(dtype)
        c = torch.zeros(272, 144)
    kernel = K.split_k_chain_i32 if dtype == torch.int8 else K.split_k_chain_f32
    sim = H.run_sim(kernel, [a, b, c], platform)
    if dtype == torch.int8:
        assert torch.equal(sim[2].long(), a.long() @ b.long())
        return
    ref = H.run_ref(kernel, [a, b, c]) if platform == "a2a3sim" else sim
    H.assert_same_bits(sim[2], ref[2], "sim vs ref")
    # oracle: per sub-tile, link 1's K-chunk products, then link 2's added onto them, in FP32
    from test_matmul import _mn_expected, _tile_for

    tile = _tile_for(a[:, :128], b[:128], platform)
    expect = _mn_expected(a[:, :128], b[:128], tile) + _mn_expected(a[:, 128:], b[128:], tile)
    H.assert_same_bits(sim[2], expect, "per-sub-tile chain oracle")
    bound = 256 * 2.0 ** -23 * (a.double().abs() @ b.double().abs())
    assert bool(((sim[2].double() - a.double() @ b.double()).abs() <= bound).all())
