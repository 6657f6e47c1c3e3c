"""Swimlane of the simulated timeline (``RunConfig.enable_chip_swimlane``).

``dfx_outputs/swimlane.json`` is Chrome Trace Event JSON (opens in Perfetto / chrome://tracing):
``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}``. Process 0 is the chip; each
simulated core is one thread (``tid`` = core index, named by ``thread_name`` metadata events). Each
kernel task is one complete event (``ph: "X"``, ``ts`` / ``dur`` in microseconds at the simulated
clock of 1 cycle = 1 ns), named after its kernel, with ``args`` holding the task id (``rXtY`` and
hex) and the task's predecessors. From level 2 on, tasks that take no core (tensor allocations,
dummies) appear as instant events (``ph: "i"``) on the orchestrator lane (``tid`` -1); a task whose
``pl.submit(predicate=...)`` was false always does (``cat: "skipped"``).
``chip_swimlane_records.json`` holds the raw records in cycles (docs/simulator.md, "Debug outputs (DFX)").
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from pypto.safe_files import atomic_write_text

CYCLES_PER_US = 1000.0


def rxty(task_id: int) -> str:
    """The one label a task has in every report (race report, doctor, swimlane, dump viewer, deps.json):
    ``r<ring>t<index in the ring>`` of its 64-bit id (ring in the high 32 bits), e.g. ``r0t3``."""
    return f"r{task_id >> 32}t{task_id & 0xFFFFFFFF}"


def parse_task(text: str) -> int:
    """A task id from its label (``r0t3``), hex (``0x...``) or decimal form; ``ValueError`` otherwise."""
    m = re.fullmatch(r"r(\d+)t(\d+)", text.strip())
    if m:
        return (int(m.group(1)) << 32) | int(m.group(2))
    t = text.strip().lower()
    return int(t, 16) if t.startswith("0x") else int(t)


def _runs(t) -> list:
    """``(core, start, end, block)`` of each block a task ran (one for a one-block task, none if unrun)."""
    if t.core < 0:
        return []
    return list(t.runs) if getattr(t, "runs", None) else [(t.core, t.start, t.end, 0)]


def swimlane_document(rt, level: int) -> dict:
    ev = [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": f"{rt.platform.name} (simulated)"}}]
    used = sorted({r[0] for t in rt.tasks for r in _runs(t)})
    for c in used:
        ev.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": c, "args": {"name": f"AIV{c}"}})
        ev.append({"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": c, "args": {"sort_index": c}})
    if level >= 2 or any(t.skipped for t in rt.tasks):
        ev.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": -1, "args": {"name": "orchestrator"}})
    for t in rt.tasks:
        if t.core >= 0:
            for c, start, end, block in _runs(t):   # a multi-block task: one slice per block, on its core
                args = {"task": rxty(t.task_id), "task_id": f"0x{t.task_id:016x}",
                        "fanin": sorted(rxty(rt.tasks[i].task_id) for i in t.fanin)}
                if t.blocks > 1:
                    args["block"] = f"{block}/{t.blocks}"
                ev.append({"name": t.kernel, "cat": "task", "ph": "X", "pid": 0, "tid": c,
                           "ts": start / CYCLES_PER_US, "dur": max(end - start, 0.0) / CYCLES_PER_US,
                           "args": args})
        elif t.skipped or (level >= 2 and t.kind != "snapshot"):
            # a task whose predicate was false is retired unrun: a mark on the orchestrator's track
            ev.append({"name": t.kernel, "cat": "skipped" if t.skipped else t.kind, "ph": "i", "s": "t",
                       "pid": 0, "tid": -1,
                       "ts": t.start / CYCLES_PER_US, "args": {"task": rxty(t.task_id)}})
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"platform": rt.platform.name, "chip_swimlane_level": level,
                          "total_cycles": rt.time, "seed": rt.seed}}


def write_swimlane(rt, dfx_dir: Path, level: int) -> Path:
    path = dfx_dir / "swimlane.json"
    atomic_write_text(path, json.dumps(swimlane_document(rt, level)))
    records = {
        "chip_swimlane_level": level,
        "metadata": {"clock_freq_hz": 1e9, "num_cores": len(rt.cores),
                     "core_types": ["aiv"] * len(rt.cores), "core_to_thread": list(range(len(rt.cores)))},
        "aicore_tasks": [[c, i, str(t.task_id), s, e] for i, t in enumerate(rt.tasks) for c, s, e, _ in _runs(t)],
    }
    atomic_write_text(dfx_dir / "chip_swimlane_records.json", json.dumps(records))
    return path
