"""Ctrl-C (KeyboardInterrupt) in the middle of a simulator run leaves nothing corrupted: the caller's
input tensors keep their bits, the garbage collector is running again, the recycled core memory
starts the next run from zeros (a later run with the same seed gives the same bits as a clean one),
and the compiled program in the build cache still runs (issue 18)."""
import gc

import pytest
import torch

import kernels_lockstep as K
from pypto.ops import support
from pypto.runtime import RunConfig
from pypto.runtime import cores, simulator as S


def _bits(t):
    return t.view(torch.int32).clone()


# the second store's interruption repeats the first's path with one store done: the slow tier
# "submit": the 20th task submitted (task by task); "batch": the loop's first submission (with
# lockstep its one batched submission, else its first task's)
@pytest.mark.parametrize("where, after", [("store", 1), pytest.param("store", 2, marks=pytest.mark.slow),
                                          ("submit", 20), ("batch", 1)])
@pytest.mark.parametrize("lockstep", [True, False])
def test_interrupted_run_leaves_inputs_pool_and_cache_intact(monkeypatch, where, after, lockstep):
    # a pool of this test's own: the check below reads every pooled tensor, and the session's pool
    # holds the core memories of every platform and core count run so far (5-8 s a case, late in
    # a run of the whole suite, against under 1 s)
    monkeypatch.setattr(cores, "_MEM_POOL", {})
    torch.manual_seed(7)
    a = torch.randn(512, 256)
    a_bits = _bits(a)
    cfg = RunConfig(sim_seed=11, sim_lockstep=lockstep, sim_batch=where != "submit")
    clean = torch.zeros(512, 256)
    K.softmax_rows(a, clean, config=cfg)

    # with lockstep the kernels store through gang_store_fast / gang_store_at (the gangs' forms:
    # per-member offsets / the same offsets for every member), else through store
    if where == "submit" or where == "batch" and not lockstep:
        owner, names = S.Runtime, ("submit",)
    elif where == "batch":
        owner, names = S.Runtime, ("submit_batch",)
    else:
        owner, names = support, ("gang_store_fast", "gang_store_at") if lockstep else ("store",)
    reals = [getattr(owner, name) for name in names]
    calls = [0]

    def interrupting(real):
        def call(*args, **kwargs):
            calls[0] += 1
            if calls[0] == after:
                raise KeyboardInterrupt("Ctrl-C")
            return real(*args, **kwargs)
        return call

    for name, real in zip(names, reals):
        monkeypatch.setattr(owner, name, interrupting(real))
    out = torch.full((512, 256), 5.0)
    with pytest.raises(KeyboardInterrupt):
        K.softmax_rows(a, out, config=cfg)
    assert calls[0] == after   # (the interruption came from here)
    for name, real in zip(names, reals):
        monkeypatch.setattr(owner, name, real)

    assert torch.equal(_bits(a), a_bits), "the input tensor was changed"
    assert gc.isenabled(), "the garbage collector stayed paused"
    # core memory came back to the pool: the next run starts from zeros and gives the clean bits
    again = torch.zeros(512, 256)
    K.softmax_rows(a, again, config=cfg)
    assert torch.equal(_bits(again), _bits(clean))
    # (a pool's key ends in the byte its memory starts as: 0, or 0xFF under sim_poison)
    for key, arrays in cores._MEM_POOL.items():
        for arr, dirty in arrays:
            # (a range covers rows first:stop:step: one core, a gang's cores, the cube or a vector
            # lane's rows of the clusters)
            mask = torch.ones(arr.shape, dtype=torch.bool)
            for lo, hi, first, stop, step in dirty:
                mask[first:stop:step, lo:hi] = False
            assert int((arr[mask] != key[-1]).count_nonzero()) == 0, "pooled core memory is dirty outside its ranges"


@pytest.mark.parametrize("interrupt", [False, True])
def test_a_finished_run_is_freed_without_the_cycle_collector(monkeypatch, interrupt):
    """A run's tasks, intermediate tensors and views go as soon as its runtime is dropped (no
    reference cycles left): before, they waited as cyclic garbage for a full collection and a
    previous run's memory stayed alive during the next one (issue 18: peak RSS)."""
    import weakref

    a = torch.randn(512, 256)
    out = torch.zeros(512, 256)
    if interrupt:
        reals = support.gang_store_fast, support.gang_store_at
        for name in ("gang_store_fast", "gang_store_at"):
            monkeypatch.setattr(support, name, lambda *x, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
        with pytest.raises(KeyboardInterrupt):
            K.softmax_rows(a, out, config=RunConfig(sim_seed=1))
        monkeypatch.setattr(support, "gang_store_fast", reals[0])
        monkeypatch.setattr(support, "gang_store_at", reals[1])
    else:
        K.softmax_rows(a, out, config=RunConfig(sim_seed=1))
    rt = S._LAST_RUNTIME[0]
    # Task has __slots__ (no weak references): the runtime, its tensormap and cores stand for it
    refs = [weakref.ref(x) for x in (rt, rt.tensormap, *rt.cores)]
    gc.disable()
    try:
        S._LAST_RUNTIME.items.clear()
        del rt
        alive = [r for r in refs if r() is not None]
    finally:
        gc.enable()
    assert alive == [], f"{len(alive)} objects of the finished run are only freed by the cycle collector"
