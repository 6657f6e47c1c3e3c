"""InOut parameters used in place with an undo log (pypto.runtime.undo): a run that succeeds leaves
its results in the caller's tensor without a copy; a run that fails part-way (Ctrl-C, a fault, a
restart on copies) leaves the tensor bit for bit as it was, whatever it had written -- overlapping
writes, batched writes, orchestration-level element writes, a tensor rewritten whole many times."""
import pytest
import torch

import kernels_batch as K
from pypto.ops import support
from pypto.runtime import RunConfig, run
from pypto.runtime import simulator as S


def _bits(t):
    return t.view(torch.int32).clone()


def _scatter_want(a, cache, table):
    want = cache.clone()
    for i, row in enumerate(table.tolist()):
        want[row] = want[row] * 0.5 + a[i]
    return want


def _interrupt_after(monkeypatch, n, lockstep):
    """Make the ``n``-th global-memory store of kernels raise KeyboardInterrupt."""
    # the gang kernels store through gang_store_at (offsets the same for every member) or
    # gang_store_fast (per-member offsets); both count
    names = ("gang_store_fast", "gang_store_at") if lockstep else ("store",)
    calls = [0]

    def interrupting(real):
        def call(*args, **kwargs):
            calls[0] += 1
            if calls[0] == n:
                raise KeyboardInterrupt("Ctrl-C")
            return real(*args, **kwargs)
        return call

    for name in names:
        monkeypatch.setattr(support, name, interrupting(getattr(support, name)))


def _inputs(overlap):
    g = torch.Generator().manual_seed(9)
    a, cache = torch.randn(16, 64, generator=g), torch.randn(32, 64, generator=g)
    table = (torch.tensor([5, 1, 9, 5, 2, 3, 4, 9, 6, 7, 8, 10, 11, 12, 13, 14]) if overlap
             else torch.randperm(32, generator=g)[:16]).to(torch.int32)
    return a, table, cache


@pytest.mark.parametrize("overlap", [False, True])
def test_a_successful_run_updates_the_inout_tensor_in_place(overlap):
    a, table, cache = _inputs(overlap)
    want = _scatter_want(a, cache, table)
    ptr = cache.data_ptr()
    run(K.Scatter, a, table, cache, config=RunConfig(sim_seed=0))
    assert torch.equal(cache, want) and cache.data_ptr() == ptr
    assert S._LAST_RUNTIME[0].undo is not None   # it ran on the caller's tensor
    run(K.Scatter, a, table, cache, config=RunConfig(sim_seed=0))   # the next call starts from the results
    assert torch.equal(cache, _scatter_want(a, want, table))


@pytest.mark.parametrize("lockstep, overlap, after", [(True, False, 1), (False, False, 7), (False, True, 9),
                                                      (True, True, 2), (False, True, 16)])
def test_a_failed_run_leaves_the_inout_tensor_as_it_was(monkeypatch, lockstep, overlap, after):
    a, table, cache = _inputs(overlap)
    before = _bits(cache)
    _interrupt_after(monkeypatch, after, lockstep)
    with pytest.raises(KeyboardInterrupt):
        run(K.Scatter, a, table, cache, config=RunConfig(sim_seed=0, sim_lockstep=lockstep))
    assert torch.equal(_bits(cache), before)


def test_an_orchestration_element_write_is_undone_too(monkeypatch):
    a, table, cache = _inputs(False)
    before = _bits(cache)
    _interrupt_after(monkeypatch, 3, False)
    with pytest.raises(KeyboardInterrupt):
        run(K.WriteThenScatter, a, table, cache, config=RunConfig(sim_seed=0, sim_lockstep=False))
    assert torch.equal(_bits(cache), before)
    monkeypatch.undo()
    run(K.WriteThenScatter, a, table, cache, config=RunConfig(sim_seed=0))
    want = cache.clone()
    want.copy_(torch.from_numpy(before.numpy()).view(torch.float32))
    want[31, 3] = 7.0
    assert torch.equal(cache, _scatter_want(a, want, table))


def test_a_tensor_rewritten_whole_is_snapshotted_once(monkeypatch):
    # every iteration accumulates into all of `out` (InOut): after a tensor's worth of saved regions
    # the log keeps one whole copy instead; a failure at the last store still restores exactly
    a, out = torch.randn(128, 64), torch.randn(16, 64)
    before = _bits(out)
    run(K.Whole, a, out.clone(), config=RunConfig(sim_seed=0))
    log = S._LAST_RUNTIME[0].undo
    assert log is not None and not log.bases and log.saved == 2   # one region, then the snapshot
    assert not log.entries   # released when the run succeeded
    _interrupt_after(monkeypatch, 8, False)
    with pytest.raises(KeyboardInterrupt):
        run(K.Whole, a, out, config=RunConfig(sim_seed=0, sim_lockstep=False))
    assert torch.equal(_bits(out), before)


def test_a_restart_on_copies_starts_from_the_original_inout(monkeypatch):
    # the run writes the InOut tensor (read-modify-write), then execute() decides to start over on
    # copies (as when a task writes a caller's In tensor): the second attempt must see the original
    a, table, cache = _inputs(True)
    want = _scatter_want(a, cache, table)
    real, calls = S._writes_into, [0]

    def once(rt, tensors):
        calls[0] += 1
        if calls[0] == 1:
            rt.run_all()   # the first attempt's tasks run (and write the cache) before the restart
            return True
        return real(rt, tensors)

    monkeypatch.setattr(S, "_writes_into", once)
    run(K.Scatter, a, table, cache, config=RunConfig(sim_seed=0))
    assert calls[0] == 2 and torch.equal(cache, want)


def test_a_batched_submission_saves_its_member_regions_in_one_stack(monkeypatch):
    # the batched scatter's written rows of the cache are saved by one torch.stack (note_views);
    # an interrupt at the first gang store must still restore every row exactly
    from pypto.runtime.undo import UndoLog
    a, table, cache = _inputs(False)
    before = _bits(cache)
    kinds = []
    real = UndoLog.restore

    def spy(self):
        kinds.extend(len(t) if t.__class__ is list else 1 for t, _ in self.entries)
        return real(self)

    monkeypatch.setattr(UndoLog, "restore", spy)
    _interrupt_after(monkeypatch, 1, True)
    with pytest.raises(KeyboardInterrupt):
        run(K.Scatter, a, table, cache, config=RunConfig(sim_seed=0, sim_lockstep=True))
    assert torch.equal(_bits(cache), before)
    assert 16 in kinds   # one entry for the 16 members' rows


def test_note_views_is_exact_and_falls_back_past_the_budget():
    from pypto.runtime.deps import View
    from pypto.runtime.undo import UndoLog
    t = torch.randn(8, 4)
    before = _bits(t)
    log = UndoLog([t])
    log.note_views([View(t[i:i + 1]) for i in (6, 1, 3)])        # one stacked entry
    assert len(log.entries) == 1 and log.saved == 3
    t[1] = 5.0
    t[6] = -1.0
    log.note_views([View(t[0:4]), View(t[4:8]), View(t[0:4])])   # 48 elements > the 20 left: member by member
    assert not log.bases and log.saved == 5                      # the first fits, the second snapshots
    t.fill_(3.0)
    log.restore()
    assert torch.equal(_bits(t), before)
