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


def compile_settings(*, platform, verification_level=None, diagnostic_phase=None, disabled_diagnostics=None,
                     memory_planner=None, runtime=None, analyze_auto_scopes_for_deps=False,
                     operation: str = "compile") -> dict:
    """The pass settings of one compilation: the arguments, else the active
    :class:`pypto.pypto_core.passes.PassContext`'s, else the defaults.

    As in the reference, giving ``verification_level`` / ``diagnostic_phase`` / ``memory_planner`` /
    ``runtime`` both as an argument and through an active PassContext is an error (which one should
    win is ambiguous).
    """
    from pypto.pypto_core.passes import PassContext as OuterContext, disabled_names

    outer = OuterContext.current()
    if outer is not None:
        for name, value in (("verification_level", verification_level), ("diagnostic_phase", diagnostic_phase),
                            ("memory_planner", memory_planner), ("runtime", runtime)):
            if value is not None:
                raise RuntimeError(f"{operation}() was called with {name} while a PassContext is active; set "
                                   f"{name} on that PassContext instead")
        verification_level = outer.get_verification_level()
        diagnostic_phase = outer.get_diagnostic_phase()
        if disabled_diagnostics is None:
            disabled_diagnostics = outer.get_disabled_diagnostics()
        memory_planner = outer.get_memory_planner()
        runtime = outer.get_runtime()
    return {"platform": platform, "verification_level": verification_level, "diagnostic_phase": diagnostic_phase,
            "disabled_diagnostics": disabled_names(disabled_diagnostics),
            "memory_planner": memory_planner, "runtime": runtime,
            "analyze_auto_scopes_for_deps": analyze_auto_scopes_for_deps}


def _default_output_dir(name: str) -> Path:
    root = Path(os.environ.get("PYPTO_PROG_BUILD_DIR") or "build_output")
    stamp = datetime.datetime.now().strftime("%Y%m%d_%H%M%S")
    base = root / f"{name}_{stamp}"
    path, k = base, 1
    while path.exists():
        path, k = Path(f"{base}_{k}"), k + 1
    return path


# Options of the reference's ``ir.compile`` that have no effect on the simulator: accepted, recorded
# in ``compiled_meta.json`` ("compile_options") and listed in docs/compatibility.md.
RECORDED_ONLY = ("skip_ptoas", "memory_planner", "enable_pypto_l0c_double_buffer", "emit_source_loc",
                 "dump_ptoas_passes", "runtime")


def compile(program: Program, output_dir=None, strategy=None, dump_passes=True, backend_type=None,
            skip_ptoas: bool = False, verification_level=None, diagnostic_phase=None, disabled_diagnostics=None,
            memory_planner=None, enable_pypto_l0c_double_buffer=None, profiling: bool = False,
            platform: Optional[str] = None, distributed_config=None, analyze_auto_scopes_for_deps: bool = False,
            emit_source_loc=None, dump_ptoas_passes: bool = False, runtime=None, *, passes=None) -> "CompiledProgram":
    """Compile ``program`` for a simulated platform; the reference's parameters, in its positional order.

    Target: ``platform`` (``a2a3sim`` / ``a5sim``, or a real device name, which runs on its
    simulator) wins; else ``backend_type`` (``BackendType.Ascend910B`` -> a2a3sim, ``Ascend950`` ->
    a5sim); else a2a3sim (the reference's default backend type is Ascend910B). Like the reference,
    the compilation then sets the process-wide backend type (:func:`pypto.backend.set_backend_type`)
    to its target.

    Writes ``passes_dump/`` (when ``dump_passes``: bool or ``PassDumpLevel``), ``kernels/aiv/<fn>.py``,
    ``orchestration/<fn>.py``, ``report/`` and ``compiled_meta.json`` under ``output_dir`` (default
    ``$PYPTO_PROG_BUILD_DIR`` or ``build_output``, ``/<name>_<timestamp>``): the work directory
    :func:`pypto.runtime.execute_compiled` and ``CompiledProgram.from_dir`` run later.

    * ``strategy``: an ``OptimizationStrategy`` (``Default``, the only one).
    * ``verification_level``, ``diagnostic_phase``, ``disabled_diagnostics`` (names, codes or a
      ``DiagnosticCheckSet``): as the reference; an active ``PassContext`` supplies them otherwise.
    * ``profiling``: writes ``report/pipeline_profile.txt`` / ``.json`` (wall time per pass, codegen).
    * ``analyze_auto_scopes_for_deps``: AutoDeriveTaskDependencies replaces the runtime's tensormap
      lookups it can prove by compiler edges in AUTO scopes.
    * ``skip_ptoas``, ``memory_planner``, ``enable_pypto_l0c_double_buffer``, ``emit_source_loc``,
      ``dump_ptoas_passes``, ``runtime``: accepted and recorded; nothing on the simulator depends on
      them (no ptoas step, one memory planner, one runtime; see docs/compatibility.md).
    * ``distributed_config``: multi-rank (L3) programs are not simulated; a value is refused.
    * ``passes`` (keyword only, ours): replaces the default pipeline (see :func:`default_pipeline`).
    """
    import time

    from pypto.backend.backend_type import BackendType, platform_of, set_backend_type
    from pypto.backend.pto_backend import PartialCodegenError, generate, kernel_path, orchestration_path
    from pypto.ir.compiled import CompiledProgram
    from pypto.ir.pass_manager import OptimizationStrategy

    if strategy is None:
        strategy = OptimizationStrategy.Default
    if not isinstance(strategy, OptimizationStrategy):
        raise ValueError(f"strategy must be an OptimizationStrategy, got {strategy!r}")
    if not isinstance(analyze_auto_scopes_for_deps, bool):
        raise ValueError(f"analyze_auto_scopes_for_deps must be a bool, got {analyze_auto_scopes_for_deps!r}")
    if distributed_config is not None:
        from pypto.errors import UnsupportedFeatureError

        raise UnsupportedFeatureError(
            "ir.compile(distributed_config=...): multi-rank (L3) programs are not simulated by this package; "
            "compile a single-chip program (without distributed_config)")
    if backend_type is not None:
        BackendType.of(backend_type)  # a clear error for a bad value, even when platform wins
    plat = get_platform(platform_of(platform, backend_type))
    set_backend_type(BackendType.of(plat))
    out = Path(output_dir) if output_dir else _default_output_dir(program.name)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report").mkdir(exist_ok=True)
    dump_level = resolve_dump_level(dump_passes)
    options = compile_settings(platform=plat.name, verification_level=verification_level,
                               diagnostic_phase=diagnostic_phase, disabled_diagnostics=disabled_diagnostics,
                               memory_planner=memory_planner, runtime=runtime,
                               analyze_auto_scopes_for_deps=analyze_auto_scopes_for_deps)
    options["dump_passes"] = dump_level
    t0 = time.perf_counter()
    result = run_pipeline(program, options, out / "passes_dump", passes)
    t_passes = time.perf_counter() - t0
    emit_diagnostics(result.diagnostics, out / "report")
    lowered = result.program
    entry = lowered.entry
    t1 = time.perf_counter()
    try:
        files = generate(lowered, out, platform=plat.name)
    except PartialCodegenError as e:
        for rel, text in e.files.items():
            _write(out / rel, text)
        raise
    for rel, text in files.items():
        _write(out / rel, text)
    kernels = {f.name: kernel_path(f.name) for f in lowered.functions if kernel_path(f.name) in files}
    orch = orchestration_path(entry.name) if orchestration_path(entry.name) in files else None
    t_codegen = time.perf_counter() - t1
    recorded = {"strategy": strategy.name, "skip_ptoas": bool(skip_ptoas),
                "memory_planner": _enum_name(options["memory_planner"]) or "PYPTO",
                "enable_pypto_l0c_double_buffer": enable_pypto_l0c_double_buffer,
                "emit_source_loc": emit_source_loc, "dump_ptoas_passes": bool(dump_ptoas_passes),
                "runtime": _enum_name(options["runtime"]) or "TENSORMAP_AND_RINGBUFFER", "profiling": bool(profiling),
                "analyze_auto_scopes_for_deps": analyze_auto_scopes_for_deps}
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
        "compile_options": recorded,
        "diagnostics": [{"code": d.code, "name": d.name, "severity": d.severity.value, "message": d.message,
                         "location": str(d.span), "where": d.where} for d in result.diagnostics],
    }
    _write(out / "compiled_meta.json", json.dumps(meta, indent=2))
    if profiling:
        _write_profile(out / "report", result.timings, t_passes, t_codegen)
    compiled = CompiledProgram(program=program, lowered=lowered, output_dir=out, platform=plat.name, meta=meta)
    compiled.diagnostics = list(result.diagnostics)
    return compiled


def _enum_name(value):
    return None if value is None else getattr(value, "name", str(value))


def _write_profile(report: Path, timings, t_passes: float, t_codegen: float) -> None:
    """``pipeline_profile.json`` / ``.txt``: wall seconds of each pass and of codegen."""
    stages = [{"stage": f"pass:{n}", "seconds": t} for n, t in timings] + [{"stage": "codegen", "seconds": t_codegen}]
    _write(report / "pipeline_profile.json",
           json.dumps({"total_seconds": t_passes + t_codegen, "stages": stages}, indent=2))
    lines = [f"{s['stage']:<40} {s['seconds'] * 1e3:10.3f} ms" for s in stages]
    lines.append(f"{'total':<40} {(t_passes + t_codegen) * 1e3:10.3f} ms")
    _write(report / "pipeline_profile.txt", "\n".join(lines) + "\n")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


