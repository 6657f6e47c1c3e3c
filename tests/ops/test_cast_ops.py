"""Cast at kernel level: FP32->FP16, FP32->BF16 and INT32->FP16 under every rounding mode give the
same bits in the simulator and the reference executor, on both platforms, for a full tensor
(tensor-level ``pl.cast``) and a partial tile (``valid_shape`` load, cast, store: the rest of the
output keeps its initial value), and match :func:`pypto.numerics.cast.cast_tensor` of the input."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ops_harness as H
import ops_kernels as K
from pypto.numerics.cast import cast_tensor

COVERED_OPS = {"tensor.cast", "tile.cast"}

CASES = [(torch.float32, torch.float16, "fp16"), (torch.float32, torch.bfloat16, "bf16"),
         (torch.int32, torch.float16, "fp16")]


def _input(src, seed, kind):
    if src == torch.int32:
        g = torch.Generator().manual_seed(seed)
        hi = 2 ** 31 - 1 if kind == "special" else 70000  # int32 -> fp16 overflows past 65519
        x = torch.randint(-hi, hi, (16, 64), generator=g, dtype=torch.int32)
        x.view(-1)[:4] = torch.tensor([2 ** 31 - 1, -(2 ** 31), 65520, 2049], dtype=torch.int32)
        return x
    return H.make_data(seed, (16, 64), src, kind)


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(CASES), mode=st.sampled_from(K.MODES), platform=st.sampled_from(H.PLATFORMS),
       seed=st.integers(0, 2 ** 30), kind=st.sampled_from(("normal", "wide", "special")),
       partial=st.booleans())
def test_cast_sim_equals_ref_equals_numerics(case, mode, platform, seed, kind, partial):
    src, dst, name = case
    x = _input(src, seed, kind)
    init = H.make_data(seed + 1, (16, 64), dst, "normal")
    kernel = K.cast_kernel("p" if partial else "t", name, mode)
    sim, ref = H.run_sim(kernel, [x, init], platform), H.run_ref(kernel, [x, init])
    H.assert_same_bits(sim[1], ref[1], f"{kernel.__name__} on {platform}")
    expected = cast_tensor(x, dst, mode)
    if partial:
        expected_full = init.clone()
        expected_full[:K.VR, :K.VC] = expected[:K.VR, :K.VC]
        expected = expected_full
    H.assert_same_bits(ref[1], expected, f"{kernel.__name__} vs cast_tensor")


@pytest.mark.parametrize("name,dst", [("fp16", torch.float16), ("bf16", torch.bfloat16)])
def test_modes_differ(name, dst):
    """The mode reaches the executors: directed modes give different bits on inexact inputs."""
    x = torch.full((16, 64), 1.0 + 2.0 ** -12)  # inexact in fp16 and bf16, just above 1
    out = torch.zeros(16, 64, dtype=dst)
    floor = H.run_ref(K.cast_kernel("t", name, "floor"), [x, out])[1]
    ceil = H.run_ref(K.cast_kernel("t", name, "ceil"), [x, out])[1]
    assert bool((floor == 1.0).all()) and bool((ceil > 1.0).all())
    for platform in H.PLATFORMS:
        H.assert_same_bits(H.run_sim(K.cast_kernel("t", name, "ceil"), [x, out], platform)[1], ceil)
