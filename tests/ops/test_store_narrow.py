"""The FIXPIPE narrowing store: a matmul's FP32 accumulator written into a BF16 / FP16 global
tensor by ``tensor.assemble`` / ``tile.store`` (plain and ``atomic=Add``). Oracle: the exact
(integer-valued, so FP32 is exact) product narrowed round-half-to-even by ml_dtypes / numpy, and
for the atomic split-K form narrowed per partial then added in the destination dtype. Refusals:
a vector-unit FP32 tile (not an accumulator) and non-narrowing dtype pairs are located errors."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

import kernels_store_narrow as K
import ops_harness as H
from pypto.errors import PyptoError

COVERED_OPS: set = set()      # tensor.assemble / tile.store: covered in test_layout / test_memory

_NP = {torch.bfloat16: ml_dtypes.bfloat16, torch.float16: np.float16}


def _narrow(x: torch.Tensor, dtype) -> torch.Tensor:
    """FP32 -> dtype, round-half-to-even, by an independent implementation (ml_dtypes / numpy)."""
    out = x.double().numpy().astype(np.float32).astype(_NP[dtype])
    return torch.from_numpy(out.view(np.int16)).view(dtype)


def _ints(seed, shape, lo, hi):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, shape, generator=g).float()


def both(kernel, args):
    ref = H.run_ref(kernel, args)
    for platform in H.PLATFORMS:
        sim = H.run_sim(kernel, args, platform)
        H.assert_same_bits(sim[-1], ref[-1], f"{kernel.__name__} on {platform}")
    return ref[-1]


@pytest.mark.parametrize("dtype", (torch.bfloat16, torch.float16), ids=str)
def test_assemble_and_store_narrow_the_accumulator(dtype):
    a, b = _ints(1, (16, 64), -9, 10), _ints(2, (64, 32), -9, 10)
    exact = a.double() @ b.double()                  # |x| < 2^13: exact in FP32; ties in BF16 / FP16
    want = _narrow(exact, dtype)
    H.assert_same_bits(both(K.mm_assemble_narrow, [a.to(dtype), b.to(dtype), torch.zeros(16, 32, dtype=dtype)]),
                       want, "assemble")
    H.assert_same_bits(both(K.mm_store_narrow, [a.to(dtype), b.to(dtype), torch.zeros(16, 32, dtype=dtype)]),
                       want, "store")


@pytest.mark.parametrize("dtype", (torch.bfloat16, torch.float16), ids=str)
def test_atomic_split_k_narrows_each_partial_then_adds_in_the_target_dtype(dtype):
    # (BF16 atomics exist on a2a3 only: both() would hit the a5 refusal, so BF16 runs a2a3sim)
    a, b = _ints(3, (16, 64), -30, 31), _ints(4, (64, 32), -30, 31)
    want = torch.zeros(16, 32, dtype=dtype)
    for ks in range(4):
        part = a[:, ks * 16:(ks + 1) * 16].double() @ b[ks * 16:(ks + 1) * 16, :].double()
        # the GM atomic unit adds two `dtype` values: exact sum, rounded once (via float64)
        want = _narrow(want.double() + _narrow(part, dtype).double(), dtype)
    args = [a.to(dtype), b.to(dtype), torch.zeros(16, 32, dtype=dtype)]
    if dtype == torch.bfloat16:
        got = H.run_ref(K.mm_split_k_atomic, args)[-1]
        H.assert_same_bits(H.run_sim(K.mm_split_k_atomic, args, "a2a3sim")[-1], got, "a2a3sim")
        with pytest.raises(PyptoError, match="an atomic add into a BF16 tensor exists only on a2a3"):
            H.run_sim(K.mm_split_k_atomic, args, "a5sim")
    else:
        got = both(K.mm_split_k_atomic, args)
    H.assert_same_bits(got, want)
    # not the single rounding of the FP32 sum: the test data makes the two differ somewhere
    assert not torch.equal(H.bits(_narrow(a.double() @ b.double(), dtype)), H.bits(want))


def test_non_accumulator_narrowing_is_refused():
    with pytest.raises(PyptoError, match=r"only a matmul's FP32 accumulator may be stored narrowed") as e:
        H.run_sim(K.vec_assemble_narrow, [torch.zeros(16, 32), torch.zeros(16, 32, dtype=torch.bfloat16)], "a5sim")
    assert "kernels_store_narrow.py" in str(e.value)
    with pytest.raises(PyptoError, match=r"source dtype INT32 differs from target dtype INT16"):
        H.run_sim(K.int_assemble_mismatch, [torch.zeros(16, 32, dtype=torch.int32),
                                            torch.zeros(16, 32, dtype=torch.int16)], "a5sim")


def test_tile_assemble_keeps_the_target_space_in_a_loop():
    # a Vec-loaded target carried through a loop of tile.assemble keeps one type (the reference's
    # result inherits the target's memory space)
    x, src = torch.randn(32, 32), torch.randn(32, 8)
    got = both(K.assemble_loop_carried, [x, src, torch.zeros(32, 32)])
    H.assert_same_bits(got, src.repeat(1, 4))
