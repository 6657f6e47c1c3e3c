"""Tensor dumps (``RunConfig.enable_dump_args``, docs/simulator.md, "Debug outputs (DFX)").

Level 1 dumps the arguments marked by ``pl.dump_tag(t)`` (forward-sticky: every later task taking that
tensor object) or by a submit's ``dumps=[...]``; level 2 every task's tensor inputs, outputs and
scalars. Inputs are captured when the task is dispatched (``before_dispatch``), outputs when it
completes (``after_completion``), ``INOUT`` at both stages. Written to
``<output_dir>/dfx_outputs/args_dump/args_dump.json`` + ``args.bin`` (logically contiguous,
little-endian payloads, concatenated). A payload that would take the total past
``RunConfig.dump_budget_bytes`` is skipped with a warning and its record flagged ``truncated``.

The two files are one unit: they are built in a fresh directory beside ``args_dump/`` and swapped in
whole (:func:`pypto.safe_files.publish_dir`), so a run killed while dumping leaves the previous dump
intact, never a new ``args.bin`` under an old index. The index records ``bin_bytes`` and
``bin_sha256`` of ``args.bin``; the dump viewer refuses a dump whose payload does not match them.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sys
import warnings
from pathlib import Path

import torch

from pypto.runtime.deps import INOUT, OUTPUT, OUTPUT_EXISTING, dtype_name
from pypto.safe_files import publish_dir, staging_dir

BEFORE, AFTER = "before_dispatch", "after_completion"


def role_of(tag: str) -> str:
    if tag == INOUT:
        return "inout"
    if tag in (OUTPUT, OUTPUT_EXISTING):
        return "output"
    return "input"


class DumpCollector:
    """Records captured while the scheduler runs; :meth:`write` produces the files."""

    def __init__(self, level: int, budget: int):
        self.level = level
        self.budget = budget
        self.used = 0
        self.records: list[dict] = []
        self.payloads: list[bytes] = []
        self.truncated = 0
        self._warned = False

    def capture(self, task, stage: str) -> None:
        """Capture ``task``'s selected arguments for ``stage``."""
        n_tensors = sum(1 for a in task.args if isinstance(a, torch.Tensor))
        k = 0
        for i, (a, tag) in enumerate(zip(task.args, task.tags)):
            is_t = isinstance(a, torch.Tensor)
            if not is_t:
                slot, k = n_tensors + k, k + 1
                if self.level == 2 and stage == BEFORE:
                    self._scalar(task, slot, a)
                continue
            if task.dump_sel is not None and i not in task.dump_sel:
                continue
            role = role_of(tag)
            if (stage == BEFORE and role == "output") or (stage == AFTER and role == "input"):
                continue
            self._tensor(task, i, a, role, stage)

    def _scalar(self, task, slot: int, value) -> None:
        self.records.append({
            "task_id": f"0x{task.task_id:016x}", "func_id": list(task.func_ids), "arg_index": slot, "role": "input",
            "stage": BEFORE, "kind": "scalar", "dtype": "float64" if isinstance(value, float) else "int64",
            "value": value, "is_contiguous": True, "shape": [], "strides": [], "start_offset": 0, "numel": 1,
            "bin_offset": self.used, "bin_size": 0, "truncated": False, "overwritten": False})

    def _tensor(self, task, i: int, t: torch.Tensor, role: str, stage: str) -> None:
        nbytes = t.numel() * t.element_size()
        rec = {"task_id": f"0x{task.task_id:016x}", "func_id": list(task.func_ids), "arg_index": i, "role": role,
               "stage": stage, "kind": "tensor", "dtype": dtype_name(t.dtype), "is_contiguous": t.is_contiguous(),
               "shape": list(t.shape), "strides": list(t.stride()), "start_offset": t.storage_offset(),
               "numel": t.numel(), "bin_offset": self.used, "bin_size": nbytes, "truncated": False,
               "overwritten": False}
        if self.used + nbytes > self.budget:
            rec["bin_size"] = 0
            rec["truncated"] = True
            self.truncated += 1
            if not self._warned:
                self._warned = True
                warnings.warn(f"tensor dump budget exhausted ({self.budget} bytes, RunConfig.dump_budget_bytes): "
                              f"task 0x{task.task_id:016x} arg {i} ({nbytes} bytes) and later payloads are not "
                              "written (flagged 'truncated'); tag fewer tensors (enable_dump_args=1) or raise "
                              "the budget", RuntimeWarning, stacklevel=2)
        else:
            self.payloads.append(t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
            self.used += nbytes
        self.records.append(rec)

    def write(self, dfx_dir: Path) -> Path | None:
        """Write ``args_dump/``; returns its path (``None`` at level 1 with nothing marked)."""
        if not self.records:
            return None
        d = dfx_dir / "args_dump"
        staged = staging_dir(d)
        try:
            self._write_into(staged)
            publish_dir(staged, d)
        except BaseException:
            shutil.rmtree(staged, ignore_errors=True)
            raise
        return d

    def _write_into(self, d: Path) -> None:
        digest = hashlib.sha256()
        with open(d / "args.bin", "wb") as f:
            for p in self.payloads:
                f.write(p)
                digest.update(p)
        recs = self.records
        doc = {
            "run_dir": "args_dump",
            "bin_format": {"type": "logical_contiguous", "byte_order": sys.byteorder + "_endian"},
            "dump_args_level": self.level, "total_args": len(recs),
            "before_dispatch": sum(r["stage"] == BEFORE for r in recs),
            "after_completion": sum(r["stage"] == AFTER for r in recs),
            "input_args": sum(r["role"] == "input" for r in recs),
            "output_args": sum(r["role"] == "output" for r in recs),
            "inout_args": sum(r["role"] == "inout" for r in recs),
            "truncated_args": self.truncated, "dropped_records": 0, "dropped_overwrite": 0,
            "bin_file": "args.bin", "bin_bytes": self.used, "bin_sha256": digest.hexdigest(), "args": recs,
        }
        (d / "args_dump.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
