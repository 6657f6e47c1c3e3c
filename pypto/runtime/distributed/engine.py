"""Engines that run the ranks of a multi-rank program.

An engine gets a :class:`RankPlan` per phase (the per-rank programs the host orchestrator launched
since its previous host-level collective, each already compiled) and runs them to completion. The
interface is one method, :meth:`Engine.run_phase`, so another engine (the Ray engine,
:mod:`.ray_engine`: each rank an actor, window traffic through actor calls) plugs in beside the
in-process one without touching the host interpreter or the ops.

The in-process engine (the default, nothing to start): one thread per rank; each thread runs its
rank's launches in order on that rank's simulated card (its own simulator run per launch, its own
GM, cores and scheduler); the threads share the :class:`pypto.ops.support.dist.World`.
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any

from pypto.errors import PyptoError, SimulationError
from pypto.ops.support import dist as support_dist
from pypto.ops.support import recording


@dataclass
class Launch:
    """One ``per_rank(..., device=r)`` dispatch: the compiled program and its runtime arguments."""

    rank: int
    name: str
    compiled: Any
    args: list
    where: str
    dfx_dir: Any = None   # where this dispatch's DFX outputs go (dfx_outputs/rank{r}/d{k}); None: default


@dataclass
class RankPlan:
    """The launches of one phase, by rank (in dispatch order)."""

    nranks: int
    launches: dict[int, list[Launch]] = field(default_factory=dict)

    def add(self, launch: Launch) -> None:
        self.launches.setdefault(launch.rank, []).append(launch)

    def __bool__(self) -> bool:
        return any(self.launches.values())


class Engine:
    """Runs the phases of a multi-rank program; subclasses implement :meth:`run_phase`."""

    name = "abstract"

    def run_phase(self, plan: RankPlan, world: support_dist.World, config) -> None:
        """Run every launch of ``plan``: each rank's in order, the ranks concurrently; return when
        all finished, raise the first failure (a deadlock names every blocked rank)."""
        raise NotImplementedError


class InProcessEngine(Engine):
    """Every rank a thread of this process (see the module docstring)."""

    name = "inprocess"

    def run_phase(self, plan: RankPlan, world: support_dist.World, config) -> None:
        from pypto.runtime.simulator import dfx_dir

        errors: dict[int, BaseException] = {}
        with world.lock:
            world.join_all()   # the host joined every rank before this phase
            world.finished = {r for r in range(plan.nranks) if not plan.launches.get(r)}
            world.failed.clear()
            world.blocked.clear()

        def body(rank: int) -> None:
            support_dist.install(world, rank)
            err = None
            try:
                rec = support_dist.local_recorder(world, rank) if world.record_accesses else None
                with recording(rec) if rec is not None else contextlib.nullcontext():
                    for ln in plan.launches.get(rank, []):
                        with dfx_dir(ln.dfx_dir):
                            ln.compiled(*ln.args, config=config)
            except BaseException as e:  # reported below, in rank order
                err = e
                errors[rank] = e
            finally:
                support_dist.install(None, None)
                world.rank_done(rank, err)

        threads = [threading.Thread(target=body, args=(r,), name=f"pypto-rank{r}", daemon=True)
                   for r in sorted(plan.launches) if plan.launches[r]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        raise_root_cause(errors)


def raise_root_cause(errors: dict[int, BaseException]) -> None:
    """Raise the error of a failed phase (``errors``: rank -> exception; nothing when empty): the
    root cause first, a rank that failed on its own, not one abandoned because of it."""
    if not errors:
        return

    def key(item):
        r, e = item
        return ("abandoned" in str(e), "deadlock" not in str(e), r)
    rank, err = sorted(errors.items(), key=key)[0]
    if isinstance(err, PyptoError):
        raise err
    raise SimulationError(f"rank {rank}: {type(err).__name__}: {err}") from err


def _ray_engine() -> Engine:
    # imported on demand: ray is an optional dependency, and importing it costs a second
    from pypto.runtime.distributed.ray_engine import RayEngine

    return RayEngine()


ENGINES = {"inprocess": InProcessEngine, "ray": _ray_engine}


def get_engine(name: str | None) -> Engine:
    """The engine called ``name``: ``"inprocess"`` (default) or ``"ray"``."""
    key = name or "inprocess"
    if key not in ENGINES:
        raise ValueError(f"unknown distributed engine {key!r}: use one of {', '.join(sorted(ENGINES))} "
                         "(RunConfig(distributed_backend=...), docs/distributed.md)")
    return ENGINES[key]()
