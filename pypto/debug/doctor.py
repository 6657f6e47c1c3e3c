"""``pypto doctor``: run the precision workflow's five steps for the user, cheapest first, and stop at
the first that explains the gap between the kernel's result and the golden.

1. **Golden and tolerance** — is there a gap at all (over several simulated schedules); is the
   reference deterministic (recomputed when a reference function is given); is there a recorded
   golden; was the golden computed in a lower precision than the kernel's output; would a tolerance
   justified by the data type close the gap (:mod:`pypto.debug.tolerance`: it must also reject an
   all-zeros and a shuffled output). Step 1 *settles* on the tolerance only when no step-2 check
   explains the gap: a real bug is never answered with "loosen the tolerance".
2. **Expected differences** — reruns under several simulator seeds (split-K / atomic order: last-bit
   drift); then experiments (:mod:`pypto.debug.attribution`): each reduction that reads padding, and
   each FP16/BF16 sum, is recomputed on the reference executor (padding filled, FP32 accumulation)
   and the one whose recomputation closes the gap is the cause — a lint that fired on a harmless op
   is named harmless; rounding-mode ties; every cast chain of the lowered IR classified.
3. **The compiler's own checks** — ROUNDTRIP verification after every pass, and every diagnostic.
4. **validate_ir** at the user's tolerance — the first diverging pass and the IR diff around it. A
   divergence already at the first stage is not a pass's fault: the kernel as written disagrees with
   the golden, and the doctor says so, with the compiler's warnings at their lines.
5. **Task by task** — the reference and the simulator side by side: the first task whose output
   differs, the race detector and the poison check (:func:`pypto.debug.races.detect_uninitialized`).
   A race adds the simulated task timeline of a failing seed, the racing pair highlighted.

Every fix the doctor prints has been tried first (:mod:`pypto.debug.fixes`): applied to a copy of the
kernel's source, compiled and run — the report says ``verified`` (the gap closes), ``not verified``
or ``could not verify`` and why.

The output is a terminal summary (what was checked, what settled it, the suggested fix), a JSON form
(:meth:`DoctorReport.to_dict`) and a self-contained HTML report with pictures
(:mod:`pypto.debug.visual`). While it works, a progress line on stderr (a terminal only, after the
first second: :mod:`pypto.progress`) says which step runs; ``on_step`` receives each step as it
starts (the CLI prints them).
"""
from __future__ import annotations

import contextvars
import inspect
import shutil
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import torch

from pypto.progress import Progress, clear, track
from pypto.runtime.distributed.program import HostFunction

# Machine-readable causes (DoctorReport.cause); docs/precision/doctor.md lists them.
CAUSES = {
    "no_gap": "the result matches the golden",
    "reference_nondeterministic": "the reference gives different results on two evaluations",
    "tolerance": "the tolerance is tighter than the data type can meet",
    "golden_precision": "the golden was computed in a lower precision than the kernel",
    "split_k": "last-bit drift from accumulation order across cores",
    "accumulation": "a sum accumulated in FP16/BF16",
    "padding": "padding took part in a reduction",
    "rounding_ties": "rounding-mode ties in a cast",
    "cast_chain": "a multi-hop cast that double-rounds",
    "malformed_ir": "a pass produced malformed IR",
    "out_write_dropped": "an output parameter is never written",
    "faulty_pass": "a compiler pass changed the result",
    "kernel_as_written": "the kernel as written disagrees with the golden",
    "race": "two tasks race on global memory",
    "core_order": "the cores of a mixed kernel are not ordered: a missing wait, fence or tfree order",
    "block_order": "the blocks of a multi-block task touch the same memory with no barrier between them",
    "uninitialized": "a store writes values computed from uninitialized memory",
    "device_differs": "the device result differs from the program's meaning",
    # multi-rank programs (pypto.debug.dist_doctor)
    "allreduce_order": "last-bit drift from the collectives' seeded reduction order",
    "allreduce_cancellation": "the collectives' reduction order changes more than the last bits (cancellation)",
    "rank_race": "two ranks race on window memory",
    "timing_dependent": "the multi-rank result depends on timing beyond the reduction order",
}


@dataclass
class Finding:
    """One thing the doctor checked."""

    step: int
    check: str
    verdict: str          # "ok", "explains", "suspicious", "info"
    detail: str

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {"step": self.step, "check": self.check, "verdict": self.verdict, "detail": self.detail}


@dataclass
class DoctorReport:
    """The doctor's conclusion and everything it looked at."""

    kernel: str
    findings: list[Finding] = field(default_factory=list)
    settled_step: Optional[int] = None
    conclusion: str = ""
    fix: str = ""
    cause: Optional[str] = None        # a key of CAUSES
    verification: Optional[object] = None   # fixes.Verification of the printed fix
    tolerance: Optional[object] = None      # tolerance.Tolerance considered at step 1
    html_path: Optional[Path] = None
    figures: list = field(default_factory=list)

    def add(self, step: int, check: str, verdict: str, detail: str) -> Finding:
        # a tool's own summary may start with its name ("race detector: 8 tasks, ..."): say it once
        if detail.startswith(f"{check}: "):
            detail = detail[len(check) + 2:]
        f = Finding(step, check, verdict, detail)
        self.findings.append(f)
        return f

    def settle(self, step: int, conclusion: str, fix: str, cause: Optional[str] = None,
               verification=None) -> "DoctorReport":
        self.settled_step, self.conclusion, self.fix = step, conclusion, fix
        self.cause, self.verification = cause, verification
        return self

    @property
    def clean(self) -> bool:
        """True when there is nothing to fix: no gap and no race."""
        return self.cause == "no_gap"

    def format(self, width: Optional[int] = None) -> str:
        """The terminal summary, each entry wrapped to ``width`` columns (default: the terminal's,
        80..120) with a hanging indent; multi-line details (diffs, code) are kept verbatim."""
        if width is None:
            width = max(80, min(120, shutil.get_terminal_size((100, 24)).columns))

        def wrap(text: str, indent: str) -> list[str]:
            first, *rest = text.split("\n")
            out = textwrap.wrap(first, width, subsequent_indent=indent, break_long_words=False,
                                break_on_hyphens=False) or [first]
            return out + [indent + r for r in rest]

        lines = [f"pypto doctor: {self.kernel}"]
        for step in range(1, 6):
            fs = [f for f in self.findings if f.step == step]
            if not fs:
                continue
            lines.append(f"step {step} ({_STEP_NAMES[step]}):")
            for f in fs:
                mark = {"ok": "ok  ", "explains": ">>  ", "suspicious": "!!  ", "info": "    "}[f.verdict]
                lines += wrap(f"  {mark}{f.check}: {f.detail}", "      ")
        if self.settled_step is None:
            lines.append("not settled: no step explains the gap")
        else:
            lines += wrap(f"SETTLED at step {self.settled_step}: {self.conclusion}", "    ")
            lines += wrap(f"fix: {self.fix}", "    ")
            if self.verification is not None:
                lines += wrap(f"fix check: {self.verification.line()}", "    ")
        if self.html_path:
            lines.append(f"report: {self.html_path}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Everything but the pictures, JSON-ready (``pypto doctor --json``)."""
        return {"kernel": self.kernel, "settled_step": self.settled_step, "cause": self.cause,
                "conclusion": self.conclusion, "fix": self.fix,
                "fix_check": self.verification.to_dict() if self.verification is not None else None,
                "tolerance": self.tolerance.to_dict() if self.tolerance is not None else None,
                "findings": [f.to_dict() for f in self.findings],
                "html": str(self.html_path) if self.html_path else None}

    def __str__(self) -> str:
        return self.format()


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


def _core_order(report: "DoctorReport", ctx) -> bool:
    """Settle on an ordering bug inside a task: between the cores of a mixed kernel (a race inside a
    cluster, a read after tfree) or between the blocks of a multi-block task; checked first in a
    program with Group functions or multi-block launches, since such a bug makes any result (or none)
    possible. Both source lines are in the finding and the conclusion."""
    from pypto.ir.nodes import FuncCall, ScopeStmt
    from pypto.ir.visit import iter_exprs, iter_stmts
    from pypto.language.enums import FunctionType

    lowered = ctx.compiled.lowered
    if lowered is None:
        return False
    # the blocks of a multi-block task race the same way (pypto.debug.block_races)
    blocks = any(isinstance(e, FuncCall) and e.block_num is not None
                 for f in lowered.functions for e in iter_exprs(f.body)) or any(
        isinstance(st, ScopeStmt) and st.block_num is not None for f in lowered.functions for st in iter_stmts(f.body))
    if not blocks and not any(f.func_type == FunctionType.Group for f in lowered.functions):
        return False
    races = _races(ctx)
    if not races.cores and not races.pipe and not races.blocks:
        return False
    report.add(5, "race detector", "explains", races.format())
    bug = (races.cores or races.blocks or races.pipe)[0]
    if races.cores:
        what = (f"{bug.second_core} ({bug.second_kernel}, {bug.second_where}) and {bug.first_core} "
                f"({bug.first_kernel}, {bug.first_where}) of mixed-kernel group '{bug.group}' touch the same "
                "global memory with no synchronisation ordering them")
    elif races.blocks:
        what = (f"blocks {bug.first_block} ({bug.first_where}) and {bug.second_block} ({bug.second_where}) of task "
                f"{bug.task} ({bug.kernel}, {bug.blocks} blocks) touch the same global memory with no barrier "
                "between them")
        report.settle(5, what, bug.fix, "block_order",
                      _verification("could not verify", "the fix changes the blocks' offsets or adds a barrier, "
                                                        "which the doctor does not edit"))
        return True
    else:
        what = (f"{bug.kind} in kernel '{bug.kernel}': tile '{bug.tile}' released at {bug.first}, used at "
                f"{bug.second}; the producer core may have refilled the slot")
    report.settle(5, what, bug.fix, "core_order",
                  _verification("could not verify", "the fix reorders cross-core synchronisation, which the "
                                                    "doctor does not edit"))
    return True


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


_PASSES: "contextvars.ContextVar" = contextvars.ContextVar("pypto_doctor_passes", default=None)


def _config(platform: str, seed: Optional[int] = None, **cfg):
    from pypto.runtime.config import RunConfig

    return RunConfig(platform=platform, sim_seed=seed, passes=_PASSES.get(), **cfg)


def _run(kernel, bound: dict, platform: str, seed: Optional[int], **cfg) -> dict:
    args = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in bound.items()}
    kernel(*args.values(), config=_config(platform, seed, **cfg))
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


def _split_span(text: str):
    """``file:line:col`` -> ``(file, line)``; ``None`` when it is not a location."""
    try:
        file, line, _ = str(text).rsplit(":", 2)
        return file, int(line)
    except ValueError:
        return None


# --------------------------------------------------------------------------------------- the steps

_STEP_NAMES = {1: "golden and tolerance", 2: "expected differences", 3: "compiler checks", 4: "which pass",
               5: "which task"}
_BAR: "contextvars.ContextVar" = contextvars.ContextVar("pypto_doctor_progress", default=None)
_ON_STEP: "contextvars.ContextVar" = contextvars.ContextVar("pypto_doctor_on_step", default=None)


def doctor(kernel, inputs, expected: Optional[dict] = None, golden_data_dir=None, rtol: Optional[float] = None,
           atol: Optional[float] = None, platform: str = "a2a3sim", reference: Optional[Callable] = None,
           seeds: int = 16, html=None, verbose: bool = False, passes=None,
           on_step: Optional[Callable[[int, str], None]] = None, distributed_config=None) -> DoctorReport:
    """Diagnose why ``kernel(**inputs)`` does not match ``expected`` (see the module docstring).
    A ``@pl.jit.host`` multi-rank program (with ``distributed_config``) goes to
    :func:`pypto.debug.dist_doctor.doctor_distributed`: reduction-order drift or a real bug.

    ``inputs``: every kernel argument (a dict by name, or a list in order; outputs with their initial
    values). ``expected``: golden outputs by name; or ``golden_data_dir`` (recorded with
    ``write_golden``); or ``reference(inputs_dict) -> expected dict``. ``rtol``/``atol`` default to
    the recorded golden's, else 1e-5. ``seeds``: simulated schedules to run. ``html``: where to write
    the HTML report (default: a temporary file). ``passes``: the custom pipeline the kernel is compiled
    with, if any. ``on_step(step, name)`` is called as each step starts.

    A kernel that does not compile raises its compile error (a :class:`pypto.errors.PyptoError` with
    the source location); the doctor diagnoses results, not compile errors.
    """
    if isinstance(kernel, HostFunction):
        # a multi-rank program: its own diagnosis (reduction-order drift vs a real bug)
        from pypto.debug.dist_doctor import doctor_distributed

        return doctor_distributed(kernel, inputs, expected, rtol, atol, platform, seeds=min(seeds, 8),
                                  distributed_config=distributed_config, on_step=on_step)
    kernel = _as_kernel(kernel)
    token = _PASSES.set(passes)
    bar = Progress(f"pypto doctor {kernel.fn.__name__}", 5)
    tok_bar = _BAR.set(bar)
    tok_step = _ON_STEP.set(on_step)
    try:
        return _doctor(kernel, inputs, expected, golden_data_dir, rtol, atol, platform, reference, seeds, html,
                       verbose)
    finally:
        _ON_STEP.reset(tok_step)
        _BAR.reset(tok_bar)
        bar.close()
        _PASSES.reset(token)


def _at_step(step: int) -> None:
    """Progress: step ``step`` starts."""
    bar = _BAR.get()
    if bar is not None:
        bar.set(step - 1, f"step {step}: {_STEP_NAMES[step]}")
    cb = _ON_STEP.get()
    if cb is not None:
        cb(step, _STEP_NAMES[step])


@dataclass
class _Ctx:
    """What every step needs."""

    kernel: object
    bound: dict
    platform: str
    compiled: object
    outs: list
    expected: dict
    rtol: float
    atol: float
    input_dtypes: list
    runs: dict = field(default_factory=dict)
    seed0: int = 0
    tol: object = None            # the step-1 candidate tolerance (tolerance.Tolerance)
    tested: set = field(default_factory=set)   # source lines a step-2 experiment recomputed

    @property
    def actual(self) -> dict:
        return self.runs[self.seed0]


def _doctor(kernel, inputs, expected, golden_data_dir, rtol, atol, platform, reference, seeds, html,
            verbose) -> DoctorReport:
    from pypto.debug import tolerance as tolmod

    report = DoctorReport(kernel.fn.__name__)
    bound = _bind(kernel, inputs)
    compiled = kernel.compile(*bound.values(), config=_config(platform))
    outs = [p["name"] for p in compiled.meta["params"] if p["direction"] in ("Out", "InOut")]
    input_dtypes = [v.dtype for k, v in bound.items() if isinstance(v, torch.Tensor) and k not in outs]

    def finish(r, actual=None):
        return _finish(r, html, kernel, bound, platform, verbose, actual, expected, compiled)

    # ---- step 1: golden and tolerance
    _at_step(1)
    golden_tol = None
    if expected is None and golden_data_dir is not None:
        from pypto.runtime.golden import load_golden

        g = load_golden(golden_data_dir)
        expected = {k: v for k, v in g.outputs.items() if k in outs}
        golden_tol = (g.rtol, g.atol)
        report.add(1, "recorded golden", "ok", f"{golden_data_dir} verified (SHA-256 per file), recorded at "
                                               f"rtol={g.rtol:g}, atol={g.atol:g}")
    if expected is None and reference is not None:
        expected = reference({k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in bound.items()})
        again = reference({k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in bound.items()})
        same = all(torch.equal(expected[k].view(torch.uint8) if expected[k].dtype.is_floating_point else expected[k],
                               again[k].view(torch.uint8) if again[k].dtype.is_floating_point else again[k])
                   for k in expected)
        if not same:
            report.add(1, "reference determinism", "explains", "two evaluations of the reference differ")
            return finish(report.settle(1, "the reference itself is nondeterministic",
                                        "record it once with pypto.runtime.write_golden and compare against the "
                                        "files (golden_data_dir)", "reference_nondeterministic"))
        report.add(1, "reference determinism", "ok", "recomputing the reference gives the same bits")
    if expected is None:
        raise TypeError("doctor needs the golden: expected=..., golden_data_dir=... or reference=...")
    unknown = [k for k in expected if k not in bound]
    if unknown:
        raise TypeError(f"doctor: the golden names {unknown}, which are not parameters of {kernel.fn.__name__} "
                        f"(its outputs: {outs})")
    if golden_data_dir is None:
        report.add(1, "recorded golden", "info", "none given: record the reference with write_golden so later runs "
                                                 "compare against a fixed artefact")
    rtol = rtol if rtol is not None else (golden_tol[0] if golden_tol else 1e-5)
    atol = atol if atol is not None else (golden_tol[1] if golden_tol else 1e-5)
    ctx = _Ctx(kernel, bound, platform, compiled, outs, expected, rtol, atol, input_dtypes)
    # the device need not give the same result twice: look at several simulated schedules
    ctx.runs = {s: _run(kernel, bound, platform, seed=s)
                for s in track(range(seeds), "schedules", detail=lambda s: f"seed {s}")}
    gaps_by_seed = {s: _gap(r, expected, rtol, atol, input_dtypes) for s, r in ctx.runs.items()}
    failing = [s for s, g in gaps_by_seed.items() if not _all_pass(g)]
    ctx.seed0 = failing[0] if failing else 0
    gaps = gaps_by_seed[ctx.seed0]
    actual = ctx.actual
    report.figures.append(("result vs golden", _golden_text(actual, expected, rtol, atol, input_dtypes, compiled)))
    if failing and len(failing) < len(ctx.runs):
        report.add(1, "runs", "info", f"{len(failing)}/{len(ctx.runs)} simulated schedules (seeds) miss the golden; "
                                      f"seed {ctx.seed0} is examined")
    if _core_order(report, ctx):
        return finish(report, actual)
    if _all_pass(gaps):
        report.add(1, "gap", "ok", f"the result matches the golden at rtol={rtol:g}, atol={atol:g} in "
                                   f"{len(ctx.runs)} simulated schedules")
        # a gap seen on the device but not in these schedules can still come from an ordering bug, or
        # from memory the kernel never wrote (zero in these runs, anything on a device)
        races = _races(ctx)
        if races.races:
            report.add(5, "race detector", "explains", races.format())
            r, fix, v = _race_fix(ctx, races.races)
            return finish(report.settle(5, f"no schedule tried here misses the golden, but a {r.kind} race between "
                                           f"{r.first_kernel} ({r.first_span}) and {r.second_kernel} "
                                           f"({r.second_span}) makes the result depend on timing", fix, "race", v),
                          actual)
        from pypto.debug.races import detect_uninitialized

        poison = detect_uninitialized(compiled, [bound[n] for n in compiled.param_names], platform=platform)
        if poison.findings:
            _uninitialized(report, poison, "no schedule tried here misses the golden, but ")
            return finish(report, actual)
        return finish(report.settle(1, "there is no gap at this tolerance", "nothing to fix", "no_gap"), actual)
    worst = max(gaps.values(), key=lambda r: r.mismatches)
    report.add(1, "gap", "info", f"'{worst.name}': {worst.mismatches}/{worst.compared} elements outside "
                                 f"rtol={rtol:g}, atol={atol:g}; {_err(actual, expected)}")
    dt = tolmod.compute_dtype([actual[k].dtype for k in expected], compiled.lowered)
    ctx.tol = report.tolerance = tolmod.suggest(actual, expected, dt)
    report.add(1, "tolerance for the data type", "info",
               f"{ctx.tol.describe()}: {ctx.tol.evidence()}; decided after step 2 (a tolerance is the answer only "
               "when no expected difference explains the gap)")
    low_golden = _golden_precision(actual, expected)
    if low_golden:
        report.add(1, "golden precision", "suspicious", low_golden)

    # ---- step 2: expected differences
    _at_step(2)
    if _step2(report, ctx):
        return finish(report, actual)
    # step 1's verdicts, now that no step-2 check explains the gap
    if low_golden:
        return finish(report.settle(1, "the golden was computed in a lower precision than the kernel: "
                                       + low_golden.split(":")[0],
                                    "compute the golden in the output's precision (or in float64 and round once)",
                                    "golden_precision", _verification("could not verify", "the fix is in your golden, "
                                                                      "which the doctor cannot rewrite")), actual)
    tol = ctx.tol
    # a precision lint no experiment could test keeps the tolerance from being the answer
    untested = [d for d in compiled.diagnostics if d.code in ("PTO-P001", "PTO-P002", "PTO-P003")
                and d.span.line not in ctx.tested]
    if tol.usable and (rtol < tol.rtol or atol < tol.atol) and untested:
        report.add(1, "tolerance for the data type", "info",
                   "not the answer: " + "; ".join(f"{d.code} at {d.span}" for d in untested)
                   + " warned about a precision problem that no experiment could test here")
    if tol.usable and (rtol < tol.rtol or atol < tol.atol) and not untested:
        _mark(report, "tolerance for the data type", "explains")
        return finish(report.settle(1, f"the tolerance is tighter than {tolmod.dtype_name(tol.dtype)} can meet: the "
                                       f"errors are within {tolmod.ULP_BUDGET} ULPs of the data type and no step-2 "
                                       "check explains them",
                                    f"compare at {tol.describe()} (RunConfig(rtol=, atol=))", "tolerance",
                                    _verification("verified", f"at that tolerance the kernel's result passes, "
                                                              "an all-zeros output and a shuffled golden fail")), actual)

    # ---- step 3: verification and diagnostics
    _at_step(3)
    from pypto.errors import VerificationError
    from pypto.driver.build import compile as ir_compile
    from pypto.frontend.specialize import specialize
    from pypto.passes.manager import VerificationLevel

    program = specialize(kernel, tuple(bound.values()), {}).program
    out_dir = Path(tempfile.mkdtemp(prefix="pypto-doctor-"))
    try:
        dumped = ir_compile(program, output_dir=out_dir, dump_passes=True, platform=platform,
                            verification_level=VerificationLevel.ROUNDTRIP, passes=_PASSES.get())
        report.add(3, "compiler self-check", "ok", "every pass verified, printed and re-parsed to the same program")
    except VerificationError as e:
        report.add(3, "compiler self-check", "explains", e.message.splitlines()[0])
        shutil.rmtree(out_dir, ignore_errors=True)
        return finish(report.settle(3, "a compiler pass produced a malformed program", e.message.splitlines()[0], "malformed_ir",
                                    _verification("could not verify", "the fix is in the compiler")), actual)
    diags = dumped.diagnostics
    warn = [d for d in diags if d.code.startswith("PTO-W") or d.code.startswith("PTO-P")]
    report.add(3, "diagnostics", "suspicious" if warn else "ok",
               "; ".join(_diagnostic_words(d) for d in diags) or "no diagnostic fired")
    if any(d.code == "PTO-W001" for d in diags):
        d = next(d for d in diags if d.code == "PTO-W001")
        shutil.rmtree(out_dir, ignore_errors=True)
        return finish(report.settle(3, d.message.split(" — ")[0], "write the output with out[:] = <expr>",
                                    "out_write_dropped",
                                    _verification("could not verify", "this edit is not automated")), actual)

    try:
        # ---- step 4: which pass
        _at_step(4)
        if _step4(report, ctx, dumped, warn):
            return finish(report, actual)

        # ---- step 5: task by task, and races
        _at_step(5)
        _step5(report, ctx)
        return finish(report, actual)
    finally:
        # the per-pass dumps are kept only when the verdict points the user at them (a faulty pass);
        # otherwise they are a temporary of the diagnosis (issue 19: temp dirs removed)
        if report.cause != "faulty_pass":
            shutil.rmtree(out_dir, ignore_errors=True)


def _verification(status: str, detail: str):
    from pypto.debug.fixes import Verification

    return Verification(status, detail)


def _mark(report: DoctorReport, check: str, verdict: str) -> None:
    for f in report.findings:
        if f.check == check:
            f.verdict = verdict


def _golden_precision(actual: dict, expected: dict) -> str:
    """An FP32 output whose golden holds only FP16 (or BF16) values while the kernel's result does not:
    the golden was computed (or stored) in the lower precision."""
    for low, name in ((torch.bfloat16, "BF16"), (torch.float16, "FP16")):
        hits = []
        for k, e in expected.items():
            a = actual[k]
            if e.dtype != torch.float32 or a.dtype != torch.float32:
                return ""
            fin = torch.isfinite(e) & (e != 0)
            if int(fin.sum()) < 16:
                return ""
            ev = e[fin]
            exact_e = float((ev.to(low).float() == ev).float().mean())
            av = a[fin]
            exact_a = float((av.to(low).float() == av).float().mean())
            hits.append((k, exact_e, exact_a))
        if hits and all(ee == 1.0 and ea < 0.5 for _, ee, ea in hits):
            k, _, ea = hits[0]
            return (f"every value of the golden '{k}' is exactly a {name} number, against {ea:.0%} of the kernel's "
                    f"FP32 results: the golden went through {name}")
    return ""


def _step2(report: DoctorReport, ctx: _Ctx) -> bool:
    from pypto.debug.fuzz import _classify

    outs, seeds = ctx.outs, len(ctx.runs)
    runs = {ctx.seed0: [ctx.actual[k] for k in outs]}
    runs.update({s: [r[k] for k in outs] for s, r in ctx.runs.items() if s != ctx.seed0})
    cls, worst, differing, detail = _classify(runs)
    if cls == "last_bits" and not _has_atomic_add(ctx.compiled.lowered):
        report.add(2, "reruns under simulator seeds", "suspicious",
                   f"{len(differing)}/{seeds - 1} reruns differ ({detail}), but no store accumulates atomically: the "
                   "order of the tasks changes the result (go to step 5)")
        cls = "larger"
    elif cls == "last_bits" and _races(ctx).races:
        report.add(2, "reruns under simulator seeds", "suspicious",
                   f"{len(differing)}/{seeds - 1} reruns differ in the last bits, but the race detector finds a race "
                   "besides the atomic adds (go to step 5)")
        cls = "larger"
    if cls == "last_bits":
        report.add(2, "reruns under simulator seeds", "explains",
                   f"{len(differing)}/{seeds - 1} reruns differ in the last bits only ({detail}): accumulation order "
                   "across cores (split-K / atomic add)")
        report.settle(2, "last-bit drift from accumulation order across cores (split-K / atomic add): expected",
                      "nothing is wrong: compare with a tolerance above the run-to-run drift (it does not grow with "
                      f"size, here {worst:.3g}), or K-block on one core (matmul then matmul_acc in one task) when you "
                      "need bitwise reproducibility", "split_k",
                      _verification("verified", f"{seeds} schedules differ by at most {worst:.3g}, in the last bits "
                                                "only; the race detector treats atomic adds as commuting"))
        return True
    if cls == "larger":
        if not any(f.check == "reruns under simulator seeds" for f in report.findings):
            report.add(2, "reruns under simulator seeds", "suspicious",
                       f"{len(differing)}/{seeds - 1} reruns differ by more than the last bits: an ordering bug, not "
                       "an expected difference (go to step 5)")
    else:
        report.add(2, "reruns under simulator seeds", "ok", f"{seeds} seeds give bit-identical results")
    compiled = ctx.compiled
    diags = compiled.diagnostics
    lints = {d.span.line: d for d in diags if d.code in ("PTO-P001", "PTO-P002")}
    if cls != "larger" and _experiments(report, ctx, lints):
        return True
    # cast chains and rounding-mode ties
    lowered = compiled.lowered
    casts = _cast_findings(lowered, ctx.platform)
    for text, exact, _ in casts:
        report.add(2, "cast chain", "ok" if exact else "suspicious", text)
    inexact = [(t, s) for t, ex, s in casts if not ex]
    if inexact and _cast_chain_explains(report, ctx):
        report.settle(2, "an inexact cast chain double-rounds", inexact[0][0], "cast_chain",
                      _verification("could not verify", "a direct conversion closes the gap on the reference "
                                                        "executor, but the platform has no direct cast to apply it "
                                                        "with; which single rounding you want is your choice (see "
                                                        "`pypto cast-check`)"))
        return True
    ties = _ties(lowered, ctx.actual, ctx.expected)
    if ties:
        report.add(2, "rounding-mode ties", "explains", ties)
        v = _verify_cast_mode(ctx, casts)
        report.settle(2, "the cast chain is exact; the differences are rounding-mode ties: pl.cast's default mode "
                         "'round' rounds ties away from zero, torch's .to() rounds them to even",
                      "use pl.cast(x, dtype, mode='rint') to match torch, or compute the golden with ties away",
                      "rounding_ties", v)
        return True
    return False


def _cast_chain_explains(report: DoctorReport, ctx: _Ctx) -> bool:
    """Replace each inexact chain by a direct conversion on the reference executor: does the gap close?"""
    from pypto.debug import attribution
    from pypto.debug.tolerance import passes

    chains = attribution.cast_chain_candidates(ctx.compiled.lowered)
    if not chains:
        return False
    ctx.tested |= {c.span.line for c in chains}
    base = attribution.run_reference(ctx.compiled, ctx.bound)
    res = attribution.run_reference(ctx.compiled, ctx.bound, chains)
    ok = passes(res, ctx.expected, ctx.rtol, ctx.atol) and not passes(base, ctx.expected, ctx.rtol, ctx.atol)
    report.add(2, "cast chain experiment", "explains" if ok else "ok",
               f"with {chains[0].change()} at {chains[0].span}: "
               + (f"the gap closes ({_err(base, ctx.expected)} -> {_err(res, ctx.expected)})" if ok else
                  f"the result does not match either ({_err(res, ctx.expected)}): not what breaks it here"))
    return ok


def _has_atomic_add(lowered) -> bool:
    from pypto.ir.nodes import AssignStmt, Call, EvalStmt
    from pypto.ir.visit import iter_stmts
    from pypto.ops.registry import all_ops

    ops = all_ops()
    for f in lowered.functions:
        for s in iter_stmts(f.body):
            c = s.value if isinstance(s, AssignStmt) else getattr(s, "expr", None) if isinstance(s, EvalStmt) else None
            if isinstance(c, Call) and c.op in ops and any(
                    p.kind == "atomic" and getattr(a, "name", a) in ("Add", "add")
                    for p, a in zip(ops[c.op].params, c.args)):
                return True   # an accumulating (atomic add) write, whichever op makes it
    return False


def _races(ctx: _Ctx):
    """The race detector's report for this call (computed once)."""
    if getattr(ctx, "_races", None) is None:
        from pypto.debug.races import detect_races

        ctx._races = detect_races(ctx.compiled, [ctx.bound[n] for n in ctx.compiled.param_names],
                                  platform=ctx.platform)
    return ctx._races


def _experiments(report: DoctorReport, ctx: _Ctx, lints: dict) -> bool:
    """Recompute each candidate op (padding filled / FP32 accumulation) on the reference executor;
    settle on the one whose recomputation closes the gap, after trying the fix on a copy."""
    from pypto.debug import attribution
    from pypto.debug.tolerance import passes

    cands = attribution.candidates(ctx.compiled.lowered) + attribution.loop_candidates(ctx.compiled.lowered)
    if not cands:
        report.add(2, "padding and low-precision sums", "ok", "no reduction reads padding, no FP16/BF16 sum")
        return False
    exp, bound = ctx.expected, ctx.bound
    base = attribution.run_reference(ctx.compiled, bound)
    if passes(base, exp, ctx.rtol, ctx.atol):
        report.add(2, "padding and low-precision sums", "info", "the program's meaning (reference executor) matches "
                                                                "the golden: the gap comes from the device (step 5)")
        return False
    tol = ctx.tol
    teeth = tol is not None and tol.rejects_zeros and tol.rejects_shuffled
    base_in_budget = teeth and passes(base, exp, tol.rtol, tol.atol)

    def closes(res) -> Optional[tuple]:
        if passes(res, exp, ctx.rtol, ctx.atol):
            return ctx.rtol, ctx.atol
        if teeth and not base_in_budget and passes(res, exp, tol.rtol, tol.atol):
            return tol.rtol, tol.atol
        return None

    results = {}
    ctx.tested |= {c.span.line for c in cands}
    for c in cands:
        res = attribution.run_reference(ctx.compiled, bound, [c])
        results[c] = (res, closes(res))
    explained = [c for c in cands if results[c][1] is not None]
    group = None
    if explained:
        group = [explained[0]]
    else:
        for kind in ("padding", "accumulation", None):
            sub = [c for c in cands if kind is None or c.kind == kind]
            if len(sub) > 1:
                res = attribution.run_reference(ctx.compiled, bound, sub)
                if closes(res) is not None:
                    group = sub
                    results[tuple(sub)] = (res, closes(res))
                    break
    for c in cands:
        res, cl = results[c]
        lint = lints.get(c.span.line)
        said = f" ({lint.code} warned here)" if lint is not None else ""
        if group is not None and c in group:
            verdict = "explains"
            text = f"{c.where}{said}: with {c.change()}, the gap closes ({_err(base, exp)} -> {_err(res, exp)})"
        else:
            verdict = "ok"
            text = (f"{c.where}{said}: with {c.change()}, the result does not match either ({_err(res, exp)}): "
                    "not what breaks it here" if group is None or len(group) == 1 else
                    f"{c.where}{said}: part of the combined change")
        lint = lint or (lints.get(c.span.line) if c.kind == "loop_accumulation" else None)
        report.add(2, "padding in reductions" if c.kind == "padding" else "FP16/BF16 accumulation", verdict, text)
    if group is None:
        return False
    key = group[0] if len(group) == 1 else tuple(group)
    at_tol = results[key][1]
    v = _verify_calls(ctx, group, at_tol)
    kinds = {"accumulation" if c.kind == "loop_accumulation" else c.kind for c in group}
    where = ", ".join(c.where for c in group)
    if kinds == {"padding"}:
        conclusion = (f"padding took part in a reduction: {where} reads the padding of a partially valid tile "
                      "(reductions read the whole physical tile)")
        fix = "fill the padding with the reduction's identity first: " + "; ".join(
            f"pl.fillpad(x, pl.PadValue.{c.pad}) before {c.where}" for c in group)
        cause = "padding"
    elif kinds == {"accumulation"} and group[0].kind == "loop_accumulation":
        c = group[0]
        conclusion = (f"low-precision accumulation: '{c.op}' adds up in {c.dtype} over {c.length or 'every'} trips "
                      f"of the loop at {c.span}; carried in FP32 the result matches")
        fix = (f"carry '{c.op}' in FP32: initialise it as pl.cast(<init>, pl.FP32), add pl.cast(<term>, pl.FP32) in "
               f"the loop, and cast it back once where it is stored (pl.cast(acc, pl.{c.dtype}, mode=\"rint\"))")
        cause = "accumulation"
    elif kinds == {"accumulation"}:
        conclusion = (f"low-precision accumulation: {where} sums {group[0].length} {group[0].dtype} values in "
                      f"{group[0].dtype}; accumulated in FP32 the result matches")
        fix = "accumulate in FP32: " + "; ".join(
            (f"pl.{c.op}(pl.cast(x, pl.FP32), ...) at {c.span} (the sum stays FP32)" if c.keep_fp32 else
             f"pl.cast(pl.{c.op}(pl.cast(x, pl.FP32), ...), pl.{c.dtype}, mode=\"rint\") at {c.span} (rounded once)") for c in group)
        cause = "accumulation"
    else:
        conclusion = f"padding and low-precision accumulation together: {where}"
        fix = "fill the padding first and accumulate in FP32 at " + where
        cause = "padding" if any(c.kind == "padding" for c in group) else "accumulation"
    if v.changed:
        fix += "\n  changed: " + "\n  changed: ".join(v.changed)
    if (at_tol[0], at_tol[1]) != (ctx.rtol, ctx.atol):
        fix += (f"\n  then compare at rtol={at_tol[0]:.3g}, atol={at_tol[1]:.3g}: your rtol={ctx.rtol:g}, "
                f"atol={ctx.atol:g} is tighter than {group[0].dtype} rounding allows even for the fixed kernel "
                "(this tolerance rejects an all-zeros and a shuffled output)")
    report.settle(2, conclusion, fix, cause, v)
    return True


def _verify_calls(ctx: _Ctx, group, at_tol):
    from pypto.debug import fixes

    if any(c.kind == "loop_accumulation" for c in group):
        return _verification("could not verify", "carrying a loop value in another type takes three coordinated "
                                                 "edits (its initial value, the add, the store) that the doctor "
                                                 "does not make; the experiment above ran the change on the "
                                                 "reference executor")
    edits = []
    for c in group:
        if c.kind == "padding":
            rw = fixes.fill_padding(c.pad)
        else:
            rw = fixes.fp32_accumulation(c.dtype, _tile_shape(ctx.compiled.lowered, c), not c.keep_fp32)
        edits.append(fixes.CallEdit(c.span.line, c.op, rw))
    return fixes.verify(ctx.kernel, group[0].span.file, edits, ctx.bound, ctx.expected, at_tol[0], at_tol[1],
                        ctx.platform, passes=_PASSES.get())


def _tile_shape(lowered, cand) -> Optional[tuple]:
    from pypto.ir.nodes import AssignStmt, Call
    from pypto.ir.visit import iter_stmts
    from pypto.ops.registry import all_ops

    ops = all_ops()
    for f in lowered.functions:
        for s in iter_stmts(f.body):
            if isinstance(s, AssignStmt) and isinstance(s.value, Call) and id(s.value) == cand.call_id:
                return tuple(s.value.args[0].type.shape)
    return None


def _verify_cast_mode(ctx: _Ctx, casts):
    from pypto.debug import fixes

    spans = [s for _, _, s in casts if s is not None and not s.is_unknown()]
    if not spans:
        return _verification("could not verify", "the cast has no source location")
    edits = [fixes.CallEdit(s.line, "cast", fixes.cast_mode("rint")) for s in dict.fromkeys(spans)]
    return fixes.verify(ctx.kernel, spans[0].file, edits, ctx.bound, ctx.expected, ctx.rtol, ctx.atol, ctx.platform,
                        passes=_PASSES.get())


def _step4(report: DoctorReport, ctx: _Ctx, dumped, warn) -> bool:
    from pypto.debug import visual

    vreport = dumped.validate_ir(dict(ctx.bound), ctx.expected, rtol=ctx.rtol, atol=ctx.atol,
                                 raise_on_mismatch=False, verbose=False)
    try:
        report.figures.append(("error per pass", visual.pass_error_chart(vreport)))
    except Exception:  # noqa: BLE001 - a plotting problem must not hide the diagnosis
        pass
    first = vreport.first_divergence
    if first is None:
        report.add(4, "per-pass check", "ok", f"every pass matches the golden at rtol={ctx.rtol:g}, "
                                              f"atol={ctx.atol:g}: the program's meaning is right")
        return False
    if vreport.stages and first is vreport.stages[0]:
        # the first stage is the kernel as parsed: no pass has run yet, so no pass can be at fault
        said = [f"{d.code} at {d.span}: {d.message}" for d in warn if d.code.startswith("PTO-P")]
        step2 = [f.detail for f in report.findings if f.step == 2 and f.verdict == "suspicious"]
        report.add(4, "per-pass check", "explains", "the program differs from the golden before any pass runs "
                                                    f"({_err_stage(first)})")
        pointers = said + step2
        fix = ("no compiler pass is at fault: check the kernel's math (or the golden) — the program computes "
               "something else than the golden before the compiler changes anything")
        if pointers:
            fix += "; the compiler flagged: " + "; ".join(pointers)
        report.settle(4, "the kernel as written disagrees with the golden (before any compiler pass runs)", fix,
                      "kernel_as_written", _verification("could not verify", "no change to try: the doctor cannot "
                                                                            "tell which of the kernel's ops is "
                                                                            "meant differently"))
        return True
    report.add(4, "per-pass check", "explains", f"first diverging pass: {first.stage} ({first.file.name})\n"
                                                f"{vreport.diff[:1500]}")
    v = _verify_without_pass(ctx, first.stage)
    report.settle(4, f"pass {first.stage} changed the result: the program stops matching the golden there",
                  f"fix (or drop from the pipeline) pass {first.stage}; the pass dumps either side of "
                  f"{first.file.name} show what it changed ({dumped.output_dir / 'passes_dump'})", "faulty_pass", v)
    return True


def _err_stage(stage) -> str:
    try:
        return "max abs error " + f"{max(d.max_abs for d in stage.vs_golden):.3g}"
    except (ValueError, AttributeError, TypeError):
        return "see the per-pass chart"


def _verify_without_pass(ctx: _Ctx, stage: str):
    from pypto.debug.fixes import Verification
    from pypto.debug.tolerance import passes
    from pypto.errors import PyptoError
    from pypto.passes.pipeline import Pipeline
    from pypto.runtime.config import RunConfig

    pipe = _PASSES.get() or Pipeline.default()
    try:
        pipe = pipe.drop(stage)
    except (KeyError, ValueError) as e:
        return Verification("could not verify", f"pass {stage} cannot be dropped from the pipeline ({e})")
    args = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in ctx.bound.items()}
    try:
        ctx.kernel(*args.values(), config=RunConfig(platform=ctx.platform, passes=pipe))
    except PyptoError as e:
        return Verification("could not verify", f"without {stage} the kernel does not compile or run: "
                                                f"{str(e).splitlines()[0]}")
    if passes(args, ctx.expected, ctx.rtol, ctx.atol):
        return Verification("verified", f"compiled and run without {stage}, the result matches the golden")
    return Verification("not verified", f"without {stage} the result still misses the golden")


def _uninitialized(report: DoctorReport, poison, prefix: str) -> None:
    u = poison.findings[0]
    report.add(5, "poison check", "explains", poison.format())
    fix = u.format().split("  fix: ", 1)[-1].split("\n")[0]
    report.settle(5, f"{prefix}task {u.task} ({u.kernel}) stores values computed from uninitialized core memory "
                     f"({u.cause}) at {u.store_span}: what they hold on the device is unspecified", fix,
                  "uninitialized", _verification("could not verify", "which value the tile should hold is the "
                                                                     "kernel author's choice"))


def _race_fix(ctx: _Ctx, races) -> tuple:
    """The fix for every race between two different scopes (one deps= per pair), tried on a copy."""
    from pypto.debug import fixes

    pairs, edits, file, lead = [], [], None, None
    for r in races:
        if r.first_kernel == r.second_kernel:
            continue
        a, b = _split_span(r.first_span), _split_span(r.second_span)
        if a is None or b is None or a[0] != b[0] or (file is not None and a[0] != file):
            continue
        if (a[1], b[1]) in pairs:
            continue
        file = a[0]
        lead = lead or r
        pairs.append((a[1], b[1]))
        name = {"WAR": "reader_tid", "WAW": "writer_tid"}.get(r.kind, "producer_tid")
        if any(e.producer_line == a[1] for e in edits):
            name = next(e.name for e in edits if e.producer_line == a[1])
        elif any(e.name == name for e in edits):
            name = f"{name}{len(edits) + 1}"
        edits.append(fixes.DepsEdit(a[1], b[1], name))
    if not edits:
        return races[0], races[0].fix, _verification("could not verify", "the racing tasks come from one scope (loop "
                                                               "iterations that overlap) or have no source location")
    v = fixes.verify(ctx.kernel, file, edits, ctx.bound, ctx.expected, ctx.rtol, ctx.atol, ctx.platform,
                     seeds=tuple(range(min(4, max(2, len(ctx.runs))))), passes=_PASSES.get(), check_races=True)
    if len(edits) == 1:
        return lead, lead.fix, v
    fix = (f"{len(edits)} pairs of tasks need an order; change the scopes as follows:\n    "
           + "\n    ".join(v.changed) if v.changed else lead.fix)
    return lead, fix, v


def _cast_findings(lowered, platform) -> list[tuple]:
    """``(text, exact, span of the cast)`` for every cast chain of the lowered program."""
    from pypto.numerics.cast_exactness import classify_chain
    from pypto.passes.diagnostics import cast_chains

    out = []
    for s, types, mode in cast_chains(lowered):
        v = classify_chain(types, mode)
        kind = "exact" if v.exact else "NOT exact"
        span = s.value.span if not s.value.span.is_unknown() else s.span
        out.append((f"{' -> '.join(types)} on {platform} (mode '{mode}', {span}): {kind} — {v.reason}", v.exact,
                    span))
    return out


def _ties(lowered, actual, expected) -> str:
    """Do all mismatches sit exactly at round-half ties of a 'round'-mode cast (1 ULP, ties away)?"""
    from pypto.ir.nodes import AssignStmt, Call
    from pypto.ir.visit import iter_stmts

    modes = {s.value.args[2] for f in lowered.functions for s in iter_stmts(f.body)
             if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tile.cast"}
    if not modes & {"round"}:
        return ""
    from pypto.testing.compare import ulp_distance

    total = 0
    for k, e in expected.items():
        a = actual[k]
        if a.dtype not in (torch.float16, torch.bfloat16, torch.float32) or e.dtype != a.dtype:
            return ""
        d = ulp_distance(a, e)
        bad = d > 0
        if not bool(bad.any()):
            continue
        if int(d.max()) != 1:
            return ""
        # ties away from zero: the result is the larger magnitude of the two neighbours
        if not bool((a[bad].abs() > e[bad].abs()).all()):
            return ""
        total += int(bad.sum())
    return f"all {total} mismatched elements are 1 ULP off, each rounded away from zero where the golden rounded to even" if total else ""


def _step5(report, ctx: _Ctx) -> None:
    from pypto.debug.races import detect_uninitialized

    compiled, bound, platform, seed = ctx.compiled, ctx.bound, ctx.platform, ctx.seed0
    first = _first_differing_task(compiled, bound, platform, seed)
    if first is not None:
        report.add(5, "task by task", "explains", first)
    else:
        report.add(5, "task by task", "info", f"every task's outputs match the reference (seed {seed})")
    args = [bound[n] for n in compiled.param_names]
    races = _races(ctx)
    poison = detect_uninitialized(compiled, args, platform=platform, seed=seed)
    if races.races:
        r = races.races[0]
        report.add(5, "race detector", "explains", races.format())
        report.add(5, "poison check", "suspicious" if poison.findings else "ok", poison.format())
        _add_timeline(report, compiled, bound, seed, ctx.expected, ctx.rtol, ctx.atol, r)
        r, fix, v = _race_fix(ctx, races.races)
        report.settle(5, f"a {r.kind} race between {r.first_kernel} ({r.first_span}) and {r.second_kernel} "
                         f"({r.second_span}): the runtime does not order them, and the device result depends on "
                         "which runs first", fix, "race", v)
        return
    report.add(5, "race detector", "ok", races.format())
    if poison.findings:
        _uninitialized(report, poison, "")
        return
    report.add(5, "poison check", "ok", poison.format())
    if first is not None:
        report.settle(5, "the device result differs from the program's meaning at the task named above",
                      "compare that task's dumps (enable_dump_args=2) with the reference; check memory planning",
                      "device_differs", _verification("could not verify", "no change to try"))


def _add_timeline(report, compiled, bound, seed: int, expected, rtol, atol, race) -> None:
    """The simulated task timeline of a failing seed (``seed`` when it fails, else the first of the
    next 64 that does), the racing pair highlighted, as a figure of the report."""
    from pypto.backend.platforms import get_platform
    from pypto.debug import visual
    from pypto.runtime.simulator import Runtime, load_module
    from pypto.runtime.trace import swimlane_document

    meta, out = compiled.meta, compiled.output_dir
    kernels = {name: load_module(out / rel) for name, rel in meta["kernels"].items()}
    kernel_ids = {name: i for i, name in enumerate(meta["kernels"])}
    names = compiled.param_names

    def run(s):
        rt = Runtime(get_platform(compiled.platform), kernels, s, kernel_ids=kernel_ids)
        gm = [bound[n].detach().clone().contiguous() if isinstance(bound[n], torch.Tensor) else bound[n]
              for n in names]
        load_module(out / meta["orchestration"]).orchestrate(rt, *gm)
        try:
            rt.run_all()
        finally:
            for core in rt.cores:
                core.release()
        return rt, dict(zip(names, gm))

    try:
        chosen, failing = None, False
        for s in track([seed] + [x for x in range(64) if x != seed], "timeline: looking for a failing seed"):
            rt, res = run(s)
            if chosen is None:
                chosen = (s, rt)
            if expected is not None and not _all_pass(_gap(res, expected, rtol, atol, [])):
                chosen, failing = (s, rt), True
                break
        s, rt = chosen
        doc = swimlane_document(rt, 2)
        what = "fails" if failing else "passes (no seed tried fails)"
        png = visual.task_timeline(doc, highlight={race.first, race.second},
                                   title=f"task timeline, seed {s} ({what}): {race.kind} race "
                                         f"{race.first} {race.first_kernel} / {race.second} {race.second_kernel}")
        report.figures.append((f"task timeline (seed {s}, racing pair {race.first} and {race.second} in red)", png))
    except Exception as err:  # noqa: BLE001 - a picture must not hide the diagnosis
        report.figures.append(("task timeline unavailable", f"{type(err).__name__}: {err}"))


def _first_differing_task(compiled, bound, platform, seed: int = 0) -> Optional[str]:
    """Run the reference (torch_codegen) with every kernel call recorded, and the simulator with every
    task's arguments dumped; name the first task whose outputs differ. Only the elements the task
    itself writes are compared (those the reference's call changed): a task is not blamed for parts of
    a shared tensor that other tasks write at other times."""
    from pypto.debug.torch_codegen import torch_codegen
    from pypto.language.enums import FunctionType
    lowered = compiled.lowered
    incore = {f.name: f for f in lowered.functions if f.func_type == FunctionType.InCore}
    ns: dict = {}
    exec(compile(torch_codegen(lowered), "<doctor reference>", "exec"), ns)
    calls: list[tuple[str, list]] = []
    for name in incore:
        fn = ns[name]

        def wrapper(*args, _fn=fn, _name=name):
            before = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
            res = _fn(*args)
            calls.append((_name, [a.clone() if isinstance(a, torch.Tensor) else a for a in args], before))
            return res
        ns[name] = wrapper
    args = [bound[n].clone() if isinstance(bound[n], torch.Tensor) else bound[n] for n in compiled.param_names]
    from pypto.ops.support import reference_platform

    with reference_platform(platform):   # (pl.system.available_*_count() of the program's platform)
        ns[lowered.entry.name](*args)
    from pypto.backend.platforms import get_platform
    from pypto.runtime.simulator import Runtime, load_module

    meta, out = compiled.meta, compiled.output_dir
    kernels = {name: load_module(out / rel) for name, rel in meta["kernels"].items()}
    rt = Runtime(get_platform(platform), kernels, seed)
    after: dict[int, list] = {}
    rt.on_complete = lambda t: after.__setitem__(
        t.index, [a.clone() if isinstance(a, torch.Tensor) else a for a in t.args])
    gm = [bound[n].detach().clone().contiguous() if isinstance(bound[n], torch.Tensor) else bound[n]
          for n in compiled.param_names]
    load_module(out / meta["orchestration"]).orchestrate(rt, *gm)
    rt.run_all()
    tasks = [t for t in rt.tasks if t.kernel in incore]
    from pypto.runtime.trace import rxty

    for t, (name, ref_args, ref_before) in zip(tasks, calls):
        f = incore[name]
        for i, (p, d) in enumerate(zip(f.params, f.directions)):
            if d.name in ("Out", "InOut") and isinstance(ref_args[i], torch.Tensor):
                sim_view = after.get(t.index, t.args)[i]
                ref = ref_args[i]
                written = _bits_differ(ref, ref_before[i])
                if not bool(written.any()):
                    continue
                differ = _bits_differ(sim_view, ref) & written
                if bool(differ.any()):
                    diff = (sim_view.double() - ref.double()).abs()[differ]
                    return (f"task {rxty(t.task_id)} ({name}, {f.span}) writes '{p.name}' differently from the "
                            f"reference: {int(differ.sum())} of the {int(written.sum())} elements it writes differ, "
                            f"max abs {float(diff.max()):.4g}")
    return None


def _diagnostic_words(d) -> str:
    """A diagnostic in the summary: what it says (its first clause) and where, not just its code."""
    kind = "performance hint" if d.code.startswith("PH") else "warning"
    what = d.message.split(";")[0].split(" — ")[0].strip()
    return f"{kind} {d.code} at {d.span}: {what}"


def _golden_text(actual: dict, expected: dict, rtol, atol, input_dtypes, compiled) -> str:
    """The comparison reports of the report page, their per-tile tables on the kernel's own store
    tiles (the grid the heatmap draws) rather than the comparison's default grid."""
    from pypto.testing.compare import compare

    return "\n\n".join(compare(actual[k], expected[k], rtol, atol, name=k, input_dtypes=input_dtypes,
                                tile_shape=_stored_tile_shape(compiled, actual[k]) if compiled is not None else None)
                        .format() for k in expected)


def _stored_tile_shape(compiled, out: torch.Tensor) -> Optional[tuple[int, int]]:
    """The tile shape the kernel writes ``out``'s kind of tensor with (the most frequent
    ``tile.store`` tile over the kernels' stores into a tensor of ``out``'s shape and dtype), so the
    heatmap's grid is the kernel's own tiles; ``None`` when there is no such store (default grid)."""
    from collections import Counter

    from pypto.ir.nodes import Call
    from pypto.ir.types import TensorType, TileType
    from pypto.ir.visit import iter_calls
    from pypto.language.dtypes import dtype_from_torch

    try:
        lowered = compiled.lowered
        dt = dtype_from_torch(out.dtype)
    except Exception:  # noqa: BLE001 - a picture's grid must not fail the diagnosis
        return None
    seen: Counter = Counter()
    for f in lowered.functions:
        for _, c in iter_calls(f.body):
            if not (isinstance(c, Call) and c.op == "tile.store"):
                continue
            tile, target = c.args[0].type, c.args[2].type
            if isinstance(tile, TileType) and isinstance(target, TensorType) and target.dtype == dt \
                    and list(target.shape) == list(out.shape) and len(tile.shape) >= 2 \
                    and all(isinstance(d, int) for d in tile.shape[-2:]):
                seen[tuple(tile.shape[-2:])] += 1
    return seen.most_common(1)[0][0] if seen else None


def _bits_differ(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise: do the two tensors' elements differ in any bit (NaN payloads included)?"""
    if a.dtype.is_floating_point and a.element_size() in (2, 4, 8):
        it = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return a.contiguous().view(it) != b.contiguous().view(it)
    return a != b


def _finish(report: DoctorReport, html, kernel, bound, platform, verbose, actual=None, expected=None,
            compiled=None) -> DoctorReport:
    from pypto.debug import visual

    sections = [("summary", report.format())]
    try:
        if actual is not None and expected is not None:
            for k, e in expected.items():
                a = actual[k]
                tiles = _stored_tile_shape(compiled, a) if compiled is not None else None
                grid = f" ({tiles[0]}x{tiles[1]} tiles: the kernel's stores)" if tiles else ""
                sections.append((f"mismatches per tile: {k}{grid}", visual.error_heatmap(a, e, tile_shape=tiles)))
                if a.dtype.is_floating_point and a.dtype == e.dtype:
                    sections.append((f"ULP distance: {k}", visual.ulp_histogram(a, e)))
        sections += list(report.figures)
    except Exception as err:  # noqa: BLE001 - pictures are a bonus; the diagnosis stands without them
        sections.append(("pictures unavailable", f"{type(err).__name__}: {err}"))
    path = Path(html) if html else Path(tempfile.mkdtemp(prefix="pypto-doctor-")) / f"doctor_{report.kernel}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(visual.html_page(f"pypto doctor: {report.kernel}", sections), encoding="utf-8")
    report.html_path = path
    if verbose:
        clear()
        print(report.format(), file=sys.stdout)
    return report
