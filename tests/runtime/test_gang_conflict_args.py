"""The argument pre-check of a gang's footprint test (``gangs._args_disjoint``): when no storage a
member may write (by its arguments' tags) is an argument of a member of another group, ``conflict``
answers False without the plans. It must never say so where the plans' exact test finds a conflict:
checked on every gang the scheduler forms in a set of real programs (batched and task by task), and
on hand-made members that share a written storage."""
import sys
from pathlib import Path

import pytest
import torch

from pypto.runtime import RunConfig, run
from pypto.runtime import gangs as G
from pypto.runtime import simulator as S

import kernels_batch as KB
import kernels_lockstep as KL

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import model_kernels as M  # noqa: E402
from model_cases import qwen3_case  # noqa: E402


class _T:
    """A stand-in task: its arguments and their tags."""

    def __init__(self, args, tags):
        self.args, self.tags = args, tags


def test_a_shared_written_storage_is_not_disjoint():
    out, a = torch.zeros(64, 64), torch.zeros(64, 64)
    w = [_T([a, out[8 * k:8 * k + 8]], ["INPUT", "OUTPUT_EXISTING"]) for k in range(4)]
    assert not G._args_disjoint(w, [0, 0, 1, 1])     # two groups write one storage
    assert G._args_disjoint(w, [0, 0, 0, 0])         # one group: nothing to compare
    # a shared read-only input and separate outputs: disjoint
    outs = [torch.zeros(8, 64) for _ in range(4)]
    r = [_T([a, o, 1.5], ["INPUT", "OUTPUT_EXISTING", "SCALAR"]) for o in outs]
    assert G._args_disjoint(r, [0, 1, 2, 3])
    # a group reading what another may write (INOUT, NO_DEP count as writes)
    for tag in ("INOUT", "NO_DEP", "OUTPUT"):
        x = [_T([a], [tag]), _T([a[8:]], ["INPUT"])]
        assert not G._args_disjoint(x, [0, 1])
    # views of one storage that are not views of one another (as_strided of the storage's tensor
    # and a slice) are still one storage
    v1, v2 = out.as_strided((8, 64), (64, 1), 0), out[8:16]
    assert not G._args_disjoint([_T([v1], ["OUTPUT_EXISTING"]), _T([v2], ["INPUT"])], [0, 1])


def _disjoint_by_storage(tasks, groups):
    """The pre-check's answer, straightforwardly (a storage look-up per argument)."""
    owners, written = {}, set()
    for t, g in zip(tasks, groups):
        for a, tag in zip(t.args, t.tags):
            if isinstance(a, torch.Tensor):
                key = a.untyped_storage().data_ptr()
                owners.setdefault(key, set()).add(g)
                if tag in ("OUTPUT", "INOUT", "OUTPUT_EXISTING", "NO_DEP"):
                    written.add(key)
    return all(len(owners[k]) == 1 for k in written)


@pytest.mark.parametrize("seed", range(6))
def test_views_whose_bases_have_no_python_object_are_told_apart(seed):
    # a view of a temporary: its base's Python object is made on each ``_base`` and freed at once,
    # and the next one may get the same id -- the pre-check must still see every storage
    import random

    rnd = random.Random(seed)
    for _ in range(20):
        storages = [torch.zeros(6, 16)[:] for _ in range(4)]   # views of tensors already freed
        tasks, groups = [], []
        for m in range(rnd.randint(2, 6)):
            args, tags = [], []
            for _ in range(rnd.randint(1, 3)):
                s = rnd.choice(storages)
                args.append(s.view(3, 32)[rnd.randint(0, 2):][:1].view(16, 2)[::2])   # views of views
                tags.append(rnd.choice(["INPUT", "INPUT", "OUTPUT_EXISTING"]))
            tasks.append(_T(args, tags))
            groups.append(rnd.randint(0, 2))
        assert G._args_disjoint(tasks, groups) == _disjoint_by_storage(tasks, groups)


def test_what_the_pre_check_cannot_see_is_not_called_disjoint():
    a = torch.zeros(8, 8)
    assert not G._args_disjoint([_T([[a]], ["INPUT"]), _T([a], ["OUTPUT_EXISTING"])], [0, 1])   # a container
    assert not G._args_disjoint([_T([a, a], ["INPUT"]), _T([a], ["INPUT"])], [0, 1])   # tags missing
    assert not G._args_disjoint([_T([a], None), _T([a], ["INPUT"])], [0, 1])


def _qwen3():
    return qwen3_case(kv_heads=2, inter=256, seed=4)


def _paged():
    batch, heads, D, B, ctx = 8, 16, 128, 128, 384
    mb = ctx // B
    q = torch.randn(batch * heads, D, dtype=torch.bfloat16)
    k = torch.randn(batch * mb * B, D, dtype=torch.bfloat16)
    table = torch.randperm(batch * mb, generator=torch.Generator().manual_seed(1)).to(torch.int32)
    lens = torch.full((batch,), ctx, dtype=torch.int32)
    return M.paged_attention(batch, heads, D, B, mb, 16), (q, k, torch.randn_like(k), table, lens, 0.1,
                                                          torch.zeros(batch * heads, D))


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("which", ["qwen3", "paged", "rows"])
def test_the_pre_check_never_hides_a_conflict_in_real_gangs(monkeypatch, which, batch):
    prog, args = {"qwen3": _qwen3, "paged": _paged,
                  "rows": lambda: (KB.Rows, (torch.randn(128, 64), torch.zeros(128, 64)))}[which]()
    seen = {"calls": 0, "pre": 0}
    exact = G.conflict

    def both(gm, plans, groups=None, tasks=None):
        got = exact(gm, plans, groups, tasks)
        want = exact(gm, plans, groups)   # the plans alone
        assert got == want
        seen["calls"] += 1
        seen["pre"] += tasks is not None and len(set(groups)) > 1 and G._args_disjoint(tasks, groups)
        return got

    monkeypatch.setattr(S, "conflict", both)
    # the batches' own shortcut (runtime.batch.batches_disjoint) answers first for gangs of batched
    # tasks; off here, so that every gang reaches the pre-check under test
    monkeypatch.setattr(S, "batches_disjoint", lambda members: False)
    run(prog, *args, config=RunConfig(platform="a2a3sim", sim_seed=0, sim_batch=batch))
    if which == "rows" and batch:
        # one batched task: every gang is runs of it, which the scheduler gangs without a check
        # (test_a_gang_of_one_batched_task_is_not_checked)
        assert seen["calls"] == 0 and len(S._LAST_RUNTIME[0].gangs) > 0
        return
    assert seen["calls"] > 0
    assert seen["pre"] > 0   # the pre-check answered for some gang of several groups


def test_a_gang_of_one_batched_task_is_not_checked(monkeypatch):
    """The member runs of one batched task touch disjoint memory (the batching proved it): a gang of
    them alone skips both the footprint check and the batches' shortcut, and the result is the
    task-by-task one."""
    calls = []

    def spy(*a, **k):
        calls.append(a)
        return False

    monkeypatch.setattr(S, "conflict", spy)
    monkeypatch.setattr(S, "batches_disjoint", spy)
    x = torch.randn(128, 64)
    out = torch.zeros(128, 64)
    run(KB.Rows, x, out, config=RunConfig(platform="a2a3sim", sim_seed=0))
    rt = S._LAST_RUNTIME[0]
    assert rt.gangs and not calls
    ref = torch.zeros(128, 64)
    run(KB.Rows, x, ref, config=RunConfig(platform="a2a3sim", sim_seed=0, sim_batch=False, sim_lockstep=False))
    assert torch.equal(out.view(torch.int32), ref.view(torch.int32))


@pytest.mark.parametrize("kernel,shape", [("overlapping_writes", (264, 64)), ("column_blocks", (64, 1024)),
                                          ("softmax_rows", (512, 256))])
def test_task_by_task_gangs_keep_their_answers(monkeypatch, kernel, shape):
    # single tasks (one group each): overlapping writes never ganged, column blocks ganged, as before
    calls = []
    exact = G.conflict

    def spy(gm, plans, groups=None, tasks=None):
        r = exact(gm, plans, groups, tasks)
        calls.append((r, exact(gm, plans, groups)))
        return r

    monkeypatch.setattr(S, "conflict", spy)
    getattr(KL, kernel)(torch.randn(*shape), torch.zeros(*shape),
                        config=RunConfig(sim_seed=0, sim_batch=False))
    rt = S._LAST_RUNTIME[0]
    assert all(a == b for a, b in calls)
    assert (rt.gangs == []) == (kernel == "overlapping_writes")
