"""Races between the cores of one mixed-kernel cluster (part of the race detector's report,
:func:`pypto.debug.races.detect_races`).

The cores of a cluster (the cube and one or two vector lanes) order their global-memory accesses only
through their synchronisation: a tpush / tpop, a tfree and the push that refills the slot, a
``sync_set`` / ``sync_wait`` on a pipe, a ``syncall`` (which publishes fenced accesses only). While
the race detector runs a group task, the cluster (:mod:`pypto.runtime.cross_core`) keeps the
happens-before relation those ops establish and notes every access with the running core's view of
it; two accesses of different cores to overlapping bytes, one a write, neither ordered before the
other, are a :class:`CoreRace` — a missing wait, a missing fence, a ``sync_set`` on the wrong pipe.
The simulator may well have run them in a harmless order; the device need not.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CoreRace:
    """Two accesses of two cores of a cluster that conflict with no synchronisation ordering them."""

    kind: str            # "RAW" (the second reads what the first writes, in either order), "WAW"
    group: str           # the Group function
    first_core: str      # AIC / AIV0 / AIV1: the writer (of a WAW pair: the one the simulator ran first)
    first_kernel: str
    first_where: str     # file:line of its load / store
    first_pipe: str      # the pipe of that access (MTE2 load, MTE3 vector store, FIX cube store)
    second_core: str
    second_kernel: str
    second_where: str
    overlap_bytes: int
    synced: bool         # the second core did wait for the first (the sync just does not cover this access)

    @property
    def fix(self) -> str:
        """What orders the two accesses."""
        a, b = f"{self.first_core} ({self.first_kernel})", f"{self.second_core} ({self.second_kernel})"
        if self.synced:
            return (f"{b} waits for {a}, but not for this access: a syncall publishes only the accesses a "
                    f"pl.system.fence() completed before it — put pl.system.fence() after {self.first_where} and "
                    f"before the barrier; a sync_set publishes only the accesses on its pipe (this one is on "
                    f"pl.PipeType.{self.first_pipe})")
        return (f"nothing makes {b} wait for {a}: order {self.second_where} after {self.first_where} — tpop a tile "
                f"{a} pushes after its write, or pl.system.sync_set(e, pipe=pl.PipeType.{self.first_pipe}) on {a} "
                f"after the write and pl.system.sync_wait(e, ...) on {b} before its access (the reverse if the "
                "access must come first)")

    def format(self) -> str:
        """Human-readable report line with both source lines and the fix."""
        what = "reads memory" if self.kind == "RAW" else "writes memory"
        return (f"{self.kind} race in mixed-kernel group '{self.group}': {self.second_core} ({self.second_kernel}, "
                f"{self.second_where}) {what} that {self.first_core} ({self.first_kernel}, {self.first_where}) "
                f"writes, with no synchronisation ordering them: either may come first on the device "
                f"({self.overlap_bytes} bytes overlap)\n  fix: {self.fix}")
