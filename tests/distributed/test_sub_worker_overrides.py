"""``prepare(sub_worker_overrides={name: fn})``: ``fn(args)`` runs in place of the program's
sub-worker, after the launches before it, with its tensor arguments as ContinuousTensor
descriptors that ``_tensor_from_continuous`` turns back into the same memory; an unknown name or a
non-callable is a ValueError before anything runs."""
import pytest
import torch

from pypto import ir
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime.distributed_runner import _tensor_from_continuous

from tests.distributed import kernels_dist as K
from tests.distributed.kernels_dist import N


def _compiled():
    return ir.compile(K.ProgramWithSubWorker, platform="a2a3sim", distributed_config=DistributedConfig(device_ids=[0, 1]))


def test_the_generated_sub_worker_runs_without_override():
    x, y, seen = torch.randn(2, 1, N), torch.zeros(2, 1, N), torch.zeros(1)
    _compiled()(x, y, seen)
    assert torch.equal(y, x * 2.0) and seen[0] == -1.0


def test_an_override_runs_instead_and_sees_the_launch_results():
    x, y, seen = torch.randn(2, 1, N), torch.zeros(2, 1, N), torch.zeros(1)
    calls = []

    def check(args):
        out, mark = _tensor_from_continuous(args[0]), _tensor_from_continuous(args[1])
        calls.append(args[0].shapes)
        mark[0] = float(out.sum())   # the doubled rows are there: it ran after the launches

    with _compiled().prepare(sub_worker_overrides={"check": check}) as rt:
        rt(x, y, seen)
    assert calls == [(2, 1, N)] and torch.equal(y, x * 2.0)
    assert seen[0] == float(y.sum()) != -1.0


def test_bad_overrides_are_refused_before_running():
    compiled = _compiled()
    with pytest.raises(ValueError, match="'nope' are not sub-workers of 'host' \\(its sub-workers: check\\)"):
        compiled.prepare(sub_worker_overrides={"nope": lambda args: None})
    with pytest.raises(ValueError, match="must be callable"):
        compiled.prepare(sub_worker_overrides={"check": 3})
    with pytest.raises(TypeError, match="expected a ContinuousTensor"):
        _tensor_from_continuous(torch.zeros(1))
