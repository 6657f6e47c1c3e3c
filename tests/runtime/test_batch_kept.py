"""bslice's views of the caller's tensors kept across calls (pypto.runtime.batch._kept_views) and the
reading consumer's producer lookup (pypto.runtime.deps.TensorMap.producers): the same views as fresh
ones, made again whenever the tensor, its layout or the offsets change, never keeping the caller's
tensor alive; whole programs called again on the same tensors (changed in place, re-pointed with
``set_``, or replaced) give the per-task form's bits."""
import gc
import math
import random
import sys
import weakref
from pathlib import Path

import pytest
import torch

from pypto.driver.build import compile as ir_compile
from pypto.ops import support
from pypto.ops.support.gang_access import SLICE_OF
from pypto.runtime import RunConfig
from pypto.runtime import batch as B
from pypto.runtime.deps import NO_OVERLAP, TensorMap, View

import kernels_batch as K

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import model_kernels as M  # noqa: E402


def _meta(v):
    return v.untyped_storage().data_ptr(), v.storage_offset(), tuple(v.shape), v.stride(), v.dtype


def _same_as_fresh(views, t, offsets, shape):
    for v, o in zip(views, offsets):
        want = support.view_region(t, o, shape, "tensor.slice")
        assert _meta(v) == _meta(want) and torch.equal(v, want)
        src, at, size = getattr(v, SLICE_OF)
        assert (at, size) == (v.storage_offset(), tuple(shape))
        assert src.untyped_storage().data_ptr() == t.untyped_storage().data_ptr() and src.stride() == t.stride()


def test_kept_views_are_reused_and_equal_fresh_views():
    base = torch.randn(80, 48)
    t = base[4:68, 8:40]   # a view itself: storage offset and strides not a fresh tensor's
    offs = [[40, 0], [0, 8], [16, 16], [56, 3], [40, 0]]   # uneven, one region twice
    a = B._gather_slices(t, offs, [8, 16], {})
    # (the Sliced names an alias of t: same storage, dtype and layout, not t itself -- kept
    # across calls, it must not keep t alive)
    assert a.__class__ is B.Sliced and _meta(a.tensor) == _meta(t) and a.tensor.untyped_storage()._cdata == \
        t.untyped_storage()._cdata and a.ats == [v.storage_offset() for v in a]
    _same_as_fresh(a, t, offs, [8, 16])
    b = B._gather_slices(t, offs, [8, 16], {})   # the next call: the very same views
    assert all(x is y for x, y in zip(a, b)) and a[0] is a[4]
    assert (b.lo, b.hi) == (a.lo, a.hi)
    # the same offsets again: the very same Sliced, whose member Views are kept once made (entered
    # in each run's view cache, a View that cache already has for a member taking precedence)
    assert b is a
    cache = {}
    mv = B._member_views(a, cache)
    assert B._member_views(a, {}) == mv and all(cache[id(x)] == (x, v) for x, v in zip(a, mv))
    other = View(a[1])
    got = B._member_views(a, {id(a[1]): (a[1], other)})
    assert got[1] is other and got[0] is mv[0]
    B._KEEP_SLICED = False
    try:
        c = B._gather_slices(t, offs, [8, 16], {})
        assert c is not a and all(x is y for x, y in zip(a, c)) and c.views is None
        assert all(v is not w for v, w in zip(B._member_views(c, {}), mv))
    finally:
        B._KEEP_SLICED = True
    # the span and member views are those of fresh views
    fresh = B._gather_slices(t, offs, [8, 16])
    assert all(x is not y for x, y in zip(a, fresh))
    assert (a.lo, a.hi, a.ptr) == (fresh.lo, fresh.hi, fresh.ptr)
    for v, w in zip(B._member_views(a, {}), B._member_views(fresh, {})):
        assert all(getattr(v, f) == getattr(w, f) for f in View.__slots__ if f != "tensor")
    # evenly spaced offsets (a weight's columns) are kept too
    cols = [[0, 4 * k] for k in range(4)]
    c = B._gather_slices(t, cols, [8, 16], {})
    _same_as_fresh(c, t, cols, [8, 16])
    assert all(x is y for x, y in zip(c, B._gather_slices(t, cols, [8, 16], {})))
    # the views write through to the caller's tensor and see its current contents
    b[1].fill_(3.0)
    assert torch.equal(t[0:8, 8:24], torch.full((8, 16), 3.0))
    t[16:24, 16:32] = 5.0
    assert torch.equal(B._gather_slices(t, offs, [8, 16], {})[2], torch.full((8, 16), 5.0))


def test_new_offsets_get_new_views_and_old_ones_stay():
    t = torch.randn(64, 32)
    a = B._gather_slices(t, [[0, 0], [8, 0]], [8, 32], {})
    b = B._gather_slices(t, [[8, 0], [24, 0]], [8, 32], {})
    assert b[0] is a[1] and b[1] is not a[0]
    _same_as_fresh(b, t, [[8, 0], [24, 0]], [8, 32])
    # another slice shape of the same tensor: its own views
    c = B._gather_slices(t, [[8, 0]], [8, 16], {})
    assert c[0] is not a[1] and tuple(c[0].shape) == (8, 16)
    _same_as_fresh(c, t, [[8, 0]], [8, 16])


def test_tensors_the_run_created_and_autograd_tensors_are_not_kept():
    t = torch.randn(64, 32)
    owners = {t.untyped_storage().data_ptr(): object()}
    a = B._gather_slices(t, [[0, 0], [8, 0]], [8, 32], owners)
    b = B._gather_slices(t, [[0, 0], [8, 0]], [8, 32], owners)
    assert a[0] is not b[0] and id(t) not in B._KEPT
    assert a[0]._base is t and getattr(a[0], SLICE_OF) == (t, 0, (8, 32))
    g = torch.randn(64, 32, requires_grad=True)
    a = B._gather_slices(g, [[0, 0], [8, 0]], [8, 32], {})
    assert id(g) not in B._KEPT and a[0].requires_grad


@pytest.mark.parametrize("change", ["set_storage", "data", "as_strided_", "storage_resize", "transpose_"])
def test_a_changed_layout_makes_the_views_again(change):
    t = torch.randn(64, 32)
    offs = [[8, 0], [16, 8]]
    old = B._gather_slices(t, offs, [8, 16], {})
    if change == "set_storage":
        t.set_(torch.randn(64, 32).untyped_storage(), 0, (64, 32), (32, 1))
    elif change == "data":
        t.data = torch.randn(64, 32)
    elif change == "as_strided_":
        t.as_strided_((32, 32), (64, 1), 32)   # the same storage: every other row from the second
    elif change == "storage_resize":
        t.untyped_storage().resize_(t.untyped_storage().nbytes() + 4096)
    else:
        t.transpose_(0, 1)
        t.transpose_(0, 1)   # the same layout again: the entry stays valid
    new = B._gather_slices(t, offs, [8, 16], {})
    _same_as_fresh(new, t, offs, [8, 16])
    if change == "transpose_":
        assert new[0] is old[0]
    else:
        assert new[0] is not old[0] and new[1] is not old[1]


def test_the_entry_goes_with_the_callers_tensor():
    t = torch.randn(64, 32)
    key = id(t)
    views = B._gather_slices(t, [[0, 0], [8, 0]], [8, 32], {})
    assert key in B._KEPT
    alias = weakref.ref(B._KEPT[key][2])
    ref = weakref.ref(t)
    del views, t   # (views bslice handed out name the alias, not the caller's tensor)
    gc.collect()
    assert ref() is None and key not in B._KEPT and alias() is None
    # a new tensor (maybe at the old id) gets its own views
    u = torch.randn(64, 32)
    v = B._gather_slices(u, [[0, 0]], [8, 32], {})
    assert B._KEPT[id(u)][0]() is u
    _same_as_fresh(v, u, [[0, 0]], [8, 32])


def test_the_kept_views_are_bounded(monkeypatch):
    monkeypatch.setattr(B, "_KEPT_VIEWS", 4)
    t = torch.randn(64, 32)
    first = B._gather_slices(t, [[k, 0] for k in range(4)], [1, 32], {})
    again = B._gather_slices(t, [[k, 0] for k in range(4, 6)], [1, 32], {})   # over the bound: a new dict
    assert len(B._KEPT[id(t)][3][(1, 32)][0]) == 2   # (the views of the new dict)
    third = B._gather_slices(t, [[0, 0]], [1, 32], {})
    assert third[0] is not first[0]
    _same_as_fresh(list(again) + list(third), t, [[4, 0], [5, 0], [0, 0]], [1, 32])
    monkeypatch.setattr(B, "_KEPT_TENSORS", 2)
    ts = [torch.randn(8, 8) for _ in range(3)]
    for x in ts:
        B._gather_slices(x, [[0, 0], [4, 0]], [4, 8], {})
    assert len(B._KEPT) <= 2 and id(ts[2]) in B._KEPT


def _first_hits(tm, v):
    """lookup's hits, the first one of each producer (what a reader that adds each producer once keeps)."""
    seen, out = set(), []
    for p, ov, pv in tm.lookup(v, False):
        if p not in seen:
            seen.add(p)
            out.append((p, ov, pv))
    return out


def test_producers_are_the_first_lookup_hit_of_each_producer():
    rng = random.Random(7)
    store = torch.zeros(64, 16)
    for trial in range(200):
        tm = TensorMap()
        tasks = [object() for _ in range(4)]
        for _ in range(rng.randint(1, 12)):
            r, c = rng.randrange(60), rng.randrange(12)
            h, w = rng.randint(1, 4), rng.randint(1, 4)
            tm.register(View(store[r:r + h, c:c + w]), rng.choice(tasks))
        if rng.random() < 0.3:   # a 1-D span over some rows (what a batched reader looks up)
            lo = rng.randrange(0, 64 * 16 - 64)
            v = View(store.view(-1)[lo:lo + rng.randint(1, 300)])
        else:
            r, c = rng.randrange(60), rng.randrange(12)
            v = View(store[r:r + rng.randint(1, 4), c:c + rng.randint(1, 4)])
        before = [list(b.los) for b in tm.buckets.values()]
        got = tm.producers(v)
        assert list(got) == _first_hits(tm, v), trial
        assert [list(b.los) for b in tm.buckets.values()] == before   # nothing dropped
        assert all(ov != NO_OVERLAP for _, ov, _ in got)


# ------------------------------------------------------------------- whole programs, called again


def _bits(t):
    return t.view(torch.uint8)


def _call_both(compiled, args, inout):
    """Call ``compiled`` batched on ``args`` themselves (the kept views' case: the same tensor objects
    call after call) and task by task on clones; the tensors at ``inout`` come out bit for bit alike."""
    ref = [x.clone() if isinstance(x, torch.Tensor) else x for x in args]
    compiled(*args, config=RunConfig(platform="a2a3sim", sim_seed=0))
    compiled(*ref, config=RunConfig(platform="a2a3sim", sim_seed=0, sim_batch=False))
    for i in inout:
        assert torch.equal(_bits(args[i]), _bits(ref[i])), i


def test_scatter_called_again_after_the_table_changed():
    compiled = ir_compile(K.Scatter, **RunConfig(platform="a2a3sim").compile_options())
    a, cache = torch.randn(16, 64), torch.randn(32, 64)
    table = torch.randperm(32, generator=torch.Generator().manual_seed(2))[:16].to(torch.int32)
    for step in range(4):
        _call_both(compiled, (a, table, cache), [2])
        # the caller changes the table (other rows) and the inputs in place between calls
        table.copy_(torch.randperm(32, generator=torch.Generator().manual_seed(10 + step))[:16].to(torch.int32))
        a.mul_(-0.5)
    # the cache re-pointed at another storage: the next call writes the new one
    other = torch.randn(32, 64)
    old = cache.detach()   # (shares the old storage)
    cache.set_(other.untyped_storage(), 0, (32, 64), (64, 1))
    before = old.clone()
    _call_both(compiled, (a, table, cache), [2])
    assert cache.untyped_storage().data_ptr() == other.untyped_storage().data_ptr()
    assert torch.equal(old, before)   # the old storage is not written


def _paged_case(batch=4, heads=16, mb=3):
    D = Bk = 128
    g = torch.Generator().manual_seed(0)
    q = torch.randn(batch * heads, D, generator=g).to(torch.bfloat16)
    k = torch.randn(batch * mb * Bk, D, generator=g).to(torch.bfloat16)
    v = torch.randn(batch * mb * Bk, D, generator=g).to(torch.bfloat16)
    table = torch.randperm(batch * mb, generator=g).to(torch.int32)
    lens = torch.tensor([Bk * (1 + i % mb) for i in range(batch)], dtype=torch.int32)
    prog = M.paged_attention(batch, heads, D, Bk, mb)
    return prog, [q, k, v, table, lens, 1.0 / math.sqrt(D), torch.zeros(batch * heads, D)]


def test_paged_attention_called_again_on_changed_pages_and_caches():
    prog, args = _paged_case()
    compiled = ir_compile(prog, **RunConfig(platform="a2a3sim").compile_options())
    q, k, v, table, lens = args[:5]
    _call_both(compiled, args, [6])
    first = args[6].clone()
    # the same tensors again: the same result
    args[6].zero_()
    _call_both(compiled, args, [6])
    assert torch.equal(_bits(args[6]), _bits(first))
    # the table permuted in place: other pages for each request, so other kept views
    table.copy_(table.flip(0))
    _call_both(compiled, args, [6])
    assert not torch.equal(args[6], first)
    # the key cache's contents changed in place, then the value cache replaced by another tensor
    k.mul_(2)
    _call_both(compiled, args, [6])
    args[2] = torch.randn(v.shape).to(torch.bfloat16)
    _call_both(compiled, args, [6])
    # the key cache re-pointed (set_) at a copy with other contents, then the old storage changed
    fresh = (k.float() * -1).to(torch.bfloat16)
    old = k.detach()   # (shares the old storage)
    k.set_(fresh.untyped_storage(), 0, k.shape, k.stride())
    old.zero_()   # the old storage changed: the next call must read the new one
    _call_both(compiled, args, [6])
    assert args[6].abs().sum() > 0 and not args[6].isnan().any()


# ------------------------------------------------------------------ the batched guard


def _scatter2(idx, table, div):
    a, cache = torch.randn(16, 64), torch.randn(32, 64)
    return (a, torch.tensor(idx, dtype=torch.int32), torch.tensor(table, dtype=torch.int32),
            torch.tensor(div, dtype=torch.int32), cache)


def _run_each(args):
    """(batched, task by task): each the clone it ran on, or the error it raised (type, message)."""
    from pypto.runtime import run
    from pypto.runtime import simulator as S

    got = []
    for batch in (True, False):
        a = [x.clone() for x in args]
        try:
            run(K.ScatterTwoReads, *a, config=RunConfig(platform="a2a3sim", sim_seed=0, sim_batch=batch))
            got.append((a, S._LAST_RUNTIME[0]))
        except Exception as e:   # noqa: BLE001 (compared between the two forms)
            got.append((type(e), str(e)))
    return got


def test_the_batched_guard_computes_the_per_member_regions():
    from pypto.driver.build import compile as ir_compile

    c = ir_compile(K.ScatterTwoReads, **RunConfig(platform="a2a3sim").compile_options())
    src = Path(c.output_dir, c.meta["orchestration"]).read_text()
    assert "def _bgb0():" in src and "_rt.bread_flat(" in src.split("def _bgb0():")[1].split("if _rt.batching")[0]
    c = ir_compile(K.ScatterRagged, **RunConfig(platform="a2a3sim").compile_options())
    src = Path(c.output_dir, c.meta["orchestration"]).read_text()
    # the nest's guard replays an inner loop: member by member; the per-request loop's is batched
    assert "_rt.bguard(_bn0, [cache], [_bg0(*_m) for _m in _bv0])" in src and "_bgb0, lambda: [_bg1(" in src
    perm = torch.randperm(16, generator=torch.Generator().manual_seed(3)).tolist()
    table = [2 * r + 1 for r in perm]                      # rows 1, 3, ..., 31 (div 1) or 0..15 (div 2)
    for div in ([1] * 16, [2] * 16):
        (b, rb), (t, _) = _run_each(_scatter2(list(range(16)), table, div))
        assert all(torch.equal(_bits(x), _bits(y)) for x, y in zip(b, t))
        assert rb.guards_refused == 0 and any(x.members is not None for x in rb.tasks)
    # two members at one row: refused, run task by task
    (b, rb), (t, _) = _run_each(_scatter2([0] * 2 + list(range(2, 16)), table, [1] * 16))
    assert all(torch.equal(_bits(x), _bits(y)) for x, y in zip(b, t)) and rb.guards_refused == 1


@pytest.mark.parametrize("idx, div", [
    ([0, 1, 40] + list(range(3, 16)), [1] * 16),             # member 2 reads out of range
    ([0, 40] + list(range(2, 16)), [0] + [1] * 15),          # member 0 divides by zero, member 1's read fails
])
def test_a_failing_guard_raises_the_per_task_error(idx, div):
    table = list(range(16))
    (eb, mb), (et, mt) = _run_each(_scatter2(idx, table, div))
    assert (eb, mb) == (et, mt) and isinstance(eb, type) and issubclass(eb, Exception)


def _disjoint_oracle(ntensors, regions):
    """Pairwise: no two members' non-empty boxes of one tensor meet in every dimension; False for a
    negative or non-integer (bool included) offset anywhere."""
    boxes = []
    for m, rs in enumerate(regions):
        for k, offs, shape in rs:
            if any(isinstance(o, bool) or not isinstance(o, int) or o < 0 for o in offs):
                return False
            if all(d > 0 for d in shape):
                boxes.append((k, m, [int(o) for o in offs], shape))
    for i, (k, m, lo, sh) in enumerate(boxes):
        for k2, m2, lo2, sh2 in boxes[i + 1:]:
            if k == k2 and m != m2 and all(a < b + e and b < a + d for a, d, b, e in zip(lo, sh, lo2, sh2)):
                return False
    return True


def test_region_check_agrees_with_the_pairwise_oracle():
    rng = random.Random(1)
    for trial in range(4000):
        nt = rng.randint(1, 3)
        regs = []
        for m in range(rng.randint(0, 6)):
            rs = []
            for _ in range(rng.randint(0, 3)):
                nd = rng.randint(1, 3)
                offs = tuple(rng.choice([-1, True, 2.0]) if rng.random() < 0.03 else rng.randint(0, 9)
                             for _ in range(nd))
                shape = tuple(rng.randint(0, 2) if rng.random() < 0.1 else rng.randint(1, 4) for _ in range(nd))
                rs.append((rng.randrange(nt), offs, shape))
            regs.append(rs)
        assert B._regions_disjoint(nt, regs) == _disjoint_oracle(nt, regs), regs
    # KV-cache rows (the common case: one pass), then one row written twice
    rows = rng.sample(range(4096), 64)
    regs = [[(0, (r, 0), (1, 128)), (1, (r, 0), (1, 128))] for r in rows]
    assert B._regions_disjoint(2, regs)
    regs[40][1] = (1, (rows[3], 0), (1, 128))
    assert not B._regions_disjoint(2, regs)


def test_slices_by_columns_are_bslices_views():
    """bslice_columns (one offset per member in one dimension, one for all in the other) gives what
    bslice gives for the same pairs: the views, the span, the kept views, and the same errors."""
    from pypto.errors import SimulationError
    from pypto.runtime import simulator as S

    rt = S.Runtime(S.get_platform("a2a3sim"), {}, 0, batch=True)
    base = torch.randn(80, 48)
    t = base[4:68, 8:40]   # (64, 32), a view
    created = rt.create_tensor([64, 32], torch.float32)
    cases = [
        ([[8, 40, 0, 16], 8], [8, 16]),       # rows differ (a page's), one column
        ([16, [0, 4, 16]], [8, 16]),          # columns differ (a head's)
        ([[0, 8, 16, 24], 0], [8, 32]),       # evenly spaced rows
        ([[56, 56], 3], [8, 16]),             # one region twice
    ]
    for x in (t, created):
        for cols, shape in cases:
            k = len(next(c for c in cols if isinstance(c, list)))
            pairs = [[c[m] if isinstance(c, list) else c for c in cols] for m in range(k)]
            for active, n in ((list(range(k)), k), ([m + 1 for m in range(k)], k + 2)):
                a = rt.bslice_columns(n, active, x, cols, shape)
                b = rt.bslice(n, active, x, pairs, shape)
                assert len(a) == len(b) == n and a.__class__ is b.__class__
                for v, w in zip(a, b):
                    assert (v is None) == (w is None)
                    if v is not None:
                        assert _meta(v) == _meta(w) and getattr(v, SLICE_OF)[1:] == getattr(w, SLICE_OF)[1:]
                        if x is t:
                            assert v is w   # the kept views
                if a.__class__ is B.Sliced:
                    assert (a.lo, a.hi, a.ptr, a.ats) == (b.lo, b.hi, b.ptr, b.ats)
    # out of range, negative, not an int, the whole tensor: bslice's own results and errors
    for cols in ([[8, 60], 0], [[-8, 0], 0], [[8, 2.0], 0], [[8, 16], 20], [[0, True], 0]):
        pairs = [[c[m] if isinstance(c, list) else c for c in cols] for m in range(2)]
        got = []
        for f, arg in ((rt.bslice_columns, cols), (rt.bslice, pairs)):
            try:
                got.append([_meta(v) for v in f(2, [0, 1], t, arg, [8, 16])])
            except SimulationError as e:
                got.append(str(e))
        assert got[0] == got[1], cols
    whole = rt.bslice_columns(2, [0, 1], t, [[0, 0], 0], [64, 32])
    assert whole[0] is t and whole[1] is t


def test_writes_through_kept_views_bump_the_callers_version():
    """The kept views share the caller's tensor's version counter (as fresh views do): autograd
    still notices that a tensor it saved was written in place by a run."""
    t = torch.randn(64, 32)
    w = torch.ones(64, 32, requires_grad=True)
    y = (w * t).sum()   # saves t for the backward pass
    views = B._gather_slices(t, [[0, 0], [8, 0]], [8, 32], {})
    views = B._gather_slices(t, [[0, 0], [8, 0]], [8, 32], {})   # the kept ones
    before = t._version
    views[1].mul_(2.0)
    assert t._version > before
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_a_ragged_loop_step_is_the_per_member_selection():
    """bstep gives what the per-member comprehensions gave: the members whose range reaches step k,
    and their index values spread over all members; equal ranges in one pass."""
    def want(n, active, ranges, k):
        sub = [i for i, r in zip(active, ranges) if k < len(r)]
        return sub, B.spread(n, sub, [r[k] for r in ranges if k < len(r)])

    cases = [
        (4, [0, 1, 2, 3], [range(0, 3)] * 4),
        (4, [0, 1, 2, 3], [range(0, 3), range(0, 1), range(0, 0), range(0, 5)]),
        (5, [1, 3, 4], [range(2, 8, 2)] * 3),
        (5, [1, 3, 4], [range(2, 8, 2), range(0, 3), range(2, 8, 2)]),
        (3, [0, 1, 2], [range(0, 0), range(4, 4), range(0, 0)]),   # all empty (equal as sequences)
        (3, [], []),
    ]
    for n, active, ranges in cases:
        for k in range(7):
            assert B.BatchRuntime.bstep(n, active, ranges, k) == want(n, active, ranges, k), (ranges, k)


def test_flat_reads_are_breads():
    """bread_flat (one index per member) gives bread's values, spread and errors."""
    from pypto.errors import SimulationError
    from pypto.runtime import simulator as S

    rt = S.Runtime(S.get_platform("a2a3sim"), {}, 0, batch=True)
    table = torch.randperm(64, generator=torch.Generator().manual_seed(5)).to(torch.int32)
    big = torch.arange(4096, dtype=torch.int32)[::2]             # non-contiguous, larger than 128 per read
    square = torch.arange(16, dtype=torch.int32).reshape(4, 4)   # 2-D: one index is an error
    cases = [(table, [5, 0, 63, 5]), (big, [7, 2000, 3]), (table, [64, 1, 2]), (table, [-1, 2, 3]),
             (table, [1.0, 2, 3]), (table, [True, 2, 3]), (square, [1, 2, 3])]
    for x, idx in cases:
        for active, n in ((list(range(len(idx))), len(idx)), ([k + 2 for k in range(len(idx))], len(idx) + 3)):
            got = []
            for f, arg in ((rt.bread_flat, idx), (rt.bread, [[i] for i in idx])):
                try:
                    got.append(f(n, active, x, arg))
                except (SimulationError, IndexError, TypeError) as e:
                    got.append((type(e), str(e)))
            assert got[0] == got[1], (idx, got)
    assert rt.bread_flat(4, [0, 1, 2, 3], table, [5, 0, 63, 5]) == [int(table[i]) for i in (5, 0, 63, 5)]


def test_shared_boxes_are_the_computed_ones():
    """View.box through the shared table gives _box's result for every view (None included), also
    after the table was cleared at its bound."""
    from pypto.runtime import deps

    rng = random.Random(3)
    store = torch.zeros(4096)
    for trial in range(3000):
        nd = rng.randint(1, 3)
        shape = [rng.randint(1, 5) for _ in range(nd)]
        strides = sorted((rng.choice([1, 2, 3, 8, 16, 40]) for _ in range(nd)), reverse=True)
        if rng.random() < 0.5:   # row-major derivable
            strides = [1]
            for d in reversed(shape[1:]):
                strides.insert(0, strides[0] * (d + rng.randint(0, 2)))
        start = rng.randint(0, 200)
        v = View(store.as_strided(shape, strides, start))
        want = deps._box(v)
        assert v.box() == want and View(store.as_strided(shape, strides, start)).box() == want
        if trial == 1500:
            deps._BOXES.clear()


def test_kept_views_work_across_grad_modes():
    """Views kept from a call under inference_mode / no_grad are written in a later call outside it
    (and the other way round), as fresh views would be."""
    for mode in (torch.inference_mode, torch.no_grad):
        t = torch.zeros(64, 32)
        with mode():
            a = B._gather_slices(t, [[0, 0], [8, 0]], [8, 32], {})
        b = B._gather_slices(t, [[0, 0], [8, 0]], [8, 32], {})
        assert a[0] is b[0]
        b[0].fill_(1.0)
        with mode():
            c = B._gather_slices(t, [[0, 0], [8, 0]], [8, 32], {})
            c[1].fill_(2.0)
        assert torch.equal(t[:8], torch.ones(8, 32)) and torch.equal(t[8:16], torch.full((8, 32), 2.0))


def test_the_column_memo_returns_the_kept_sliced_while_it_is_valid():
    t = torch.randn(64, 48)
    rows = [8, 0, 40, 16]
    a = B._gather_columns(t, [rows, 4], [8, 16], {})
    assert a.__class__ is B.Sliced
    _same_as_fresh(a, t, [[r, 4] for r in rows], [8, 16])
    assert B._gather_columns(t, [list(rows), 4], [8, 16], {}) is a   # the memo (a new list, equal ints)
    assert B._gather_columns(t, [rows, 8], [8, 16], {}) is not a      # other columns: their own
    cols = B._gather_columns(t, [0, [0, 16, 32]], [64, 16], {})
    assert B._gather_columns(t, [0, [0, 16, 32]], [64, 16], {}) is cols
    _same_as_fresh(cols, t, [[0, c] for c in (0, 16, 32)], [64, 16])
    # keys that hash like the ints but are not ints: refused as without the memo
    assert B._gather_columns(t, [[8.0, 0.0, 40.0, 16.0], 4], [8, 16], {}) is None
    assert B._gather_columns(t, [0, [False, 16, 32]], [64, 16], {}) is None
    # a changed layout: the memo is not used, the views are those of the new layout
    t.set_(torch.randn(96, 48).untyped_storage(), 48, (64, 48), (48, 1))
    b = B._gather_columns(t, [rows, 4], [8, 16], {})
    assert b is not a and all(x is not y for x, y in zip(a, b))
    _same_as_fresh(b, t, [[r, 4] for r in rows], [8, 16])
    # a run's own (not recycled) tensor: no memo, fresh views every time
    u = torch.randn(64, 48)
    owners = {u.untyped_storage().data_ptr(): object()}
    assert B._gather_columns(u, [rows, 4], [8, 16], owners) is not B._gather_columns(u, [rows, 4], [8, 16], owners)
