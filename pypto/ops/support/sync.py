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

from .core import SimulationError, note_fence


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
        """``fence``: every global-memory access before it completes first (in order already here;
        the race detector notes it: a barrier publishes only fenced accesses to other blocks)."""
        note_fence()

    def set_ffts(self, where: str = "") -> None:
        """``set_ffts``: the simulated FFTS unit needs no workspace."""

    def syncall(self, core_type: str, mode: str, used_cores, where: str = ""):
        """``syncall`` in an InCore kernel: the participants are the blocks of the task; the scheduler
        holds each block that arrives (on its core) until all have (:class:`BlockBarrier`)."""
        yield BlockBarrier(core_type, mode, used_cores, where)


class BlockBarrier:
    """What a block of an InCore task yields to the scheduler at a ``syncall``: the scheduler parks it
    (it keeps its core, as a block spinning at a barrier does) until every participant has arrived,
    then resumes them all at the latest arrival (:meth:`pypto.runtime.simulator.Runtime._arrive`)."""

    __slots__ = ("core_type", "mode", "used_cores", "where")

    def __init__(self, core_type: str, mode: str, used_cores, where: str):
        self.core_type, self.mode, self.used_cores, self.where = core_type, mode, used_cores, where

    def participants(self, blocks: int, platform) -> int:
        """How many blocks must arrive; a barrier that can never complete is an error here."""
        at = f"{self.where}: " if self.where else ""
        if self.mode == "hard":
            phys = {"aiv_only": platform.num_aiv, "aic_only": platform.num_aic}.get(
                self.core_type, platform.num_aic + platform.num_aiv)
            if blocks != phys:
                raise SimulationError(
                    f"{at}deadlock: the hard syncall(core_type={self.core_type!r}) waits for every one of the "
                    f"{phys} such cores of the {platform.name} chip, but the task launches {blocks} block(s): "
                    "the barrier never completes (on the device the core times out, error 507018)",
                    hint=f"launch {phys} blocks (pl.spmd({phys}, sync_start=True)), or use "
                         f"pl.system.syncall(mode='soft', gm_workspace=..., used_cores={blocks})")
            return phys
        want = blocks if self.used_cores in (None, 0) else int(self.used_cores)
        if want != blocks:
            raise SimulationError(
                f"{at}{'deadlock: ' if want > blocks else ''}the soft syncall waits for used_cores={want} "
                f"participants, but the task has {blocks} block(s), each of which arrives",
                hint=f"pass used_cores={blocks}")
        return want


def core_flags(cc, block=(0, 1)):
    """The sync link of a kernel: its cluster's (``cc``) or, for an InCore kernel, a new core-local one."""
    return cc if cc is not None else CoreFlags(block)
