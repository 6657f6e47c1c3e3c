"""``RunConfig(enable_scope_stats=True)``: what each executed scope held of its ring, written to
``dfx_outputs/scope_stats/scope_stats.jsonl`` (NDJSON).

Line 1 is the run's metadata: ``task_window_max``, ``heap_max`` and ``dep_pool_max`` — the sizes
the run's rings 0..3 got (``RunConfig.ring_*`` or the platform's), arrays indexed by ring as in the
reference — and ``task_window_peak``, the most task slots each ring had taken at once. Every later
line is one scope, in the order the scopes ended (the function's own scope, which never ends, last):
``scope`` (its index in that order), ``ring``, ``depth`` (nesting: 0 is the function's), ``manual``,
and what its tasks held when it ended — ``tasks`` (task-window slots), ``heap_bytes`` and
``dep_entries``. A scope's tasks keep what they hold until it ends, so these are its peaks; a value
at the ring's size is the ring a program is limited by (see docs/simulator.md, rings).

The simulator's ring model counts what the device's orchestrator would (the same accounting that
reports a ring deadlock); there are no hardware counters behind it.
"""
from __future__ import annotations

import json
from pathlib import Path

from pypto.safe_files import atomic_write_text


def sample(samples: list, ring: int, depth: int, manual: bool, held) -> None:
    """Record one ended scope (``held``: its task slots, heap bytes, dependency entries)."""
    samples.append({"scope": len(samples), "ring": ring, "depth": depth, "manual": manual,
                    "tasks": held[0], "heap_bytes": held[1], "dep_entries": held[2]})


def write(rt, dfx_dir: Path) -> Path:
    """Write ``scope_stats/scope_stats.jsonl`` for runtime ``rt``; returns its path."""
    samples = list(rt.scope_stats)
    sample(samples, 0, 0, False, rt._held[0])   # the function's scope, still open at the end
    task_window, heap, dep_pool = rt._rings
    meta = {"task_window_max": list(task_window), "heap_max": list(heap), "dep_pool_max": list(dep_pool),
            "task_window_peak": list(rt.max_live), "scopes": len(samples)}
    path = Path(dfx_dir) / "scope_stats" / "scope_stats.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "".join(json.dumps(x) + "\n" for x in [meta, *samples]))
    return path
