"""Schedule fuzzing: run a kernel under many simulator seeds and classify how the result varies.

The simulator's seeded timing jitter changes which ready task runs first and how the global-memory
accesses of different cores interleave, as different runs on hardware would. :func:`fuzz` runs the
same inputs under N seeds and classifies the variation:

* ``none`` — every run is bit-identical;
* ``last_bits`` — runs differ only in the last bits (at most ``LAST_BITS_ULPS`` units in the last
  place of the largest magnitude): accumulation order across cores, e.g. split-K atomic adds —
  expected, nothing to fix (seed step 2);
* ``larger`` — anything more: an ordering bug (seed step 5).

Bit-identical runs are not an all-clear: a race whose loser always loses in the simulator's schedules
gives the same wrong result every time. So :func:`fuzz` also runs the race detector (whatever the
variation; it names the racing tasks and the ``deps=`` that orders them) and, given the expected
output, compares every run with it. :attr:`FuzzReport.clean` is true only when the variation is
none or last bits, no race is found and every run matches the expected output.

Runs go to local worker processes by default (``jobs``); ``backend="ray"`` fans them out on a Ray
cluster (``pip install ray``; an optional dependency, imported only then). Workers re-open the
compiled artifact directory, so nothing but tensors crosses the process boundary.
"""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch

from pypto.progress import Progress, clear, track

LAST_BITS_ULPS = 1024  # relative to the output's largest magnitude: 1024 eps ~ 1e-4 in FP32
# FP16/BF16 have too few bits for 1024 of them to be "the last bits" (1024 FP16 ULPs is the value
# itself): a reordered FP32 accumulation rounded to FP16 moves a result by a few ULPs at most.
_LAST_BITS_BY_DTYPE = {torch.float16: 8, torch.bfloat16: 4}
_EPS = {torch.float32: 2.0 ** -23, torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}


@dataclass
class FuzzReport:
    """What :func:`fuzz` found."""

    kernel: str
    seeds: list[int]
    classification: str
    max_abs_diff: float
    differing_seeds: list[int]
    output_names: list[str]
    races: list = field(default_factory=list)
    # races inside one task: between the cores of a mixed-kernel cluster (pypto.debug.core_races) and
    # between the blocks of a multi-block task (pypto.debug.block_races)
    task_internal: list = field(default_factory=list)
    detail: str = ""
    races_checked: bool = False
    golden_checked: bool = False
    golden_failures: list[int] = field(default_factory=list)   # seeds whose result misses the expected output
    golden_detail: str = ""

    @property
    def clean(self) -> bool:
        """No variation beyond the last bits, no race, and (when given) the expected output matched."""
        return (self.classification != "larger" and not self.races and not self.task_internal
                and not self.golden_failures)

    def format(self) -> str:
        """What ``pypto fuzz`` prints."""
        head = {"none": "no variation: every run is bit-identical",
                "last_bits": "last bits only: accumulation order across cores (expected)",
                "larger": "LARGER than last bits: a task-ordering bug"}[self.classification]
        lines = [f"fuzz {self.kernel}: {len(self.seeds)} seeds -> {head}",
                 f"  max difference between runs: {self.max_abs_diff:.6g}"
                 + (f" (seeds differing from seed {self.seeds[0]}: {self.differing_seeds[:10]})" if self.differing_seeds else "")]
        if self.detail:
            lines.append(f"  {self.detail}")
        if self.golden_checked:
            if self.golden_failures:
                lines.append(f"  expected output: {len(self.golden_failures)}/{len(self.seeds)} runs miss it "
                             f"({self.golden_detail})")
            else:
                lines.append(f"  expected output: every run matches it ({self.golden_detail})")
        found = list(self.races) + list(self.task_internal)
        if self.races_checked and not found:
            lines.append("  race detector: no unordered conflicting accesses")
        if found and self.classification != "larger":
            lines.append("  but the race detector finds a race: the result depends on an order the simulated "
                         "schedules happened not to vary")
        for r in found:
            lines.append("  " + r.format().replace("\n", "\n  "))
        lines.append("verdict: " + ("clean" if self.clean else "FINDING (see above)"))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-ready form (``pypto fuzz --json``)."""
        from pypto.debug.jsonable import jsonable

        return {"kernel": self.kernel, "seeds": list(self.seeds), "classification": self.classification,
                "max_abs_diff": self.max_abs_diff, "differing_seeds": list(self.differing_seeds),
                "outputs": list(self.output_names), "detail": self.detail, "clean": self.clean,
                "races_checked": self.races_checked,
                "races": [{"kind": r.kind, "first": r.first, "second": r.second, "first_kernel": r.first_kernel,
                           "second_kernel": r.second_kernel, "first_span": r.first_span,
                           "second_span": r.second_span, "fix": r.fix} for r in self.races],
                "task_internal_races": [dict(jsonable(r), fix=r.fix, text=r.format())
                                        for r in self.task_internal],
                "golden_checked": self.golden_checked, "golden_failures": list(self.golden_failures),
                "golden_detail": self.golden_detail}

    def __str__(self) -> str:
        return self.format()


def _run_one(out_dir: str, args: list, seed: int, out_idx: list[int]) -> list[torch.Tensor]:
    from pypto.runtime.artifacts import open_artifacts
    from pypto.runtime.config import RunConfig

    compiled = open_artifacts(out_dir).compiled   # checked against the build's meta, as every tool opens it
    run_args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    compiled(*run_args, config=RunConfig(platform=compiled.platform, sim_seed=seed))
    return [run_args[i] for i in out_idx]


def _classify(runs: dict[int, list[torch.Tensor]]) -> tuple[str, float, list[int], str]:
    seeds = list(runs)
    base = runs[seeds[0]]
    differing, worst, worst_ulps, limit = [], 0.0, 0.0, LAST_BITS_ULPS
    for s in seeds[1:]:
        same = True
        for a, b in zip(base, runs[s]):
            if a.dtype.is_floating_point:
                eq = (a.view(torch.int8) == b.view(torch.int8)).all() if a.numel() else True
            else:
                eq = torch.equal(a, b)
            if not bool(eq):
                same = False
                d = (a.double() - b.double()).abs()
                d = torch.where(torch.isnan(d), torch.full_like(d, float("inf")), d)
                mag = torch.maximum(a.double().abs(), b.double().abs())
                mag = float(mag[torch.isfinite(mag)].max()) if bool(torch.isfinite(mag).any()) else 0.0
                dm = float(d.max())
                worst = max(worst, dm)
                eps = _EPS.get(a.dtype, 0.0)
                limit = min(limit, _LAST_BITS_BY_DTYPE.get(a.dtype, LAST_BITS_ULPS))
                ulps = dm / (eps * mag) if eps and mag else float("inf")
                worst_ulps = max(worst_ulps, ulps)
        if not same:
            differing.append(s)
    if not differing:
        return "none", 0.0, [], ""
    if worst_ulps <= limit:
        return "last_bits", worst, differing, (f"largest difference is {worst_ulps:.3g} ULPs of the output's largest "
                                               f"magnitude (threshold {limit})")
    return "larger", worst, differing, f"largest difference is {worst_ulps:.3g} ULPs of the output's largest magnitude"


def fuzz(kernel, args: Sequence, *, seeds: int | Sequence[int] = 16, platform: str = "a2a3sim",
         outputs: Optional[Sequence[str]] = None, jobs: Optional[int] = None, backend: str = "local",
         find_races: bool = True, verbose: bool = False, expected: Optional[dict] = None,
         rtol: float = 1e-5, atol: float = 1e-5) -> FuzzReport:
    """Run ``kernel(*args)`` under each seed and classify the variation (see the module docstring).

    ``outputs`` names the parameters to compare (default: every ``Out``/``InOut`` parameter).
    ``find_races``: also run the race detector (on by default, whatever the variation).
    ``expected``: outputs by name; every run is compared with them at ``rtol``/``atol``.
    """
    from pypto.runtime.config import RunConfig

    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    if len(seed_list) < 2:
        raise ValueError("fuzz needs at least two seeds")
    compiled = kernel.compile(*args, config=RunConfig(platform=platform))
    names = compiled.param_names
    directions = {p["name"]: p["direction"] for p in compiled.meta["params"]}
    out_names = list(outputs) if outputs is not None else [n for n in names if directions[n] in ("Out", "InOut")]
    import inspect

    bound = inspect.signature(kernel.fn).bind(*args)
    run_args = [bound.arguments[n] for n in names]
    out_idx = [names.index(n) for n in out_names]
    out_dir = str(compiled.output_dir)
    runs: dict[int, list[torch.Tensor]] = {}
    if backend == "ray":
        try:
            import ray  # noqa: F401 - optional dependency
        except ImportError:
            raise RuntimeError("backend='ray' needs the optional dependency: pip install ray") from None
        from pypto.runtime.distributed.ray_engine import ensure_ray

        # the cluster the multi-rank engine uses: an initialised Ray, $PYPTO_RAY_ADDRESS, or a local
        # one (docs/distributed.md, "Pointing it at a cluster"). The workers re-open the build by its
        # path, so a remote node needs the same file system (or PYPTO_PROG_BUILD_DIR on shared storage)
        ray = ensure_ray()
        remote = ray.remote(_run_one)
        futures = {s: remote.remote(out_dir, run_args, s, out_idx) for s in seed_list}
        runs = {s: ray.get(futures[s]) for s in track(seed_list, f"fuzz {kernel.fn.__name__}: seeds")}
    elif backend == "local":
        n = jobs if jobs is not None else min(len(seed_list), os.cpu_count() or 1)
        if n <= 1:
            runs = {s: _run_one(out_dir, run_args, s, out_idx)
                    for s in track(seed_list, f"fuzz {kernel.fn.__name__}: seeds", detail=lambda s: f"seed {s}")}
        else:
            import multiprocessing as mp

            with ProcessPoolExecutor(max_workers=n, mp_context=mp.get_context("spawn")) as ex:
                futs = {s: ex.submit(_run_one, out_dir, run_args, s, out_idx) for s in seed_list}
                with Progress(f"fuzz {kernel.fn.__name__}: seeds ({n} processes)", len(futs)) as bar:
                    for _ in as_completed(futs.values()):
                        bar.update()
                runs = {s: f.result() for s, f in futs.items()}
    else:
        raise ValueError(f"unknown backend {backend!r}: use 'local' or 'ray'")
    cls, worst, differing, detail = _classify(runs)
    report = FuzzReport(kernel.fn.__name__, seed_list, cls, worst, differing, out_names, detail=detail)
    if expected is not None:
        from pypto.debug.tolerance import passes

        unknown = [k for k in expected if k not in out_names]
        if unknown:
            raise ValueError(f"expected output(s) {unknown} are not compared outputs of {kernel.fn.__name__} "
                             f"({out_names})")
        report.golden_checked = True
        report.golden_failures = [s for s in seed_list
                                  if not passes(dict(zip(out_names, runs[s])), expected, rtol, atol)]
        report.golden_detail = f"rtol={rtol:g}, atol={atol:g}"
    if find_races:
        from pypto.debug.races import detect_races

        report.races_checked = True
        found = detect_races(compiled, run_args, platform=platform, seed=differing[0] if differing else seed_list[0])
        report.races, report.task_internal = found.races, found.cores + found.blocks
    if verbose:
        clear()
        print(report.format())
    return report
