"""``ir.compile``: run the pass pipeline, generate kernel and orchestration modules into an
artifact directory, and return a :class:`CompiledProgram` that runs on the simulator."""
from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from pypto.backend.platforms import get_platform
from pypto.ir.nodes import Program
from pypto.language.enums import FunctionType
from pypto.passes.context import PassContext
from pypto.passes.manager import PassDumpLevel, PipelineResult, emit_diagnostics, resolve_dump_level, run_passes

if TYPE_CHECKING:
    from pypto.ir.compiled import CompiledProgram


def default_pipeline() -> list:
    """The passes :func:`compile` runs, in order (a fresh list: callers may edit it)."""
    from pypto.passes import PIPELINE

    return list(PIPELINE)


def run_pipeline(program: Program, options: dict, dump_dir: Path | None = None,
                 passes=None) -> PipelineResult:
    """Run the (default or given) pipeline with the compile options of ``options``."""
    platform = get_platform(options.get("platform") or "a2a3sim")
    ctx = PassContext(platform=platform,
                      analyze_auto_scopes_for_deps=bool(options.get("analyze_auto_scopes_for_deps", False)))
    if passes is None:
        passes = options.get("passes")
    return run_passes(program, passes if passes is not None else default_pipeline(), ctx,
                      verification_level=options.get("verification_level"), dump_dir=dump_dir,
                      dump_level=options.get("dump_passes", PassDumpLevel.NONE),
                      diagnostic_phase=options.get("diagnostic_phase"),
                      disabled_diagnostics=options.get("disabled_diagnostics"))


def _default_output_dir(name: str) -> Path:
    root = Path(os.environ.get("PYPTO_PROG_BUILD_DIR") or "build_output")
    stamp = datetime.datetime.now().strftime("%Y%m%d_%H%M%S")
    base = root / f"{name}_{stamp}"
    path, k = base, 1
    while path.exists():
        path, k = Path(f"{base}_{k}"), k + 1
    return path


def compile(program: Program, output_dir=None, dump_passes=True, verification_level=None,
            diagnostic_phase=None, disabled_diagnostics=None, platform: Optional[str] = None,
            passes=None, analyze_auto_scopes_for_deps: bool = False) -> "CompiledProgram":
    """Compile ``program`` for a simulated platform (default ``a2a3sim``).

    Writes ``passes_dump/`` (when ``dump_passes``), ``kernels/aiv/<fn>.py``,
    ``orchestration/<fn>.py`` and ``compiled_meta.json`` under ``output_dir`` (default
    ``$PYPTO_PROG_BUILD_DIR`` or ``build_output``, ``/<name>_<timestamp>``). ``passes`` replaces the
    default pipeline (see :func:`default_pipeline`). ``analyze_auto_scopes_for_deps`` lets
    AutoDeriveTaskDependencies replace the runtime's tensormap lookups it can prove by compiler
    edges in AUTO scopes (off: the program's dependencies are inferred by the runtime alone).
    """
    from pypto.codegen import generate_kernel, generate_orchestration
    from pypto.ir.compiled import CompiledProgram

    if not isinstance(analyze_auto_scopes_for_deps, bool):
        raise ValueError(f"analyze_auto_scopes_for_deps must be a bool, got {analyze_auto_scopes_for_deps!r}")
    plat = get_platform(platform or "a2a3sim")
    out = Path(output_dir) if output_dir else _default_output_dir(program.name)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report").mkdir(exist_ok=True)
    dump_level = resolve_dump_level(dump_passes)
    options = {"platform": plat.name, "verification_level": verification_level, "dump_passes": dump_level,
               "diagnostic_phase": diagnostic_phase, "disabled_diagnostics": disabled_diagnostics,
               "analyze_auto_scopes_for_deps": analyze_auto_scopes_for_deps}
    result = run_pipeline(program, options, out / "passes_dump", passes)
    emit_diagnostics(result.diagnostics, out / "report")
    lowered = result.program
    entry = lowered.entry
    kernels = {}
    for f in lowered.functions:
        if f.func_type == FunctionType.InCore:
            path = out / "kernels" / "aiv" / f"{f.name}.py"
            _write(path, generate_kernel(f, plat))
            kernels[f.name] = str(path.relative_to(out))
    orch = None
    if entry.func_type == FunctionType.Orchestration:
        path = out / "orchestration" / f"{entry.name}.py"
        _write(path, generate_orchestration(entry, lowered))
        orch = str(path.relative_to(out))
    meta = {
        "schema": 1, "name": program.name, "entry": entry.name, "platform": plat.name,
        "backend_type": plat.backend_type,
        "params": [{"name": p.name, "direction": d.name,
                    "shape": [d if isinstance(d, int) else None for d in getattr(p.type, "shape", [])],
                    "dtype": getattr(getattr(p.type, "dtype", None), "name", None),
                    "kind": type(p.type).__name__}
                   for p, d in zip(entry.params, entry.directions)],
        "num_return_types": len(entry.return_types), "kernels": kernels, "orchestration": orch,
        "pass_timings_s": {n: t for n, t in result.timings},
        "diagnostics": [{"code": d.code, "name": d.name, "severity": d.severity.value, "message": d.message,
                         "location": str(d.span), "where": d.where} for d in result.diagnostics],
    }
    _write(out / "compiled_meta.json", json.dumps(meta, indent=2))
    compiled = CompiledProgram(program=program, lowered=lowered, output_dir=out, platform=plat.name, meta=meta)
    compiled.diagnostics = list(result.diagnostics)
    return compiled


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


