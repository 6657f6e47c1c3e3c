"""Cross-rank race check for multi-rank programs (issue 17).

``find_rank_races(host_fn, *args, config=...)`` runs a ``@pl.jit.host`` program once with every
access of window memory recorded — the kernels' tile loads and stores of their own windows, and the
remote loads, stores, puts and gets of other ranks' — together with a vector clock per rank. A
notify carries the notifier's clock in the signal cell and the wait it satisfies takes it; a
barrier or collective joins the clocks of all its ranks; the host joins every rank between launch
phases. Two accesses of the same bytes of one rank's window by different ranks, one of them a
write, whose clocks are unordered, are a race: nothing in the program orders them, so on the
device either may come first (a missing wait). Each is reported with both ranks and source lines.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RankRace:
    """Two unordered accesses of the same window bytes (``first`` / ``second``: Access records)."""

    window: str
    owner: int
    first: object
    second: object

    def __str__(self) -> str:
        a, b = self.first, self.second
        return (f"race on rank {self.owner}'s window '{self.window}': rank {a.rank} {a.what} at {a.where} and "
                f"rank {b.rank} {b.what} at {b.where} are not ordered by any notify/wait, barrier or collective")


def find_rank_races(host_fn, *args, config=None, **kwargs) -> list[RankRace]:
    """Run ``host_fn`` (a ``@pl.jit.host`` function) once and return the cross-rank races found
    (empty: every conflicting pair of window accesses was ordered)."""
    from pypto.runtime.distributed.program import execute_distributed_compiled

    compiled = host_fn.compile(*args, config=config, **kwargs)
    seen = []

    def hook(world):
        world.record_accesses = True
        seen.append(world)

    execute_distributed_compiled(compiled, args, kwargs, config, world_hook=hook)
    out, keys = [], set()
    for a, b in seen[0].races():
        key = (a.window, a.owner, a.rank, a.where, b.rank, b.where)
        if key not in keys:
            keys.add(key)
            out.append(RankRace(a.window, a.owner, a, b))
    return out
