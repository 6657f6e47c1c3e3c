"""Ring sizes (docs/simulator.md, "Rings"): a scope that holds more task slots, heap bytes or dependency
entries than its ring has deadlocks the device; the simulator reports it, and smaller loads run."""
import pytest
import torch

from pypto.errors import SimulationError
from pypto.runtime import RunConfig

import kernels_fast as K
import kernels_rt as KR


def run(kernel, *, n=16, **ring):
    a, out = torch.randn(n, 64), torch.zeros(n, 64)
    kernel(a, out, config=RunConfig(sim_seed=0, **ring))
    return a, out


def test_task_window_of_the_function_scope():
    a, out = run(K.six_tasks, ring_task_window=[8, 0, 0, 0])
    assert torch.equal(out, a + 1)
    with pytest.raises(SimulationError, match=r"ring 0 deadlocks: its open scopes hold 5 task slots "
                                              r"\(ring_task_window\) but the ring has 4.*RunConfig.ring_task_window"):
        run(K.six_tasks, ring_task_window=4)


def test_loop_iterations_retire_with_their_scope():
    # 12 tasks, but each iteration's scope ends before the next opens: a window of 4 is enough
    a, out = run(K.loop_tasks, ring_task_window=4)
    assert torch.equal(out, a + 1)


def test_heap_of_created_tensors():
    a = torch.randn(64, 64)
    KR.raw_chain(a, torch.zeros(64, 64), config=RunConfig(sim_seed=0, ring_heap=16384))   # 64x64 FP32 fits
    with pytest.raises(SimulationError, match=r"ring 0 deadlocks: its open scopes hold 16384 heap bytes.*has 8192"):
        KR.raw_chain(a, torch.zeros(64, 64), config=RunConfig(sim_seed=0, ring_heap=8192))


def test_dependency_pool():
    # six writers of `out` in one scope: five WAW edges
    a, out = run(K.six_tasks, ring_dep_pool=8)
    assert torch.equal(out, a + 1)
    with pytest.raises(SimulationError, match=r"hold 5 dependency entries \(ring_dep_pool\) but the ring has 4"):
        run(K.six_tasks, ring_dep_pool=4)


def test_limits_resolve_from_platform_defaults():
    w, h, d = RunConfig(ring_task_window=[8, 0, 16, 0]).ring_limits()
    assert w == [8, 16384, 16, 16384] and h == [256 << 20] * 4 and d == [16384] * 4


def test_exhaustion_names_the_scope_line_within_a_second_and_honours_the_env_limit(monkeypatch):
    # issue 16 (a sync that can never complete): the deadlock of a full ring is reported at once, at the
    # line of the scope whose submission found the ring full; PTO2_RING_TASK_WINDOW sets the default
    import time

    monkeypatch.setenv("PTO2_RING_TASK_WINDOW", "4")
    t0 = time.perf_counter()
    with pytest.raises(SimulationError) as e:
        run(K.six_tasks)
    assert time.perf_counter() - t0 < 1.0
    msg = str(e.value)
    assert "ring 0 deadlocks: its open scopes hold 5 task slots (ring_task_window) but the ring has 4" in msg
    assert "kernels_fast.py:" in msg and "with pl.at(" in msg and "(in orchestration 'six_tasks')" in msg
    monkeypatch.setenv("PTO2_RING_TASK_WINDOW", "8")
    a, out = run(K.six_tasks)
    assert torch.equal(out, a + 1)
