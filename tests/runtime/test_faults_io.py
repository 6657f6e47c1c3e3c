"""Runtime faults name the kernel source line (issue 13 item 16)."""
import pytest
import torch

from kernels_io import load_past_end
from pypto.errors import SimulationError
from pypto.runtime import RunConfig


@pytest.mark.parametrize("lockstep", [True, False])
def test_out_of_bounds_load_names_the_kernel_line(lockstep):
    a, out = torch.randn(64, 64), torch.zeros(32, 64)
    with pytest.raises(SimulationError) as e:
        load_past_end(a, out, 40, config=RunConfig(sim_seed=0, sim_lockstep=lockstep))
    msg = str(e.value)
    assert "tile.load out of bounds" in msg
    assert e.value.span.file.endswith("kernels_io.py") and e.value.span.line == 9
    assert "kernels_io.py:9:" in msg and "pl.load(a, [r + i * 8, 0], [8, 64])" in msg and "^" in msg
