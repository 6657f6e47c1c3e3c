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

    def restore(self) -> None:
        """Write every saved region back, newest first; the log is then empty."""
        for t, saved in reversed(self.entries):
            t.copy_(saved)
        self.entries.clear()

    def release(self) -> None:
        """The run succeeded: drop the saved regions (the results stay)."""
        self.entries.clear()
