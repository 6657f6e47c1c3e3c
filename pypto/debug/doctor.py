"""``pypto doctor``: run the seed page's five steps for the user, cheapest first, and stop at the first
that explains the gap between the kernel's result and the golden.

1. **Golden and tolerance** — is there a gap at all; is the tolerance sane for the dtypes (and does a
   tolerance that fits the dtype close the gap); is the reference deterministic (recomputed when a
   reference function is given); is there a recorded golden.
2. **Expected differences** — reruns under several simulator seeds (split-K / atomic order: last-bit
   drift); padding taking part in a reduction; FP16/BF16 accumulation over long reductions;
   rounding-mode ties (``pl.cast``'s default ``round`` is ties-away, torch's ``.to()`` ties-to-even);
   every cast chain of the lowered IR classified exact or not.
3. **The compiler's own checks** — ROUNDTRIP verification after every pass, and every diagnostic.
4. **validate_ir** at the user's tolerance — the first diverging pass and the IR diff around it.
5. **Task by task** — the reference and the simulator side by side: the first task whose output
   differs (kernel, source line, error statistics), plus the race detector's report and the poison
   check (:func:`pypto.debug.races.detect_uninitialized`: stores of padding / never-written tiles).
   A race adds the simulated task timeline of a failing seed, the racing pair highlighted.

The output is a terminal summary (what was checked, what settled it, the suggested fix) and a
self-contained HTML report with pictures (:mod:`pypto.debug.visual`). While it works, a progress line
on stderr (a terminal only, after the first second: :mod:`pypto.debug.progress`) says which step runs.
"""
from __future__ import annotations

import contextvars
import inspect
import math
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import torch

from pypto.debug.progress import Progress, clear, track

_EPS = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7, torch.float32: 2.0 ** -23}


@dataclass
class Finding:
    """One thing the doctor checked."""

    step: int
    check: str
    verdict: str          # "ok", "explains", "suspicious", "info"
    detail: str


@dataclass
class DoctorReport:
    """The doctor's conclusion and everything it looked at."""

    kernel: str
    findings: list[Finding] = field(default_factory=list)
    settled_step: Optional[int] = None
    conclusion: str = ""
    fix: str = ""
    html_path: Optional[Path] = None
    figures: list = field(default_factory=list)

    def add(self, step: int, check: str, verdict: str, detail: str) -> Finding:
        f = Finding(step, check, verdict, detail)
        self.findings.append(f)
        return f

    def settle(self, step: int, conclusion: str, fix: str) -> "DoctorReport":
        self.settled_step, self.conclusion, self.fix = step, conclusion, fix
        return self

    def format(self) -> str:
        """The terminal summary."""
        names = {1: "golden and tolerance", 2: "expected differences", 3: "compiler checks", 4: "which pass",
                 5: "which task"}
        lines = [f"pypto doctor: {self.kernel}"]
        for step in range(1, 6):
            fs = [f for f in self.findings if f.step == step]
            if not fs:
                continue
            lines.append(f"step {step} ({names[step]}):")
            for f in fs:
                mark = {"ok": "ok  ", "explains": ">>  ", "suspicious": "!!  ", "info": "    "}[f.verdict]
                lines.append(f"  {mark}{f.check}: {f.detail}".replace("\n", "\n      "))
        if self.settled_step is None:
            lines.append("not settled: no step explains the gap")
        else:
            lines.append(f"SETTLED at step {self.settled_step}: {self.conclusion}")
            lines.append(f"fix: {self.fix}")
        if self.html_path:
            lines.append(f"report: {self.html_path}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


# --------------------------------------------------------------------------------------- helpers

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


def _outputs(kernel, bound: dict, platform: str) -> list[str]:
    compiled = kernel.compile(*bound.values(), config=_config(platform))
    return [p["name"] for p in compiled.meta["params"] if p["direction"] in ("Out", "InOut")]


def _gap(actual: dict, expected: dict, rtol: float, atol: float, input_dtypes) -> dict:
    from pypto.testing.compare import compare

    return {k: compare(actual[k], expected[k], rtol, atol, name=k, input_dtypes=input_dtypes) for k in expected}


def _all_pass(reports: dict) -> bool:
    return all(r.passed for r in reports.values())


# --------------------------------------------------------------------------------------- the steps

def doctor(kernel, inputs, expected: Optional[dict] = None, golden_data_dir=None, rtol: Optional[float] = None,
           atol: Optional[float] = None, platform: str = "a2a3sim", reference: Optional[Callable] = None,
           seeds: int = 32, html=None, verbose: bool = False, passes=None) -> DoctorReport:
    """Diagnose why ``kernel(**inputs)`` does not match ``expected`` (see the module docstring).

    ``inputs``: every kernel argument (a dict by name, or a list in order; outputs with their initial
    values). ``expected``: golden outputs by name; or ``golden_data_dir`` (recorded with
    ``write_golden``); or ``reference(inputs_dict) -> expected dict``. ``rtol``/``atol`` default to
    the recorded golden's, else 1e-5. ``html``: where to write the HTML report (default: a file in
    the kernel's artifact directory). ``passes``: the custom pipeline the kernel is compiled with, if any.
    """
    token = _PASSES.set(passes)
    bar = Progress(f"pypto doctor {kernel.fn.__name__}", 5)
    tok_bar = _BAR.set(bar)
    try:
        return _doctor(kernel, inputs, expected, golden_data_dir, rtol, atol, platform, reference, seeds, html, verbose)
    finally:
        _BAR.reset(tok_bar)
        bar.close()
        _PASSES.reset(token)


_BAR: "contextvars.ContextVar" = contextvars.ContextVar("pypto_doctor_progress", default=None)
_STEP_NAMES = {1: "golden and tolerance", 2: "expected differences", 3: "compiler checks", 4: "which pass",
               5: "which task"}


def _at_step(step: int) -> None:
    """Progress: step ``step`` starts."""
    bar = _BAR.get()
    if bar is not None:
        bar.set(step - 1, f"step {step}: {_STEP_NAMES[step]}")


def _doctor(kernel, inputs, expected, golden_data_dir, rtol, atol, platform, reference, seeds, html,
            verbose) -> DoctorReport:
    report = DoctorReport(kernel.fn.__name__)
    bound = _bind(kernel, inputs)
    outs = _outputs(kernel, bound, platform)
    input_dtypes = [v.dtype for k, v in bound.items() if isinstance(v, torch.Tensor) and k not in outs]

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
            return _finish(report.settle(1, "the reference itself is nondeterministic",
                                         "record it once with pypto.runtime.write_golden and compare against the "
                                         "files (golden_data_dir)"), html, kernel, bound, platform, verbose)
        report.add(1, "reference determinism", "ok", "recomputing the reference gives the same bits")
    if expected is None:
        raise TypeError("doctor needs the golden: expected=..., golden_data_dir=... or reference=...")
    if golden_data_dir is None:
        report.add(1, "recorded golden", "info", "none given: record the reference with write_golden so later runs "
                                                 "compare against a fixed artefact")
    rtol = rtol if rtol is not None else (golden_tol[0] if golden_tol else 1e-5)
    atol = atol if atol is not None else (golden_tol[1] if golden_tol else 1e-5)
    # the device need not give the same result twice: look at several simulated schedules
    runs = {s: _run(kernel, bound, platform, seed=s) for s in track(range(seeds), "schedules", detail=lambda s: f"seed {s}")}
    gaps_by_seed = {s: _gap(r, expected, rtol, atol, input_dtypes) for s, r in runs.items()}
    failing = [s for s, g in gaps_by_seed.items() if not _all_pass(g)]
    seed0 = failing[0] if failing else 0
    actual, gaps = runs[seed0], gaps_by_seed[seed0]
    report.figures.append(("result vs golden", "\n\n".join(r.format() for r in gaps.values())))
    if failing and len(failing) < len(runs):
        report.add(1, "runs", "info", f"{len(failing)}/{len(runs)} simulated schedules (seeds) miss the golden; "
                                      f"seed {seed0} is examined")
    if _all_pass(gaps):
        report.add(1, "gap", "ok", f"the result matches the golden at rtol={rtol:g}, atol={atol:g} in {len(runs)} "
                                   "simulated schedules")
        # a gap seen on the device but not in these schedules can still come from an ordering bug
        from pypto.debug.races import detect_races

        compiled = kernel.compile(*bound.values(), config=_config(platform))
        races = detect_races(compiled, [bound[n] for n in compiled.param_names], platform=platform)
        if races.races:
            r = races.races[0]
            report.add(5, "race detector", "explains", races.format())
            return _finish(report.settle(5, f"no schedule tried here misses the golden, but a {r.kind} race between "
                                            f"{r.first_kernel} ({r.first_span}) and {r.second_kernel} "
                                            f"({r.second_span}) makes the result depend on timing", r.fix),
                           html, kernel, bound, platform, verbose, actual, expected)
        return _finish(report.settle(1, "there is no gap at this tolerance", "nothing to fix"), html, kernel, bound,
                       platform, verbose, actual, expected)
    worst = max(gaps.values(), key=lambda r: r.mismatches)
    report.add(1, "gap", "info", f"'{worst.name}': {worst.mismatches}/{worst.compared} elements outside "
                                 f"rtol={rtol:g}, atol={atol:g}; max abs error {worst.max_abs:.4g}")
    low = [d for d in [*(r.dtype for r in gaps.values()), *input_dtypes] if d in (torch.float16, torch.bfloat16)]
    if low:
        from pypto.testing.compare import SUGGESTED_TOLERANCE

        sug = SUGGESTED_TOLERANCE[low[0]]
        if rtol == 0 and atol == 0:
            report.add(1, "tolerance vs dtype", "info", "a bit-exact comparison was asked for (rtol=atol=0): fair for "
                                                        "data movement and casts; step 2 checks whether a difference "
                                                        "is expected")
        elif rtol < _EPS[low[0]] or atol < _EPS[low[0]]:
            loose = _gap(actual, expected, sug, sug, input_dtypes)
            if _all_pass(loose):
                report.add(1, "tolerance vs dtype", "explains",
                           f"{str(low[0]).replace('torch.', '')} carries ~{round(-math.log10(_EPS[low[0]]))} digits; "
                           f"at rtol=atol={sug:g} every element matches")
                return _finish(report.settle(1, f"the tolerance is too tight for {str(low[0]).replace('torch.', '')} data",
                                             f"compare at rtol=atol={sug:g} (RunConfig(rtol=, atol=))"),
                               html, kernel, bound, platform, verbose, actual, expected)
            report.add(1, "tolerance vs dtype", "suspicious",
                       f"rtol={rtol:g} is tight for {str(low[0]).replace('torch.', '')}, but even rtol=atol={sug:g} "
                       "leaves mismatches")
    else:
        report.add(1, "tolerance vs dtype", "ok", "FP32 data: the tolerance is sane")

    # ---- step 2: expected differences
    _at_step(2)
    settled = _step2(report, kernel, bound, platform, runs, seed0, expected, rtol, atol, outs)
    if settled:
        return _finish(report, html, kernel, bound, platform, verbose, actual, expected)

    # ---- step 3: verification and diagnostics
    _at_step(3)
    from pypto.errors import VerificationError
    from pypto.ir.compile import compile as ir_compile
    from pypto.frontend.specialize import specialize
    from pypto.passes.manager import VerificationLevel

    program = specialize(kernel, tuple(bound.values()), {}).program
    try:
        # an entry of the compile cache (pruned with the others), not a temp dir left behind per run
        compiled = ir_compile(program, dump_passes=True, platform=platform,
                              verification_level=VerificationLevel.ROUNDTRIP, passes=_PASSES.get())
        report.add(3, "ROUNDTRIP verification", "ok", "every pass verified and re-parsed to the same program")
    except VerificationError as e:
        report.add(3, "ROUNDTRIP verification", "explains", e.message.splitlines()[0])
        return _finish(report.settle(3, "the IR is malformed after a pass", e.message.splitlines()[0]),
                       html, kernel, bound, platform, verbose, actual, expected)
    diags = compiled.diagnostics
    warn = [d for d in diags if d.code.startswith("PTO-W")]
    report.add(3, "diagnostics", "suspicious" if warn else "ok",
               ", ".join(f"{d.code} at {d.span}" for d in diags) or "no diagnostic fired")
    if any(d.code == "PTO-W001" for d in diags):
        d = next(d for d in diags if d.code == "PTO-W001")
        return _finish(report.settle(3, d.message.split(" — ")[0], "write the output with out[:] = <expr>"),
                       html, kernel, bound, platform, verbose, actual, expected)

    # ---- step 4: which pass
    _at_step(4)
    tensors = {k: v for k, v in bound.items()}
    vreport = compiled.validate_ir(tensors, expected, rtol=rtol, atol=atol, raise_on_mismatch=False, verbose=False)
    from pypto.debug import visual

    try:
        report.figures.append(("error per pass (validate_ir)", visual.pass_error_chart(vreport)))
    except Exception:  # noqa: BLE001 - a plotting problem must not hide the diagnosis
        pass
    first = vreport.first_divergence
    if first is not None:
        report.add(4, "validate_ir", "explains", f"first diverging pass: {first.stage} ({first.file.name})\n"
                                                 f"{vreport.diff[:1500]}")
        return _finish(report.settle(4, f"pass {first.stage} changed the result: the IR stops matching the golden "
                                        f"there",
                                     f"fix (or drop from the pipeline) pass {first.stage}; the pass dumps either side "
                                     f"of {first.file.name} show what it changed ({compiled.output_dir / 'passes_dump'})"),
                       html, kernel, bound, platform, verbose, actual, expected)
    report.add(4, "validate_ir", "ok", f"every pass matches the golden at rtol={rtol:g}, atol={atol:g}: the IR is right")

    # ---- step 5: task by task, and races
    _at_step(5)
    _step5(report, kernel, bound, platform, compiled, outs, seed0, expected, rtol, atol)
    return _finish(report, html, kernel, bound, platform, verbose, actual, expected)


def _step2(report, kernel, bound, platform, all_runs, seed0, expected, rtol, atol, outs) -> bool:
    from pypto.debug.fuzz import _classify

    actual = all_runs[seed0]
    seeds = len(all_runs)
    runs = {seed0: [actual[k] for k in outs]}
    runs.update({s: [r[k] for k in outs] for s, r in all_runs.items() if s != seed0})
    cls, worst, differing, detail = _classify(runs)
    if cls == "last_bits":
        bad_all = True
        for s in differing[:3]:
            other = dict(zip(outs, runs[s]))
            bad_all &= not _all_pass(_gap(other, expected, rtol, atol, []))
        report.add(2, "reruns under simulator seeds", "explains",
                   f"{len(differing)}/{seeds - 1} reruns differ in the last bits only ({detail}): accumulation order "
                   "across cores (split-K / atomic add)")
        report.settle(2, "last-bit drift from accumulation order across cores (split-K / atomic add): expected",
                      "nothing is wrong: compare with a tolerance above the run-to-run drift (it does not grow with "
                      f"size, here {worst:.3g}), or K-block on one core (matmul then matmul_acc in one task) when you "
                      "need bitwise reproducibility")
        return True
    if cls == "larger":
        report.add(2, "reruns under simulator seeds", "suspicious",
                   f"{len(differing)}/{seeds - 1} reruns differ by more than the last bits: an ordering bug, not an "
                   "expected difference (go to step 5)")
    else:
        report.add(2, "reruns under simulator seeds", "ok", f"{seeds} seeds give bit-identical results")
    compiled = kernel.compile(*bound.values(), config=_config(platform))
    diags = compiled.diagnostics
    lowered = compiled.lowered
    # padding taking part in a reduction
    pad = [d for d in diags if d.code == "PTO-P001"]
    if pad:
        zero_hits = all(bool((a := actual[k].double())[~torch.isclose(a, expected[k].double(), rtol=rtol, atol=atol)].eq(0).all())
                        for k in expected if k in actual)
        report.add(2, "padding in reductions", "explains" if zero_hits else "suspicious",
                   f"{pad[0].message} ({pad[0].span})" + ("; every mismatched element holds the padding's 0.0" if zero_hits else ""))
        if zero_hits:
            report.settle(2, "padding took part in a reduction (reductions read the whole physical tile)",
                          "fill the padding with the reduction's identity before reducing: "
                          + pad[0].message.rsplit("first: ", 1)[-1] + f" ({pad[0].span})")
            return True
    else:
        report.add(2, "padding in reductions", "ok", "no reduction reads a partially valid tile")
    acc = [d for d in diags if d.code == "PTO-P002"]
    report.add(2, "FP16/BF16 accumulation", "suspicious" if acc else "ok",
               "; ".join(d.message for d in acc) or "no long low-precision accumulation")
    # cast chains and rounding-mode ties
    casts = _cast_findings(lowered, platform)
    for text, exact in casts:
        report.add(2, "cast chain", "ok" if exact else "suspicious", text)
    ties = _ties(lowered, actual, expected)
    if ties:
        report.add(2, "rounding-mode ties", "explains", ties)
        report.settle(2, "the cast chain is exact; the differences are rounding-mode ties: pl.cast's default mode "
                         "'round' rounds ties away from zero, torch's .to() rounds them to even",
                      "use pl.cast(x, dtype, mode='rint') to match torch, or compute the golden with ties away")
        return True
    inexact = [t for t, ex in casts if not ex]
    if inexact:
        report.settle(2, "an inexact cast chain double-rounds", inexact[0])
        return True
    return False


def _cast_findings(lowered, platform) -> list[tuple[str, bool]]:
    from pypto.numerics.cast_exactness import classify_chain
    from pypto.passes.diagnostics import cast_chains

    out = []
    for s, types, mode in cast_chains(lowered):
        v = classify_chain(types, mode)
        kind = "exact" if v.exact else "NOT exact"
        out.append((f"{' -> '.join(types)} on {platform} (mode '{mode}', {s.span}): {kind} — {v.reason}", v.exact))
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


def _step5(report, kernel, bound, platform, compiled, outs, seed: int, expected=None, rtol=1e-5, atol=1e-5) -> None:
    from pypto.debug.races import detect_races, detect_uninitialized

    first = _first_differing_task(compiled, bound, platform, seed)
    if first is not None:
        report.add(5, "task by task", "explains", first)
    else:
        report.add(5, "task by task", "info", f"every task's outputs match the reference (seed {seed})")
    args = [bound[n] for n in compiled.param_names]
    races = detect_races(compiled, args, platform=platform)
    poison = detect_uninitialized(compiled, args, platform=platform, seed=seed)
    if races.races:
        r = races.races[0]
        report.add(5, "race detector", "explains", races.format())
        report.add(5, "poison check", "suspicious" if poison.findings else "ok", poison.format())
        _add_timeline(report, compiled, bound, seed, expected, rtol, atol, r)
        report.settle(5, f"a {r.kind} race between {r.first_kernel} ({r.first_span}) and {r.second_kernel} "
                         f"({r.second_span}): the runtime does not order them, and the device result depends on "
                         "which runs first", r.fix)
        return
    report.add(5, "race detector", "ok", races.format())
    if poison.findings:
        u = poison.findings[0]
        report.add(5, "poison check", "explains", poison.format())
        fix = u.format().split("  fix: ", 1)[-1].split("\n")[0]
        report.settle(5, f"task {u.task} ({u.kernel}) stores values computed from uninitialized core memory "
                         f"({u.cause}) at {u.store_span}: what they hold on the device is unspecified", fix)
        return
    report.add(5, "poison check", "ok", poison.format())
    if first is not None:
        report.settle(5, "the device result differs from the IR's meaning at the task named above",
                      "compare that task's dumps (enable_dump_args=2) with the reference; check memory planning")


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
    task's arguments dumped; name the first task whose outputs differ."""
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
            res = _fn(*args)
            calls.append((_name, [a.clone() if isinstance(a, torch.Tensor) else a for a in args]))
            return res
        ns[name] = wrapper
    args = [bound[n].clone() if isinstance(bound[n], torch.Tensor) else bound[n] for n in compiled.param_names]
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
    for k, (t, (name, ref_args)) in enumerate(zip(tasks, calls)):
        f = incore[name]
        for i, (p, d) in enumerate(zip(f.params, f.directions)):
            if d.name in ("Out", "InOut") and isinstance(ref_args[i], torch.Tensor):
                sim_view = after.get(t.index, t.args)[i]
                if not torch.equal(sim_view, ref_args[i]):
                    diff = (sim_view.double() - ref_args[i].double()).abs()
                    return (f"task #{k} ({name}, {f.span}) writes '{p.name}' differently from the reference after the "
                            f"run: {int((diff > 0).sum())} elements differ, max abs {float(diff.max()):.4g}")
    return None


def _finish(report: DoctorReport, html, kernel, bound, platform, verbose, actual=None, expected=None) -> DoctorReport:
    from pypto.debug import visual

    sections = [("summary", report.format())]
    try:
        if actual is not None and expected is not None:
            for k, e in expected.items():
                a = actual[k]
                sections.append((f"mismatches per tile: {k}", visual.error_heatmap(a, e)))
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
