"""Simplify inlines a one-trip loop and folds a run-time valid extent to a constant: the tile's type
must follow (it kept the folded scalar, whose definition was gone: NameError in the kernel)."""
import torch

import kernels_valid_fold as K


def test_one_trip_loop_with_runtime_valid_extent():
    x = torch.randn(1, K.SZ)
    y = torch.zeros(1, K.SZ)
    K.one_trip(x, y)
    assert torch.equal(y, x)
