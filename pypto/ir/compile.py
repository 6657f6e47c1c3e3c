"""``ir.compile``: run the pass pipeline, generate kernel and orchestration modules into an
artifact directory, and return a :class:`CompiledProgram` that runs on the simulator."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
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


def compile(program: Program, output_dir=None, dump_passes=True, verification_level=None,
            diagnostic_phase=None, disabled_diagnostics=None, platform: Optional[str] = None,
            passes=None, analyze_auto_scopes_for_deps: bool = False, *, key: Optional[str] = None
            ) -> "CompiledProgram":
    """Compile ``program`` for a simulated platform (default ``a2a3sim``).

    Writes ``passes_dump/`` (when ``dump_passes``), ``kernels/aiv/<fn>.py``,
    ``orchestration/<fn>.py``, ``report/`` and ``compiled_meta.json`` under ``output_dir``. Without
    one, the build is an entry of the persistent compile cache under ``$PYPTO_PROG_BUILD_DIR`` (or
    ``build_output``), named ``<name>_<key>``: a build with the same key (same program, options,
    platform and package) made by any process is reused instead of compiled again; see
    :mod:`pypto.ir.artifacts` for the key, the atomic publication and the pruning policy. An explicit
    ``output_dir`` holds the latest build written there (reused too when its key matches).
    ``passes`` replaces the default pipeline (see :func:`default_pipeline`; such builds are never
    reused). ``analyze_auto_scopes_for_deps`` lets AutoDeriveTaskDependencies replace the runtime's
    tensormap lookups it can prove by compiler edges in AUTO scopes (off: the program's dependencies
    are inferred by the runtime alone). ``key`` is the precomputed :func:`artifacts.compile_key`.
    """
    from pypto.ir import artifacts

    if not isinstance(analyze_auto_scopes_for_deps, bool):
        raise ValueError(f"analyze_auto_scopes_for_deps must be a bool, got {analyze_auto_scopes_for_deps!r}")
    plat = get_platform(platform or "a2a3sim")
    options = {"platform": plat.name, "verification_level": verification_level,
               "dump_passes": resolve_dump_level(dump_passes), "diagnostic_phase": diagnostic_phase,
               "disabled_diagnostics": disabled_diagnostics,
               "analyze_auto_scopes_for_deps": analyze_auto_scopes_for_deps}
    if key is None:
        key = artifacts.compile_key(program, options, custom_passes=passes is not None)
    if output_dir is None:
        root = artifacts.build_root()
        final = root / artifacts.entry_name(program.name, key)
        hit = _reuse(final, key, program, options)
        if hit is not None:
            artifacts.touch(final)
            return hit
        staging = artifacts.staging_dir(root, final.name)
        try:
            compiled = _build(program, staging, options, plat, passes, key, cache_entry=True)
            final = artifacts.publish(staging, final)
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
            compiled = _build(program, staging, options, plat, passes, key, cache_entry=False)
            _install(staging, out)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        _finish(compiled, out)
    return compiled


def _build(program: Program, out: Path, options: dict, plat, passes, key: str, cache_entry: bool
           ) -> "CompiledProgram":
    """Run the pipeline and write every artifact into ``out`` (a private staging directory)."""
    from pypto.codegen import generate_kernel, generate_orchestration
    from pypto.ir import artifacts
    from pypto.ir.compiled import CompiledProgram

    (out / "report").mkdir(parents=True, exist_ok=True)
    result = run_pipeline(program, options, out / "passes_dump", passes)
    printed = io.StringIO()
    emit_diagnostics(result.diagnostics, out / "report", stream=printed)
    lowered = result.program
    entry = lowered.entry
    kernels, sources = {}, {}
    for f in lowered.functions:
        if f.func_type == FunctionType.InCore:
            rel = f"kernels/aiv/{f.name}.py"
            sources[rel] = generate_kernel(f, plat)
            kernels[f.name] = rel
    orch = None
    if entry.func_type == FunctionType.Orchestration:
        orch = f"orchestration/{entry.name}.py"
        sources[orch] = generate_orchestration(entry, lowered)
    for rel, text in sources.items():
        artifacts.write_text(out / rel, text)
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
                         "location": str(d.span), "where": d.where,
                         "span": [d.span.file, d.span.line, d.span.col, d.span.end_line, d.span.end_col]}
                        for d in result.diagnostics],
        "cache_key": key, "cache_entry": cache_entry,
        "module_sha256": {rel: artifacts.sha256_text(text) for rel, text in sources.items()},
        # what a compile printed, with the artifact directory as a placeholder: a reuse prints it again
        "stderr": printed.getvalue().replace(str(out), _DIR),
        "files": sorted(p.relative_to(out).as_posix() for p in out.rglob("*")
                        if p.is_file() and p.name != artifacts.LOCK),
    }
    artifacts.write_text(out / artifacts.META, json.dumps(meta, indent=2))
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
    from pypto.errors import Span
    from pypto.ir import artifacts
    from pypto.ir.compiled import CompiledProgram
    from pypto.passes.diagnostics import Diagnostic, Severity

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
    from pypto.ir import artifacts

    old = artifacts.read_meta(out) or {}
    with contextlib.suppress(FileNotFoundError):
        os.unlink(out / artifacts.META)
    new = json.loads((staging / artifacts.META).read_text(encoding="utf-8"))
    for rel in new["files"]:
        if rel == artifacts.META:
            continue
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / rel, out / rel)
    stale = set(old.get("files", ())) - set(new["files"])
    for rel in stale:
        p = out / rel
        # only paths inside ``out`` that an earlier build recorded as its own
        if ".." not in Path(rel).parts and not Path(rel).is_absolute():
            with contextlib.suppress(OSError):
                p.unlink()
    os.replace(staging / artifacts.META, out / artifacts.META)
