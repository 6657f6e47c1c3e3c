"""Every host tensor of a per-rank launch goes through ``simpler_setup.torch_interop.make_tensor_arg``
(looked up at each launch, so a wrapper sees them): the host views, never the window views."""
import pytest
import torch

from pypto import ir
from pypto.ir.distributed_compiled_program import DistributedConfig

from tests.distributed import kernels_dist as K
from tests.distributed.kernels_dist import N


def test_host_tensors_of_launches_go_through_make_tensor_arg(monkeypatch):
    from simpler_setup import torch_interop

    seen = []
    real = torch_interop.make_tensor_arg

    def record(worker, t):
        seen.append(t)
        return real(worker, t)

    monkeypatch.setattr(torch_interop, "make_tensor_arg", record)
    compiled = ir.compile(K.ProgramHostScale, platform="a2a3sim",
                          distributed_config=DistributedConfig(device_ids=[0, 1]))
    x, y = torch.randn(2, 1, N), torch.zeros(2, 1, N)
    compiled(x, y)
    assert torch.equal(y[0], x.max(dim=0).values)
    ptrs = {t.untyped_storage().data_ptr() for t in seen}
    # fill_orch(x[r], window) and drain_orch(window, y[r]) on both ranks: 4 host tensors, no window
    assert len(seen) == 4 and ptrs == {x.untyped_storage().data_ptr(), y.untyped_storage().data_ptr()}


def test_make_tensor_arg_refuses_what_is_not_a_host_tensor():
    from simpler_setup import torch_interop

    with pytest.raises(TypeError, match="takes a torch.Tensor"):
        torch_interop.make_tensor_arg(None, [1.0])
    t = torch.zeros(2)
    assert torch_interop.make_tensor_arg(None, t) is t
