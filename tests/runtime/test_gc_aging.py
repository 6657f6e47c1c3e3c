"""The collector around a simulated call (``simulator.gc_paused``): off during the run; on a normal
end the run's objects are moved to the oldest generation instead of being scanned by the young
collection that re-enabling would start. That is only safe because a run's record is freed by
reference counting alone once the next call replaces it (no cycles that would wait for a full
collection while holding GM tensors): pinned here for a batched, ganged program, a mixed cube +
vector program and the Qwen3 layer (InOut caches in place with an undo log)."""
import gc
import sys
import weakref
from pathlib import Path

import pytest
import torch

from pypto.runtime import RunConfig, run
from pypto.runtime import simulator as S

import kernels_batch as K

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import sim_kernels as SK  # noqa: E402
from model_cases import qwen3_case  # noqa: E402


def _qwen3_args():
    return qwen3_case(kv_heads=1, inter=256, seed=3)


def _programs():
    yield "rows", (lambda a, cfg: run(K.Rows, *a, config=cfg)), (torch.randn(128, 64), torch.zeros(128, 64))
    q, k = torch.randn(4096, 128).half(), torch.randn(128, 256).half()
    yield "mm_softmax", (lambda a, cfg: SK.mm_softmax.compile(*a)(*a, config=cfg)), (q, k, torch.zeros(4096, 256))
    prog, args = _qwen3_args()
    yield "qwen3", (lambda a, cfg: run(prog, *a, config=cfg)), args


@pytest.mark.parametrize("name,call,args", [pytest.param(*p, id=p[0]) for p in _programs()])
def test_a_runs_record_is_freed_by_reference_counting_alone(name, call, args):
    cfg = RunConfig(platform="a2a3sim", sim_seed=0)
    call(args, cfg)   # compile and warm up
    call(args, cfg)
    rt = S._LAST_RUNTIME[0]
    assert rt.gangs, f"{name}: no lockstep gang ran (the test would not cover the gang objects)"
    ref = weakref.ref(rt)
    del rt
    was = gc.isenabled()
    gc.disable()
    try:
        S._LAST_RUNTIME.items.clear()
        assert ref() is None, f"{name}: the run's Runtime lives on in a reference cycle"
    finally:
        if was:
            gc.enable()


def test_a_normal_end_leaves_the_young_generation_empty_and_no_collection_runs():
    cfg = RunConfig(platform="a2a3sim", sim_seed=0)
    a, out = torch.randn(128, 64), torch.zeros(128, 64)
    run(K.Rows, a, out, config=cfg)
    seen = []

    def cb(phase, info):
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(cb)
    try:
        gc.collect()
        seen.clear()
        run(K.Rows, a, out, config=cfg)
        young = gc.get_count()[0]
    finally:
        gc.callbacks.remove(cb)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert young < gc.get_threshold()[0] and seen == []
    assert torch.equal(out, torch.exp(torch.exp(a * 0.5) * 0.5))


def test_the_callers_gc_state_and_frozen_objects_are_left_alone(monkeypatch):
    cfg = RunConfig(platform="a2a3sim", sim_seed=0)
    a, out = torch.randn(128, 64), torch.zeros(128, 64)
    run(K.Rows, a, out, config=cfg)
    # collector off in the caller: still off, nothing frozen or thawed
    calls = []
    monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
    gc.disable()
    try:
        run(K.Rows, a, out, config=cfg)
        assert not gc.isenabled() and calls == []
    finally:
        gc.enable()
    # objects the caller froze stay frozen (no unfreeze while the permanent generation is in use)
    monkeypatch.setattr(gc, "get_freeze_count", lambda: 7)
    run(K.Rows, a, out, config=cfg)
    assert calls == [] and gc.isenabled()


def test_a_failed_block_does_not_age_its_objects(monkeypatch):
    calls = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
    with pytest.raises(KeyError):
        with S.gc_paused():
            raise KeyError("x")
    assert calls == [] and gc.isenabled()
    with S.gc_paused():
        with S.gc_paused():   # nested: only the outermost block re-enables (and ages)
            pass
        assert not gc.isenabled()
    assert calls == ["freeze", "unfreeze"] and gc.isenabled()
