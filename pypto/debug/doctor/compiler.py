"""Steps 3 and 4, the compiler: its own checks (ROUNDTRIP verification after every pass, every
diagnostic), then ``validate_ir`` at the user's tolerance — the first diverging pass and the IR diff
around it. A divergence already at the first stage is not a pass's fault: the kernel as written
disagrees with the golden."""
from __future__ import annotations

import tempfile
from pathlib import Path

import torch

from pypto.debug.doctor.page import _diagnostic_words
from pypto.debug.doctor.report import DoctorReport, verification as _verification
from pypto.debug.doctor.session import DoctorSession


def compiler_checks(ctx: DoctorSession) -> bool:
    """Step 3: compile again with every pass dumped and verified (ROUNDTRIP); list the diagnostics;
    settle on a malformed program or an output that is never written."""
    from pypto.errors import VerificationError
    from pypto.driver.build import compile as ir_compile
    from pypto.frontend.specialize import specialize
    from pypto.passes.manager import VerificationLevel

    report = ctx.report
    program = specialize(ctx.kernel, tuple(ctx.bound.values()), {}).program
    ctx.dump_dir = Path(tempfile.mkdtemp(prefix="pypto-doctor-"))
    try:
        dumped = ir_compile(program, output_dir=ctx.dump_dir, dump_passes=True, platform=ctx.platform,
                            verification_level=VerificationLevel.ROUNDTRIP, passes=ctx.passes)
        report.add(3, "compiler self-check", "ok", "every pass verified, printed and re-parsed to the same program")
    except VerificationError as e:
        report.add(3, "compiler self-check", "explains", e.message.splitlines()[0])
        report.settle(3, "a compiler pass produced a malformed program", e.message.splitlines()[0], "malformed_ir",
                      _verification("could not verify", "the fix is in the compiler"))
        return True
    ctx.dumped = dumped
    diags = dumped.diagnostics
    ctx.warn = warn = [d for d in diags if d.code.startswith("PTO-W") or d.code.startswith("PTO-P")]
    report.add(3, "diagnostics", "suspicious" if warn else "ok",
               "; ".join(_diagnostic_words(d) for d in diags) or "no diagnostic fired")
    if any(d.code == "PTO-W001" for d in diags):
        d = next(d for d in diags if d.code == "PTO-W001")
        report.settle(3, d.message.split(" — ")[0], "write the output with out[:] = <expr>", "out_write_dropped",
                      _verification("could not verify", "this edit is not automated"))
        return True
    return False


def which_pass(ctx: DoctorSession) -> bool:
    """Step 4: the first pass whose output misses the golden (``validate_ir`` on step 3's dumps)."""
    return _step4(ctx.report, ctx, ctx.dumped, ctx.warn)


def _step4(report: DoctorReport, ctx: "DoctorSession", dumped, warn) -> bool:
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


def _verify_without_pass(ctx: "DoctorSession", stage: str):
    from pypto.debug.fixes import Verification
    from pypto.debug.tolerance import passes
    from pypto.errors import PyptoError
    from pypto.passes.pipeline import Pipeline
    from pypto.runtime.config import RunConfig

    pipe = ctx.passes or Pipeline.default()
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

