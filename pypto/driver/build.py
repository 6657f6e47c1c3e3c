"""``ir.compile`` (:func:`compile`): run the pass pipeline, generate kernel and orchestration modules into an
artifact directory, and return a :class:`CompiledProgram` that runs on the simulator."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Optional

from pypto.backend.backend_type import BackendType, platform_of, set_backend_type
from pypto.backend.platforms import get_platform
from pypto.backend.pto_backend import PartialCodegenError, generate, kernel_path, orchestration_path
from pypto.driver import artifacts
from pypto.driver.compiled import CompiledProgram
from pypto.errors import PyptoError, Span, UnsupportedFeatureError
from pypto.ir.nodes import Program
from pypto.passes import PIPELINE
from pypto.passes.context import PassContext, l0c_double_buffer_enabled
from pypto.passes.diagnostics import Diagnostic, Severity
from pypto.passes.manager import PassDumpLevel, PipelineResult, emit_diagnostics, resolve_dump_level, run_passes
from pypto.passes.api import PassContext as OuterContext, disabled_names, observer
from pypto.runtime.config import OptimizationStrategy


def default_pipeline() -> list:
    """The passes :func:`compile` runs, in order (a fresh list: callers may edit it)."""
    return list(PIPELINE)


def run_pipeline(program: Program, options: dict, dump_dir: Path | None = None,
                 passes=None) -> PipelineResult:
    """Run the (default or given) pipeline with the compile options of ``options``."""
    platform = get_platform(options.get("platform") or "a2a3sim")
    ctx = PassContext(platform=platform,
                      analyze_auto_scopes_for_deps=bool(options.get("analyze_auto_scopes_for_deps", False)),
                      l0c_double_buffer=bool(options.get("l0c_double_buffer", False)))
    if passes is None:
        passes = options.get("passes")
    return run_passes(program, passes if passes is not None else default_pipeline(), ctx,
                      verification_level=options.get("verification_level"), dump_dir=dump_dir,
                      dump_level=options.get("dump_passes", PassDumpLevel.NONE),
                      diagnostic_phase=options.get("diagnostic_phase"),
                      disabled_diagnostics=options.get("disabled_diagnostics"),
                      observe=observer(options.get("instruments")))


def compile_settings(*, platform, verification_level=None, diagnostic_phase=None, disabled_diagnostics=None,
                     memory_planner=None, runtime=None, analyze_auto_scopes_for_deps=False,
                     operation: str = "compile") -> dict:
    """The pass settings of one compilation: the arguments, else the active
    :class:`pypto.pypto_core.passes.PassContext`'s, else the defaults. The context's instruments
    (``"instruments"``) run around each pass of the pipeline.

    As in the reference, giving ``verification_level`` / ``diagnostic_phase`` / ``memory_planner`` /
    ``runtime`` both as an argument and through an active PassContext is an error (which one should
    win is ambiguous).
    """
    outer = OuterContext.current()
    instruments = outer.get_instruments() if outer is not None else []
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
            "analyze_auto_scopes_for_deps": analyze_auto_scopes_for_deps, "instruments": instruments}


# Options of the reference's ``ir.compile`` that have no effect on the simulator: accepted, recorded
# in ``compiled_meta.json`` ("compile_options") and listed in docs/compatibility.md. (memory_planner
# and enable_pypto_l0c_double_buffer are recorded too, and gate AutoTileMatmulL0's dbC=2 tiling.)
RECORDED_ONLY = ("skip_ptoas", "emit_source_loc", "dump_ptoas_passes", "runtime")


def compile(program: Program, output_dir=None, strategy=None, dump_passes=True, backend_type=None,
            skip_ptoas: bool = False, verification_level=None, diagnostic_phase=None, disabled_diagnostics=None,
            memory_planner=None, enable_pypto_l0c_double_buffer=None, profiling: bool = False,
            platform: Optional[str] = None, distributed_config=None, analyze_auto_scopes_for_deps: bool = False,
            emit_source_loc=None, dump_ptoas_passes: bool = False, runtime=None, *, passes=None,
            key: Optional[str] = None) -> "CompiledProgram":
    """Compile ``program`` for a simulated platform; the reference's parameters, in its positional order.

    Target: ``platform`` (``a2a3sim`` / ``a5sim``, or a real device name, which runs on its
    simulator) wins; else ``backend_type`` (``BackendType.Ascend910B`` -> a2a3sim, ``Ascend950`` ->
    a5sim); else a2a3sim (the reference's default backend type is Ascend910B). Like the reference,
    the compilation then sets the process-wide backend type (:func:`pypto.backend.set_backend_type`)
    to its target.

    Writes ``passes_dump/`` (when ``dump_passes``: bool or ``PassDumpLevel``), ``kernels/aiv/<fn>.py``,
    ``orchestration/<fn>.py``, ``report/`` and ``compiled_meta.json`` under ``output_dir``: the work
    directory :func:`pypto.runtime.execute_compiled` and ``CompiledProgram.from_dir`` run later.
    Without one, the build is an entry of the persistent compile cache under
    ``$PYPTO_PROG_BUILD_DIR`` (or ``build_output``), named ``<name>_<key>``: a build with the same
    key (program, options, platform, package) made by any process is reused instead of compiled
    again; see :mod:`pypto.driver.artifacts` (the key, the atomic publication, pruning) and
    docs/compile-cache.md. An explicit ``output_dir`` holds the latest build written there.

    * ``strategy``: an ``OptimizationStrategy`` (``Default``, the only one).
    * ``verification_level``, ``diagnostic_phase``, ``disabled_diagnostics`` (names, codes or a
      ``DiagnosticCheckSet``): as the reference; an active ``PassContext`` supplies them otherwise.
    * ``profiling``: writes ``report/pipeline_profile.txt`` / ``.json`` (wall time per pass, codegen).
    * ``analyze_auto_scopes_for_deps``: AutoDeriveTaskDependencies replaces the runtime's tensormap
      lookups it can prove by compiler edges in AUTO scopes.
    * ``memory_planner``, ``enable_pypto_l0c_double_buffer``: recorded; one memory planner runs
      whatever their values, which decide only whether AutoTileMatmulL0 may double-buffer Acc
      (dbC=2 under ``DSA_RP`` / ``PTOAS``, or ``PYPTO`` with the flag, as in the reference).
    * ``skip_ptoas``, ``emit_source_loc``, ``dump_ptoas_passes``, ``runtime``: accepted and
      recorded; nothing on the simulator depends on them (no ptoas step, one runtime; see
      docs/compatibility.md).
    * ``distributed_config``: a ``@pl.program`` with a ``@pl.function(level=pl.Level.HOST)``
      orchestrator compiles into a ``DistributedCompiledProgram`` (docs/distributed.md); any other
      program is refused.
    * ``passes`` (keyword only, ours): replaces the default pipeline (see :func:`default_pipeline`;
      such builds are never reused from disk). ``key``: the precomputed :func:`artifacts.compile_key`.
    """
    if strategy is None:
        strategy = OptimizationStrategy.Default
    if not isinstance(strategy, OptimizationStrategy):
        raise ValueError(f"strategy must be an OptimizationStrategy, got {strategy!r}")
    if not isinstance(analyze_auto_scopes_for_deps, bool):
        raise ValueError(f"analyze_auto_scopes_for_deps must be a bool, got {analyze_auto_scopes_for_deps!r}")
    if distributed_config is not None:
        from pypto.frontend.host_methods import host_methods

        if host_methods(program):
            # a @pl.program with a HOST-level orchestrator: the multi-rank engine (issue 17)
            from pypto.runtime.distributed.program import compile_program_host

            return compile_program_host(program, distributed_config, platform=platform_of(platform, backend_type),
                                        dump_passes=dump_passes)
        raise UnsupportedFeatureError(
            "ir.compile(distributed_config=...): multi-rank (L3) programs are not simulated by this package; "
            "compile a single-chip program (without distributed_config)")
    from pypto.driver import multi_orch

    roots = multi_orch.orchestration_roots(program)
    if len(roots) > 1 and passes is None:
        # several independent orchestrations: one sub-build each (pypto.driver.multi_orch)
        base = Path(output_dir) if output_dir is not None else None
        subs = {r: compile(multi_orch.sub_program(program, r),
                           None if base is None else base / "next_levels" / r, strategy, dump_passes, backend_type,
                           skip_ptoas, verification_level, diagnostic_phase, disabled_diagnostics, memory_planner,
                           enable_pypto_l0c_double_buffer, profiling, platform, None, analyze_auto_scopes_for_deps,
                           emit_source_loc, dump_ptoas_passes, runtime) for r in roots}
        return multi_orch.MultiOrchCompiledProgram(program, subs, base)
    if backend_type is not None:
        BackendType.of(backend_type)  # a clear error for a bad value, even when platform wins
    plat = get_platform(platform_of(platform, backend_type))
    set_backend_type(BackendType.of(plat))
    dump_level = resolve_dump_level(dump_passes)
    options = compile_settings(platform=plat.name, verification_level=verification_level,
                               diagnostic_phase=diagnostic_phase, disabled_diagnostics=disabled_diagnostics,
                               memory_planner=memory_planner, runtime=runtime,
                               analyze_auto_scopes_for_deps=analyze_auto_scopes_for_deps)
    options["dump_passes"] = dump_level
    outer = OuterContext.current()
    flag = enable_pypto_l0c_double_buffer
    if flag is None and outer is not None:
        flag = outer.get_enable_pypto_l0c_double_buffer()
    options["l0c_double_buffer"] = l0c_double_buffer_enabled(options["memory_planner"], flag)
    recorded = {"strategy": strategy.name, "skip_ptoas": bool(skip_ptoas),
                "memory_planner": _enum_name(options["memory_planner"]) or "PYPTO",
                "enable_pypto_l0c_double_buffer": enable_pypto_l0c_double_buffer,
                "emit_source_loc": emit_source_loc, "dump_ptoas_passes": bool(dump_ptoas_passes),
                "runtime": _enum_name(options["runtime"]) or "TENSORMAP_AND_RINGBUFFER", "profiling": bool(profiling),
                "analyze_auto_scopes_for_deps": analyze_auto_scopes_for_deps}
    options["recorded"] = recorded  # written into the meta: part of the key
    if key is None:
        # instruments observe the passes as they run: a build reused from disk would skip them
        key = artifacts.compile_key(program, options, custom_passes=passes is not None or bool(options["instruments"]))
    if output_dir is None:
        root = artifacts.build_root()
        final = root / artifacts.entry_name(program.name, key)
        hit = _reuse(final, key, program, options)
        if hit is not None:
            artifacts.touch(final)
            return hit
        staging = artifacts.staging_dir(root, final.name)
        try:
            compiled = _build(program, staging, options, plat, passes, key, True, None)
            final = artifacts.publish(staging, final)
        except PyptoError as e:
            _keep_failed_dumps(e, staging, root / f"{artifacts.FAILED_PREFIX}{final.name}")
            raise
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        _finish(compiled, final)
        artifacts.prune(root)
        return compiled
    out = Path(output_dir)
    with artifacts.dir_lock(out):
        hit = _reuse(out, key, program, options)
        if hit is not None:
            return hit
        staging = artifacts.staging_dir(out, "build")
        try:
            compiled = _build(program, staging, options, plat, passes, key, False, out)
            _install(staging, out)
        except PyptoError as e:
            _keep_failed_dumps(e, staging, out)
            raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        _finish(compiled, out)
    return compiled


def _keep_failed_dumps(e: BaseException, staging: Path, dest: Path) -> None:
    """A compile that failed with ``dump_passes`` on keeps the stages dumped before the failure in
    ``dest/passes_dump`` (the staging directory is removed): ``python -m pypto.tools.memory_map`` on
    it draws the memory plan a CapacityError refused. The error gets a note naming the directory."""
    src = staging / "passes_dump"
    if not src.is_dir() or not any(src.iterdir()):
        return
    target = dest / "passes_dump"
    try:
        dest.mkdir(parents=True, exist_ok=True)
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
        shutil.move(str(src), str(target))
    except OSError:
        return
    e.dump_dir = target
    e.add_note(f"pass dumps up to the failure: {target} (python -m pypto.tools.memory_map {target} "
               f"draws the memory plan)")


def _build(program: Program, out: Path, options: dict, plat, passes, key: str, cache_entry: bool,
           partial_dir: Optional[Path]) -> "CompiledProgram":
    """Run the pipeline and write every artifact into ``out`` (a private staging directory).
    ``partial_dir``: where the files of a partly failed codegen go (the user's directory)."""
    files_out = artifacts.StagingWriter(out)
    files_out.mkdir(out / "report")
    t0 = time.perf_counter()
    result = run_pipeline(program, options, out / "passes_dump", passes)
    t_passes = time.perf_counter() - t0
    printed = io.StringIO()
    emit_diagnostics(result.diagnostics, out / "report", stream=printed)
    lowered = result.program
    entry = lowered.entry
    t1 = time.perf_counter()
    try:
        files = generate(lowered, out, platform=plat.name, memory_planner=options["memory_planner"])
    except PartialCodegenError as e:
        sys.stderr.write(printed.getvalue())
        if partial_dir is not None:
            for rel, text in e.files.items():
                artifacts.write_text(partial_dir / rel, text)
        raise
    for rel, text in files.items():
        files_out.write(out / rel, text)
    kernels = {f.name: kernel_path(f.name) for f in lowered.functions if kernel_path(f.name) in files}
    orch = orchestration_path(entry.name) if orchestration_path(entry.name) in files else None
    sources = {rel: files[rel] for rel in [*kernels.values(), *([orch] if orch else [])]}
    t_codegen = time.perf_counter() - t1
    if options["recorded"]["profiling"]:
        _write_profile(files_out, out / "report", result.timings, t_passes, t_codegen)
    meta = {
        "schema": 1, "name": program.name, "entry": entry.name, "platform": plat.name,
        "backend_type": plat.backend_type,
        "params": [{"name": p.name, "direction": d.name,
                    "shape": [d if isinstance(d, int) else None for d in getattr(p.type, "shape", [])],
                    # the dynamic dims as printed ("M", "M * 2"; None where static): execute() binds them
                    "dims": [None if isinstance(d, int) else str(d) for d in getattr(p.type, "shape", [])],
                    "dtype": getattr(getattr(p.type, "dtype", None), "name", None),
                    "kind": type(p.type).__name__,
                    # DN: the caller's contiguous buffer holds the tensor column-major (execute())
                    **({"layout": "DN"} if getattr(getattr(p.type, "layout", None), "name", None) == "DN"
                       else {})}
                   for p, d in zip(entry.params, entry.directions)],
        "num_return_types": len(entry.return_types), "kernels": kernels, "orchestration": orch,
        "pass_timings_s": {n: t for n, t in result.timings},
        "compile_options": options["recorded"],
        "diagnostics": [{"code": d.code, "name": d.name, "severity": d.severity.value, "message": d.message,
                         "location": str(d.span), "where": d.where,
                         "span": [d.span.file, d.span.line, d.span.col, d.span.end_line, d.span.end_col]}
                        for d in result.diagnostics],
        "cache_key": key, "cache_entry": cache_entry,
        "module_sha256": {rel: artifacts.sha256_text(text) for rel, text in sources.items()},
        # what a compile printed, with the artifact directory as a placeholder: a reuse prints it again
        "stderr": printed.getvalue().replace(str(out), _DIR),
    }
    # the reference's kernel_config.py and debug/run.py (pypto.ir.workdir_files), then the file list
    from pypto.ir.workdir_files import kernel_config_text, run_script_text

    files_out.write(out / "kernel_config.py", kernel_config_text(meta))
    files_out.write(out / "debug" / "run.py", run_script_text(meta))
    meta["files"] = artifacts.files_under(out)   # every file of the build but the meta (written last)
    files_out.write(out / artifacts.META, json.dumps(meta, indent=2))
    compiled = CompiledProgram(program=program, lowered=lowered, output_dir=out, platform=plat.name, meta=meta,
                               sources=sources, options=options)
    compiled.diagnostics = list(result.diagnostics)
    return compiled


_DIR = "<<pypto-artifact-dir>>"


def _finish(compiled: "CompiledProgram", final: Path) -> None:
    """Point a fresh build at where it was published and print its diagnostics (paths included)."""
    compiled.output_dir = final
    compiled.refresh_stat()
    _replay(compiled.meta, final)


def _replay(meta: dict, directory: Path) -> None:
    text = meta.get("stderr") or ""
    if text:
        sys.stderr.write(text.replace(_DIR, str(directory)))


def _reuse(directory: Path, key: str, program: Program, options: dict) -> "CompiledProgram | None":
    """The build in ``directory`` when it is complete and has ``key`` (its diagnostics printed
    again, as a compile prints them); None otherwise."""
    meta = artifacts.read_meta(directory)
    if meta is None or meta.get("cache_key") != key:
        return None
    sources = artifacts.read_sources(directory, meta)
    if sources is None or not all((directory / rel).is_file() for rel in meta.get("files", ())):
        return None
    try:
        diagnostics = [Diagnostic(d["code"], d["name"], Severity(d["severity"]), d["message"], Span(*d["span"]),
                                  d.get("where", "")) for d in meta.get("diagnostics", ())]
    except (KeyError, TypeError, ValueError):
        return None
    compiled = CompiledProgram(program, None, directory, meta["platform"], meta, sources=sources, options=options)
    compiled.diagnostics = diagnostics
    _replay(meta, directory)
    return compiled


def _install(staging: Path, out: Path) -> None:
    """Move a finished build from ``staging`` into the user's directory ``out`` (its lock held): the
    meta goes first (``out`` is not a complete build while files move), every file is renamed into
    place, the previous build's files that this one lacks are removed, and the meta comes back last."""
    old = artifacts.read_meta(out) or {}
    with contextlib.suppress(FileNotFoundError):
        os.unlink(out / artifacts.META)
    new = json.loads((staging / artifacts.META).read_text(encoding="utf-8"))
    dirs = artifacts.StagingWriter(out)
    for rel in new["files"]:
        if rel == artifacts.META:
            continue
        dirs.mkdir((out / rel).parent)
        os.replace(staging / rel, out / rel)
    stale = set(old.get("files", ())) - set(new["files"])
    for rel in stale:
        p = out / rel
        # only paths inside ``out`` that an earlier build recorded as its own
        if ".." not in Path(rel).parts and not Path(rel).is_absolute():
            with contextlib.suppress(OSError):
                p.unlink()
    os.replace(staging / artifacts.META, out / artifacts.META)


def _enum_name(value):
    return None if value is None else getattr(value, "name", str(value))


def _write_profile(files_out, report: Path, timings, t_passes: float, t_codegen: float) -> None:
    """``pipeline_profile.json`` / ``.txt``: wall seconds of each pass and of codegen."""
    stages = [{"stage": f"pass:{n}", "seconds": t} for n, t in timings] + [{"stage": "codegen", "seconds": t_codegen}]
    _write = files_out.write
    _write(report / "pipeline_profile.json",
           json.dumps({"total_seconds": t_passes + t_codegen, "stages": stages}, indent=2))
    lines = [f"{s['stage']:<40} {s['seconds'] * 1e3:10.3f} ms" for s in stages]
    lines.append(f"{'total':<40} {(t_passes + t_codegen) * 1e3:10.3f} ms")
    _write(report / "pipeline_profile.txt", "\n".join(lines) + "\n")
