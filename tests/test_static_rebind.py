"""Regression: a loop body is parsed once, so a compile-time constant re-assigned inside it used to keep
its first value in every iteration (``x = 1; for ...: t += x; x = x * 2`` added 1 three times, a
silently wrong 3 instead of 7). Such a name is now loop-carried, as a runtime scalar is."""
import pytest
import torch

import kernels_static_rebind as K
from pypto.errors import ParserError


def test_static_rebind_in_a_loop_is_carried():
    out = torch.zeros(8, 32)
    K.doubling_static(torch.zeros(8, 32), out)
    assert torch.all(out == 7)


def test_static_rebind_in_an_init_values_loop_is_refused():
    """Only the init_values names are carried there: x = 1.5; x = x * 2 added 1.5 each time (4.5)."""
    with pytest.raises(ParserError) as ei:
        K.doubling_static_init_values(torch.zeros(8, 32), torch.zeros(8, 32))
    msg = str(ei.value)
    assert "'x' is a compile-time constant" in msg and "kernels_static_rebind.py" in msg and "init_values" in msg


def test_runtime_scalar_is_carried():
    out = torch.zeros(8, 32)
    K.doubling_runtime(torch.zeros(8, 32), out)
    assert torch.all(out == 7)


def test_rebinding_the_same_constant_is_fine():
    out = torch.zeros(8, 32)
    K.same_static_value(torch.zeros(8, 32), out)
    assert torch.all(out == 6)


def test_annotated_constant_is_a_runtime_scalar():
    out = torch.zeros(8, 32)
    K.doubling_annotated(torch.zeros(8, 32), out)
    assert torch.all(out == 7)
