"""``pl.TileView(valid_shape=[...])`` in a tile annotation: an int or an integer scalar per dimension
(a run-time valid region, as ``pl.load(..., valid_shape=)`` gives); anything else is a located
ParserTypeError (it used to fail inside the parser with an InternalError)."""
import pytest
import torch

import kernels_tile_view as K
from pypto.errors import ParserTypeError


@pytest.mark.parametrize("n", [16, 5, 1])
def test_a_runtime_valid_view_narrows_the_store(n):
    a = torch.randn(16, 32)
    out = torch.full((16, 32), -7.0)
    K.runtime_view(a, n, out)
    want = torch.full((16, 32), -7.0)
    want[:n] = a[:n] + a[:n]
    assert torch.equal(out, want)


@pytest.mark.parametrize("kernel, message", [
    (K.float_view, "extent must be an int or an integer scalar"),
    (K.short_view, "one extent per dimension"),
])
def test_a_bad_view_extent_is_a_located_error(kernel, message):
    with pytest.raises(ParserTypeError, match=message) as e:
        kernel(torch.zeros(16, 32), torch.zeros(16, 32))
    assert "kernels_tile_view.py" in str(e.value)
