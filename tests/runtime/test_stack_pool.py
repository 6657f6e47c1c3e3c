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
