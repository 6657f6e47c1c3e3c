"""Batched orchestration over rank-reducing views (``x[b]``, ``out[:, j]``: a full-rank slice and a
``tensor.reshape`` dropping the unit axis): such loops batch, bit-identical to the task-by-task
form and to torch; reshapes that are not unit-axis views, reads of a written tensor and writes
that race between iterations stay task by task."""
from pathlib import Path

import pytest
import torch

from pypto.driver.build import compile as ir_compile
from pypto.runtime import RunConfig, run
from pypto.runtime import simulator as S
from pypto.runtime.batch import BatchRuntime, Sliced

import kernels_batch_views as K


def _run_both(program, args, seed=0):
    """Outputs and runtimes of ``program`` batched and task by task; every tensor argument comes
    out bit for bit the same."""
    sets, rts = [], []
    for batch in (True, False):
        a = [x.clone() for x in args]
        run(program, *a, config=RunConfig(platform="a2a3sim", sim_seed=seed, sim_batch=batch))
        sets.append(a)
        rts.append(S._LAST_RUNTIME[0])
    for x, y in zip(*sets):
        assert torch.equal(x.view(torch.int32), y.view(torch.int32))
    return sets[0][-1], rts


def _batched(rt) -> list:
    return [t for t in rt.tasks if t.members is not None]


def _orchestration(program) -> str:
    c = ir_compile(program, **RunConfig(platform="a2a3sim").compile_options())
    return Path(c.output_dir, c.meta["orchestration"]).read_text()


@pytest.mark.parametrize("seed", [0, 3])
def test_rank_reducing_reads_and_writes_batch_with_the_same_bits(seed):
    x = torch.randn(8, 16, 64)
    out, (rb, rt) = _run_both(K.Views, (x, torch.full((8, 16, 64), -7.0)), seed)
    assert "_rt.breshape(" in _orchestration(K.Views)
    # one alloc and two kernel tasks of 8 members; task by task: 8 allocs and 16 kernel tasks
    assert [len(t.members) for t in _batched(rb)] == [8, 8] and len(rb.tasks) == 3
    assert not _batched(rt) and len(rt.tasks) == 24
    want = (x * x + 1.0) * (x * x + 1.0) + 1.0
    assert torch.equal(out, want)


def test_a_dropped_middle_axis_batches_strided_views():
    x = torch.randn(8, 16, 64)
    out, (rb, _) = _run_both(K.Columns, (x, torch.zeros(8, 16, 64)))
    assert [len(t.members) for t in _batched(rb)] == [16]
    assert torch.equal(out, x * 0.5 - 2.0)


def test_breshape_views_are_the_members_elements_and_untagged():
    rt = None   # (breshape reads no runtime state)
    x = torch.arange(8 * 16 * 64, dtype=torch.float32).view(8, 16, 64)
    views = [x[:, j:j + 1, :] for j in range(16)]
    for v in views:
        v._pypto_slice = (x, v.storage_offset(), tuple(v.shape))   # as bslice tags its slices
    got = BatchRuntime.breshape(rt, 16, list(range(16)), views, [8, 64])
    assert got.__class__ is Sliced and got.ats == [j * 64 for j in range(16)]
    for j, g in enumerate(got):
        assert g.data_ptr() == x[:, j].data_ptr() and torch.equal(g, x[:, j]) and g.stride() == x[:, j].stride()
        assert not hasattr(g, "_pypto_slice")   # a tag of the [8, 1, 64] slice would misdescribe it
    assert got.lo == 0 and got.hi == 7 * 1024 + 15 * 64 + 64
    some = BatchRuntime.breshape(rt, 16, [1, 4], views, [8, 64])
    assert some[0] is None and torch.equal(some[4], x[:, 4]) and some.__class__ is list


@pytest.mark.parametrize("program", [K.Regroup, K.ReadsWritten, K.SameRow])
def test_loops_the_proof_refuses_stay_task_by_task(program):
    assert "submit_batch" not in _orchestration(program)


def test_refused_loops_compute_the_per_task_result():
    x = torch.randn(8, 16, 64)
    out = torch.zeros(8, 16, 64)
    run(K.Regroup, x, out, config=RunConfig(platform="a2a3sim", sim_seed=0))
    assert torch.equal(out, x * 3.0)
    out = torch.randn(8, 16, 64)
    want = out.clone()
    for b in range(8):
        want[b] = (want[(b + 1) % 8] ** 2 + 1.0) ** 2 + 1.0
    run(K.ReadsWritten, x, out, config=RunConfig(platform="a2a3sim", sim_seed=0))
    assert torch.equal(out, want)


def test_a_race_on_one_reshaped_row_is_not_batched():
    x = torch.randn(8, 16, 64)
    out, (rb, _) = _run_both(K.SameRow, (x, torch.zeros(8, 16, 64)))
    assert not _batched(rb) and torch.equal(out[0], x[7] * x[7] + 1.0) and not out[1:].any()
    out, (rb, _) = _run_both(K.HalfRows, (x, torch.zeros(8, 16, 64)))
    assert "_rt.bguard(" in _orchestration(K.HalfRows)
    assert not _batched(rb) and rb.guards_refused == 1
    assert torch.equal(out[:4], x[1::2] * x[1::2] + 1.0) and not out[4:].any()


def test_a_jit_loop_over_views_batches():
    x = torch.randn(8, 16, 64)
    outs = []
    for batch in (True, False):
        out = torch.full((8, 16, 64), 3.0)
        K.jit_rows(x, out, config=RunConfig(platform="a2a3sim", sim_batch=batch))
        outs.append(out)
        members = [len(t.members) for t in _batched(S._LAST_RUNTIME[0])]
        assert members == ([8] if batch else [])
    assert torch.equal(outs[0].view(torch.int32), outs[1].view(torch.int32))
    assert torch.equal(outs[0], x * x - x)
