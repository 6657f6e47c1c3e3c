"""``validate_ir``: which pass changed the result?

Every pass dump (``passes_dump/00_frontend.py``, ``NN_after_<Pass>.py``) is parsed back, turned into
torch by :func:`torch_codegen` and executed on the user's inputs. Each stage's outputs are compared
with the golden *and* with the previous stage, so the first pass whose IR stops matching is named
along with how much it moved the result, and the IR diff around it is shown.

Compared with the reference implementation this also reports, per pass, the max abs/rel error and
the mismatch count against both references, accepts scalar parameters, warns when the loose default
tolerance (5e-2) is in use, and keeps going past the first mismatch so the whole picture is visible.
"""
from __future__ import annotations

import difflib
import math
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import torch

from pypto.progress import track
from pypto.debug.torch_codegen import torch_codegen
from pypto.language.enums import FunctionType
from pypto.language.program import loads

DEFAULT_RTOL = 5e-2
DEFAULT_ATOL = 5e-2


@dataclass
class TensorDiff:
    """How one output of one stage compares with a reference."""

    name: str
    max_abs: float
    max_rel: float
    mismatches: int
    total: int
    passed: bool


@dataclass
class StageResult:
    """One pass dump: its outputs against the golden and against the previous stage."""

    stage: str
    file: Path
    vs_golden: list[TensorDiff] = field(default_factory=list)
    vs_previous: list[TensorDiff] = field(default_factory=list)
    error: Optional[str] = None

    @property
    def passed(self) -> bool:
        """True when the stage ran and every output is within tolerance of the golden."""
        return self.error is None and all(d.passed for d in self.vs_golden)

    @property
    def changed(self) -> bool:
        """True when this stage's outputs differ in any bit from the previous stage's."""
        return any(d.mismatches or d.max_abs > 0 for d in self.vs_previous)


@dataclass
class ValidationReport:
    """The per-pass comparison. ``first_divergence`` names the culprit pass (or None)."""

    stages: list[StageResult]
    rtol: float
    atol: float
    diff: str = ""

    @property
    def first_divergence(self) -> Optional[StageResult]:
        """The first stage that does not match the golden."""
        return next((s for s in self.stages if not s.passed), None)

    @property
    def passed(self) -> bool:
        """True when every stage matches the golden."""
        return self.first_divergence is None

    def to_dict(self) -> dict:
        """JSON-ready form: every stage with its comparisons, ``passed`` and the first diverging stage."""
        from pypto.debug.jsonable import jsonable

        out = jsonable(self, extra=("passed",))
        first = self.first_divergence
        out["first_divergence"] = first.stage if first is not None else None
        return out

    def format(self) -> str:
        """A table of every stage, the verdict and the IR diff around the first diverging pass."""
        lines = [f"validate_ir: {len(self.stages)} stages, rtol={self.rtol:g}, atol={self.atol:g}"]
        lines.append(f"  {'stage':<40} {'vs golden: max abs':>18} {'max rel':>10} {'mismatch':>10}"
                     f"   {'vs previous: max abs':>20} {'mismatch':>9}")
        for s in self.stages:
            if s.error:
                lines.append(f"  {s.stage:<40} ERROR: {s.error}")
                continue
            for i, d in enumerate(s.vs_golden):
                prev = s.vs_previous[i] if i < len(s.vs_previous) else None
                label = s.stage if i == 0 else ""
                mark = "ok " if d.passed else "BAD"
                name = f"{label} [{d.name}]"
                lines.append(f"{mark} {name:<40} {d.max_abs:>18.3e} {d.max_rel:>10.3e} {d.mismatches:>5}/{d.total:<5}"
                             f"   {(prev.max_abs if prev else 0.0):>20.3e} {(prev.mismatches if prev else 0):>9}")
        first = self.first_divergence
        if first is None:
            lines.append("every stage matches the golden")
        else:
            what = "first stage that did not run" if first.error else "first diverging stage"
            lines.append(f"{what}: {first.stage} ({first.file.name})")
            if self.diff:
                lines.append("IR diff against the previous stage:")
                lines.append(self.diff)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def _compare(name: str, actual: torch.Tensor, ref: torch.Tensor, rtol: float, atol: float) -> TensorDiff:
    a, r = actual.detach().double(), ref.detach().double()
    if a.shape != r.shape:
        return TensorDiff(name, math.inf, math.inf, a.numel(), a.numel(), False)
    diff = (a - r).abs()
    both_nan = torch.isnan(a) & torch.isnan(r)
    same_inf = torch.isinf(a) & torch.isinf(r) & (a == r)
    diff = torch.where(both_nan | same_inf, torch.zeros_like(diff), diff)
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff)
    bad = diff > (atol + rtol * r.abs())
    rel = diff / r.abs().clamp_min(torch.finfo(torch.float64).tiny)
    rel = torch.where(diff == 0, torch.zeros_like(rel), rel)
    n = a.numel()
    return TensorDiff(name, float(diff.max()) if n else 0.0, float(rel.max()) if n else 0.0,
                      int(bad.sum()), n, not bool(bad.any()))


def _entry(program):
    fns = program.functions
    if len(fns) == 1:
        return fns[0]
    orch = [f for f in fns if f.func_type == FunctionType.Orchestration]
    if orch:
        return orch[0]
    return fns[-1]


class _DumpUnparsable(Exception):
    """A pass dump the IR parser rejects (hand-edited, truncated, or from another version)."""

    def __init__(self, path: Path, cause: Exception):
        # keep the parser's located message (file:line:col, the line, the caret), a few lines of it
        msg = "\n".join(str(cause).splitlines()[:4])[:600]
        super().__init__(f"cannot parse the dump {path.name}: {type(cause).__name__}: {msg}")


def _run_stage(path: Path, inputs: dict, names: list[str]) -> dict[str, torch.Tensor]:
    try:
        program = loads(path)
    except Exception as e:  # noqa: BLE001 - any parser failure: the dump is unreadable, not a numeric gap
        raise _DumpUnparsable(path, e) from None
    entry = _entry(program)
    src = torch_codegen(program, check_shapes=True)
    ns: dict = {}
    exec(compile(src, f"<torch_codegen {path.name}>", "exec"), ns)
    args = []
    bound = {}
    for p in entry.params:
        key = p.name if p.name in inputs else p.name.split("__")[0]
        if key not in inputs:
            raise KeyError(f"no value for parameter '{p.name}' of {entry.name} (give it in `tensors`)")
        v = inputs[key]
        v = v.clone() if isinstance(v, torch.Tensor) else v
        args.append(v)
        bound[key] = v
    ns[entry.name](*args)
    return {n: bound[n] for n in names if n in bound}


def validate_pass_ir_codegen_results(dump_dir, tensors: dict, expected: dict, *, rtol: float = DEFAULT_RTOL,
                                     atol: float = DEFAULT_ATOL, raise_on_mismatch: bool = True,
                                     verbose: bool = True, context: int = 3) -> ValidationReport:
    """Run every pass dump in ``dump_dir`` on ``tensors`` and compare with ``expected``.

    ``tensors`` maps parameter names to input tensors (and scalar parameters to numbers);
    ``expected`` maps output parameter names to golden tensors. Prints a line per stage as it goes
    (``verbose``) and returns the :class:`ValidationReport`; raises ``AssertionError`` carrying the
    report when a stage diverges and ``raise_on_mismatch`` is true.
    """
    dump_dir = Path(dump_dir)
    if not isinstance(tensors, dict) or not isinstance(expected, dict):
        raise TypeError("tensors and expected must be dicts of name -> torch.Tensor")
    for k, v in expected.items():
        if not isinstance(v, torch.Tensor):
            raise TypeError(f"expected['{k}'] must be a torch.Tensor, got {type(v).__name__}")
    for name, v in (("rtol", rtol), ("atol", atol)):
        if not isinstance(v, (int, float)) or v < 0:
            raise ValueError(f"{name} must be a number >= 0, got {v!r}")
    if not dump_dir.is_dir():
        raise FileNotFoundError(f"{dump_dir} does not exist: compile with dump_passes=True "
                                "(RunConfig(dump_passes=True) on the @pl.jit path)")
    files = sorted(p for p in dump_dir.glob("*.py") if p.name[:2].isdigit())
    if not files:
        raise FileNotFoundError(f"{dump_dir} holds no pass dumps: compile with dump_passes=True")
    if (rtol, atol) == (DEFAULT_RTOL, DEFAULT_ATOL):
        warnings.warn("validate_ir is using its loose default tolerance rtol=atol=5e-2; a regression smaller than "
                      "that is reported as matching. Pass the tolerance you settled on in step 1 "
                      "(validate_ir(..., rtol=RTOL, atol=ATOL)).", stacklevel=3)
    names = list(expected)
    stages: list[StageResult] = []
    previous: Optional[dict] = None
    stage_of = lambda path: path.stem.split("_after_", 1)[-1] if "_after_" in path.stem else path.stem.split("_", 1)[-1]
    # verbose already prints a line per stage: the progress line is for quiet callers (the doctor)
    for i, path in enumerate(track(files, "validate_ir: passes", detail=stage_of, force=False if verbose else None)):
        stage = path.stem.split("_after_", 1)[-1] if "_after_" in path.stem else path.stem.split("_", 1)[-1]
        result = StageResult(stage, path)
        try:
            outs = _run_stage(path, tensors, names)
        except _DumpUnparsable as e:
            result.error = str(e)
            stages.append(result)
            if verbose:
                print(f"[{i + 1}/{len(files)}] {stage}: ERROR {result.error}", file=sys.stderr)
            continue
        except Exception as e:  # report and keep going: a later stage may still run
            result.error = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            stages.append(result)
            if verbose:
                print(f"[{i + 1}/{len(files)}] {stage}: ERROR {result.error}", file=sys.stderr)
            continue
        for n in names:
            if n not in outs:
                result.error = f"output '{n}' is not a parameter of the entry function"
                break
            result.vs_golden.append(_compare(n, outs[n], expected[n], rtol, atol))
            if previous is not None and n in previous:
                result.vs_previous.append(_compare(n, outs[n], previous[n], 0.0, 0.0))
        previous = outs
        stages.append(result)
        if verbose:
            # the reference implementation's lines, for scripts that grep them
            print(f"{'=' * 20} {path.stem} {'=' * 20}")
            for d in result.vs_golden:
                print(f"validate tensor: '{d.name}', max_abs_diff: {d.max_abs:.6e}, pass: {d.passed}")
            worst = max((d.max_abs for d in result.vs_golden), default=0.0)
            print(f"[{i + 1}/{len(files)}] {stage}: {'ok' if result.passed else 'MISMATCH'} "
                  f"(max abs err vs golden {worst:.3e})", file=sys.stderr)
    report = ValidationReport(stages, rtol, atol)
    first = report.first_divergence
    if first is not None:
        idx = stages.index(first)
        if idx > 0:
            before = stages[idx - 1].file.read_text(encoding="utf-8").splitlines()
            after = first.file.read_text(encoding="utf-8").splitlines()
            report.diff = "\n".join(difflib.unified_diff(before, after, stages[idx - 1].file.name, first.file.name,
                                                         n=context, lineterm=""))
    if verbose:
        print(report.format(), file=sys.stderr)
    if first is not None and raise_on_mismatch:
        if first.error is not None:
            # the stage did not produce a result: say why, never "exceeds tolerance"
            raise AssertionError(f"{first.file.name}: stage {first.stage} did not run: {first.error}\n"
                                 f"{report.format()}")
        worst = max((d for d in first.vs_golden if not d.passed), key=lambda d: d.max_abs)
        raise AssertionError(f"{first.file.name}: tensor mismatch for key '{worst.name}', max abs diff "
                             f"{worst.max_abs:.6g} exceeds tolerance (rtol={rtol}, atol={atol}); "
                             f"first diverging pass: {first.stage}\n{report.format()}")
    return report
