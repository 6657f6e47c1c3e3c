"""Rank-reducing subscripts and ``drop_dims`` (numpy rules, as the reference's language guide):
views in kernels and orchestration, subscript writes of reduced-rank values, tile rows, ``clamp``;
bad forms are located errors. Results are compared with torch indexing of the same tensors."""
import warnings

import pytest
import torch

import kernels_rank_views as K
from pypto.errors import InvalidOperationError, ParserTypeError, PyptoError, UnsupportedFeatureError


def test_kernel_views_read_and_write_reduced_windows():
    x = torch.randn(2, 16, 32)
    out = torch.full((2, 16, 32), -1.0)
    K.kernel_views(x, out)
    want = torch.full((2, 16, 32), -1.0)
    want[0] = x[1] + x[1]
    want[1, 0:2, :] = x[0, 2:4, :]
    want[1, 4, 0:16] = x[0, :, 5]
    want[1, 5, :] = x[1][3] * x[1][3]
    assert torch.equal(out, want)


def test_orchestration_views_are_views_of_the_callers_tensors():
    x = torch.randn(2, 16, 32)
    out = torch.zeros(3, 16, 32)
    K.orchestration_views(x, out)
    assert torch.equal(out[:2], x * x)
    assert torch.equal(out[2], x[1] + x[1])


def test_a_dropped_inner_axis_is_written_through_the_full_window():
    x = torch.randn(16, 8)
    out = torch.full((16, 8), 5.0)
    K.inner_axis_write(x, out)
    want = torch.full((16, 8), 5.0)
    want[:, 6] = x[:, 2] + x[:, 2]
    assert torch.equal(out, want)


def test_tile_rows_stay_2d_and_are_assembled():
    x = torch.randn(16, 32)
    out = torch.zeros(16, 32)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        K.tile_views(x, out)
    want = x.clone()
    want[5] = x[3] + x[3]
    want[6] = x[7]
    assert torch.equal(out, want)
    promoted = [str(m.message) for m in w if "promoted to [1, 32]" in str(m.message)]
    assert promoted and all(m.filename.endswith("kernels_rank_views.py") for m in w if "promoted" in str(m.message))


def test_clamp_cuts_the_window_back_to_the_tensor_edge():
    x = torch.randn(20, 32)
    out = torch.full((16, 32), 9.0)
    K.clamped_slice(x, out)
    want = torch.zeros(16, 32)
    want[:12] = x[8:20]
    assert torch.equal(out, want)


@pytest.mark.parametrize("kernel, args, error, message", [
    (K.bad_drop_axis, ((2, 16, 32), (16, 32)), InvalidOperationError, "drop_dims axis 0 must have extent 1"),
    (K.bad_pad_value, ((16, 32), (16, 32)), UnsupportedFeatureError, "pad_value"),
    (K.bad_write_shape, ((2, 16, 32), (2, 16, 32)), ParserTypeError, r"window has shape \[16, 32\].*\[8, 32\]"),
    (K.bad_element_write, ((16, 32), (16, 32)), UnsupportedFeatureError, "writing one element"),
    (K.bad_clamp, ((20, 32), (16, 32)), InvalidOperationError, r"clamp=True\): the region at offsets \[24, 0\]"),
])
def test_bad_forms_are_located_errors(kernel, args, error, message):
    with pytest.raises(error, match=message) as e:
        kernel(*[torch.zeros(s) for s in args])
    assert "kernels_rank_views.py" in str(e.value)


def test_a_runtime_tile_index_is_refused_at_its_line():
    with pytest.raises(PyptoError, match="tile indices must be static") as e:
        K.bad_runtime_tile_index(torch.zeros(16, 32), torch.zeros(16, 32))
    assert "kernels_rank_views.py" in str(e.value)


def test_an_explicit_load_and_store_of_kernel_views_address_their_tensors():
    x = torch.randn(4, 512, 512)
    out = torch.zeros(2, 32, 512)
    K.load_from_kernel_view(x, out)
    want = torch.zeros(2, 32, 512)
    want[1, 8:24] = x[2, 64:80] + x[2, 64:80]
    assert torch.equal(out, want)
    x = torch.randn(64, 64)
    out = torch.zeros(16, 16)
    K.load_from_same_rank_view(x, out)
    assert torch.equal(out, x[20:36, 10:26])


def test_a_store_through_a_view_orders_the_reader_after_it():
    import pypto.runtime.simulator as S
    from pypto.runtime import RunConfig

    x = torch.randn(16, 32)
    for seed in range(3):
        tmp, out = torch.zeros(2, 16, 32), torch.zeros(16, 32)
        K.view_store_then_read(x, tmp, out, config=RunConfig(sim_seed=seed))
        assert torch.equal(tmp[1], x * 2.0) and not tmp[0].any()
        assert torch.equal(out, x * 2.0 + 1.0)
    writer, reader = [t for t in S._LAST_RUNTIME[0].tasks if t.kind == "kernel"]
    assert writer.tags[[arg is tmp for arg in writer.args].index(True)] in ("OUTPUT_EXISTING", "INOUT")
    assert writer.index in reader.fanin


def test_an_unsupported_view_access_is_a_located_error():
    with pytest.raises(UnsupportedFeatureError, match="2-D load from the view 'a'") as e:
        K.bad_view_access(torch.zeros(4, 16, 32), torch.zeros(4, 32))
    assert "kernels_rank_views.py" in str(e.value)
