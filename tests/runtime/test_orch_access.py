"""Orchestration element reads and writes wait for the tasks they depend on (Runtime.read /
write_, the tensormap runtime's get_tensor_data / set_tensor_data). Before, a read of an element a
task had not yet computed returned the buffer's earlier contents, silently."""
import pytest
import torch

from pypto.runtime import RunConfig, run
from pypto.runtime import simulator as S

import kernels_orch_access as K


def _last():
    return S._LAST_RUNTIME[0]


@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_read_sees_its_producer_result(seed, platform):
    x = torch.randn(16, 16)
    out = torch.zeros(16, 16)
    run(K.ReadAfterProducer, x, out, config=RunConfig(platform=platform, sim_seed=seed))
    s = (x[3, 5] + 1.0).item()
    assert torch.equal(out, x * s)
    assert _last().waits == 1


def test_a_read_of_an_unwritten_input_does_not_wait():
    x = torch.randn(16, 16)
    out = torch.zeros(16, 16)
    run(K.ReadOfInput, x, out, config=RunConfig(sim_seed=0))
    assert torch.equal(out, (x + 1.0) * x[0, 0].item())
    assert _last().waits == 0


@pytest.mark.parametrize("seed", [0, 3])
def test_a_write_waits_for_the_task_reading_the_element(seed):
    x = torch.randn(16, 16)
    want = x * 2.0
    x0 = x.clone()
    out = torch.zeros(16, 16)
    run(K.WriteAfterReader, x, out, config=RunConfig(sim_seed=seed))
    assert torch.equal(out, want)
    assert x[0, 0].item() == 100.0 and torch.equal(x.view(-1)[1:], x0.view(-1)[1:])
    assert _last().waits == 1


@pytest.mark.parametrize("batch", [True, False])
def test_reads_in_a_loop_see_the_producer_before_it(batch):
    x = torch.randn(16, 16)
    out = torch.zeros(16, 16)
    run(K.ReadInBatchedLoop, x, out, config=RunConfig(sim_seed=0, sim_batch=batch))
    assert torch.equal(out, x * (x[:, :1] + 1.0))
    rt = _last()
    assert rt.waits == 1   # the first read waits; the producer is done for the others
    if batch:
        assert any(t.members for t in rt.tasks if t.kind == "kernel")
