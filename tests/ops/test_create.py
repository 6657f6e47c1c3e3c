"""ci / arange and tri: simulator == reference bit for bit, both equal a Python oracle (wrap-around at
the dtype's limits for ci; every diagonal offset, both sides, partial valid shapes for tri)."""
from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernels_create as K
import ops_harness as H
from pypto.errors import InvalidOperationError

COVERED_OPS = {"tensor.ci", "tile.ci", "tile.tri"}
SETTINGS = settings(max_examples=20, deadline=None, report_multiple_bugs=False,
                    suppress_health_check=[HealthCheck.too_slow])


def both(kernel, args, platform):
    sim, ref = H.run_sim(kernel, args, platform), H.run_ref(kernel, args)
    H.assert_same_bits(sim[-1], ref[-1], f"{kernel.__name__} on {platform}")
    return ref[-1]


def wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


@SETTINGS
@given(start=st.sampled_from([0, 1, -5, 2 ** 31 - 10, -(2 ** 31), 32760, -32768, 65530]) | st.integers(-2 ** 31, 2 ** 31 - 1),
       platform=st.sampled_from(H.PLATFORMS))
def test_ci(start, platform):
    out = both(K.t_arange, [start, torch.zeros(1, 48, dtype=torch.int32)], platform)
    assert out[0].tolist() == [wrap(start + k, 32, True) for k in range(48)]
    out = both(K.t_ci_desc_i16, [start, torch.zeros(1, 40, dtype=torch.int16)], platform)
    assert out[0].tolist() == [wrap(start - k, 16, True) for k in range(40)]
    out = both(K.p_ci, [start, torch.zeros(1, 64, dtype=torch.uint32)], platform)
    assert out.view(torch.int32)[0].tolist() == [wrap(start + k, 32, True) for k in range(64)]
    out = both(K.p_arange_u16, [start, torch.zeros(1, 32, dtype=torch.uint16)], platform)
    assert out.view(torch.int16)[0].tolist() == [wrap(start - k, 16, True) for k in range(32)]


@pytest.mark.parametrize("d", (-40, -3, -1, 0, 1, 5, 31, 40))
def test_tri(d):
    out = both(K.p_tri_lower, [d, torch.full((16, 32), 7.0)], "a2a3sim")
    want = [[1.0 if j <= i + d else 0.0 for j in range(32)] for i in range(16)]
    assert out.tolist() == want
    init = torch.full((16, 32), 7, dtype=torch.int8)
    out = both(K.p_tri_upper_valid, [d, init], "a5sim")
    want = [[(1 if j >= i + d else 0) if i < 10 and j < 20 else 7 for j in range(32)] for i in range(16)]
    assert out.tolist() == want


def test_ci_leading_dims_must_be_1():
    with pytest.raises(InvalidOperationError, match="leading dimensions must be 1") as ei:
        H.run_sim(K.bad_ci_rows, [torch.zeros(4, 32, dtype=torch.int32)], "a2a3sim")
    assert "kernels_create.py" in str(ei.value)


@pytest.mark.parametrize("kernel, args", [("t_arange", [3, torch.zeros(1, 48, dtype=torch.int32)]),
                                          ("p_tri_upper_valid", [2, torch.zeros(16, 32, dtype=torch.int8)])])
def test_printed_programs_parse_back(kernel, args):
    from catalog_harness import assert_roundtrips

    assert_roundtrips(getattr(K, kernel), args)
