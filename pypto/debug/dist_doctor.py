"""``pypto doctor`` on a multi-rank program (a ``@pl.jit.host`` function): is the run-to-run drift of
its result the expected last-bit drift of the collectives' reduction order, or a real bug?

A collective reduction accumulates over the ranks in an order drawn from ``sim_seed`` (on the
device the order is the hardware's): an FP32 allreduce may round differently from run to run, in
the last bits. A program whose result changes for another reason (an access no notify / wait or
barrier orders) is broken. The doctor tells them apart by experiment, not by magnitude alone:

1. **golden** (when given): the seed-0 run against it at ``rtol`` / ``atol``;
2. **reruns** under ``seeds`` simulator seeds, the variation classified as :func:`pypto.debug.fuzz`
   does (none / last bits / larger); when the runs differ, the same seeds again with the reduction
   order **fixed** (rank order; every other seeded choice, the ranks' schedules and jitter, still
   varies). Runs that become bit-identical prove the drift is the reduction order's; runs that still
   differ depend on timing;
5. **the cross-rank race check** (:func:`pypto.debug.dist_races.find_rank_races`), always: a race
   is a bug whatever the reruns showed (a race whose loser always loses gives identical runs).

Causes (``DoctorReport.cause``): ``allreduce_order`` (last-bit drift of the reduction order:
expected), ``allreduce_cancellation`` (the order changes more than the last bits: the sum cancels),
``rank_race``, ``timing_dependent`` (the result depends on timing though no race was recorded),
``kernel_as_written`` (deterministic, race-free, and still off the golden), ``no_gap``.
"""
from __future__ import annotations

import ast
from typing import Callable, Optional

import torch

from pypto.debug.dist_races import find_rank_races
from pypto.debug.doctor import DoctorReport, _verification
from pypto.debug.fuzz import _classify
from pypto.runtime.config import RunConfig
from pypto.runtime.distributed.program import execute_distributed_compiled


def _outputs(host_fn, bound: dict, expected: Optional[dict]) -> list[str]:
    """The names compared between runs: the golden's, else the Out / InOut host parameters."""
    if expected:
        return [k for k in expected if k in bound]
    out = []
    for name, ann in host_fn.annotations():
        if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Attribute) and \
                ann.value.attr in ("Out", "InOut") and isinstance(bound.get(name), torch.Tensor):
            out.append(name)
    return out


def doctor_distributed(host_fn, inputs, expected: Optional[dict] = None, rtol: Optional[float] = None,
                       atol: Optional[float] = None, platform: str = "a2a3sim", seeds: int = 8,
                       distributed_config=None, on_step: Optional[Callable[[int, str], None]] = None,
                       **_ignored) -> DoctorReport:
    """Diagnose the run-to-run variation of ``host_fn(**inputs)`` (see the module docstring).
    ``distributed_config``: the ranks (``DistributedConfig(device_ids=[...])``)."""
    if distributed_config is None:
        raise ValueError(f"'{host_fn.name}' is a multi-rank program: give distributed_config="
                         "DistributedConfig(device_ids=[...]) (in a case dict: 'distributed_config')")
    if seeds < 2:
        raise ValueError("the doctor needs at least two seeds to see run-to-run drift")
    rtol = 1e-5 if rtol is None else rtol
    atol = 1e-5 if atol is None else atol
    bound = host_fn._bind(list(inputs), {}) if isinstance(inputs, (list, tuple)) else host_fn._bind((), dict(inputs))
    outs = _outputs(host_fn, bound, expected)
    if not outs:
        raise ValueError(f"'{host_fn.name}' has no Out / InOut tensor parameter to compare between runs")
    report = DoctorReport(host_fn.name)

    def cfg(seed: int) -> RunConfig:
        return RunConfig(platform=platform, sim_seed=seed, distributed_config=distributed_config)

    def fresh() -> dict:
        return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in bound.items()}

    compiled = host_fn.compile(**fresh(), config=cfg(0))

    def run(seed: int, fixed: bool = False) -> list[torch.Tensor]:
        args = fresh()
        hook = (lambda w: setattr(w, "fixed_order", True)) if fixed else None
        execute_distributed_compiled(compiled, (), args, cfg(seed), world_hook=hook)
        return [args[k] for k in outs]

    def step(n: int, name: str) -> None:
        if on_step is not None:
            on_step(n, name)

    # step 1: the golden
    step(1, "golden and tolerance")
    seeded = {s: run(s) for s in range(seeds)}
    gap = False
    if expected:
        worst = 0.0
        for k, a in zip(outs, seeded[0]):
            e = expected[k].to(a.dtype)
            if not torch.allclose(a.double(), e.double(), rtol=rtol, atol=atol, equal_nan=True):
                gap = True
                worst = max(worst, float((a.double() - e.double()).abs().max()))
        report.add(1, "seed-0 run against the golden", "suspicious" if gap else "ok",
                   f"differs by up to {worst:.3g} (rtol {rtol}, atol {atol})" if gap else
                   f"within rtol {rtol}, atol {atol}")

    # step 5 first in effect: a race is a bug whatever the reruns show
    races = find_rank_races(host_fn, **fresh(), config=cfg(0))

    step(2, "expected differences")
    cls, worst, differing, detail = _classify(seeded)
    if cls == "none":
        report.add(2, "reruns under simulator seeds", "ok", f"{seeds} seeds give bit-identical results")
    else:
        report.add(2, "reruns under simulator seeds", "info",
                   f"{len(differing)}/{seeds - 1} reruns differ ({cls.replace('_', ' ')}: {detail})")
        fixed = {s: run(s, fixed=True) for s in range(seeds)}
        fcls, _, fdiff, fdetail = _classify(fixed)
        order_only = fcls == "none"
        report.add(2, "the same seeds with the reduction order fixed", "explains" if order_only else "suspicious",
                   "bit-identical: the drift is the collectives' reduction order" if order_only else
                   f"{len(fdiff)}/{seeds - 1} still differ ({fdetail}): the result depends on timing")
    step(5, "cross-rank race check")
    report.add(5, "cross-rank race check", "suspicious" if races else "ok",
               "; ".join(str(r) for r in races[:3]) if races else "every conflicting window access is ordered")

    if races:
        return report.settle(5, f"ranks race on window memory: {races[0]}",
                             "order the two accesses: the writer notifies (pld.system.notify) and the reader waits "
                             "(pld.system.wait) on a signal cell, or both meet in a pld.tensor.barrier",
                             "rank_race")
    if cls == "none":
        if gap:
            return report.settle(1, "every seed gives the same result, the race check is clean, and it misses the "
                                    "golden: the program as written disagrees with the golden",
                                 "check the program's math against the golden (the collectives' order is not the "
                                 "cause: the runs do not vary)", "kernel_as_written")
        return report.settle(1, "the result matches the golden" if expected else
                             "bit-identical across seeds and race-free", "nothing to fix", "no_gap")
    if not order_only:
        return report.settle(2, "the result depends on the ranks' timing beyond the reduction order, though the race "
                                "check recorded no unordered window access",
                             "look for an access of another rank's data that no notify / wait or barrier orders "
                             "(host tensors shared between ranks are not recorded)", "timing_dependent")
    if cls == "last_bits":
        return report.settle(2, "last-bit drift from the collectives' reduction order (drawn from sim_seed here, "
                                "the hardware's on the device): expected",
                             "nothing is wrong: compare with a tolerance above the run-to-run drift (here "
                             f"{worst:.3g}; an n-rank sum moves by at most (n-1) x eps x sum|x_r|), or fix sim_seed "
                             "for bitwise reruns in the simulator", "allreduce_order",
                             _verification("verified", f"{seeds} seeds differ by at most {worst:.3g}; with the "
                                                       "order fixed every seed is bit-identical"))
    return report.settle(2, "the collectives' reduction order changes the result by more than the last bits: the "
                            "ranks' contributions cancel, so each order rounds a different large partial sum",
                         "reduce in a wider dtype (cast to FP32 / FP64 before the allreduce), or rescale so the "
                         "contributions do not cancel; a tolerance must be relative to sum|x_r|, not to the result",
                         "allreduce_cancellation")
