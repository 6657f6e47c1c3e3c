"""Gang accesses of a kernel parameter, found from the batched tasks' arguments
(pypto/ops/support/gang_access.py ``param_runs``): the same regions as from the members' own tensors
(``runs_at``, ``core._gang_runs``), for gangs of member runs of one or several batched tasks whose
argument is a stacked buffer (``Stack``), slices of one storage (``Sliced``: evenly spaced, or at
random: a gather), or one shared tensor; the cases left to the member-by-member path; and a whole
program whose bits do not depend on the path."""
from __future__ import annotations

import gc
import random
import weakref
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import pypto.language as pl

from pypto.ops import support
from pypto.ops.support import core
from pypto.ops.support import gang_access as GA
from pypto.runtime import RunConfig
from pypto.runtime.batch import Sliced, Stack, _gather_slices


def _stack(n, shape):
    whole = torch.randn([n, *shape])
    rows = whole.unbind(0)
    core.tag_stack_rows(whole, rows)
    out = Stack(rows)
    out.whole = whole
    return out


def _task(args, batched):
    """A batched task as submit_batch makes it (all members active): member i's args are column i."""
    n = max(len(a) for a, b in zip(args, batched) if b)
    members = list(zip(*[a if b else (a,) * n for a, b in zip(args, batched)]))
    return SimpleNamespace(args=args, batched=tuple(batched), members=members, parent=None, kind="kernel")


def _gang(picks):
    """The gang's member runs (task, member index) in task order, and their plans: one load and
    one store of parameter 0 (access 0: (tensor, offsets, None); access 1: (offsets, tensor, None))."""
    runs = [SimpleNamespace(parent=t, kind="member", block=b, args=t.members[b]) for t, b in picks]
    plans = [[(0, (r.args[0], [0, 0], None)), (1, ([0, 0], r.args[0], None))] for r in runs]
    return GA.gang_plans(plans, runs, (Stack, Sliced)), [r.args[0] for r in runs]


def _regions(runs, n, ts=None, offsets=None, shape=None):
    """Member -> (address, shape, strides) of its region in ``runs`` (a gather: its window; no
    view: the general path's member accessed on its own, its region of ``ts[k]``)."""
    out = []
    for lo, hi, view in runs:
        for k in range(hi - lo):
            if view is None:
                r = core.region(ts[lo + k], offsets, shape)
            else:
                r = view[0][int(view[1][k])] if view.__class__ is tuple else view[k]
            out.append((r.data_ptr(), tuple(r.shape), r.stride()))
    assert len(out) == n
    return out


def _check(P, ts, shape, offsets, load=True):
    ti = 0 if load else 1
    got = GA.param_runs(P, 0, 0 if load else 1, ti, torch.Size(shape), offsets, load)
    assert got is not None
    GA.forget()
    want = GA.runs_at(torch.Size(shape), ts, offsets, load)
    plans = [(t, offsets, None) if load else (offsets, t, None) for t in ts]
    general = core._gang_runs(torch.zeros(len(ts), *shape), plans, ti, 1 - ti, "x")
    assert _regions(got, len(ts)) == _regions(want, len(ts)) == _regions(general, len(ts), ts, offsets, shape)
    return got


@pytest.mark.parametrize("seed", range(12))
def test_runs_of_stacked_rows_of_several_tasks_are_the_members_regions(seed):
    rnd = random.Random(seed)
    tasks = [_task([_stack(8, [8, 16])], [True]) for _ in range(3)]
    picks = sorted(rnd.sample([(k, b) for k in range(3) for b in range(8)], rnd.randint(2, 20)))
    P, ts = _gang([(tasks[k], b) for k, b in picks])
    for off, shape in (([0, 0], [8, 16]), ([4, 8], [4, 8])):
        _check(P, ts, shape, off, True)
        _check(P, ts, shape, off, False)


def test_a_run_over_a_whole_stack_is_the_stack_itself():
    s = _stack(6, [4, 8])
    t = _task([s], [True])
    P, ts = _gang([(t, b) for b in range(6)])
    runs = _check(P, ts, [4, 8], [0, 0])
    assert len(runs) == 1 and runs[0][2] is s.whole
    runs = _check(P, ts, [2, 8], [2, 0])        # a part of each member: a view of it
    assert runs[0][2] is not s.whole and runs[0][2].data_ptr() == s.whole[0, 2].data_ptr()
    GA.forget()
    assert GA.runs_at(torch.Size([4, 8]), ts, [0, 0], True)[0][2] is s.whole   # (the member path too)


@pytest.mark.parametrize("seed", range(12))
def test_slices_of_one_storage_over_several_tasks_are_runs_or_one_gather(seed):
    rnd = random.Random(seed)
    pool = torch.randn(64 * 16, 32)
    tasks = []
    for _ in range(3):
        if rnd.random() < 0.5:
            rows = [rnd.randrange(64) * 16 for _ in range(8)]            # pages at random
        else:
            first, step = rnd.randrange(8) * 16, rnd.choice([16, 32])
            rows = [first + k * step for k in range(8)]                  # evenly spaced
        sl = _gather_slices(pool, [[r, 0] for r in rows], [16, 32])
        assert sl.__class__ is Sliced
        tasks.append(_task([sl], [True]))
    picks = sorted(rnd.sample([(k, b) for k in range(3) for b in range(8)], rnd.randint(2, 24)))
    P, ts = _gang([(tasks[k], b) for k, b in picks])
    for off, shape in (([0, 0], [16, 32]), ([8, 8], [8, 16])):
        _check(P, ts, shape, off, True)
        if len({t.data_ptr() for t in ts}) == len(ts):   # (a store never writes one region twice)
            _check(P, ts, shape, off, False)


def test_one_shared_tensor_is_one_read_and_a_store_of_it_is_left_to_the_member_path():
    w = torch.randn(16, 32)
    t = _task([w, _stack(4, [16, 32])], [False, True])
    P, ts = _gang([(t, b) for b in range(4)])
    runs = _check(P, ts, [16, 32], [0, 0])
    assert len(runs) == 1 and runs[0][2].stride()[0] == 0
    assert GA.param_runs(P, 0, 1, 1, torch.Size([16, 32]), [0, 0], False) is None


def test_gangs_it_cannot_describe_are_left_to_the_member_path():
    s = _stack(6, [4, 8])
    t = _task([s], [True])
    P, _ = _gang([(t, b) for b in range(4)])
    shape = torch.Size([4, 8])
    # a plan whose tensor is not the task's argument (the generator's claim fails): not taken
    P[0][0] = (0, (torch.zeros(4, 8), [0, 0], None))
    assert GA.param_runs(P, 0, 0, 0, shape, [0, 0], True) is None
    # blocks of a multi-block task, a plain list argument, a task of some members, a recorder
    P, _ = _gang([(t, b) for b in range(4)])
    for r in P.runs:
        r.kind = "block"
    assert GA.param_runs(P, 0, 0, 0, shape, [0, 0], True) is None
    plain = _task([list(s)], [True])
    P, _ = _gang([(plain, b) for b in range(4)])
    assert GA.param_runs(P, 0, 0, 0, shape, [0, 0], True) is None
    part = _task([s], [True])
    part.members = part.members[:5]
    P, _ = _gang([(part, b) for b in range(4)])
    assert GA.param_runs(P, 0, 0, 0, shape, [0, 0], True) is None
    P, _ = _gang([(t, b) for b in range(4)])
    with core.recording(lambda what, view: None):
        assert GA.param_runs(P, 0, 0, 0, shape, [0, 0], True) is None
    assert GA.param_runs(P, 0, 0, 0, shape, [1, 0], True) is None       # outside: the member's error
    P, _ = _gang([(t, b) for b in range(4)])
    assert P.found is None
    GA.param_runs(P, 0, 0, 0, shape, [0, 0], True)
    assert sorted(P.found) == [-1, 1]   # (found once per gang, parameter and direction; -1: the runs)


def test_loads_and_stores_write_what_member_accesses_write():
    rnd = random.Random(7)
    pool = torch.randn(64 * 16, 32)
    sl = _gather_slices(pool, [[rnd.randrange(64) * 16, 0] for _ in range(8)], [16, 32])
    for arg in (_stack(8, [16, 32]), sl):
        t = _task([arg], [True])
        P, ts = _gang([(t, b) for b in (0, 1, 2, 5, 6, 7)])
        tiles = torch.zeros(len(ts), 16, 32)
        support.gang_load_at(tiles, P, 0, [0, 0], 0)
        for k, x in enumerate(ts):
            assert torch.equal(tiles[k], x)
        if arg.__class__ is Stack:
            fill = torch.randn(len(ts), 8, 16)
            before = arg.whole.clone()
            support.gang_store_at(fill, P, 1, [8, 16], 0)
            for k, x in enumerate(ts):
                assert torch.equal(x[8:, 16:], fill[k])
            untouched = [b for b in range(8) if b not in (0, 1, 2, 5, 6, 7)]
            assert torch.equal(arg.whole[untouched], before[untouched])


def test_slices_of_several_tensors_laid_out_differently_are_runs_of_each():
    """(the member path) a gang reading column blocks of weights of other widths (the q / k / v
    projections of a layer): runs per tensor, each with its own strides, not the general path."""
    wq, wk = torch.randn(64, 128), torch.randn(64, 32)
    ts = list(_gather_slices(wq, [[0, 16 * j] for j in range(4)], [64, 16])) + \
        list(_gather_slices(wk, [[0, 16 * j] for j in range(2)], [64, 16]))
    plans = [(t, [8, 0], None) for t in ts]
    GA.forget()
    runs = GA.uniform_runs([32, 16], plans, 0, 1, True)
    assert runs is not None and [(lo, hi) for lo, hi, _ in runs] == [(0, 4), (4, 6)]
    general = core._gang_runs(torch.zeros(6, 32, 16), plans, 0, 1, "x")
    assert _regions(runs, 6) == _regions(general, 6, ts, [8, 0], [32, 16])
    tiles = torch.zeros(6, 32, 16)
    support.gang_load_fast(tiles, plans)
    for k, t in enumerate(ts):
        assert torch.equal(tiles[k], t[8:40])


def test_a_layout_found_for_a_store_serves_a_load_and_not_the_reverse_with_a_step_0_run():
    s = _stack(6, [4, 8])
    ts = list(s)[1:5]
    GA.forget()
    st = GA.runs_at(torch.Size([4, 8]), ts, [0, 0], False)
    assert GA._memo()[0][3]
    ld = GA.runs_at(torch.Size([4, 8]), ts, [0, 0], True)
    assert len(GA._memo()) == 1 and _regions(st, 4) == _regions(ld, 4)
    w = torch.randn(4, 8)
    GA.forget()
    assert len(GA.runs_at(torch.Size([4, 8]), [w] * 3, [0, 0], True)) == 1      # one step-0 read
    assert not GA._memo()[0][3]
    assert len(GA.runs_at(torch.Size([4, 8]), [w] * 3, [0, 0], False)) == 3     # never merged for a store
    GA.forget()


@pl.function(type=pl.FunctionType.InCore)
def _k_mix(x: pl.Tensor[[16, 64], pl.FP32], w: pl.Tensor[[16, 64], pl.FP32], p: pl.Tensor[[16, 64], pl.FP32],
           o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
    a = pl.load(x, [0, 0], [16, 64])
    b = pl.load(w, [0, 0], [16, 64])
    c = pl.load(p, [0, 32], [16, 32])
    a = pl.mul(a, b)
    o = pl.store(a, [0, 0], o)
    o = pl.store(pl.exp(c), [0, 32], o)
    return o


@pl.program
class _Mix:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[256, 64], pl.FP32], w: pl.Tensor[[16, 64], pl.FP32],
             kv: pl.Tensor[[256, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for i in pl.range(16):
            t = _k_mix(pl.slice(a, [16, 64], [i * 16, 0]), w, pl.slice(kv, [16, 64], [((i * 5) % 16) * 16, 0]),
                       pl.create_tensor([16, 64], dtype=pl.FP32))
            _k_mix(t, w, pl.slice(kv, [16, 64], [((i * 7) % 16) * 16, 0]), pl.slice(out, [16, 64], [i * 16, 0]))
        return out


def test_a_program_takes_the_parameter_path_and_keeps_its_bits(monkeypatch):
    """Stacked intermediates, slices evenly spaced and at random, a shared weight: the gang kernel
    names each accessed parameter, the batched run finds the runs from the tasks' arguments, and
    the result is the same bits as task by task and without lockstep."""
    from pypto.runtime import run as run_program
    from pypto.runtime import simulator as S

    hits = []
    real = GA.param_runs

    def counted(*a):
        r = real(*a)
        hits.append(r is not None)
        return r

    monkeypatch.setattr(GA, "param_runs", counted)
    g = torch.Generator().manual_seed(3)
    a, w, kv = torch.randn(256, 64, generator=g), torch.randn(16, 64, generator=g), torch.randn(256, 64, generator=g)
    outs = {}
    for lock, batch in ((True, True), (False, True), (True, False), (False, False)):
        out = torch.zeros(256, 64)
        hits.clear()
        run_program(_Mix, a, w, kv, out, config=RunConfig(sim_seed=5, sim_lockstep=lock, sim_batch=batch))
        outs[lock, batch] = out
        if lock and batch:
            rt = S._LAST_RUNTIME[0]
            assert rt.gangs and max(len(m) for m in rt.gangs) >= 2
            assert hits and all(hits)
            src = Path(rt.kernels["_k_mix"].__file__).read_text()
            body = src[src.index("def kernel_gang"):]
            for call in ("gang_load_at(", "gang_store_at("):
                assert all(line.split("#")[0].rstrip().endswith(("0)", "1)", "2)", "3)"))
                           for line in body.splitlines() if call in line)
    ref = outs[False, False]
    for k, out in outs.items():
        assert torch.equal(out.view(torch.int32), ref.view(torch.int32)), k
    # a later call of other values: the storage layouts remembered by the first (GA._SHAPES) are
    # hits, with this call's tensors; the bits of the task-by-task run
    kv2 = torch.randn(256, 64, generator=g)
    n = len(GA._SHAPES)
    assert n
    got, ref2 = torch.zeros(256, 64), torch.zeros(256, 64)
    run_program(_Mix, a, w, kv2, got, config=RunConfig(sim_seed=5))
    assert len(GA._SHAPES) == n
    run_program(_Mix, a, w, kv2, ref2, config=RunConfig(sim_seed=5, sim_lockstep=False, sim_batch=False))
    assert torch.equal(got.view(torch.int32), ref2.view(torch.int32)) and not torch.equal(got, ref)
    x = a.view(16, 16, 64) * w * w
    want = torch.cat([x[:, :, :32], torch.exp(kv.view(16, 16, 64)[[(i * 7) % 16 for i in range(16)], :, 32:])], 2)
    assert torch.allclose(ref, want.reshape(256, 64), rtol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_store_to_places_at_random_is_one_scatter_when_the_regions_cannot_overlap(dtype):
    """(paged KV-cache writes) slices of one storage at random, distinct places: one index_copy_
    into the storage's windows when the access's regions lie apart, the runs when they might not;
    the bytes each member's own store writes, nothing else touched (random bit patterns)."""
    rnd = random.Random(11)
    bits = torch.randint(-2**15, 2**15, (64 * 8, 32), dtype=torch.int16)
    pool = bits.view(torch.bfloat16) if dtype is torch.bfloat16 else bits.to(torch.int32).view(torch.float32)
    rows = rnd.sample(range(64 * 8 - 8), 10)   # 8-row slices at any row: neighbours may overlap
    sl = _gather_slices(pool, [[r, 0] for r in rows], [8, 32])
    t = _task([sl], [True])
    P, ts = _gang([(t, b) for b in range(10)])
    cases = ((torch.Size([1, 32]), [3, 0]), (torch.Size([8, 32]), [0, 0]), (torch.Size([1, 8]), [0, 16]))
    for shape, off in cases:
        runs = GA.param_runs(P, 0, 1, 1, shape, off, False)
        gaps = min(b - a for a, b in zip(sorted(rows), sorted(rows)[1:])) * 32
        span = (shape[0] - 1) * 32 + shape[1]
        assert (runs[0][2].__class__ is tuple) == (span <= gaps), (shape, gaps)
        for tile_dtype in (dtype, torch.float64):
            got, want = pool.clone(), pool.clone()
            fill = torch.randint(-2**15, 2**15, (10, *shape), dtype=torch.int16)
            fill = fill.view(torch.bfloat16) if dtype is torch.bfloat16 else fill.to(torch.int32).view(torch.float32)
            fill = fill.to(tile_dtype)
            t2 = _task([_gather_slices(got, [[r, 0] for r in rows], [8, 32])], [True])
            P2, _ = _gang([(t2, b) for b in range(10)])
            assert (GA.param_runs(P2, 0, 1, 1, shape, off, False)[0][2].__class__ is tuple) == (span <= gaps)
            support.gang_store_at(fill, P2, 1, off, 0)
            for k, r in enumerate(rows):
                core.store(fill[k], off, want[r:r + 8], None)
            assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))


def _one_storage_gang(pool, rows, load=True):
    sl = _gather_slices(pool, [[r, 0] for r in rows], [16, 32])
    assert sl.__class__ is Sliced
    return _gang([(_task([sl], [True]), b) for b in range(len(rows))])


@pytest.mark.parametrize("rows", [[0, 64, 32, 96, 16, 80],       # at random: a gather / a scatter
                                  [0, 16, 32, 48, 64, 80],       # evenly spaced: one run
                                  [0, 16, 64, 80, 32, 48]])      # runs
def test_a_remembered_storage_layout_names_the_current_calls_tensors(rows):
    """_storage_layout's layouts are remembered across calls by the storage offsets, shape and
    strides (GA._SHAPES), with the tensors left out: a later gang at the same places (the next
    call's views, another storage) gets ITS tensors back, the regions the fresh computation gives;
    a gang at other places misses and is computed afresh."""
    GA._SHAPES.clear()
    first = torch.randn(128, 32)
    P, ts = _one_storage_gang(first, rows)
    got = _check(P, ts, [16, 32], [0, 0])                  # computed: remembered
    assert len(GA._SHAPES) == 1
    ptrs = {t.data_ptr() for t in ts}
    if len(ptrs) == len(ts):
        _check(P, ts, [16, 32], [0, 0], False)
    # the same places of ANOTHER storage (what a hit must not confuse: the views are of this one)
    other = torch.randn(128, 32)
    P2, ts2 = _one_storage_gang(other, rows)
    n = len(GA._SHAPES)
    got2 = _check(P2, ts2, [16, 32], [0, 0])
    assert len(GA._SHAPES) == n                            # a hit: nothing new remembered
    lay = P2.found[1][0]
    runs = lay[2]
    named = [runs[0]] if runs.__class__ is tuple else [r[2] for r in runs]
    assert all(t.untyped_storage().data_ptr() == other.untyped_storage().data_ptr() for t in named)
    fresh = GA._storage_layout_new(ts2, [t.storage_offset() for t in ts2], ts2[0].shape, ts2[0].stride(), True)
    a = torch.zeros(len(ts2), 16, 32)
    b = torch.zeros(len(ts2), 16, 32)
    GA._load_runs(a, got2)
    GA._load_runs(b, GA._views(fresh, torch.Size([16, 32]), [0, 0], len(ts2)))
    assert torch.equal(a, b) and torch.equal(a, torch.stack(ts2))
    assert not torch.equal(a, torch.stack(ts))            # (the first storage's values differ)
    # other places: a miss, computed afresh
    P3, ts3 = _one_storage_gang(other, [r + 1 for r in rows])
    _check(P3, ts3, [16, 32], [0, 0])
    assert len(GA._SHAPES) == n + 1
    # nothing of a call is kept alive by what is remembered
    ref = weakref.ref(first)
    del first, P, ts, got
    gc.collect()
    assert ref() is None


def test_a_store_takes_the_load_layout_of_its_parameter_only_when_it_is_the_same():
    """A gang's store of a parameter it loaded (pa_update) takes the load's layout when that is
    runs at positive steps (stacked rows, evenly spaced slices): what the store would find. A
    load's gather, a region several members read (step 0) or one shared tensor: the store finds
    its own (the runs / a scatter; the member path for the shared tensor)."""
    s = _stack(8, [4, 8])
    P, ts = _gang([(_task([s], [True]), b) for b in range(8)])
    _check(P, ts, [4, 8], [0, 0], True)
    _check(P, ts, [4, 8], [0, 0], False)
    assert P.found[0] is P.found[1]                       # taken
    # at random places of one storage: the load gathers, the store scatters (its own layout)
    pool = torch.randn(64 * 16, 32)
    P, ts = _gang([(_task([_gather_slices(pool, [[r * 16, 0] for r in (5, 1, 9, 3, 7, 0)], [16, 32])], [True]), b)
                   for b in range(6)])
    _check(P, ts, [16, 32], [0, 0], True)
    assert P.found[1][0][2].__class__ is tuple
    _check(P, ts, [16, 32], [0, 0], False)
    assert P.found[0] is not P.found[1] and P.found[0][0][2].__class__ is not tuple
    # one shared tensor: the load reads it once (step 0), its store is the member path
    w = torch.randn(16, 32)
    P, ts = _gang([(_task([w, _stack(4, [16, 32])], [False, True]), b) for b in range(4)])
    _check(P, ts, [16, 32], [0, 0], True)
    assert GA.param_runs(P, 0, 1, 1, torch.Size([16, 32]), [0, 0], False) is None
    # (the bits: a store through the taken layout writes what each member's store writes)
    s = _stack(8, [4, 8])
    P, ts = _gang([(_task([s], [True]), b) for b in range(8)])
    _check(P, ts, [4, 8], [0, 0], True)
    fill = torch.randn(8, 2, 8)
    support.gang_store_at(fill, P, 1, [1, 0], 0)
    assert P.found[0] is P.found[1]
    assert torch.equal(s.whole[:, 1:3], fill)
