"""Recycled stacked intermediates with their member views (pypto/runtime/batch._StackPool): a stack
is handed out again, zeroed, only when nothing but the pool refers to it or to its storage."""
from __future__ import annotations

import torch

from pypto.ops.support.core import STACK_ROW
from pypto.runtime import batch as B


class _Rt:
    """Stands for a runtime: each new one is a new run."""


def _pool(monkeypatch):
    pool = B._StackPool()
    monkeypatch.setattr(B, "_STACKS", pool)
    return pool


def test_a_free_stack_is_handed_out_again_zeroed_with_its_rows(monkeypatch):
    pool = _pool(monkeypatch)
    whole, rows = pool.take(4, [2, 3], torch.float32, _Rt())
    assert rows is not None and len(rows) == 4 and not whole.any()
    assert all(r.__dict__[STACK_ROW] == (whole, i) for i, r in enumerate(rows))
    whole.fill_(7.0)
    ids = (id(whole), [id(r) for r in rows])
    del whole, rows
    again, rows2 = pool.take(4, [2, 3], torch.float32, _Rt())
    assert (id(again), [id(r) for r in rows2]) == ids
    assert not again.any() and again.shape == (4, 2, 3) and again.is_contiguous()
    assert [r.data_ptr() for r in rows2] == [again[i].data_ptr() for i in range(4)]


def test_not_within_one_run(monkeypatch):
    pool = _pool(monkeypatch)
    rt = _Rt()
    a, _ = pool.take(4, [2, 3], torch.float32, rt)
    ptr = a.data_ptr()
    del a, _
    b, _ = pool.take(4, [2, 3], torch.float32, rt)   # the same run: a new stack
    assert b.data_ptr() != ptr


def _held_blocks_reuse(monkeypatch, hold):
    pool = _pool(monkeypatch)
    whole, rows = pool.take(4, [2, 3], torch.float32, _Rt())
    ptr = whole.data_ptr()
    keep = hold(whole, rows)
    del whole, rows
    again, _ = pool.take(4, [2, 3], torch.float32, _Rt())
    return again.data_ptr() != ptr, keep


def test_anything_still_referring_to_it_keeps_it(monkeypatch):
    holds = {
        "the whole": lambda w, r: w,
        "one member": lambda w, r: r[2],
        "a slice of a member": lambda w, r: r[1][1:],
        "a view of the whole": lambda w, r: w.view(-1),
        "the storage": lambda w, r: w.untyped_storage(),
        "a member's storage": lambda w, r: r[3].untyped_storage(),
        "a numpy array": lambda w, r: r[0].numpy(),
    }
    for what, hold in holds.items():
        fresh, keep = _held_blocks_reuse(monkeypatch, hold)
        assert fresh, f"reused while {what} was held"
        del keep
    fresh, _ = _held_blocks_reuse(monkeypatch, lambda w, r: None)
    assert not fresh


def test_unused_entries_age_out_and_the_bound_holds(monkeypatch):
    pool = _pool(monkeypatch)
    pool.take(2, [8], torch.float32, _Rt())
    assert pool.total == 64
    for _ in range(pool.KEEP_RUNS + 1):
        pool.take(2, [4], torch.float32, _Rt())
    assert (2, (8,), torch.float32) not in pool.entries
    monkeypatch.setattr(pool, "MAX_BYTES", 0)
    whole, rows = pool.take(2, [16], torch.float32, _Rt())
    assert rows is None and not whole.any() and (2, (16,), torch.float32) not in pool.entries


def test_without_the_storage_use_count_nothing_is_reused(monkeypatch):
    pool = _pool(monkeypatch)
    monkeypatch.setattr(B, "_use_count", None)
    a, _ = pool.take(4, [2, 3], torch.float32, _Rt())
    ptr = a.data_ptr()
    del a, _
    b, rows = pool.take(4, [2, 3], torch.float32, _Rt())
    assert b.data_ptr() != ptr and rows is not None and not b.any()


class _BatchRt(B.BatchRuntime):
    """Just enough of a runtime for create_batch (one batched loop of 4 members, no rings)."""

    def __init__(self):
        self._bn = 4
        self._views, self.owner, self.manual_dep, self.linked = {}, {}, set(), []

    def _new_task(self, kernel, kind, args, tags, manual):
        from pypto.runtime.task_graph import Task
        return Task(0, 0, kernel, kind, args, tags, manual)

    def _hold(self, what, amount):
        pass

    def _link(self, task):
        self.linked.append(task)


def test_a_recycled_stack_comes_back_with_its_view_only_when_that_is_free(monkeypatch):
    from pypto.runtime.deps import View
    pool = _pool(monkeypatch)
    rt = _BatchRt()
    first = rt.create_batch([0, 1, 2, 3], [2, 3], torch.float32)
    v = rt.linked[0].views[0]
    assert v.tensor is first.whole and pool.handed[3] is v
    ident, vid = id(first.whole), id(v)
    del first, rt, v
    rt = _BatchRt()
    again = rt.create_batch([0, 1, 2, 3], [2, 3], torch.float32)
    v = rt.linked[0].views[0]
    assert id(again.whole) == ident and id(v) == vid   # the same stack, the same View
    fresh = View(again.whole)
    assert all(getattr(v, f) == getattr(fresh, f) for f in View.__slots__ if f not in ("tensor", "_box"))
    del fresh
    # the View held elsewhere (it names the stack): the stack is not handed out again
    keep = v
    del again, rt, v
    rt = _BatchRt()
    other = rt.create_batch([0, 1, 2, 3], [2, 3], torch.float32)
    assert id(other.whole) != ident
    # a View that no longer describes its stack (a layout changed behind the pool's back): not free
    e = next(e for e in pool.entries[(4, (2, 3), torch.float32)] if id(e[0]) == ident)
    del keep, other, rt
    assert B._free(e)
    e[3] = View(e[0][1:])
    assert not B._free(e)
