"""The task window (issue 13 item 14): the orchestration no longer submits everything before anything
runs. When a ring's window (RunConfig.ring_task_window, the reference's PTO2_RING_TASK_WINDOW) is
full, the scheduler runs until a task retires, so live tasks and memory stay bounded."""
import torch

import pypto.runtime.simulator as S
from kernels_io import many_increments
from pypto.runtime import RunConfig


def _run(**cfg):
    x = torch.randint(-50, 50, (64, 64)).float()
    want = x + 200.0
    many_increments(x, config=RunConfig(sim_seed=0, **cfg))
    assert torch.equal(x, want)
    return S._LAST_RUNTIME[0]


def test_live_tasks_never_exceed_the_window_and_retired_tasks_are_forgotten():
    # 800 tasks through a window of 16 (50 times over); each iteration's scope ends before the next
    rt = _run(ring_task_window=16)
    assert rt.max_live[1] == 16 and rt._live == [0, 0, 0, 0]
    assert rt.drains >= 800 - 16          # the orchestrator waited for a slot again and again
    # nothing grows with the number of tasks: the task log, the id lookup, the tensormap
    assert rt.tasks == [] and len(rt.by_id) <= 16
    assert sum(len(b.los) for b in rt.tensormap.buckets.values()) <= 16


def test_the_default_window_runs_small_programs_exactly_as_before():
    rt = _run()
    assert rt.drains == 0 and len(rt.tasks) == 800 and rt.max_live[1] == 800


def test_history_is_kept_when_deps_json_is_asked_for(tmp_path):
    import json

    rt = _run(ring_task_window=16, enable_dep_gen=True, save_kernels_dir=str(tmp_path))
    assert rt.max_live[1] == 16 and len(rt.tasks) == 800
    doc = json.loads((tmp_path / "dfx_outputs" / "deps.json").read_text())
    assert len(doc["tasks"]) == 800


def test_same_seed_same_schedule_with_a_small_window():
    a = _run(ring_task_window=8)
    b = _run(ring_task_window=8)
    assert a.time == b.time and a.drains == b.drains


def test_the_ring_environment_variables_apply_below_a_config_override(monkeypatch):
    import pytest

    monkeypatch.setenv("PTO2_RING_TASK_WINDOW", "32")
    assert RunConfig().ring_limits()[0] == [32] * 4
    assert RunConfig(ring_task_window=[8, 0, 0, 0]).ring_limits()[0] == [8, 32, 32, 32]
    rt = _run()
    assert rt.max_live[1] == 32
    monkeypatch.setenv("PTO2_RING_TASK_WINDOW", "33")
    with pytest.raises(ValueError, match="PTO2_RING_TASK_WINDOW.*power of two"):
        RunConfig().ring_limits()
