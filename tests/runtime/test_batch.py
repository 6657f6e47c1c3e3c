"""Batched orchestration (pypto.codegen.batch, pypto.runtime.batch): a loop with provably independent
iterations submits one task per call site and step for all of them; the results are bit-identical
to submitting task by task, loops the proof refuses run task by task, and the checks that need single
tasks (ring deadlocks, the race detector, seeded schedules) keep working."""
import math
import sys
from pathlib import Path

import pytest
import torch

from pypto.driver.build import compile as ir_compile
from pypto.errors import SimulationError
from pypto.runtime import RunConfig, run
from pypto.runtime import simulator as S

import kernels_batch as K

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import model_kernels as M  # noqa: E402
from model_cases import qwen3_case  # noqa: E402


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int32) if t.dtype == torch.float32 else t.view(torch.int16)


def _run_both(program, args, out_index=-1, seed=0, **cfg):
    """Run ``program`` batched and task by task on clones of ``args``: (outputs, runtimes); every
    tensor argument (InOut ones included) must come out bit for bit the same."""
    outs, rts, sets = [], [], []
    for batch in (True, False):
        a = [x.clone() if isinstance(x, torch.Tensor) else x for x in args]
        run(program, *a, config=RunConfig(platform="a2a3sim", sim_seed=seed, sim_batch=batch, **cfg))
        outs.append(a[out_index])
        rts.append(S._LAST_RUNTIME[0])
        sets.append(a)
    for x, y in zip(*sets):
        if isinstance(x, torch.Tensor):
            assert torch.equal(x.view(torch.uint8), y.view(torch.uint8))
    return outs, rts


def _batched_tasks(rt) -> int:
    return sum(1 for t in rt.tasks if t.members is not None)


def _orchestration(program) -> str:
    c = ir_compile(program, **RunConfig(platform="a2a3sim").compile_options())
    return Path(c.output_dir, c.meta["orchestration"]).read_text()


def test_independent_blocks_run_batched_with_the_same_bits():
    a = torch.randn(128, 64)
    (ob, ot), (rb, rt) = _run_both(K.Rows, (a, torch.zeros(128, 64)))
    assert torch.equal(_bits(ob), _bits(ot))
    assert torch.equal(ob, torch.exp(torch.exp(a * 0.5) * 0.5))
    # per-task: 8 allocs + 16 kernel tasks; batched: one alloc and two kernel tasks of 8 members each
    assert len(rt.tasks) == 24 and len(rb.tasks) == 3 and _batched_tasks(rb) == 2
    assert rb.gangs and max(map(len, rb.gangs)) == 8


def test_nested_independent_loops_batch_together():
    a = torch.randn(256, 64)
    steps = torch.full((4,), 3, dtype=torch.int32)
    (ob, ot), (rb, _) = _run_both(K.Nested, (a, steps, torch.zeros(256, 64)))
    assert torch.equal(_bits(ob), _bits(ot))
    assert all(len(t.members) == 16 for t in rb.tasks if t.members is not None)


@pytest.mark.parametrize("seed", [0, 5])
def test_members_leaving_an_inner_loop_at_different_steps(seed):
    a = torch.randn(128, 64)
    steps = torch.tensor([3, 0, 1, 5, 2, 2, 4, 1], dtype=torch.int32)
    (ob, ot), (rb, _) = _run_both(K.Ragged, (a, steps, torch.zeros(128, 64)), seed=seed)
    assert torch.equal(_bits(ob), _bits(ot))
    # step j's batch has the members with more than j steps
    accs = [len(t.members) for t in rb.tasks if t.kernel == "k_acc"]
    assert accs == [sum(1 for s in steps.tolist() if s > j) for j in range(5)]


@pytest.mark.parametrize("program", [K.Overlap, K.ReadsBack, K.Whole])
def test_loops_the_proof_refuses_run_task_by_task(program):
    assert "submit_batch" not in _orchestration(program)


def test_refused_loops_compute_what_they_did():
    a = torch.randn(128, 64)
    out = torch.zeros(128, 64)
    run(K.Overlap, a, out, config=RunConfig(platform="a2a3sim", sim_seed=0))
    want = torch.zeros(128, 64)
    for i in range(8):
        want[8 * i:8 * i + 16] = torch.exp(a[16 * i:16 * i + 16] * 0.5)
    assert torch.equal(out, want)


def _paged(batch, ctx, mb, q_rows=16, heads=16, lens=None):
    torch.manual_seed(0)
    D = B = 128
    q = torch.randn(batch * heads, D, dtype=torch.bfloat16)
    k = torch.randn(batch * mb * B, D, dtype=torch.bfloat16)
    v = torch.randn_like(k)
    table = torch.randperm(batch * mb, generator=torch.Generator().manual_seed(1)).to(torch.int32)
    lens = torch.full((batch,), ctx, dtype=torch.int32) if lens is None else lens
    prog = M.paged_attention(batch, heads, D, B, mb, q_rows)
    return prog, (q, k, v, table, lens, 1.0 / math.sqrt(D), torch.zeros(batch * heads, D))


def test_paged_attention_decode_same_bits_also_with_ragged_lengths():
    prog, args = _paged(8, 384, 4)
    (ob, ot), (rb, rt) = _run_both(prog, args)
    assert torch.equal(_bits(ob), _bits(ot)) and ob.abs().sum() > 0
    assert _batched_tasks(rb) == 2 + 4 * 3 and _batched_tasks(rt) == 0
    prog, args = _paged(8, 0, 4, lens=torch.tensor([128, 384, 0, 512, 256, 128, 512, 384], dtype=torch.int32))
    (ob, ot), _ = _run_both(prog, args)
    assert torch.equal(_bits(ob), _bits(ot)) and ob[32:48].isnan().all()   # (request 2: no keys, 0 / 0)


def test_qwen3_layer_same_bits():
    prog, args = qwen3_case(kv_heads=1, inter=512, seed=3)
    outs, (rb, _) = _run_both(prog, args)
    assert torch.equal(_bits(outs[0]), _bits(outs[1])) and outs[0].abs().max() > 0
    assert _batched_tasks(rb) > 0


def test_sim_seed_reproduces_a_batched_schedule_and_seeds_agree_on_bits():
    prog, args = _paged(8, 256, 2)
    outs = {}
    for seed in (1, 1, 2):
        a = [x.clone() if isinstance(x, torch.Tensor) else x for x in args]
        run(prog, *a, config=RunConfig(platform="a2a3sim", sim_seed=seed))
        rt = S._LAST_RUNTIME[0]
        outs.setdefault(seed, []).append((a[-1], rt.time, rt.gangs))
    (o1, t1, g1), (o1b, t1b, g1b) = outs[1]
    assert torch.equal(_bits(o1), _bits(o1b)) and t1 == t1b and g1 == g1b
    assert torch.equal(_bits(o1), _bits(outs[2][0][0]))


def _chain_want(a):
    x = a
    for _ in range(4):
        x = torch.exp(x * 0.5)
    return x


@pytest.mark.parametrize("batch", [True, False])
def test_ring_deadlock_of_one_iteration_is_reported_as_task_by_task(batch):
    # an iteration's scope holds 7 task slots on ring 1 (three allocs, four kernel tasks)
    a = torch.randn(128, 64)
    cfg = dict(platform="a2a3sim", sim_seed=0, sim_batch=batch)
    with pytest.raises(SimulationError, match=r"ring 1 deadlocks: its open scopes hold 5 task slots"):
        run(K.Chain, a, torch.zeros(128, 64), config=RunConfig(**cfg, ring_task_window=[16, 4, 16, 16]))
    # 7 slots per iteration fit in 8, although the batch keeps all 8 iterations' scopes open at once
    out = torch.zeros(128, 64)
    run(K.Chain, a, out, config=RunConfig(**cfg, ring_task_window=[16, 8, 16, 16]))
    assert torch.equal(out, _chain_want(a))
    assert _batched_tasks(S._LAST_RUNTIME[0]) == (4 if batch else 0)


def test_batched_ring_holdings_are_counted_per_member():
    """Holdings inside batched scopes (all members at once, or some: ragged inner loops), per
    member as its iteration alone would hold them, on ring 1 and on ring 3 (depths 3 and deeper
    share it); the first member over the ring's size reports the deadlock, with its own count."""
    p = S.get_platform("a2a3sim")
    rt = S.Runtime(p, {}, 0, batch=True)
    big = 1 << 30
    rt._rings = ([big] * 4, [big] * 4, [big, 7, big, 12])
    assert rt.batching(4, [], [])
    with rt.batch_scope([0, 1, 2, 3]):
        rt._hold(2, 2)
        with rt.batch_scope([0, 1, 2, 3]):
            with rt.batch_scope([0, 2, 3]):         # depth 3: ring 3
                rt._hold(2, 3)
                with rt.batch_scope([0, 1, 2, 3]):  # depth 4: ring 3 too
                    rt._hold(2, 4)
                    assert rt._bring3.values(2) == [7, 4, 7, 7]
                    with rt.batch_scope([3]):
                        rt._hold(2, 5)              # member 3: 3 + 4 + 5 = 12, the ring's size
                        assert rt._bring3.values(2) == [7, 4, 7, 12]
                        with pytest.raises(SimulationError, match="ring 3 deadlocks: its open scopes hold 13 dependency"):
                            rt._hold(2, 1)
        with pytest.raises(SimulationError, match="ring 1 deadlocks: its open scopes hold 8 dependency"):
            rt._hold(2, 6)                           # every member: 2 + 6 on ring 1
    rt2 = S.Runtime(p, {}, 0, batch=True)
    rt2._rings = ([big] * 4, [big] * 4, [big, big, big, 9])
    assert rt2.batching(3, [], [])
    with rt2.batch_scope([0, 1, 2]), rt2.batch_scope([0, 1, 2]):
        for active, amount in (([0, 2], 4), ([1], 2), ([0, 1, 2], 1)):
            with rt2.batch_scope([0, 1, 2]), rt2.batch_scope(active):
                rt2._hold(2, amount)
                rt2._hold(2, amount)
            assert rt2._bring3.values(2) == [0, 0, 0]      # a closed scope gives its part back
        with rt2.batch_scope([0, 1, 2]):
            rt2._hold(2, 9)
            with pytest.raises(SimulationError, match="ring 3 deadlocks: its open scopes hold 10 dependency"):
                rt2._hold(2, 1)
    rt3 = S.Runtime(p, {}, 0, batch=True)
    rt3._rings = ([big] * 4, [big, big, 10, big], [big] * 4)
    assert rt3.batching(3, [], [])
    with rt3.batch_scope([0, 1, 2]):
        with rt3.batch_scope([1, 2]):                # depth 2, some members: ring 2
            rt3._hold(1, 4)
            rt3._hold(1, 5)
            assert rt3._bheld[2].values(1) == [0, 9, 9]
            with pytest.raises(SimulationError, match="ring 2 deadlocks: its open scopes hold 11 heap bytes"):
                rt3._hold(1, 2)
        with rt3.batch_scope([0, 1, 2]):             # the depth's holdings went with the scope
            rt3._hold(1, 10)
            with pytest.raises(SimulationError, match="ring 2 deadlocks: its open scopes hold 11 heap bytes"):
                rt3._hold(1, 1)


@pytest.mark.parametrize("field, small, enough", [("ring_task_window", 8, 16), ("ring_heap", 2048, 4096)])
def test_ragged_attention_ring_deadlock_is_reported_as_task_by_task(field, small, enough, monkeypatch):
    """The Qwen3 layer with requests of different lengths (members leave the page loop at
    different steps): ring 2 deadlocks at the same size, with the same message, in both forms."""
    prog, args = qwen3_case()
    args = list(args)
    args[10] = torch.tensor([256, 128, 256, 200, 129, 256, 64, 255], dtype=torch.int32)
    msgs, outs = {}, {}
    batched = []
    submit_batch = S.Runtime.submit_batch
    monkeypatch.setattr(S.Runtime, "submit_batch", lambda rt, *a, **k: batched.append(a[1]) or submit_batch(rt, *a, **k))
    for batch in (True, False):
        def go(v):
            a = [x.clone() if isinstance(x, torch.Tensor) else x for x in args]
            big = 1 << 24
            run(prog, *a, config=RunConfig(platform="a2a3sim", sim_seed=0, sim_batch=batch,
                                           **{field: [big, big, v, big]}))
            return a
        with pytest.raises(SimulationError, match="ring 2 deadlocks") as e:
            go(small)
        msgs[batch] = str(e.value)
        outs[batch] = go(enough)
        if batch:   # the page loop ran batched, some steps with only some members
            assert any(len(a) == 8 for a in batched) and any(0 < len(a) < 8 for a in batched)
            batched.clear()
    assert not batched
    assert msgs[True] == msgs[False]
    assert all(torch.equal(_bits(x), _bits(y)) for x, y in zip(outs[True], outs[False]) if isinstance(x, torch.Tensor))


@pytest.mark.parametrize("batch", [True, False])
def test_heap_accounting_is_per_iteration(batch):
    a = torch.randn(128, 64)
    cfg = dict(platform="a2a3sim", sim_seed=0, sim_batch=batch)
    with pytest.raises(SimulationError, match=r"ring 1 deadlocks: its open scopes hold 12288 heap bytes"):
        run(K.Chain, a, torch.zeros(128, 64), config=RunConfig(**cfg, ring_heap=[1 << 20, 8192, 1 << 20, 1 << 20]))
    out = torch.zeros(128, 64)
    run(K.Chain, a, out, config=RunConfig(**cfg, ring_heap=[1 << 20, 16384, 1 << 20, 1 << 20]))
    assert torch.equal(out, _chain_want(a))


def test_tools_that_read_single_tasks_get_them():
    from pypto.debug.races import detect_races

    prog, args = _paged(4, 256, 2)
    c = ir_compile(prog, **RunConfig(platform="a2a3sim").compile_options())
    report = detect_races(c, list(args))
    assert not report.races and report.tasks == 4 * (2 + 4 * 2)
    # deps.json needs single tasks: the run is task by task
    run(prog, *[x.clone() if isinstance(x, torch.Tensor) else x for x in args],
        config=RunConfig(platform="a2a3sim", sim_seed=0, enable_dep_gen=True))
    assert _batched_tasks(S._LAST_RUNTIME[0]) == 0


def test_the_runtime_guard():
    p = S.get_platform("a2a3sim")
    rt = S.Runtime(p, {}, 0, batch=True)
    t = torch.zeros(8, 8)
    assert rt.batching(4, [t], [torch.zeros(2)])
    rt._bn = 0
    assert not rt.batching(4, [t, t[2:]], [])            # two written variables, one buffer
    assert not rt.batching(4, [t], [t[:1]])              # a written buffer also read
    assert not rt.batching(1, [t], [])                   # one iteration: nothing to batch
    assert not S.Runtime(p, {}, 0).batching(4, [t], [])  # tools' runtimes never batch
    rt.on_complete = print
    assert not rt.batching(4, [t], [])


def test_sim_batch_is_validated():
    with pytest.raises(ValueError, match="sim_batch must be a bool"):
        RunConfig(sim_batch=1)


def test_gang_accesses_of_member_views_of_one_buffer_are_one_copy():
    from pypto.ops import support

    whole = torch.randn(6, 16, 64)
    members = list(whole.unbind(0))
    plans = [(m, [0, 0], None) for m in members]
    runs = support._gang_runs(torch.empty(6, 16, 64), plans, 0, 1, "tile.load")
    assert [(lo, hi) for lo, hi, _ in runs] == [(0, 6)] and torch.equal(runs[0][2], whole)
    # slices of one tensor at evenly spaced rows; a member out of order ends the run
    big = torch.randn(128, 64)
    views = [big[16 * i:16 * i + 16] for i in (0, 1, 2, 5, 6)]
    dst = torch.empty(5, 16, 64)
    support.gang_load_into(dst, [(v, [0, 0], None) for v in views])
    assert all(torch.equal(dst[k], views[k]) for k in range(5))
    assert [(lo, hi) for lo, hi, _ in support._gang_runs(dst, [(v, [0, 0], None) for v in views], 0, 1, "x")] == \
        [(0, 3), (3, 5)]      # two runs: two copies (three or more: one gather, test_gang_gather_*)
    tiles = torch.randn(5, 16, 64)
    support.gang_store(tiles, [([0, 0], v, None) for v in views])
    assert all(torch.equal(views[k], tiles[k]) for k in range(5))
    # a member's region outside its own tensor (though inside the buffer) is its own access's error
    with pytest.raises(SimulationError, match="out of bounds"):
        support.gang_load_into(torch.empty(2, 16, 64), [(members[0], [0, 0], None), (members[1], [8, 0], None)])


# ---- loops carrying a tensor through kernels that store into all of it (``out = k(..., i, out)``)

def test_loop_carrying_out_runs_batched_with_the_same_bits():
    a = torch.randn(128, 64)
    (ob, ot), (rb, rt) = _run_both(K.CarriedRows, (a, torch.zeros(128, 64)))
    assert torch.equal(ob, torch.exp(a * 0.5))
    assert len(rt.tasks) == 8 and _batched_tasks(rt) == 0
    assert len(rb.tasks) == 1 and len(rb.tasks[0].members) == 8 and max(map(len, rb.gangs)) == 8


def test_kernel_loop_stores_and_two_call_sites_batch():
    a = torch.randn(128, 64)
    (ob, _), (rb, _) = _run_both(K.CarriedKernelLoop, (a, torch.zeros(128, 64), torch.zeros(128, 64)))
    assert torch.equal(ob, a + 1.0)
    assert [len(t.members) for t in rb.tasks] == [4, 4]


def test_carried_through_nested_loops_batches_the_outer_one():
    a = torch.randn(128, 64)
    (ob, _), (rb, _) = _run_both(K.CarriedNested, (a, torch.zeros(128, 64)))
    assert torch.equal(ob, torch.exp(a * 0.5))
    assert [len(t.members) for t in rb.tasks] == [4, 4]   # one batch per inner step


@pytest.mark.parametrize("program", [K.CarriedOverlap, K.CarriedReadModifyWrite, K.CarriedAtomic,
                                     K.CarriedDynamicKernelLoop, K.CarriedReadInLoop])
def test_carried_loops_the_proof_refuses_run_task_by_task(program):
    # overlapping bands (WAW), a kernel that loads what it stores, an atomic store, an offset from
    # a kernel loop of run-time length, and a loop that also reads the carried tensor
    assert "submit_batch" not in _orchestration(program)


def test_refused_carried_loop_computes_what_it_did():
    a = torch.randn(128, 64)
    out = torch.zeros(136, 64)
    run(K.CarriedOverlap, a, out, config=RunConfig(platform="a2a3sim", sim_seed=0))
    want = torch.zeros(136, 64)
    for i in range(8):
        want[8 * i:8 * i + 16] = a[16 * i:16 * i + 16]
    assert torch.equal(out, want)


def _jit_modes(kernel, args):
    """Outputs and runtimes of ``kernel`` batched, task by task, and without lockstep gangs."""
    res = []
    for cfg in (dict(), dict(sim_batch=False), dict(sim_lockstep=False)):
        a = [x.clone() for x in args]
        kernel(*a, config=RunConfig(platform="a2a3sim", sim_seed=0, **cfg))
        res.append((a[-1], S._LAST_RUNTIME[0]))
    return res


@pytest.mark.parametrize("special", [False, True])
def test_jit_mixed_kernel_loop_carrying_out_same_bits(special):
    torch.manual_seed(3)
    q = torch.randn(256, 32, dtype=torch.float16)
    k = (torch.randn(32, 64) * 0.1).to(torch.float16)
    if special:   # NaN, inf, -inf, subnormal, -0 in the scores' operands
        q[3, 5], q[40, 0], q[77, 31], q[100, 2], q[200, 9] = float("nan"), float("inf"), -float("inf"), 3e-8, -0.0
    res = _jit_modes(K.mm_softmax_rows, (q, k, torch.zeros(256, 64)))
    for out, _ in res[1:]:
        assert torch.equal(_bits(res[0][0]), _bits(out))
    rb = res[0][1]
    assert len(rb.tasks) == 2 and [len(t.members) for t in rb.tasks if t.members] == [16]   # alloc + kernel
    assert _batched_tasks(res[1][1]) == 0 and len(res[1][1].tasks) == 32
    if not special:
        s = q.float() @ k.float()
        e = torch.exp(s - s.amax(-1, keepdim=True))
        torch.testing.assert_close(res[0][0], e / e.sum(-1, keepdim=True), rtol=1e-5, atol=1e-6)


def test_jit_vector_loop_carrying_out_same_bits():
    a = torch.randn(256, 64)
    res = _jit_modes(K.softmax_rows, (a, torch.zeros(256, 64)))
    for out, _ in res[1:]:
        assert torch.equal(_bits(res[0][0]), _bits(out))
    assert _batched_tasks(res[0][1]) == 1 and _batched_tasks(res[1][1]) == 0
    torch.testing.assert_close(res[0][0], torch.softmax(a, -1), rtol=1e-5, atol=1e-6)


def test_stacked_allocations_are_zero_and_lazy_only_when_large():
    from pypto.runtime.batch import zeros_untouched

    small = zeros_untouched([4, 8], torch.float16)
    big = zeros_untouched([130, 65536], torch.float32)   # > 32 MiB: anonymous memory, faulted in on touch
    assert small.dtype == torch.float16 and small.shape == (4, 8) and not small.any()
    assert big.shape == (130, 65536) and big.is_contiguous() and big.dtype == torch.float32
    assert not big[::17].any()
    big[129, -1] = 2.0
    assert big.sum() == 2.0


def test_carried_loop_inside_an_unprovable_loop_batches_at_each_step():
    a = torch.randn(128, 64)
    (ob, _), (rb, _) = _run_both(K.CarriedRepeated, (a, torch.zeros(128, 64)))
    assert torch.equal(ob, torch.exp(a * 0.5))
    assert [len(t.members) for t in rb.tasks] == [8, 8, 8]

# ---------------------------------------------------------------- writes at data-dependent offsets

def _scatter_want(a, table, cache, pairs):
    want = cache.clone()
    for i, row in pairs:   # iteration order: the per-task semantics
        want[row] = want[row] * 0.5 + a[i]
    return want


def test_data_dependent_writes_batch_when_the_guard_proves_them_disjoint():
    assert "_rt.bguard(" in _orchestration(K.Scatter)
    a, cache = torch.randn(16, 64), torch.randn(32, 64)
    table = torch.randperm(32, generator=torch.Generator().manual_seed(2))[:16].to(torch.int32)
    outs, (rb, rt) = _run_both(K.Scatter, (a, table, cache), out_index=2)
    assert torch.equal(_bits(outs[0]), _bits(outs[1]))
    assert torch.equal(outs[0], _scatter_want(a, table, cache, enumerate(table.tolist())))
    assert _batched_tasks(rb) == 1 and len(rb.tasks[0].members) == 16 and rb.guards_refused == 0
    assert _batched_tasks(rt) == 0


@pytest.mark.parametrize("seed", [0, 3])
def test_overlapping_data_dependent_writes_run_task_by_task(seed):
    # rows 5 and 9 are each updated twice (read-modify-write: the order decides the result)
    a, cache = torch.randn(16, 64), torch.randn(32, 64)
    table = torch.tensor([5, 1, 9, 5, 2, 3, 4, 9, 6, 7, 8, 10, 11, 12, 13, 14], dtype=torch.int32)
    outs, (rb, rt) = _run_both(K.Scatter, (a, table, cache), out_index=2, seed=seed)
    assert torch.equal(_bits(outs[0]), _bits(outs[1]))
    assert torch.equal(outs[0], _scatter_want(a, table, cache, enumerate(table.tolist())))
    assert _batched_tasks(rb) == 0 and rb.guards_refused == 1


def test_the_guard_replays_inner_loops_with_data_dependent_trip_counts():
    a, cache = torch.randn(16, 64), torch.randn(32, 64)
    counts = torch.tensor([3, 0, 4, 2], dtype=torch.int32)
    table = torch.tensor([0, 7, 3, 0, 0, 0, 0, 0, 31, 8, 2, 1, 30, 29, 0, 0], dtype=torch.int32)
    pairs = [(4 * b + j, int(table[4 * b + j])) for b in range(4) for j in range(int(counts[b]))]
    outs, (rb, _) = _run_both(K.ScatterRagged, (a, counts, table, cache), out_index=3)
    assert torch.equal(_bits(outs[0]), _bits(outs[1]))
    assert torch.equal(outs[0], _scatter_want(a, table, cache, pairs))
    assert _batched_tasks(rb) == 4 and rb.guards_refused == 0   # steps j = 0..3, members still in
    # request 3's second row is request 0's first (row 0; the unused entries are never looked at)
    table[13] = 0
    pairs = [(4 * b + j, int(table[4 * b + j])) for b in range(4) for j in range(int(counts[b]))]
    outs, (rb, _) = _run_both(K.ScatterRagged, (a, counts, table, cache), out_index=3)
    assert torch.equal(outs[0], _scatter_want(a, table, cache, pairs))
    assert rb.guards_refused == 1   # the outer loop; the per-task form's inner loops batch alone
    assert all(len(t.members) <= 4 for t in rb.tasks if t.members is not None)


def test_qwen3_kv_cache_write_is_one_batch_per_cache():
    T, NKV, mb = 8, 2, 2   # (model_cases.qwen3_case: 8 tokens, context 256 in pages of 128)
    prog, args = qwen3_case(kv_heads=NKV, inter=256, seed=4)
    outs, (rb, _) = _run_both(prog, args)
    assert torch.equal(_bits(outs[0]), _bits(outs[1]))
    writes = [t for t in rb.tasks if t.kernel in ("rope_k", "cast_v")]
    assert [len(t.members) for t in writes] == [T * NKV, T * NKV] and rb.guards_refused == 0
    # two requests sharing a page (a corrupt table): the write loop runs task by task, same bits
    bad = list(args)
    bad[9] = args[9].clone()
    bad[9][mb * 3 + 1] = bad[9][1]   # request 3's last page is request 0's
    outs, (rb, _) = _run_both(prog, tuple(bad))
    assert torch.equal(_bits(outs[0]), _bits(outs[1])) and rb.guards_refused == 1
    assert len([t for t in rb.tasks if t.kernel == "rope_k"]) == T   # per request: its KV heads batched


def test_guard_region_check():
    from pypto.runtime.batch import _regions_disjoint as disjoint

    assert disjoint(1, [[(0, (3, 0), (1, 64))], [(0, (4, 0), (1, 64))], [(0, (2, 0), (1, 64))]])
    assert not disjoint(1, [[(0, (3, 0), (1, 64))], [(0, (4, 0), (1, 64))], [(0, (3, 0), (1, 64))]])
    # 2-D: overlapping rows, disjoint columns; then a shared element
    assert disjoint(1, [[(0, (0, 0), (4, 16))], [(0, (2, 16), (4, 16))]])
    assert not disjoint(1, [[(0, (0, 0), (4, 17))], [(0, (2, 16), (4, 16))]])
    # one member's own regions may overlap (its tasks keep their order); different tensors never clash
    assert disjoint(2, [[(0, (0, 0), (2, 8)), (0, (1, 0), (2, 8)), (1, (0, 0), (2, 8))], [(0, (3, 0), (1, 8))]])
    # a long region spanning others' starts (the sweep must still compare them)
    assert not disjoint(1, [[(0, (0, 0), (10, 8))], [(0, (1, 0), (1, 8))], [(0, (9, 0), (1, 8))]])
    # empty slices write nothing; negative or non-integer offsets refuse (the per-task form reports them)
    assert disjoint(1, [[(0, (0, 0), (0, 8))], [(0, (0, 0), (1, 8))]])
    assert not disjoint(1, [[(0, (-1, 0), (1, 8))], [(0, (5, 0), (1, 8))]])
    assert not disjoint(1, [[(0, (1.0, 0), (1, 8))], [(0, (5, 0), (1, 8))]])
    p = S.get_platform("a2a3sim")
    rt = S.Runtime(p, {}, 0, batch=True)
    t = torch.zeros(8, 8)
    assert rt.batching(2, [t], []) and not rt.bguard(2, [t], [[(0, (1, 0), (1, 8))], [(0, (1, 0), (1, 8))]])
    assert rt._bn == 0 and rt.guards_refused == 1


def test_gathered_reads_and_slices_equal_the_per_member_ops():
    from pypto.ops import support

    p = S.get_platform("a2a3sim")
    rt = S.Runtime(p, {}, 0, batch=True)
    g = torch.Generator().manual_seed(5)
    for x in (torch.randint(-9, 9, (40,), generator=g, dtype=torch.int32),          # small: one tolist
              torch.randn(5, 7, generator=g).to(torch.bfloat16),
              torch.randn(64, 300, generator=g),                                   # large: one index op
              torch.randn(300, 64, generator=g).t()):                              # large, not contiguous
        idx = [[int(torch.randint(0, d, (1,), generator=g)) for d in x.shape] for _ in range(6)]
        got = rt.bread(8, [0, 2, 3, 5, 6, 7], x, idx)
        want = [support.read(x, i) for i in idx]
        assert [got[k] for k in (0, 2, 3, 5, 6, 7)] == want and got[1] is None and got[4] is None
        assert all(type(a) is type(b) for a, b in zip([got[k] for k in (0, 2, 3, 5, 6, 7)], want))
    big = torch.randn(20000, generator=g)   # 1-D, large: the C-pass check, then one index op
    idx = [[int(i)] for i in torch.randint(0, 20000, (6,), generator=g)]
    assert rt.bread(6, list(range(6)), big, idx) == [support.read(big, i) for i in idx]
    mixed = [[3], [torch.tensor(5)], [True]]   # not plain ints: the per-member conversion, same values
    assert rt.bread(3, [0, 1, 2], big, mixed) == [support.read(big, i) for i in mixed]
    with pytest.raises(SimulationError, match=r"read out of bounds"):
        rt.bread(2, [0, 1], torch.zeros(40), [[3], [-1]])
    with pytest.raises(SimulationError, match=r"read out of bounds: indices \[40\]"):
        rt.bread(2, [0, 1], torch.zeros(40), [[3], [40]])
    with pytest.raises(SimulationError, match="read: 2 indices for a rank-1 tensor"):
        rt.bread(2, [0, 1], torch.zeros(40), [[3], [1, 2]])
    t = torch.randn(64, 32)
    offs = [[0, 0], [8, 16], [60, 0], [0, 0]]
    for shape in ([8, 16], [64, 32]):
        got = rt.bslice(4, [0, 1, 2, 3], t, offs if shape == [8, 16] else [[0, 0]] * 4, shape)
        want = [support.view_region(t, o, shape, "tensor.slice")
                for o in (offs if shape == [8, 16] else [[0, 0]] * 4)]
        for a, b in zip(got, want):   # same view: storage, offset, shape, strides; the whole tensor itself
            assert (a.data_ptr(), a.shape, a.stride()) == (b.data_ptr(), b.shape, b.stride()) and (a is t) == (b is t)
    with pytest.raises(SimulationError):
        rt.bslice(2, [0, 1], t, [[0, 0], [-8, 0]], [8, 16])
    t3 = torch.randn(4, 8, 16)
    got = rt.bslice(2, [0, 1], t3, [[1, 0, 0], [3, 4, 0]], [1, 4, 16])
    assert torch.equal(got[1], t3[3:4, 4:8])


def test_read_bounds_of_gathered_slices_equal_the_per_member_spans():
    from pypto.runtime import batch as B

    t = torch.randn(64, 32)
    sl = B._gather_slices(t, [[8, 16], [0, 0], [40, 8]], [8, 16])
    assert sl.__class__ is B.Sliced
    ptr = t.untyped_storage().data_ptr()
    fast = B._read_bounds(sl, [0, 1, 2], {ptr: None}, {})
    slow = B._read_bounds(list(sl), [0, 1, 2], {ptr: None}, {})
    assert [(v.base, v.lo, v.hi) for v in fast] == [(v.base, v.lo, v.hi) for v in slow]
    assert B._read_bounds(sl, [0, 1, 2], {}, {}) == []   # a caller's input nobody produced
    # a member view_region had to make (cut at the end) leaves a plain list
    assert B._gather_slices(t, [[60, 0], [0, 0]], [8, 16]).__class__ is list


def test_gathered_slices_evenly_spaced_or_not_are_the_per_member_views():
    """bslice's views (one strided view unbound into rows when the members' storage offsets are
    evenly spaced, one as_strided each otherwise) have view_region's metadata, carry their
    (tensor, storage offset, shape) tag, and a span equal to the per-member loop's."""
    from pypto.ops import support
    from pypto.ops.support.gang_access import SLICE_OF
    from pypto.runtime import batch as B

    base = torch.randn(80, 48)
    t = base[4:68, 8:40]   # a view itself: storage offset and strides not those of a fresh tensor
    ptr = t.untyped_storage().data_ptr()
    cases = [
        [[0, 4 * k] for k in range(4)],            # columns, evenly spaced
        [[8 * k, 0] for k in range(8)],            # rows, evenly spaced
        [[16, 8]] * 3,                             # one region for every member (spacing 0)
        [[24, 0], [16, 0], [8, 0]],                # decreasing: one view each
        [[0, 0], [8, 0], [40, 16], [8, 8]],        # uneven
        [[5, 3]],                                  # one member
    ]
    for offs in cases:
        got = B._gather_slices(t, offs, [8, 16])
        assert got.__class__ is B.Sliced and len(got) == len(offs)
        for v, o in zip(got, offs):
            want = support.view_region(t, o, [8, 16], "tensor.slice")
            assert (v.data_ptr(), v.shape, v.stride(), v.storage_offset()) == \
                (want.data_ptr(), want.shape, want.stride(), want.storage_offset())
            assert torch.equal(v, want) and v._base is base
            assert getattr(v, SLICE_OF) == (t, v.storage_offset(), (8, 16))
        fast = B._read_bounds(got, list(range(len(offs))), {ptr: None}, {})
        slow = B._read_bounds(list(got), list(range(len(offs))), {ptr: None}, {})
        assert [(v.base, v.lo, v.hi) for v in fast] == [(v.base, v.lo, v.hi) for v in slow]
    # a member view writes through to the tensor (the kernel stores into it)
    got = B._gather_slices(t, [[0, 8 * k] for k in range(3)], [8, 16])
    got[2].fill_(7.0)
    assert torch.equal(t[0:8, 16:32], torch.full((8, 16), 7.0))


def test_member_views_of_gathered_slices_are_the_views_of_each_member():
    """submit_batch's dependency views of bslice's members (filled in from the slice's storage
    offsets) have every field View(member) computes, and go through the runtime's view cache."""
    from pypto.runtime import batch as B
    from pypto.runtime.deps import View

    base = torch.randn(96, 40).to(torch.bfloat16)
    t = base[8:72, 4:36]
    for offs in ([[8 * k, 16] for k in range(6)], [[40, 0], [0, 8], [16, 16], [56, 3]]):
        sl = B._gather_slices(t, offs, [8, 16])
        cache = {}
        got = B._member_views(sl, cache)
        for v, x in zip(got, sl):
            want = View(x)
            assert v.tensor is x and cache[id(x)] == (x, v)
            for f in View.__slots__:
                if f != "tensor":
                    assert getattr(v, f) == getattr(want, f), f
            assert v.box() == want.box()
        again = B._member_views(sl, cache)   # passed again: the same View objects
        assert all(a is b for a, b in zip(again, got))
        span = B._span_view(sl)   # the span _read_bounds looks up, without its tensor made
        want = View(t.as_strided((sl.hi - sl.lo,), (1,), sl.lo))
        for f in View.__slots__:
            if f != "tensor":
                assert getattr(span, f) == getattr(want, f), f
        assert span.box() == want.box()


# ---------------------------------------------------------------- gangs spanning batched tasks

def _batch_task(index, args, batched, tags):
    from pypto.runtime.task_graph import Task

    t = Task(index, index, "k", "kernel", args, tags, False)
    t.batched = batched
    n = max(len(a) for a, f in zip(args, batched) if f)
    t.members = [tuple(a[i] if f else a for a, f in zip(args, batched)) for i in range(n)]
    runs = []
    for i, m in enumerate(t.members):
        r = Task(index, index, "k", "member", m, tags, False)
        r.parent, r.block = t, i
        runs.append(r)
    return runs


def test_gang_of_two_batches_skips_the_access_check_only_when_their_footprints_are_apart():
    """batches_disjoint (the scheduler's shortcut before gangs.conflict): True only when no batched
    task of the gang may write a storage another one touches; any doubt leaves it to the check."""
    from pypto.runtime.batch import Stack, batches_disjoint

    def stack(n, *shape):
        whole = torch.zeros(n, *shape)
        s = Stack(whole.unbind(0))
        s.whole = whole
        return s

    shared = torch.zeros(64, 8)
    reads = [shared[i * 8:i * 8 + 8] for i in range(4)]   # a plain list of views of one storage
    a = _batch_task(1, [reads, stack(4, 8, 8), 0.5], (True, True, False), ["INPUT", "INOUT", "SCALAR"])
    b = _batch_task(2, [reads, stack(4, 8, 8), 0.5], (True, True, False), ["INPUT", "INOUT", "SCALAR"])
    assert batches_disjoint(a[2:] + b[:2])          # both read one tensor, each writes its own stack
    assert not batches_disjoint(a)                  # one batch: the members' own proof, not this
    # b writes what a reads (a view of the same storage, or the whole tensor shared by all members)
    c = _batch_task(3, [stack(4, 8, 8), [shared[32:40]] * 4], (True, True), ["INPUT", "INOUT"])
    assert not batches_disjoint(a[:2] + c[:2])
    d = _batch_task(4, [stack(4, 8, 8), shared], (True, False), ["INPUT", "OUTPUT_EXISTING"])
    assert not batches_disjoint(a[:2] + d[:2])
    # a stack a writes and e reads
    e = _batch_task(5, [a[0].parent.args[1], stack(4, 8, 8)], (True, True), ["INPUT", "INOUT"])
    assert not batches_disjoint(a[:2] + e[:2])
    # a run that is not a batch member (a plain task) leaves it to the check
    from pypto.runtime.task_graph import Task
    plain = Task(9, 9, "k", "kernel", (reads[0],), ["INPUT"], False)
    assert not batches_disjoint(a[:2] + [plain]) and not batches_disjoint([plain] + a[:2] + b[:2])


def test_ring3_holdings_outside_a_batched_loop_count_for_every_member():
    """Holdings of unbatched scopes at depth >= 3 around a batched loop count on ring 3 for every
    member (summed once per set of batched depths, not per hold); a later loop under other outer
    holdings sees those."""
    p = S.get_platform("a2a3sim")
    rt = S.Runtime(p, {}, 0, batch=True)
    big = 1 << 30
    rt._rings = ([big] * 4, [big] * 4, [big, big, big, 10])
    with rt.scope(), rt.scope(), rt.scope():        # depth 3: ring 3
        rt._hold(2, 3)
        assert rt.batching(2, [], [])
        with rt.batch_scope([0, 1]):                 # depth 4
            rt._hold(2, 2)
            with rt.batch_scope([1]):                # depth 5: member 1 holds 3 + 2 + 5 = 10
                rt._hold(2, 5)
                with pytest.raises(SimulationError, match="ring 3 deadlocks: its open scopes hold 11 dependency"):
                    rt._hold(2, 1)
        assert rt.batching(2, [], [])
        with rt.batch_scope([0, 1]):                 # depth 4 alone: 3 + 7
            rt._hold(2, 7)
            with pytest.raises(SimulationError, match="ring 3 deadlocks: its open scopes hold 11 dependency"):
                rt._hold(2, 1)
        with rt.scope():                             # depth 4, unbatched: 3 + 4 held outside the next loop
            rt._hold(2, 4)
            assert rt.batching(2, [], [])
            with rt.batch_scope([0, 1]):             # depth 5
                rt._hold(2, 3)                       # 3 + 4 + 3 = 10: fits
                with pytest.raises(SimulationError, match="ring 3 deadlocks: its open scopes hold 11 dependency"):
                    rt._hold(2, 1)


def _graph(rt):
    return [(t.index, t.kernel, t.kind, [(p.index, k, src, ov) for p, k, src, ov, _ in t.edges], sorted(t.fanin),
             [(b, key) for b, key in (t.registered or ())] if rt._history is False else None)
            for t in rt.tasks]


@pytest.mark.parametrize("flag", ["_ONE_STORAGE", "_REGISTER_ALL"])
def test_one_storage_arguments_and_registration_in_one_call_keep_the_graph(flag, monkeypatch):
    """submit_batch's per-storage steps for a Sliced argument (taken once) and the registration of a
    task's regions in one call give the same edges, in the same order, the same simulated end time
    and the same bits as the View-by-View path (flag off); ragged lengths (members leaving the
    page loop: plain lists, the per-View path) and the KV-cache writes (an InOut saved in the
    undo log) included."""
    from pypto.runtime import batch as B
    cases = [_paged(8, 0, 4, lens=torch.tensor([128, 384, 0, 512, 256, 128, 512, 384], dtype=torch.int32)),
             qwen3_case(kv_heads=1, inter=512, seed=3)]
    for prog, args in cases:
        got = []
        for on in (True, False):
            monkeypatch.setattr(B, flag, on)
            a = [x.clone() if isinstance(x, torch.Tensor) else x for x in args]
            run(prog, *a, config=RunConfig(platform="a2a3sim", sim_seed=5))   # (a fixed schedule)
            rt = S._LAST_RUNTIME[0]
            assert _batched_tasks(rt) > 0
            got.append((_graph(rt), rt.time, [x for x in a if isinstance(x, torch.Tensor)]))
        (g1, t1, a1), (g0, t0, a0) = got
        assert g1 == g0 and t1 == t0
        assert all(torch.equal(x.view(torch.uint8), y.view(torch.uint8)) for x, y in zip(a1, a0))
