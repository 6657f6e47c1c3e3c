"""Races between the blocks of one multi-block task (part of the race detector's report,
:func:`pypto.debug.races.detect_races`).

The blocks of a task launched with ``block_num=n`` (``pl.spmd(n)``, ``pl.at(..., block_num=n)``) run
at the same time on ``n`` cores; nothing orders one block's global-memory accesses against another's
except a ``pl.system.syncall`` barrier that all of them pass. Two blocks that touch overlapping bytes
between the same two barriers, one of them writing, race: typically an offset computed from the
block index that is off by a tile, or a reduction every block stores to the same place. The
simulator runs the blocks in some order and gives some answer; the device may give another on every
run. Atomic-add stores (``atomic=pl.AtomicType.Add``) commute with each other and are not races.

A barrier publishes only what a block fenced before it (``pl.system.fence()`` or ``bar_all``), as
for the cores of a cluster: a store still in flight when its block arrives may land after another
block's read. The detector notes, for every block, each access's byte range, direction, source line,
*phase* (how many barriers the block had passed) and the phase from which it is visible to the other
blocks (the first barrier after a fence that follows it; never, if no such barrier comes).
:func:`find_block_races` reports each conflicting pair of different blocks that no barrier orders,
once per pair of source lines.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class BlockRace:
    """Two blocks of one task that access overlapping global memory with no barrier between them."""

    kind: str             # "WAW" (both write) or "RAW" (one reads what the other writes)
    task: str             # rXtY of the task
    kernel: str
    blocks: int           # the task's block count
    first_block: int      # the writer (of a WAW pair: the lower block index)
    first_where: str      # file:line of its access
    second_block: int
    second_where: str
    overlap_bytes: int

    @property
    def fix(self) -> str:
        """What makes the two blocks' accesses disjoint or ordered."""
        if self.kind == "WAW":
            return (f"give each block its own region: the offsets of {self.first_where} and {self.second_where} "
                    "must differ by at least the tile for different block indices (pl.tile.get_block_idx() / the "
                    "pl.spmd index); if the blocks accumulate into one place on purpose, store with "
                    "atomic=pl.AtomicType.Add")
        return (f"a block reads ({self.second_where}) what another block writes ({self.first_where}): order them "
                "with a barrier every block passes between the write and the read (pl.system.fence() then "
                "pl.system.syncall(...)), or split the work into two tasks (two pl.at scopes) so the runtime "
                "orders them")

    def format(self) -> str:
        """Human-readable report line with both source lines and the fix."""
        what = "writes memory that" if self.kind == "WAW" else "reads memory that"
        return (f"{self.kind} race between blocks of task {self.task} ({self.kernel}, {self.blocks} blocks): block "
                f"{self.second_block} ({self.second_where}) {what} block {self.first_block} ({self.first_where}) "
                f"writes, with no barrier between them: either may come first on the device "
                f"({self.overlap_bytes} bytes overlap)\n  fix: {self.fix}")


NEVER = 1 << 30   # the phase an access no barrier publishes is visible from


class BlockTrack:
    """The race detector's notes on the blocks of one task (:func:`pypto.debug.races.collect_accesses`):
    which block runs, its phase, and the accesses awaiting a fence / a barrier to be published."""

    def __init__(self):
        self.block = self.phase = 0
        self._unfenced: list = []
        self._fenced: list = []

    def start(self, block: int) -> None:
        """Block ``block`` starts; what the previous block left unpublished stays so."""
        self.block, self.phase = block, 0
        self._unfenced, self._fenced = [], []

    def access(self, acc, where: str) -> None:
        """Stamp an access of the running block."""
        acc.block, acc.phase, acc.where, acc.published = self.block, self.phase, where, NEVER
        self._unfenced.append(acc)

    def fence(self) -> None:
        """Every access so far completes before the next barrier."""
        self._fenced += self._unfenced
        self._unfenced = []

    def barrier(self) -> None:
        """The block passes a barrier: its fenced accesses are visible to every block after it."""
        self.phase += 1
        for acc in self._fenced:
            acc.published = self.phase
        self._fenced = []


def find_block_races(task: str, kernel: str, blocks: int, accesses: list) -> list[BlockRace]:
    """Conflicting pairs among ``accesses`` (:class:`pypto.debug.races.Access` stamped by
    :class:`BlockTrack`) of different blocks that no barrier orders; one per pair of lines and kind.

    Access ``a`` is ordered before ``b`` of another block when ``b`` runs in a phase from which ``a``
    is published. A sweep over the accesses sorted by start address per storage: each is checked
    against the earlier ones still open at its start — a write against every open access, a read
    against the open writes only (reads never conflict with reads), so a weight every block reads
    costs no pair checks."""
    out: list[BlockRace] = []
    seen: set = set()
    keyed: dict = {}
    for a in accesses:
        keyed.setdefault(a.storage, []).append(a)
    for group in keyed.values():
        group.sort(key=lambda a: a.lo)
        open_w: list = []
        open_r: list = []
        for a in group:
            open_w = [w for w in open_w if w.hi > a.lo]
            open_r = [r for r in open_r if r.hi > a.lo]
            for b in (open_w + open_r if a.write else open_w):
                if (b.block == a.block or (a.atomic and b.atomic)
                        or a.phase >= b.published or b.phase >= a.published):
                    continue
                ov = min(a.hi, b.hi) - a.lo
                if ov <= 0:
                    continue
                w, o = (b, a) if b.write else (a, b)   # the writer first
                if a.write and b.write and a.block < b.block:
                    w, o = a, b
                kind = "WAW" if a.write and b.write else "RAW"
                key = (kind, w.where, o.where)
                if key in seen:
                    continue
                seen.add(key)
                out.append(BlockRace(kind, task, kernel, blocks, w.block, w.where, o.block, o.where, ov))
            (open_w if a.write else open_r).append(a)
    return out
