"""The core-local half of the synchronisation ops (:mod:`pypto.ops.sync`): the flags between the pipes
of one core, barriers, the fence and a ``syncall`` with one participant.

An InCore kernel that uses such an op makes itself a :class:`CoreFlags` (``_cc =
_pto.core_flags(_cc, _block)``); the cores of a mixed-kernel cluster use
:class:`pypto.runtime.cross_core.CoreLink`, which extends it with the cross-core events, the
cluster-wide ``syncall`` and the happens-before bookkeeping of the race detector.

A core runs its instructions in order in the simulator, so a flag changes no value; it is counted so
that a ``sync_dst`` (the device's ``wait_flag``) with no ``sync_src`` before it is reported where it
is: on the device such a wait never ends (no other core can set a core's own flag).
"""
from __future__ import annotations

from .core import SimulationError


class CoreFlags:
    """The sync state of one running core: pending flags per ``(set_pipe, wait_pipe, event_id)``."""

    side = "core"

    def __init__(self, block=(0, 1)):
        self.flags: dict = {}
        self.block = block

    def who(self) -> str:
        """The running core, for messages."""
        return "this core"

    def flag_set(self, set_pipe: str, wait_pipe: str, event_id: int, where: str = "") -> None:
        """``sync_src``: one more pending flag ``event_id`` from ``set_pipe`` to ``wait_pipe``."""
        key = (set_pipe, wait_pipe, event_id)
        self.flags[key] = self.flags.get(key, 0) + 1

    def flag_wait(self, set_pipe: str, wait_pipe: str, event_id: int, where: str = "") -> None:
        """``sync_dst``: take one pending flag; none pending is a wait that never ends."""
        key = (set_pipe, wait_pipe, event_id)
        n = self.flags.get(key, 0)
        if n == 0:
            spell = (f"set_pipe=pl.PipeType.{set_pipe}, wait_pipe=pl.PipeType.{wait_pipe}, event_id={event_id}")
            raise SimulationError(
                f"deadlock: sync_dst({spell}) on {self.who()} waits for flag "
                f"{event_id} ({set_pipe} -> {wait_pipe}), which no sync_src set before it; only this core's own "
                f"{set_pipe} pipe can set it, so the wait never ends",
                hint=f"put pl.system.sync_src({spell}) before the wait, after the {set_pipe} work it is for")
        self.flags[key] = n - 1

    def barrier(self, pipe: str, where: str = "") -> None:
        """``bar_v`` / ``bar_m`` / ``bar_all``: the pipe(s) drain (in order already here)."""
        if pipe == "ALL":
            self.fence(where)

    def fence(self, where: str = "") -> None:
        """``fence``: every global-memory access before it completes first (in order already here)."""

    def set_ffts(self, where: str = "") -> None:
        """``set_ffts``: the simulated FFTS unit needs no workspace."""

    def syncall(self, core_type: str, mode: str, used_cores, where: str = ""):
        """``syncall`` in a kernel of one core per block: the participants are the task's blocks."""
        n = self.block[1] if len(self.block) > 1 else 1
        want = n if used_cores in (None, 0) else int(used_cores)
        if want > n:
            raise SimulationError(f"{where + ': ' if where else ''}deadlock: syncall(core_type={core_type!r}) waits "
                                  f"for {want} participants but the task has {n} block(s): the barrier never "
                                  "completes", hint="pass used_cores= the task's block count")
        if n > 1:
            # a barrier across the blocks of a multi-block task needs them all resident at once (the
            # device's sync_start=True); the scheduler runs blocks as cores free up, so it is refused
            # rather than run without the barrier's ordering
            raise SimulationError(f"{where + ': ' if where else ''}syncall across the {n} blocks of a multi-block "
                                  "task is not modelled by the simulator (only within one block's cluster)",
                                  hint="synchronise the blocks through task dependencies (separate pl.at scopes)")
        return
        yield   # (a generator: the cluster's syncall waits)


def core_flags(cc, block=(0, 1)):
    """The sync link of a kernel: its cluster's (``cc``) or, for an InCore kernel, a new core-local one."""
    return cc if cc is not None else CoreFlags(block)
