"""The comparison report: counts, max errors, ULPs, worst elements, NaN/Inf, per-tile counts."""
import pytest
import torch

from pypto.testing import assert_close, compare, ulp_distance


def test_report_locates_a_bad_region():
    x = torch.randn(64, 64)
    y = x.clone()
    y[:, 48:] = 0.0
    r = compare(y, x, 1e-5, 1e-5, tile_shape=(16, 16))
    assert r.mismatches == int((x[:, 48:] != 0).sum()) and r.compared == 4096
    assert r.tile_mismatches.shape == (4, 4)
    assert r.tile_mismatches[:, :3].sum() == 0 and bool((r.tile_mismatches[:, 3] > 0).all())
    assert r.worst[0].index[1] >= 48 and r.max_abs == pytest.approx(float(x[:, 48:].abs().max()))


def test_nan_in_golden_is_dont_care_and_nans_in_result_are_counted():
    e = torch.ones(4, 4)
    e[0, 0] = float("nan")
    a = torch.ones(4, 4)
    a[1, 1] = float("nan")
    r = compare(a, e)
    assert r.dont_care == 1 and r.compared == 15 and r.mismatches == 1 and r.nan_unexpected == 1


def test_ulp_distance_is_independent_of_sign_of_zero():
    a = torch.tensor([0.0, -0.0, 1.0, -1.0], dtype=torch.float16)
    b = torch.tensor([-0.0, 0.0, 1.0009765625, -1.0009765625], dtype=torch.float16)
    assert ulp_distance(a, b).tolist() == [0, 0, 1, 1]
    assert compare(a, b, 0, 0).max_ulp == 1


def test_assert_close_raises_with_the_report():
    with pytest.raises(AssertionError, match="mismatched elements: 1/4"):
        assert_close(torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([1.0, 2.0, 3.0, 5.0]))
    assert assert_close(torch.ones(3), torch.ones(3)).passed


def test_fp16_hint_only_when_relevant():
    a = torch.randn(32, 32).half()
    exact = a.double()
    r = compare(a, exact.to(torch.float16) + 0, 1e-5, 1e-5)
    assert r.passed and r.dtype_hint is None
    noisy = (a.double() * (1 + 3e-4)).half()
    r = compare(noisy.float(), a.float(), 1e-5, 1e-5, input_dtypes=[torch.float16])
    assert not r.passed and "float16" in r.dtype_hint and "0.01" in r.dtype_hint


def test_dtype_hint_never_suggests_a_tolerance_that_accepts_zeros():
    """Issue 19: a softmax peaking near 0.004 passes rtol=atol=0.01 even as an all-zeros output; the
    hint then scales atol to the data instead, and that tolerance rejects zeros."""
    import torch
    from pypto.testing import compare

    g = torch.softmax(torch.randn(16, 1024, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 0.5,
                      1).half()
    assert float(g.max()) < 0.01
    near = (g.double() * (1 + 2 ** -9)).half()     # about 1 ULP off
    hint = compare(near, g, 1e-5, 1e-5).dtype_hint
    assert "would accept an all-zeros output here" in hint
    atol = float(hint.split("atol=")[2].split(" ")[0])
    assert not compare(torch.zeros_like(g), g, 0.01, atol).passed
    assert compare(near, g, 0.01, atol).passed
