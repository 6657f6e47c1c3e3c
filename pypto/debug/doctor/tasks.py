"""Step 5, task by task: the reference and the simulator side by side — the first task whose output
differs, the race detector and the poison check (:func:`pypto.debug.races.detect_uninitialized`). A
race adds the simulated task timeline of a failing seed, the racing pair highlighted."""
from __future__ import annotations

from typing import Optional

import torch

from pypto.debug.doctor.report import DoctorReport, verification as _verification
from pypto.debug.doctor.session import DoctorSession, _all_pass, _gap
from pypto.progress import track


def which_task(ctx: DoctorSession) -> bool:
    """Step 5 (see the module docstring); the last step, so its answer ends the diagnosis anyway."""
    _step5(ctx.report, ctx)
    return True


def _step5(report, ctx: "DoctorSession") -> None:
    from pypto.debug.races import detect_uninitialized

    compiled, bound, platform, seed = ctx.compiled, ctx.bound, ctx.platform, ctx.seed0
    first = _first_differing_task(compiled, bound, platform, seed)
    if first is not None:
        report.add(5, "task by task", "explains", first)
    else:
        report.add(5, "task by task", "info", f"every task's outputs match the reference (seed {seed})")
    args = [bound[n] for n in compiled.param_names]
    races = ctx.races()
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


def _uninitialized(report: DoctorReport, poison, prefix: str) -> None:
    u = poison.findings[0]
    report.add(5, "poison check", "explains", poison.format())
    fix = u.format().split("  fix: ", 1)[-1].split("\n")[0]
    report.settle(5, f"{prefix}task {u.task} ({u.kernel}) stores values computed from uninitialized core memory "
                     f"({u.cause}) at {u.store_span}: what they hold on the device is unspecified", fix,
                  "uninitialized", _verification("could not verify", "which value the tile should hold is the "
                                                                     "kernel author's choice"))


def _race_fix(ctx: "DoctorSession", races) -> tuple:
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
                     seeds=tuple(range(min(4, max(2, len(ctx.runs))))), passes=ctx.passes, check_races=True)
    if len(edits) == 1:
        return lead, lead.fix, v
    fix = (f"{len(edits)} pairs of tasks need an order; change the scopes as follows:\n    "
           + "\n    ".join(v.changed) if v.changed else lead.fix)
    return lead, fix, v


def _split_span(text: str):
    """``file:line:col`` -> ``(file, line)``; ``None`` when it is not a location."""
    try:
        file, line, _ = str(text).rsplit(":", 2)
        return file, int(line)
    except ValueError:
        return None


def _add_timeline(report, compiled, bound, seed: int, expected, rtol, atol, race) -> None:
    """The simulated task timeline of a failing seed (``seed`` when it fails, else the first of the
    next 64 that does), the racing pair highlighted, as a figure of the report."""
    from pypto.debug import visual
    from pypto.runtime.artifacts import open_artifacts
    from pypto.runtime.trace import swimlane_document

    arts = open_artifacts(compiled)
    names = compiled.param_names

    def run(s):
        rt, gm = arts.submit([bound[n] for n in names], s)
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
    from pypto.runtime.artifacts import open_artifacts

    arts = open_artifacts(compiled)
    rt = arts.runtime(seed)
    after: dict[int, list] = {}
    rt.on_complete = lambda t: after.__setitem__(
        t.index, [a.clone() if isinstance(a, torch.Tensor) else a for a in t.args])
    gm = [bound[n].detach().clone().contiguous() if isinstance(bound[n], torch.Tensor) else bound[n]
          for n in compiled.param_names]
    arts.orchestration.orchestrate(rt, *gm)
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


def _bits_differ(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise: do the two tensors' elements differ in any bit (NaN payloads included)?"""
    if a.dtype.is_floating_point and a.element_size() in (2, 4, 8):
        it = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return a.contiguous().view(it) != b.contiguous().view(it)
    return a != b

