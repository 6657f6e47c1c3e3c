"""``InOut`` parameters used in place, with an undo log (docs/simulator.md, "Global memory").

A caller's ``InOut`` tensor used to be copied into a global-memory buffer for the run and copied
back afterwards, so that a run that fails (a located fault, Ctrl-C, a ring deadlock) leaves it as it
was. For a large tensor of which a run writes little (a KV cache: one row per request and step)
the two copies were the largest cost of the call (fresh-memory page faults: ~2-4 ms per 8 MiB).
Now such a tensor is the run's global memory itself, and :class:`UndoLog` keeps what is needed to
put it back: before any write can happen, the region about to be written is saved --

* at **submission** of every task that may write it (an OUTPUT / INOUT / OUTPUT_EXISTING / NO_DEP
  argument on its storage: :meth:`pypto.runtime.simulator.Runtime.submit`, ``submit_batch``): a
  task cannot run before it is submitted, so every element is saved before its first write;
* at an orchestration-level **element write** (``tensor.write``: :data:`ORCH_WRITES`).

On failure the saved regions are written back newest first, so each element ends with the value
saved before its *first* write (a later save may hold an earlier task's result; the earlier save,
restored after it, holds the original). When the saved bytes of one tensor would exceed its size
(a program that rewrites all of it, many times), the log saves the whole tensor once and stops
logging it: restoring that snapshot and then the older entries is still exact. A run that succeeds
leaves the results in place (nothing to copy back); ``execute`` restarts on copies (``_WritesIn``)
only after restoring.
"""
from __future__ import annotations

import torch


class UndoLog:
    """Saved regions of the in-place ``InOut`` tensors of one run (``tensors``: the caller's)."""

    __slots__ = ("bases", "whole", "left", "entries", "saved")

    def __init__(self, tensors):
        self.whole = {t.untyped_storage().data_ptr(): t for t in tensors}
        self.bases = set(self.whole)                  # storages still logged region by region
        self.left = {b: t.numel() * t.element_size() for b, t in self.whole.items()}   # bytes before a snapshot
        self.entries: list = []
        self.saved = 0   # entries ever logged (the log is emptied when the run succeeds)

    def note(self, t: torch.Tensor) -> None:
        """``t`` (a view) may be written from now on: save its current values if it lies on a
        logged storage."""
        b = t.untyped_storage().data_ptr()
        if b not in self.bases:
            return
        n = t.numel() * t.element_size()
        if n == 0:
            return
        if n > self.left[b]:
            whole = self.whole[b]
            self.entries.append((whole, whole.clone()))
            self.saved += 1
            self.bases.discard(b)
            return
        self.left[b] -= n
        self.entries.append((t, t.clone()))
        self.saved += 1

    def note_views(self, views: list) -> None:
        """:meth:`note` of each :class:`pypto.runtime.deps.View`'s tensor in ``views`` (a batched
        submission's written member regions). When they lie on one logged storage, alike in shape
        and dtype, and fit in its budget, their values are saved by one ``torch.stack`` (one copy
        instead of a clone per member: the regions are saved at one moment, before any of them can
        be written, so restoring them in any order is as exact as restoring member by member);
        else member by member, as :meth:`note` would."""
        if len(views) > 1:
            v0 = views[0]
            b, shape, dtype = v0.base, v0.shape, v0.dtype
            if b in self.bases and all(v.base == b and v.shape == shape and v.dtype is dtype for v in views):
                n = len(views) * v0.esize
                for d in shape:
                    n *= d
                if 0 < n <= self.left[b]:
                    self.left[b] -= n
                    ts = [v.tensor for v in views]
                    self.entries.append((ts, torch.stack(ts)))
                    self.saved += len(ts)
                    return
        for v in views:
            self.note(v.tensor)

    def restore(self) -> None:
        """Write every saved region back, newest first; the log is then empty."""
        for t, saved in reversed(self.entries):
            if t.__class__ is list:   # note_views' entry: the member regions and their stack
                for x, s in zip(t, saved):
                    x.copy_(s)
            else:
                t.copy_(saved)
        self.entries.clear()

    def release(self) -> None:
        """The run succeeded: drop the saved regions (the results stay)."""
        self.entries.clear()
