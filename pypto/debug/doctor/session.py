"""The doctor's session: what every step needs, and the loop that runs the steps in order.

A diagnosis is a :class:`DoctorSession` run through a list of :class:`Step` entries (the list is
``pypto.debug.doctor.STEPS``, as the compiler's passes are ``pypto.passes.PIPELINE``): each step reads
and fills the session and returns True when it has settled the report, which ends the diagnosis. The
session owns what outlives a step (the bound arguments, the compiled program, the runs under each
seed, the race detector's report, the pass dumps of step 3) and cleans up after the last one.
"""
from __future__ import annotations

import inspect
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import torch

from pypto.debug.doctor.report import DoctorReport
from pypto.progress import Progress


@dataclass(frozen=True)
class Step:
    """One entry of the doctor's list of steps.

    ``run(session) -> bool``: True when the step settled the report (the diagnosis stops there).
    ``number`` is the workflow step the findings are filed under; ``announce`` False marks a step that
    only finishes an earlier one (step 1's tolerance verdict waits for step 2): no progress line."""

    number: int
    name: str
    run: Callable[["DoctorSession"], bool]
    announce: bool = True


@dataclass
class DoctorSession:
    """What the steps share: the call under diagnosis, the golden, the runs and the report."""

    kernel: object
    inputs: object
    expected: Optional[dict]
    golden_data_dir: object
    rtol: Optional[float]
    atol: Optional[float]
    platform: str
    reference: Optional[Callable]
    seeds: int
    passes: object = None                  # the custom pipeline the kernel is compiled with, if any
    report: DoctorReport = None
    bound: dict = field(default_factory=dict)
    compiled: object = None
    outs: list = field(default_factory=list)
    input_dtypes: list = field(default_factory=list)
    runs: dict = field(default_factory=dict)   # seed -> the outputs of that simulated schedule
    seed0: int = 0                             # the seed examined (the first failing one)
    tol: object = None            # the step-1 candidate tolerance (tolerance.Tolerance)
    tested: set = field(default_factory=set)   # source lines a step-2 experiment recomputed
    golden_tol: Optional[tuple] = None         # (rtol, atol) of a recorded golden
    low_golden: str = ""                       # step 1's suspicion that the golden is low precision
    dumped: object = None                      # step 3's build with every pass dumped
    warn: list = field(default_factory=list)   # step 3's warnings and precision lints
    dump_dir: Optional[Path] = None            # where step 3's build lives (removed at the end)
    _races: object = None

    @property
    def actual(self) -> Optional[dict]:
        """The outputs of the examined schedule (None before step 1 has run the kernel)."""
        return self.runs.get(self.seed0)

    def races(self):
        """The race detector's report for this call (computed once)."""
        if self._races is None:
            from pypto.debug.races import detect_races

            self._races = detect_races(self.compiled, [self.bound[n] for n in self.compiled.param_names],
                                       platform=self.platform)
        return self._races

    def start(self) -> None:
        """Bind the arguments and compile the kernel (a compile error propagates: the doctor
        diagnoses results, not compile errors)."""
        self.report = DoctorReport(self.kernel.fn.__name__)
        self.bound = _bind(self.kernel, self.inputs)
        self.compiled = self.kernel.compile(*self.bound.values(), config=_config(self.platform, passes=self.passes))
        self.outs = [p["name"] for p in self.compiled.meta["params"] if p["direction"] in ("Out", "InOut")]
        self.input_dtypes = [v.dtype for k, v in self.bound.items()
                             if isinstance(v, torch.Tensor) and k not in self.outs]

    def run(self, steps, progress: Optional[Progress] = None,
            on_step: Optional[Callable[[int, str], None]] = None) -> DoctorReport:
        """Run ``steps`` in order until one settles the report; return the report."""
        self.start()
        try:
            for step in steps:
                if step.announce:
                    if progress is not None:
                        progress.set(step.number - 1, f"step {step.number}: {step.name}")
                    if on_step is not None:
                        on_step(step.number, step.name)
                if step.run(self):
                    break
            return self.report
        finally:
            # the per-pass dumps are kept only when the verdict points the user at them (a faulty
            # pass); otherwise they are a temporary of the diagnosis (issue 19: temp dirs removed)
            if self.dump_dir is not None and self.report.cause != "faulty_pass":
                shutil.rmtree(self.dump_dir, ignore_errors=True)


# --------------------------------------------------------------------------------------- helpers

class _ProgramKernel:
    """The doctor's view of a ``@pl.program`` (mixed cube + vector kernels are written as programs):
    the signature of its orchestration function, compiled with ``ir.compile``."""

    def __init__(self, program):
        from pypto.language.enums import FunctionType

        self.program = program
        orch = next((f for f in program.functions if f.func_type == FunctionType.Orchestration), None)
        if orch is None:
            raise TypeError(f"doctor: program {program.name!r} has no Orchestration function to run")
        names = [p.name for p in orch.params]

        def fn(*args):
            """(the program's orchestration signature)"""
        fn.__name__ = program.name
        fn.__signature__ = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                              for n in names])
        self.fn = fn
        self._compiled: dict = {}

    def compile(self, *args, config=None):
        import pypto.ir as ir

        plat = getattr(config, "platform", None) or "a2a3sim"
        if plat not in self._compiled:
            self._compiled[plat] = ir.compile(self.program, platform=plat)
        return self._compiled[plat]

    def __call__(self, *args, config=None):
        return self.compile(config=config)(*args, config=config)


def _as_kernel(kernel):
    """A ``@pl.jit`` kernel as it is; a ``@pl.program`` wrapped (:class:`_ProgramKernel`)."""
    from pypto.ir.nodes import Program

    return _ProgramKernel(kernel) if isinstance(kernel, Program) else kernel


def _bind(kernel, inputs) -> dict:
    names = list(inspect.signature(kernel.fn).parameters)
    if isinstance(inputs, dict):
        missing = [n for n in names if n not in inputs]
        if missing:
            raise TypeError(f"doctor: no value for parameter(s) {missing} of {kernel.fn.__name__}")
        return {n: inputs[n] for n in names}
    if len(inputs) != len(names):
        raise TypeError(f"doctor: {kernel.fn.__name__} takes {len(names)} arguments, got {len(inputs)}")
    return dict(zip(names, inputs))


def _config(platform: str, seed: Optional[int] = None, passes=None, **cfg):
    from pypto.runtime.config import RunConfig

    return RunConfig(platform=platform, sim_seed=seed, passes=passes, **cfg)


def _run(kernel, bound: dict, platform: str, seed: Optional[int], passes=None, **cfg) -> dict:
    args = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in bound.items()}
    kernel(*args.values(), config=_config(platform, seed, passes, **cfg))
    return args


def _gap(actual: dict, expected: dict, rtol: float, atol: float, input_dtypes) -> dict:
    from pypto.testing.compare import compare

    return {k: compare(actual[k], expected[k], rtol, atol, name=k, input_dtypes=input_dtypes) for k in expected}


def _all_pass(reports: dict) -> bool:
    return all(r.passed for r in reports.values())


def _err(actual: dict, expected: dict) -> str:
    """``max abs error 1.2e-3, max 67 ULP`` over every output."""
    from pypto.testing.compare import compare

    worst_abs, worst_ulp = 0.0, None
    for k, e in expected.items():
        r = compare(actual[k], e, 0.0, 0.0, name=k)
        worst_abs = max(worst_abs, r.max_abs)
        if r.max_ulp is not None:
            worst_ulp = max(worst_ulp or 0, r.max_ulp)
    return f"max abs error {worst_abs:.3g}" + (f", {worst_ulp} ULP" if worst_ulp is not None else "")

