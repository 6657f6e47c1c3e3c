"""Step 1, golden and tolerance: is there a gap at all, over several simulated schedules; is the
reference deterministic; is there a recorded golden; was the golden computed in a lower precision;
would a tolerance justified by the data type close the gap. The tolerance verdict waits for step 2
(:func:`tolerance_verdict`): a real bug is never answered with "loosen the tolerance"."""
from __future__ import annotations

import torch

from pypto.debug.doctor.page import _golden_text
from pypto.debug.doctor.report import DoctorReport, mark, verification as _verification
from pypto.debug.doctor.session import DoctorSession, _all_pass, _err, _gap, _run
from pypto.debug.doctor.tasks import _race_fix, _uninitialized
from pypto.progress import track


def golden_and_gap(ctx: DoctorSession) -> bool:
    """Resolve the golden, run the kernel under ``ctx.seeds`` schedules and measure the gap; settle
    when the reference is nondeterministic, the cores of a mixed kernel are unordered, or there is no
    gap (unless a race or uninitialized memory could still make one on a device)."""
    from pypto.debug import tolerance as tolmod

    report, kernel, bound, compiled, outs = ctx.report, ctx.kernel, ctx.bound, ctx.compiled, ctx.outs
    expected, platform = ctx.expected, ctx.platform
    if expected is None and ctx.golden_data_dir is not None:
        from pypto.runtime.golden import load_golden

        g = load_golden(ctx.golden_data_dir)
        expected = {k: v for k, v in g.outputs.items() if k in outs}
        ctx.golden_tol = (g.rtol, g.atol)
        report.add(1, "recorded golden", "ok", f"{ctx.golden_data_dir} verified (SHA-256 per file), recorded at "
                                               f"rtol={g.rtol:g}, atol={g.atol:g}")
    if expected is None and ctx.reference is not None:
        reference = ctx.reference
        expected = reference({k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in bound.items()})
        ctx.expected = expected
        again = reference({k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in bound.items()})
        same = all(torch.equal(expected[k].view(torch.uint8) if expected[k].dtype.is_floating_point else expected[k],
                               again[k].view(torch.uint8) if again[k].dtype.is_floating_point else again[k])
                   for k in expected)
        if not same:
            report.add(1, "reference determinism", "explains", "two evaluations of the reference differ")
            report.settle(1, "the reference itself is nondeterministic",
                          "record it once with pypto.runtime.write_golden and compare against the "
                          "files (golden_data_dir)", "reference_nondeterministic")
            return True
        report.add(1, "reference determinism", "ok", "recomputing the reference gives the same bits")
    if expected is None:
        raise TypeError("doctor needs the golden: expected=..., golden_data_dir=... or reference=...")
    ctx.expected = expected
    unknown = [k for k in expected if k not in bound]
    if unknown:
        raise TypeError(f"doctor: the golden names {unknown}, which are not parameters of {kernel.fn.__name__} "
                        f"(its outputs: {outs})")
    if ctx.golden_data_dir is None:
        report.add(1, "recorded golden", "info", "none given: record the reference with write_golden so later runs "
                                                 "compare against a fixed artefact")
    golden_tol = ctx.golden_tol
    rtol = ctx.rtol = ctx.rtol if ctx.rtol is not None else (golden_tol[0] if golden_tol else 1e-5)
    atol = ctx.atol = ctx.atol if ctx.atol is not None else (golden_tol[1] if golden_tol else 1e-5)
    input_dtypes = ctx.input_dtypes
    # the device need not give the same result twice: look at several simulated schedules
    ctx.runs = {s: _run(kernel, bound, platform, s, ctx.passes)
                for s in track(range(ctx.seeds), "schedules", detail=lambda s: f"seed {s}")}
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
        return True
    if _all_pass(gaps):
        report.add(1, "gap", "ok", f"the result matches the golden at rtol={rtol:g}, atol={atol:g} in "
                                   f"{len(ctx.runs)} simulated schedules")
        # a gap seen on the device but not in these schedules can still come from an ordering bug, or
        # from memory the kernel never wrote (zero in these runs, anything on a device)
        races = ctx.races()
        if races.races:
            report.add(5, "race detector", "explains", races.format())
            r, fix, v = _race_fix(ctx, races.races)
            report.settle(5, f"no schedule tried here misses the golden, but a {r.kind} race between "
                             f"{r.first_kernel} ({r.first_span}) and {r.second_kernel} "
                             f"({r.second_span}) makes the result depend on timing", fix, "race", v)
            return True
        from pypto.debug.races import detect_uninitialized

        poison = detect_uninitialized(compiled, [bound[n] for n in compiled.param_names], platform=platform)
        if poison.findings:
            _uninitialized(report, poison, "no schedule tried here misses the golden, but ")
            return True
        report.settle(1, "there is no gap at this tolerance", "nothing to fix", "no_gap")
        return True
    worst = max(gaps.values(), key=lambda r: r.mismatches)
    report.add(1, "gap", "info", f"'{worst.name}': {worst.mismatches}/{worst.compared} elements outside "
                                 f"rtol={rtol:g}, atol={atol:g}; {_err(actual, expected)}")
    dt = tolmod.compute_dtype([actual[k].dtype for k in expected], compiled.lowered)
    ctx.tol = report.tolerance = tolmod.suggest(actual, expected, dt)
    report.add(1, "tolerance for the data type", "info",
               f"{ctx.tol.describe()}: {ctx.tol.evidence()}; decided after step 2 (a tolerance is the answer only "
               "when no expected difference explains the gap)")
    ctx.low_golden = _golden_precision(actual, expected)
    if ctx.low_golden:
        report.add(1, "golden precision", "suspicious", ctx.low_golden)
    return False


def tolerance_verdict(ctx: DoctorSession) -> bool:
    """Step 1's verdicts, once no step-2 check explains the gap: a golden computed in a lower
    precision, or a tolerance tighter than the data type can meet (unless a precision lint that no
    experiment could test says otherwise)."""
    from pypto.debug import tolerance as tolmod

    report, rtol, atol, compiled = ctx.report, ctx.rtol, ctx.atol, ctx.compiled
    low_golden = ctx.low_golden
    if low_golden:
        report.settle(1, "the golden was computed in a lower precision than the kernel: " + low_golden.split(":")[0],
                      "compute the golden in the output's precision (or in float64 and round once)",
                      "golden_precision", _verification("could not verify", "the fix is in your golden, "
                                                        "which the doctor cannot rewrite"))
        return True
    tol = ctx.tol
    # a precision lint no experiment could test keeps the tolerance from being the answer
    untested = [d for d in compiled.diagnostics if d.code in ("PTO-P001", "PTO-P002", "PTO-P003")
                and d.span.line not in ctx.tested]
    if tol.usable and (rtol < tol.rtol or atol < tol.atol) and untested:
        report.add(1, "tolerance for the data type", "info",
                   "not the answer: " + "; ".join(f"{d.code} at {d.span}" for d in untested)
                   + " warned about a precision problem that no experiment could test here")
    if tol.usable and (rtol < tol.rtol or atol < tol.atol) and not untested:
        mark(report, "tolerance for the data type", "explains")
        report.settle(1, f"the tolerance is tighter than {tolmod.dtype_name(tol.dtype)} can meet: the "
                         f"errors are within {tolmod.ULP_BUDGET} ULPs of the data type and no step-2 "
                         "check explains them",
                      f"compare at {tol.describe()} (RunConfig(rtol=, atol=))", "tolerance",
                      _verification("verified", "at that tolerance the kernel's result passes, "
                                                "an all-zeros output and a shuffled golden fail"))
        return True
    return False


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
    races = ctx.races()
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

