"""Step 2, expected differences: reruns under several simulator seeds (split-K / atomic order:
last-bit drift); then experiments (:mod:`pypto.debug.attribution`): each reduction that reads
padding, and each FP16/BF16 sum, is recomputed on the reference executor (padding filled, FP32
accumulation) and the one whose recomputation closes the gap is the cause — a lint that fired on a
harmless op is named harmless; rounding-mode ties; every cast chain of the lowered IR classified."""
from __future__ import annotations

from typing import Optional

import torch

from pypto.debug.doctor.report import DoctorReport, verification as _verification
from pypto.debug.doctor.session import DoctorSession, _err


def expected_differences(ctx: DoctorSession) -> bool:
    """Step 2 (see the module docstring); True when one of its checks explains the gap."""
    return _step2(ctx.report, ctx)


def _step2(report: DoctorReport, ctx: "DoctorSession") -> bool:
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
    elif cls == "last_bits" and ctx.races().races:
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


def _cast_chain_explains(report: DoctorReport, ctx: "DoctorSession") -> bool:
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


def _experiments(report: DoctorReport, ctx: "DoctorSession", lints: dict) -> bool:
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


def _verify_calls(ctx: "DoctorSession", group, at_tol):
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
                        ctx.platform, passes=ctx.passes)


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


def _verify_cast_mode(ctx: "DoctorSession", casts):
    from pypto.debug import fixes

    spans = [s for _, _, s in casts if s is not None and not s.is_unknown()]
    if not spans:
        return _verification("could not verify", "the cast has no source location")
    edits = [fixes.CallEdit(s.line, "cast", fixes.cast_mode("rint")) for s in dict.fromkeys(spans)]
    return fixes.verify(ctx.kernel, spans[0].file, edits, ctx.bound, ctx.expected, ctx.rtol, ctx.atol, ctx.platform,
                        passes=ctx.passes)


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

