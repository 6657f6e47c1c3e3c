"""fillpad: elements outside the valid region become zero / max / min (floats: 0, +inf, -inf; ints:
0, iinfo.max, iinfo.min); the valid region is copied bit for bit; the result is fully valid.
Simulator == reference bit for bit on both platforms; the reference is exact (a copy plus a
constant), so its float64 bound is 0 ULP."""
from __future__ import annotations

import pytest
import torch

import kernels_red as K
import ops_harness as H
from pypto.errors import InvalidOperationError

COVERED_OPS = {"tensor.fillpad", "tile.fillpad"}
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32)


def _expected(a, fill):
    out = torch.full_like(a, fill)
    out[:K.VR, :K.VC] = a[:K.VR, :K.VC]
    return out


def _fill(dtype, pad):
    if pad == "zero":
        return 0
    if dtype.is_floating_point:
        return float("inf") if pad == "max" else float("-inf")
    return torch.iinfo(dtype).max if pad == "max" else torch.iinfo(dtype).min


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kernel,pad", [(K.fillpad_zero, "zero"), (K.fillpad_max, "max"), (K.fillpad_min, "min"),
                                        (K.fillpad_sugar_inf, "max"), (K.fillpad_sugar_neginf, "min"),
                                        (K.fillpad_sugar_zero, "zero")])
def test_fillpad_values(kernel, pad, dtype):
    kind = "int" if dtype == torch.int32 else "special"
    a = H.make_data(21, (16, 64), dtype, kind)
    init = H.make_data(22, (16, 64), dtype, "int" if dtype == torch.int32 else "normal")
    for platform in H.PLATFORMS:
        sim = H.run_sim(kernel, [a, init], platform)[-1]
        ref = H.run_ref(kernel, [a, init])[-1]
        H.assert_same_bits(sim, ref, f"{kernel.__name__} on {platform}")
        H.assert_same_bits(ref, _expected(a, _fill(dtype, pad)), f"{kernel.__name__} value")


def test_tensor_fillpad_is_a_copy():
    for dtype in DTYPES:
        a = H.make_data(3, (7, 33), dtype, "int" if dtype == torch.int32 else "special")
        for platform in H.PLATFORMS:
            sim = H.run_sim(K.t_fillpad, [a, torch.zeros_like(a)], platform)[-1]
            ref = H.run_ref(K.t_fillpad, [a, torch.zeros_like(a)])[-1]
            H.assert_same_bits(sim, ref)
            H.assert_same_bits(ref, a)


def test_fillpad_result_is_fully_valid():
    prog = K.fillpad_min.lower(torch.zeros(16, 64), torch.zeros(16, 64))
    text = prog.as_python()
    line = next(ln for ln in text.splitlines() if "pl.tile.fillpad(" in ln)
    assert "valid" not in line.split("=", 1)[0], line
    assert "pad_value=pl.PadValue.min" in line


def test_fillpad_null_rejected():
    with pytest.raises(InvalidOperationError, match="PadValue.null"):
        K.err_fillpad_null.lower(torch.zeros(16, 64), torch.zeros(16, 64))


def test_fillpad_other_number_rejected():
    with pytest.raises(InvalidOperationError, match="must be a pl.PadValue"):
        K.err_fillpad_number.lower(torch.zeros(16, 64), torch.zeros(16, 64))
