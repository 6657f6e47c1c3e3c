"""The gang accesses' common-case run finder (pypto/ops/support/gang_access.py) against the general
one (core._gang_runs) and against per-member accesses: random gangs of stacked-buffer rows (in
shuffled order, from several buffers), slices of one tensor, one region read by several members,
and the cases it must leave to the general path (valid shapes, per-member offsets, different
layouts, out of bounds, an access recorder)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

import pypto.language as pl

from pypto.errors import SimulationError
from pypto.ops import support
from pypto.ops.support import core
from pypto.ops.support.gang_access import uniform_runs
from pypto.runtime import RunConfig


def _rows(n, shape, dtype=torch.float32):
    """Rows of a stacked buffer as create_batch makes them (unbind views, marked with their index)."""
    whole = torch.randn([n, *shape]).to(dtype)
    rows = whole.unbind(0)
    for i, r in enumerate(rows):
        r._pypto_row = (whole, i)
    return whole, list(rows)


def _regions(runs, plans, ti, oi, shape):
    """Member -> (address, shape, strides) of the region the runs access for it."""
    out = []
    for lo, hi, view in runs:
        if view is None:
            t, o = plans[lo][ti], plans[lo][oi]
            r = core.region(t, o, shape)
            out.append((r.data_ptr(), tuple(r.shape), r.stride()))
        else:
            for k in range(hi - lo):
                # a gather run (core._gang_runs): (windows, index) -- member k reads window index[k]
                r = view[0][int(view[1][k])] if view.__class__ is tuple else view[k]
                out.append((r.data_ptr(), tuple(r.shape), r.stride()))
    return out


def _check_same(plans, shape, load):
    ti, oi = (0, 1) if load else (1, 0)
    got = uniform_runs(shape, plans, ti, oi, load)
    assert got is not None
    assert len(got) >= 1 and got[0][0] == 0 and got[-1][1] == len(plans)
    assert all(a[1] == b[0] for a, b in zip(got, got[1:]))
    tiles = torch.zeros([len(plans), *shape])
    want = core._gang_runs(tiles, plans, ti, oi, "x")
    assert _regions(got, plans, ti, oi, shape) == _regions(want, plans, ti, oi, shape)
    return got


@pytest.mark.parametrize("seed", range(20))
def test_runs_of_stacked_rows_match_the_general_path(seed):
    rnd = random.Random(seed)
    bufs = [_rows(rnd.choice([6, 16]), [8, 32])[1] for _ in range(3)]
    members = [t for rows in bufs for t in rows]
    # a gang: a window of members in readiness order (runs with gaps, several buffers)
    rnd.shuffle(members)
    members = sorted(members[:rnd.randint(2, 20)], key=lambda t: (id(t._pypto_row[0]), t._pypto_row[1])) \
        if rnd.random() < 0.5 else members[:rnd.randint(2, 20)]
    off = [rnd.choice([0, 4]), rnd.choice([0, 16])]
    shape = [8 - off[0], 32 - off[1]]
    _check_same([(t, off, None) for t in members], shape, True)
    _check_same([(off, t, None) for t in members], shape, False)


@pytest.mark.parametrize("seed", range(10))
def test_runs_of_slices_match_the_general_path(seed):
    rnd = random.Random(seed)
    src = torch.randn(256, 64)
    rows = [rnd.choice([0, 16, 32, 48, 64, 64, 80, 96, 200]) for _ in range(rnd.randint(2, 12))]
    views = [core.view_region(src, [r, 0], [16, 64]) for r in rows]   # pl.slice results
    _check_same([(v, [0, 0], None) for v in views], [16, 64], True)
    if len(set(rows)) == len(rows):
        _check_same([([0, 0], v, None) for v in views], [16, 64], False)


def test_loads_and_stores_write_what_member_accesses_write():
    torch.manual_seed(0)
    whole, rows = _rows(10, [8, 16])
    order = [3, 4, 5, 0, 1, 7, 9]
    tiles = torch.zeros(len(order), 8, 16)
    support.gang_load_fast(tiles, [(rows[i], [0, 0], None) for i in order])
    for k, i in enumerate(order):
        assert torch.equal(tiles[k], whole[i])
    out_whole, out_rows = _rows(10, [8, 16])
    before = out_whole.clone()
    support.gang_store_fast(tiles, [([0, 0], out_rows[i], None) for i in order])
    for i in range(10):
        assert torch.equal(out_whole[i], whole[i] if i in order else before[i])


def test_cases_left_to_the_general_path():
    whole, rows = _rows(4, [8, 16])
    shape = [8, 16]
    assert uniform_runs(shape, [(r, [0, 0], [4, 4]) for r in rows], 0, 1, True) is None        # valid shapes
    assert uniform_runs(shape, [(r, [0, k], None) for k, r in enumerate(rows)], 0, 1, True) is None   # offsets
    other = torch.randn(8, 32)[:, :16]   # same shape, other strides
    assert uniform_runs(shape, [(rows[0], [0, 0], None), (other, [0, 0], None)], 0, 1, True) is None
    assert uniform_runs(shape, [(rows[0], [0, 0], None)], 0, 1, True) is None                # one member
    assert uniform_runs([8, 16], [(r, [1, 0], None) for r in rows], 0, 1, True) is None      # out of bounds
    with core.recording(lambda what, view: None):
        assert uniform_runs(shape, [(r, [0, 0], None) for r in rows], 0, 1, True) is None


def test_out_of_bounds_is_still_an_error():
    _, rows = _rows(4, [8, 16])
    tiles = torch.zeros(4, 8, 16)
    with pytest.raises(SimulationError, match="out of bounds"):
        support.gang_load_fast(tiles, [(r, [1, 0], None) for r in rows])
    with pytest.raises(SimulationError, match="out of bounds"):
        support.gang_store_fast(tiles, [([0, 1], r, None) for r in rows])


def test_a_store_never_merges_one_region_written_twice():
    src = torch.zeros(64, 16)
    v = core.view_region(src, [0, 0], [8, 16])
    runs = uniform_runs([8, 16], [([0, 0], v, None), ([0, 0], v, None)], 1, 0, False)
    assert runs is not None and [(lo, hi) for lo, hi, _ in runs] == [(0, 1), (1, 2)]


def test_one_tensor_read_by_every_member_is_one_copy():
    """Members loading the same whole tensor (a weight every task reads): one run, stride 0."""
    w = torch.randn(16, 32)
    plans = [(w, [0, 0], None)] * 5
    runs = _check_same(plans, [16, 32], True)
    assert [(lo, hi) for lo, hi, _ in runs] == [(0, 5)] and runs[0][2].stride()[0] == 0
    w2 = torch.randn(16, 32)
    runs = _check_same([(w, [0, 0], None)] * 3 + [(w2, [0, 0], None)] * 2, [16, 32], True)
    assert [(lo, hi) for lo, hi, _ in runs] == [(0, 3), (3, 5)]


@pytest.mark.parametrize("seed", range(10))
def test_one_tensor_at_member_offsets_matches_the_general_path(seed):
    """Members accessing their tiles of ONE tensor at their own offsets (a batched loop's
    ``[i * 32, 0]``): evenly spaced regions are one run found by list passes; anything else (uneven
    spacing, a region outside, a store writing one region twice) is left to the general path."""
    rnd = random.Random(seed)
    src = torch.randn(256, 64)
    n = rnd.randint(2, 12)
    first, step = rnd.randrange(0, 4) * 16, rnd.choice([0, 16, 32])
    col = rnd.choice([0, 32])
    shape = [16, 64 - col]
    offs = [[first + k * step, col] for k in range(n)]
    if all(o[0] + 16 <= 256 for o in offs):
        runs = _check_same([(src, o, None) for o in offs], shape, True)
        assert [(lo, hi) for lo, hi, _ in runs] == [(0, n)]
        runs = _check_same([(o, src, None) for o in offs], shape, False)
        # (one region written by several members is never merged)
        assert [(lo, hi) for lo, hi, _ in runs] == ([(0, n)] if step else [(k, k + 1) for k in range(n)])
    uneven = [[rnd.randrange(0, 240), col] for _ in range(n)]
    gaps = {b[0] - a[0] for a, b in zip(uneven, uneven[1:])}
    if len(gaps) > 1 or min(gaps) < 0:
        assert uniform_runs(shape, [(src, o, None) for o in uneven], 0, 1, True) is None
    tiles = torch.zeros(n, *shape)
    support.gang_load_fast(tiles, [(src, o, None) for o in uneven])
    for k, o in enumerate(uneven):
        assert torch.equal(tiles[k], src[o[0]:o[0] + 16, col:])


def test_one_tensor_at_member_offsets_out_of_bounds_is_still_an_error():
    src = torch.randn(64, 16)
    tiles = torch.zeros(3, 16, 16)
    plans = [(src, [k * 24, 0], None) for k in range(3)]     # the third region ends at row 64: 48 + 16 = 64 ok
    support.gang_load_fast(tiles, plans)
    plans = [(src, [k * 32, 0], None) for k in range(3)]     # the third at rows 64..79: outside
    assert uniform_runs([16, 16], plans, 0, 1, True) is None
    with pytest.raises(SimulationError, match="out of bounds"):
        support.gang_load_fast(tiles, plans)
    with pytest.raises(SimulationError, match="out of bounds"):
        support.gang_store_fast(tiles, [(p[1], src, None) for p in plans])

def test_layouts_are_remembered_per_gang_and_give_the_fresh_answer_at_every_offset():
    import weakref

    from pypto.ops.support import gang_access as GA

    GA.forget()
    w = torch.randn(256, 1024)
    cols = [w[:, 128 * j:128 * j + 128] for j in range(8)]            # slices of one tensor
    whole, rows = _rows(8, [64, 32])                                    # rows of a stacked buffer
    for ts, full in ((cols, (256, 128)), (rows, (64, 32))):
        for step in range(4):   # the same members' tensors at other offsets (a gang kernel's K loop)
            off = [16 * step, 0]
            plans = [(t, off, None) for t in ts]
            got = _check_same(plans, (16, 32), True)
            GA.forget()
            assert [(lo, hi, v.data_ptr(), v.stride()) for lo, hi, v in got] == \
                [(lo, hi, v.data_ptr(), v.stride()) for lo, hi, v in uniform_runs((16, 32), plans, 0, 1, True)]
            _check_same(plans, (16, 32), True)   # remembered again for the next step
        # out of bounds at some offset: refused there (the member's own access raises), not remembered
        assert uniform_runs((16, 32), [(t, [full[0] - 8, 0], None) for t in ts], 0, 1, True) is None
    # other tensors (a permuted list, one member replaced) are not taken for the remembered ones
    plans = [(t, [0, 0], None) for t in reversed(cols)]
    _check_same(plans, (16, 32), True)
    other = list(cols)
    other[3] = torch.randn(256, 1024)[:, :128]   # same layout, another storage
    got = _check_same([(t, [0, 0], None) for t in other], (16, 32), True)
    assert len(got) == 3
    # a store of the same tensors is another key (no step-0 runs for stores)
    same = [(cols[0], [0, 0], None)] * 2
    assert len(uniform_runs((16, 32), same, 0, 1, True)) == 1
    assert len(uniform_runs((16, 32), [([0, 0], cols[0], None)] * 2, 1, 0, False)) == 2
    # forget() drops the tensors (the simulator calls it at the end of every call)
    ref = weakref.ref(other[3]._base)
    del other, got
    GA.forget()
    assert ref() is None

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_randomly_placed_pages_are_one_gather(dtype):
    """Members loading pages of one pool at random (paged attention's K / V): one index_select, as
    the general path does it (not a copy per member), the bits of each member's own load."""
    rnd = random.Random(3)
    pool = torch.randint(-2**15, 2**15, (64 * 16, 32), dtype=torch.int32).view(torch.float32).to(dtype) \
        if dtype is torch.float32 else torch.randint(-2**15, 2**15, (64 * 16, 32), dtype=torch.int16).view(dtype)
    pages = rnd.sample(range(64), 20)
    views = [core.view_region(pool, [p * 16, 0], [16, 32]) for p in pages]
    plans = [(v, [0, 0], None) for v in views]
    runs = _check_same(plans, [16, 32], True)
    assert len(runs) == 1 and runs[0][2].__class__ is tuple
    tiles = torch.zeros(len(pages), 16, 32, dtype=dtype)
    support.gang_load_fast(tiles, plans)
    for k, v in enumerate(views):
        one = torch.zeros(16, 32, dtype=dtype)
        support.load_into(one, v, [0, 0], None)
        assert torch.equal(tiles[k].view(torch.uint8), one.view(torch.uint8))
    # two evenly spaced runs stay strided copies; a store never gathers
    two = [(core.view_region(pool, [p * 16, 0], [16, 32]), [0, 0], None) for p in (1, 2, 3, 10, 12)]
    assert all(r[2].__class__ is not tuple for r in _check_same(two, [16, 32], True))
    assert all(r[2].__class__ is not tuple for r in uniform_runs([16, 32], [([0, 0], v, None) for v in views],
                                                                 1, 0, False))


@pytest.mark.parametrize("seed", range(10))
def test_tagged_slices_of_the_batched_orchestration_match_the_general_path(seed):
    """Views bslice made carry (tensor, storage offset, shape) (SLICE_OF); the run finder uses the
    tags instead of each view's metadata: same regions as the general path, also with an offset
    inside the slice, slices of two tensors, or of one tensor at two shapes (then untagged logic)."""
    from pypto.ops.support.gang_access import SLICE_OF
    from pypto.runtime.batch import _gather_slices

    rnd = random.Random(seed)
    src = torch.randn(512, 64)
    other = torch.randn(512, 64)
    rows = [rnd.choice(range(0, 480, 16)) for _ in range(rnd.randint(2, 24))]
    views = _gather_slices(src, [[r, 0] for r in rows], [32, 64])
    assert all(SLICE_OF in v.__dict__ for v in views)
    for off, shape in (([0, 0], [32, 64]), ([16, 8], [16, 32])):
        _check_same([(v, off, None) for v in views], shape, True)
        if len(set(rows)) == len(rows):
            _check_same([(off, v, None) for v in views], shape, False)
    mixed = list(views[:3]) + list(_gather_slices(other, [[r, 0] for r in rows[:3]], [32, 64]))
    _check_same([(v, [0, 0], None) for v in mixed], [32, 64], True)
    two_shapes = list(views[:2]) + list(_gather_slices(src, [[0, 0]], [32, 32]))
    assert uniform_runs([32, 32], [(v, [0, 0], None) for v in two_shapes], 0, 1, True) is None
    with pytest.raises(SimulationError, match="out of bounds"):   # still the member's own error
        support.gang_load_fast(torch.zeros(len(views), 32, 64), [(v, [8, 0], None) for v in views])


# ---- accesses whose offsets the gang kernel knows are the same for every member (gang_load_at)
def _plans_of(accesses):
    """Members' plans as GANG_PLAN makes them: one ``(site, arguments)`` per access, here two
    accesses (a filler first, so that the access read is not the first entry)."""
    return [[(0, (None, None, None)), (1, a)] for a in accesses]


@pytest.mark.parametrize("kind", ["rows", "slices", "gather", "one tensor"])
def test_accesses_at_shared_offsets_write_what_member_accesses_write(kind):
    rnd = random.Random(5)
    pool = torch.randn(64 * 16, 32)
    if kind == "rows":
        _, ts = _rows(12, [16, 32])
        ts = ts[2:9]
    elif kind == "slices":
        from pypto.runtime.batch import _gather_slices
        ts = list(_gather_slices(pool, [[16 * k, 0] for k in (3, 4, 5, 6, 9, 10)], [16, 32]))
    elif kind == "gather":
        ts = [core.view_region(pool, [16 * p, 0], [16, 32]) for p in rnd.sample(range(64), 12)]
    else:
        ts = [pool[:16]] * 5
    for off, shape in (([0, 0], [16, 32]), ([4, 8], [8, 16])):
        tiles = torch.zeros(len(ts), *shape)
        support.gang_load_at(tiles, _plans_of([(t, off, None) for t in ts]), 1, off)
        for k, t in enumerate(ts):
            one = torch.zeros(*shape)
            support.load_into(one, t, off, None)
            assert torch.equal(tiles[k], one)
        if kind in ("rows", "slices"):   # (a store never writes one region twice)
            fill = torch.randn(len(ts), *shape)
            support.gang_store_at(fill, _plans_of([(off, t, None) for t in ts]), 1, off)
            for k, t in enumerate(ts):
                assert torch.equal(core.region(t, off, shape), fill[k])


def test_accesses_at_shared_offsets_outside_the_tensor_are_still_errors():
    _, rows = _rows(4, [8, 16])
    tiles = torch.zeros(4, 8, 16)
    with pytest.raises(SimulationError, match="out of bounds"):
        support.gang_load_at(tiles, _plans_of([(r, [1, 0], None) for r in rows]), 1, [1, 0])
    with pytest.raises(SimulationError, match="out of bounds"):
        support.gang_store_at(tiles, _plans_of([([0, 1], r, None) for r in rows]), 1, [0, 1])


def test_accesses_at_shared_offsets_are_each_seen_by_an_access_recorder():
    _, rows = _rows(4, [8, 16])
    seen = []
    with core.recording(lambda what, view: seen.append((what, view.data_ptr()))):
        support.gang_load_at(torch.zeros(4, 8, 16), _plans_of([(r, [0, 0], None) for r in rows]), 1, [0, 0])
        support.gang_store_at(torch.zeros(4, 8, 16), _plans_of([([0, 0], r, None) for r in rows]), 1, [0, 0])
    assert sorted(p for _, p in seen) == sorted([r.data_ptr() for r in rows] * 2)


@pl.function(type=pl.FunctionType.InCore)
def _k_shared_offsets(x: pl.Tensor[[16, 64], pl.FP32], i: pl.Scalar[pl.INDEX], y: pl.Tensor[[256, 32], pl.FP32],
                      o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
    acc = pl.load(x, [0, 0], [16, 32])                       # constant offsets
    for k in pl.range(1, 2):
        acc = pl.add(acc, pl.load(x, [0, k * 32], [16, 32]))   # a uniform loop's
    acc = pl.mul(acc, pl.load(y, [i * 16, 0], [16, 32]))     # the task's own
    o = pl.store(acc, [0, 0], o)
    o = pl.store(pl.exp(acc), [0, 32], o)
    return o


@pl.program
class _SharedOffsets:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[256, 64], pl.FP32], y: pl.Tensor[[256, 32], pl.FP32],
             out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for i in pl.range(16):
            _k_shared_offsets(pl.slice(a, [16, 64], [i * 16, 0]), i, y, pl.slice(out, [16, 64], [i * 16, 0]))
        return out


@pytest.mark.parametrize("batch", [False, True])
def test_a_kernel_passes_offsets_the_same_for_every_member_and_keeps_its_bits(batch):
    """Offsets of constants and uniform loop variables: the gang kernel computes them and hands
    the members' tensors alone (gang_load_at / gang_store_at); the task's own offsets go through
    the plans (gang_load_fast). Same bits as task by task, the math of the program."""
    from pypto.runtime import run as run_program
    from pypto.runtime import simulator as S

    g = torch.Generator().manual_seed(2)
    a, y = torch.randn(256, 64, generator=g), torch.randn(256, 32, generator=g)
    outs = {}
    for lock in (False, True):
        out = torch.zeros(256, 64)
        run_program(_SharedOffsets, a, y, out, config=RunConfig(sim_seed=4, sim_lockstep=lock, sim_batch=batch))
        outs[lock] = out
    rt = S._LAST_RUNTIME[0]
    assert rt.gangs and max(len(m) for m in rt.gangs) >= 2
    src = Path(rt.kernels["_k_shared_offsets"].__file__).read_text()
    body = src[src.index("def kernel_gang"):]
    assert body.count("_pto.gang_load_at(") == 2 and body.count("_pto.gang_load_fast(") == 1
    assert body.count("_pto.gang_store_at(") == 2 and "gang_store_fast" not in body
    assert torch.equal(outs[False].view(torch.int32), outs[True].view(torch.int32))
    acc = (a[:, :32] + a[:, 32:]) * y
    assert torch.allclose(outs[True], torch.cat([acc, torch.exp(acc)], 1), rtol=1e-6)


def test_index_tensors_from_a_packed_buffer_are_torch_tensor_of_the_list():
    import gc

    rnd = random.Random(1)
    for n in (1, 2, 48, 300):
        vals = [rnd.randrange(-2**40, 2**40) for _ in range(n)]
        t = core.index_tensor(vals)
        gc.collect()   # (the tensor keeps its buffer alive)
        assert t.dtype == torch.int64 and t.shape == (n,) and t.tolist() == vals
        assert torch.equal(t, torch.tensor(vals))
