"""``pypto.runtime.run``: compile, run, and compare with a golden — both forms of the reference's harness (docs/compatibility.md, "Name table").

* ``run(program, *tensors, config=None) -> CompiledProgram`` compiles (and runs when tensors are
  given), as the current reference does.
* ``run(program, tensor_specs, golden, config=None, scalar_specs=None) -> RunResult`` is the form
  the precision workflow's step 1 uses: it records (or reuses) golden files under
  ``config.golden_data_dir`` with :func:`write_golden`, runs on the simulator and compares each
  output with :func:`pypto.testing.compare` at ``config.rtol`` / ``config.atol``. A failure's
  ``RunResult.error`` is the full comparison report (where, how much, and — for FP16/BF16 — why a
  correct kernel fails a tight tolerance).
"""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

from pypto.runtime.config import RunConfig
from pypto.runtime.golden import TensorSpec, load_golden, write_golden
from pypto.safe_files import dir_lock
from pypto.ir.nodes import Program
from pypto.language.jit import JITFunction


@dataclass
class RunResult:
    """Outcome of a golden run; ``str()`` is ``PASS[: name]`` or ``FAIL[: name] - error`` + time."""

    passed: bool
    test_name: Optional[str] = None
    error: Optional[str] = None
    execution_time: Optional[float] = None
    profile: Optional[dict] = None
    reports: Optional[list] = None
    work_dir: Optional[Path] = None

    def __str__(self) -> str:
        if self.passed:
            text = f"PASS: {self.test_name}" if self.test_name else "PASS"
        else:
            text = f"FAIL: {self.test_name} - {self.error}" if self.test_name else f"FAIL: {self.error}"
        return text + (f" ({self.execution_time:.2f}s)" if self.execution_time is not None else "")


def _is_legacy(args: tuple) -> bool:
    return bool(args) and isinstance(args[0], (list, tuple)) and all(isinstance(s, TensorSpec) for s in args[0]) \
        and len(args[0]) > 0


def run(program, *args, config: RunConfig | None = None, scalar_specs=None, test_name: str | None = None):
    """See the module docstring for the two forms."""
    cfg = config or RunConfig()
    if _is_legacy(args):
        if len(args) < 2 or not callable(args[1]):
            raise TypeError("run(program, tensor_specs, golden, ...): golden must be a function "
                            "golden(tensors: dict, params: dict | None) writing the expected outputs in place")
        return _run_golden(program, list(args[0]), args[1], cfg, scalar_specs, test_name)
    compiled = _compile(program, args, cfg)
    if args and not cfg.codegen_only:
        compiled(*args, config=cfg)
    return compiled


def _compile(program, tensors: tuple, cfg: RunConfig):
    from pypto.driver.build import compile as ir_compile

    if isinstance(program, JITFunction):
        return program.compile(*tensors, config=cfg)
    if isinstance(program, Program):
        return ir_compile(program, **cfg.compile_options())
    raise TypeError(f"run() expects a @pl.jit kernel or an ir.Program, got {type(program).__name__}")


def _run_golden(program, specs: list, golden_fn, cfg: RunConfig, scalar_specs, test_name) -> RunResult:
    from pypto.testing.compare import compare

    t0 = time.perf_counter()
    name = test_name or getattr(program, "__name__", None) or getattr(program, "name", None)
    try:
        scalars = list(scalar_specs or ())
        data_dir = Path(cfg.golden_data_dir) if cfg.golden_data_dir else None
        first = {s.name: s.materialize() for s in specs}
        compiled = _compile(program, tuple(first[s.name] for s in specs) + tuple(sc.value for sc in scalars), cfg)
        if data_dir is not None:
            root, golden_py = data_dir, compiled.output_dir / "golden.py"
        else:
            # No golden directory named: a fresh one per run. The build directory is shared by every
            # run of the same program (in this process and, through the compile cache, in others),
            # so a golden kept there would be "reused" by a later run with other inputs or another
            # golden function, and that run compared against the wrong expected outputs.
            run_dir = _fresh_run_dir(compiled.output_dir)
            root, golden_py = run_dir / "data", run_dir / "golden.py"
        write_golden(specs, golden_fn, golden_py, rtol=cfg.rtol, atol=cfg.atol,
                     scalar_specs=scalars, data_dir=root)
        with dir_lock(root):   # not while another process re-records it (a file of it was deleted)
            golden = load_golden(root, specs)
        if cfg.codegen_only:
            return RunResult(True, name, execution_time=time.perf_counter() - t0, work_dir=compiled.output_dir)
        tensors = [golden.inputs[s.name].clone() if s.name in golden.inputs else torch.zeros(list(s.shape), dtype=s.dtype)
                   for s in specs]
        args = {s.name: t for s, t in zip(specs, tensors)}
        runtime_args = [args[n] if n in args else next(sc.value for sc in scalars if sc.name == n)
                        for n in compiled.param_names]
        compiled(*runtime_args, config=cfg)
        reports = []
        input_dtypes = [s.dtype for s in specs if not s.is_output]
        for s in specs:
            if s.is_output:
                reports.append(compare(args[s.name], golden.outputs[s.name], cfg.rtol, cfg.atol, name=s.name,
                                       input_dtypes=input_dtypes))
        failed = [r for r in reports if not r.passed]
        note = ""
        if (golden.rtol, golden.atol) != (cfg.rtol, cfg.atol):
            note = (f"\n(compared at rtol={cfg.rtol:g}, atol={cfg.atol:g}; the golden was recorded with "
                    f"rtol={golden.rtol:g}, atol={golden.atol:g})")
        error = "\n".join(r.format() for r in failed) + note if failed else None
        return RunResult(not failed, name, error, time.perf_counter() - t0, reports=reports,
                         work_dir=compiled.output_dir)
    except Exception as e:  # noqa: BLE001 - the harness reports every failure as a RunResult
        detail = str(e) if hasattr(e, "span") or type(e).__name__ == "GoldenFileError" else traceback.format_exc()
        return RunResult(False, name, detail, time.perf_counter() - t0)




def _fresh_run_dir(output_dir: Path) -> Path:
    """``<output_dir>/golden_runs/<time>_<pid>_<random>/``: a directory no other run uses."""
    import os
    import tempfile

    parent = Path(output_dir) / "golden_runs"
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{time.strftime('%Y%m%d_%H%M%S')}_{os.getpid()}_", dir=parent))
