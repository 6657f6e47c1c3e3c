"""The doctor's findings and conclusion (:class:`DoctorReport`), its machine-readable causes, and
the verdict on a printed fix (:func:`verification`)."""
from __future__ import annotations

import shutil
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

# The five steps of the precision workflow, by number (the report files its findings under them).
STEP_NAMES = {1: "golden and tolerance", 2: "expected differences", 3: "compiler checks", 4: "which pass",
              5: "which task"}

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
            lines.append(f"step {step} ({STEP_NAMES[step]}):")
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



def verification(status: str, detail: str):
    """A :class:`pypto.debug.fixes.Verification` (``verified`` / ``not verified`` / ``could not verify``)."""
    from pypto.debug.fixes import Verification

    return Verification(status, detail)


def mark(report: DoctorReport, check: str, verdict: str) -> None:
    """Change the verdict of the findings of ``check`` (a later step decided what it means)."""
    for f in report.findings:
        if f.check == check:
            f.verdict = verdict
