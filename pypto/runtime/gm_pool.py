"""Recycled global-memory buffers for the stacked intermediates of batched orchestration.

A batched loop creates one stacked buffer per ``create_tensor`` site and step
(:meth:`pypto.runtime.batch.BatchRuntime.create_batch`): the flash-attention prefill of
benchmarks/models.py allocates ~85 MB of them per call, all alive until the run ends. Fresh buffers
of that size come from ``mmap`` (glibc's thresholds), so every call paid a page fault per 4 KiB page
on top of the zeroing -- about as much CPU time as the call's attention softmax. The device has a
fixed GM heap that its runtime reuses; here a buffer that no tensor uses any more is handed out
again, zeroed, to the next buffer of the same byte size (:func:`zeros`): the same values as
``torch.zeros`` (a created tensor reads as zeros until written), in memory that is already mapped.

*Free* is decided by reference count: a buffer is a numpy array whose memory the handed-out tensor
views (``torch.from_numpy``), and torch holds one reference to the array for as long as any tensor
or storage over it lives, so a buffer is reused only when no view of it (a slice the program kept,
a returned value, a dump) is left anywhere. The arrays are 64-byte aligned, as torch's own
allocations are. Per thread; buffers not reused during the last :data:`KEEP_RUNS` runs are
dropped, and at most :data:`MAX_BYTES` are kept.
"""
from __future__ import annotations

import math
import sys
import threading

import numpy as np
import torch

MIN_BYTES = 1 << 20    # smaller buffers come from malloc's warm heap anyway
MAX_BYTES = 1 << 30    # bytes kept for reuse per thread (beyond: plain torch.zeros)
KEEP_RUNS = 2          # a buffer not reused in this many runs is released
_ALIGN = 64            # torch's CPU allocator alignment


class _Pool(threading.local):
    def __init__(self):
        self.bufs: dict[int, list] = {}   # byte size -> [[array, run it was last handed out in]]
        self.total = 0
        self.run = 0
        self.owner = None                  # id of the runtime that allocated last


_POOL = _Pool()


def _new_run(pool: _Pool) -> None:
    """A new run began: release the free buffers no run of the last KEEP_RUNS has used."""
    pool.run += 1
    for size, entries in list(pool.bufs.items()):
        keep = [e for e in entries if e[1] >= pool.run - KEEP_RUNS or sys.getrefcount(e[0]) > 2]
        pool.total -= (len(entries) - len(keep)) * size
        if keep:
            pool.bufs[size] = keep
        else:
            del pool.bufs[size]


def zeros(shape, dtype: torch.dtype, owner=None) -> torch.Tensor:
    """``torch.zeros(shape, dtype=dtype)``, in a recycled buffer when one of its byte size is free
    (see the module docstring). ``owner`` (the calling runtime) marks run boundaries."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < MIN_BYTES:
        return torch.zeros(shape, dtype=dtype)
    pool = _POOL
    if owner is not None and id(owner) != pool.owner:
        pool.owner = id(owner)
        _new_run(pool)
    entries = pool.bufs.get(nbytes)
    if entries is not None:
        for e in entries:
            # references: the entry, getrefcount's argument; any more is a live tensor over it
            if sys.getrefcount(e[0]) == 2:
                e[1] = pool.run
                t = torch.from_numpy(e[0]).view(dtype).view(shape)
                t.zero_()
                return t
    if pool.total + nbytes > MAX_BYTES:
        return torch.zeros(shape, dtype=dtype)
    raw = np.empty(nbytes + _ALIGN, dtype=np.uint8)
    skip = -raw.ctypes.data % _ALIGN
    arr = raw[skip:skip + nbytes]
    pool.bufs.setdefault(nbytes, []).append([arr, pool.run])
    pool.total += nbytes
    t = torch.from_numpy(arr).view(dtype).view(shape)
    t.zero_()
    return t
