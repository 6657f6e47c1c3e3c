"""Differential fuzzer: the simulator against the reference executor against float64.

Two sources of kernels:

* **mutants** of the repository's examples (:mod:`.mutate`): one to three random AST edits of the
  ``@pl.jit`` functions of an example module (ops, numbers, dtypes, directions, loop kinds,
  arguments, deleted statements), run at the shapes of the mutated signature;
* **generated** kernels (:mod:`.generate`): random expression trees over every dtype in tensor,
  tile, loop and ``pl.parallel`` forms, with an independent float64 oracle.

Each case runs on a simulator (a2a3sim or a5sim, alternating) and under ``torch_codegen``;
:mod:`.execute` classifies it as ``agree`` / ``rejected`` (a located user error) / ``explained`` (a
difference the compiler warned about) / ``disagree`` / ``internal`` / ``timeout``. The campaign
passes when there is no ``disagree``, ``internal`` or ``timeout`` (a case's limit is CPU time, so
a campaign on a loaded machine does not time out on cases that only wait for a core).

Short campaign: ``tests/tools/test_difffuzz.py`` (CI). Long one, on demand::

    python -m pypto.tools.difffuzz --mutants 10000 [--generated N] [--seed S] [--examples DIR]
"""
from __future__ import annotations

import random
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch

from pypto.tools.difffuzz.execute import Outcome, classify_error, load_module, run_case, time_limit
from pypto.tools.difffuzz.generate import Case, generate, oracle_mismatch
from pypto.tools.difffuzz.mutate import example_files, mutate

FAILING = ("disagree", "internal", "timeout")
PLATFORMS = ("a2a3sim", "a5sim")


@dataclass
class Report:
    """Counts per outcome kind and the failing cases (origin, edits, outcome) for each source."""

    counts: dict = field(default_factory=lambda: {"mutant": Counter(), "generated": Counter()})
    failures: list = field(default_factory=list)
    rejections: Counter = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        """True when no case failed."""
        return not self.failures

    def format(self) -> str:
        """The campaign summary ``python -m pypto.tools.difffuzz`` prints."""
        lines = []
        for src, c in self.counts.items():
            if sum(c.values()):
                parts = ", ".join(f"{k} {c[k]}" for k in ("agree", "rejected", "explained", *FAILING) if c[k])
                lines.append(f"{src}: {sum(c.values())} cases: {parts}")
        if self.rejections:
            lines.append("rejections by error class: " + ", ".join(f"{k} {n}" for k, n in self.rejections.most_common()))
        for f in self.failures[:50]:
            lines.append(f"FAIL {f['kind']} {f['where']}: {f['detail']}\n    edits: {f.get('edits')}\n    "
                         + f.get("error", "")[:1500].replace("\n", "\n    "))
        lines.append("PASS: 0 unexplained disagreements, 0 internal errors, 0 timeouts" if self.ok else
                     f"FAIL: {len(self.failures)} failing cases")
        return "\n".join(lines)


def default_examples() -> Path:
    """``examples/`` of the source tree this package sits in."""
    return Path(__file__).resolve().parents[3] / "examples"


def _scalar_value(dtype, rng: random.Random):
    if dtype.is_float():
        return rng.choice((0.5, 2.0, -1.0))
    if dtype.name == "BOOL":
        return rng.choice((True, False))
    return rng.choice((1, 2, 4, 8, 16, 32, 64))


def signature_inputs(kernel, rng: random.Random) -> list | None:
    """Random arguments for ``kernel`` from its annotations (None when a parameter has no static
    shape: a bare ``pl.Tensor`` or a dynamic dimension). Raises the parser's located errors."""
    from pypto.frontend.parser import FunctionParser, parse_annotation
    from pypto.frontend.source import function_source
    from pypto.frontend.specialize import Resolver, kernel_globals
    from pypto.tools.difffuzz.generate import _data

    node, src = function_source(kernel.fn)
    static = FunctionParser(src, Resolver(kernel_globals(kernel.fn)), "<static>", kernel.func_type).resolve_static
    out = []
    for a in node.args.args:
        if a.annotation is None:
            return None
        t, direction, is_scalar = parse_annotation(a.annotation, static, src, f"Parameter '{a.arg}'")
        if is_scalar:
            out.append(_scalar_value(t.dtype, rng))
            continue
        if t is None or any(not isinstance(d, int) for d in getattr(t, "shape", ())):
            return None
        if any(d > 4096 for d in t.shape) or (torch.Size(t.shape).numel() > 1 << 22):
            return None   # (a mutated number made it huge: not worth the memory)
        if direction.name == "Out":
            out.append(torch.zeros(tuple(t.shape), dtype=t.dtype.torch))
        else:
            out.append(_data(rng, t.shape, t.dtype.name))
    return out


_BASELINE: dict = {}   # (example path, kernel name) -> Outcome of the unmutated kernel


def baseline(path: Path, kname: str, workdir: Path, limit_s: float) -> Outcome:
    """How the unmutated kernel fares (cached). An example that already differs between the
    executors (the precision examples' deliberate races) explains the same difference in its
    mutants."""
    key = (str(path), kname)
    if key not in _BASELINE:
        name = f"_difffuzz_base_{len(_BASELINE)}"
        mod_path = workdir / f"{name}.py"
        sys.path.insert(0, str(path.parent))
        try:
            mod = load_module(path.read_text(), mod_path, name)
            args = signature_inputs(getattr(mod, kname), random.Random(0))
            _BASELINE[key] = (run_case(getattr(mod, kname), args, PLATFORMS[0], 0, limit_s) if args is not None
                              else Outcome("skipped"))
        except Exception as e:   # noqa: BLE001
            _BASELINE[key] = classify_error(e)
        finally:
            sys.path.remove(str(path.parent))
            sys.modules.pop(name, None)
            mod_path.unlink(missing_ok=True)
    return _BASELINE[key]


def run_mutant(seed: int, files: list[Path], workdir: Path, limit_s: float) -> list[tuple[str, Outcome, dict]]:
    """Mutate the example chosen by ``seed`` and run the edited kernels: ``[(where, outcome, info)]``."""
    rng = random.Random(seed)
    path = files[seed % len(files)]
    m = mutate(path, seed)
    if m is None:
        return []
    name = f"_difffuzz_m{seed}"
    info = {"edits": m.edits, "origin": m.origin}
    mod_path = workdir / f"{name}.py"
    sys.path.insert(0, str(path.parent))     # the example's own helpers (_check)
    try:
        try:
            with time_limit(limit_s):
                mod = load_module(m.source, mod_path, name)
        except Exception as e:     # noqa: BLE001 - a mutant that breaks at import (a bad decorator argument)
            return [(f"{path.name} (import)", classify_error(e), {**info, "source": m.source})]
        results = []
        for kname in m.kernels:
            kernel = getattr(mod, kname, None)
            if kernel is None or not hasattr(kernel, "compile"):
                continue
            where = f"{path.name}::{kname} seed {seed}"
            try:
                args = signature_inputs(kernel, rng)
            except Exception as e:     # noqa: BLE001
                results.append((where, classify_error(e), info))
                continue
            if args is None:
                continue
            out = run_case(kernel, args, PLATFORMS[seed % 2], seed, limit_s)
            if out.kind == "disagree" and baseline(path, kname, workdir, limit_s).kind in ("disagree", "explained"):
                out = Outcome("explained", out.detail + " (the unmutated example differs too: a deliberate race)")
            results.append((where, out, info))
        return results
    finally:
        sys.path.remove(str(path.parent))
        sys.modules.pop(name, None)
        mod_path.unlink(missing_ok=True)


def run_generated(seed: int, workdir: Path, limit_s: float) -> tuple[str, Outcome, dict]:
    """Generate the kernel of ``seed`` and run it."""
    case: Case = generate(seed)
    name = f"_difffuzz_g{seed}"
    mod_path = workdir / f"{name}.py"
    info = {"source": case.source}
    try:
        mod = load_module(case.source, mod_path, name)
        kernel = getattr(mod, case.entry)
        oracle = (lambda ref_args: oracle_mismatch(case, ref_args[-1])) if case.expected is not None else None
        return f"generated seed {seed}", run_case(kernel, case.args, PLATFORMS[seed % 2], seed, limit_s, oracle), info
    finally:
        sys.modules.pop(name, None)
        mod_path.unlink(missing_ok=True)


def campaign(mutants: int, generated: int, seed: int = 0, examples: Path | None = None, limit_s: float = 20.0,
             progress=None) -> Report:
    """Run ``mutants`` mutant cases and ``generated`` generated ones (seeds ``seed, seed + 1, ...``)."""
    import os

    files = example_files(examples or default_examples())
    report = Report()
    workdir = Path(tempfile.mkdtemp(prefix="difffuzz_"))
    build = Path(tempfile.mkdtemp(prefix="difffuzz_build_"))
    old_build = os.environ.get("PYPTO_PROG_BUILD_DIR")
    os.environ["PYPTO_PROG_BUILD_DIR"] = str(build)
    try:
        done = 0
        s = seed
        while done < mutants:
            for where, out, info in run_mutant(s, files, workdir, limit_s):
                _record(report, "mutant", where, out, info)
            done += 1
            s += 1
            if progress:
                progress("mutant", done, mutants, report)
        for k in range(generated):
            where, out, info = run_generated(seed + k, workdir, limit_s)
            _record(report, "generated", where, out, info)
            if progress:
                progress("generated", k + 1, generated, report)
    finally:
        if old_build is None:
            os.environ.pop("PYPTO_PROG_BUILD_DIR", None)
        else:
            os.environ["PYPTO_PROG_BUILD_DIR"] = old_build
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(build, ignore_errors=True)
    return report


def _record(report: Report, source: str, where: str, out: Outcome, info: dict) -> None:
    report.counts[source][out.kind] += 1
    if out.kind == "rejected":
        report.rejections[out.detail] += 1
    if out.kind in FAILING:
        report.failures.append({"kind": out.kind, "where": where, "detail": out.detail, "error": out.error, **info})
