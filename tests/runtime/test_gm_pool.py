"""Recycled stacked-intermediate buffers (pypto/runtime/gm_pool.py): a buffer is handed out again
only when no tensor over it is left, always zeroed, 64-byte aligned; unused buffers are released."""
from __future__ import annotations

import threading

import torch

from pypto.runtime import gm_pool

SHAPE = [4, 256, 512]   # 2 MiB of FP32: pooled


class _Owner:
    """Stands for a runtime: a new object is a new run."""


def _fresh_pool(monkeypatch):
    monkeypatch.setattr(gm_pool, "_POOL", gm_pool._Pool())


def test_zeros_and_reuse_only_when_free(monkeypatch):
    _fresh_pool(monkeypatch)
    run = _Owner()
    a = gm_pool.zeros(SHAPE, torch.float32, run)
    assert a.shape == torch.Size(SHAPE) and a.dtype == torch.float32 and torch.count_nonzero(a) == 0
    assert a.data_ptr() % 64 == 0
    a.fill_(3.0)
    keep = a.unbind(0)[2][5:9]   # a view the program kept (a returned value, a dump)
    ptr = a.data_ptr()
    del a
    b = gm_pool.zeros(SHAPE, torch.float32, run)
    assert b.data_ptr() != ptr        # still in use through `keep`
    assert torch.all(keep == 3.0)     # and untouched
    del keep
    c = gm_pool.zeros(SHAPE, torch.float32, run)
    assert c.data_ptr() == ptr and torch.count_nonzero(c) == 0   # free again: reused, zeroed
    assert b.data_ptr() != c.data_ptr()


def test_other_dtypes_of_the_same_size_share_buffers(monkeypatch):
    _fresh_pool(monkeypatch)
    run = _Owner()
    a = gm_pool.zeros([8, 256, 256], torch.bfloat16, run)
    ptr = a.data_ptr()
    a.fill_(1.5)
    del a
    b = gm_pool.zeros([4, 256, 256], torch.float32, run)   # same byte size
    assert b.data_ptr() == ptr and torch.count_nonzero(b) == 0 and b.dtype == torch.float32


def test_small_buffers_are_plain_allocations(monkeypatch):
    _fresh_pool(monkeypatch)
    gm_pool.zeros([16, 16], torch.float32, _Owner())
    assert gm_pool._POOL.total == 0


def test_unused_buffers_are_released_and_the_pool_is_bounded(monkeypatch):
    _fresh_pool(monkeypatch)
    first = _Owner()
    a = gm_pool.zeros(SHAPE, torch.float32, first)
    del a
    assert gm_pool._POOL.total == 4 * 256 * 512 * 4
    runs = [_Owner() for _ in range(gm_pool.KEEP_RUNS + 1)]   # (alive: distinct objects)
    for run in runs:   # runs that allocate other sizes only
        gm_pool.zeros([2, 256, 512], torch.float32, run)
    assert 4 * 256 * 512 * 4 not in gm_pool._POOL.bufs
    monkeypatch.setattr(gm_pool, "MAX_BYTES", 0)
    t = gm_pool.zeros([8, 256, 512], torch.float32, _Owner())   # over the bound: not kept
    assert torch.count_nonzero(t) == 0 and 8 * 256 * 512 * 4 not in gm_pool._POOL.bufs


def test_per_thread(monkeypatch):
    _fresh_pool(monkeypatch)
    a = gm_pool.zeros(SHAPE, torch.float32, _Owner())
    ptr = a.data_ptr()
    del a
    seen = []
    th = threading.Thread(target=lambda: seen.append(gm_pool.zeros(SHAPE, torch.float32, _Owner()).data_ptr()))
    th.start()
    th.join()
    assert seen[0] != ptr   # the other thread has its own pool: the free buffer stays this thread's
