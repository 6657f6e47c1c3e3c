"""Runs the pass pipeline: verification after each pass, pass dumps, round-trip checks, timing.

Passes never print, verify or dump themselves; everything cross-cutting happens here.
"""
from __future__ import annotations

import enum
import os
import time
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from pypto.errors import InternalError, InvalidOperationError, PassTypeError, PyptoError, VerificationError
from pypto.ir.nodes import Program
from pypto.passes.context import PassContext
from pypto.ir.equality import StructuralMismatch, assert_structural_equal
from pypto.ir.printer import print_program
from pypto.ir.verifier import verify
from pypto.language.program import parse
from pypto.passes.diagnostics import DiagnosticPhase as DP, Severity, has_checks, resolve_phase, run_checks
from pypto.safe_files import atomic_write_text


class VerificationLevel(enum.Enum):
    """How much checking happens after each pass."""

    NONE = "none"
    BASIC = "basic"          # the properties each pass produces
    ROUNDTRIP = "roundtrip"  # BASIC + print -> parse -> structural equality after every pass


class PassDumpLevel(enum.IntEnum):
    """What ``passes_dump/`` receives: nothing, or every stage's printed IR — CONCISE without the
    assignment annotations the parser re-infers (``print_program(concise=True)``), EXPLICIT with
    every Var's full type. Both parse back to the same program."""

    NONE = 0
    CONCISE = 1
    EXPLICIT = 2


def resolve_verification_level(level) -> VerificationLevel:
    """Argument, else ``PYPTO_VERIFY_LEVEL`` (``none`` / ``basic`` / ``roundtrip``), else BASIC."""
    if isinstance(level, VerificationLevel):
        return level
    if isinstance(level, str):
        return VerificationLevel(level.lower())
    if level is not None:
        raise ValueError(f"verification_level must be a VerificationLevel, got {level!r}")
    env = os.environ.get("PYPTO_VERIFY_LEVEL", "").strip().lower()
    if env in ("none", "roundtrip", "basic"):
        return VerificationLevel(env)
    return VerificationLevel.BASIC


def resolve_dump_level(dump) -> PassDumpLevel:
    """``True`` means CONCISE, ``False``/``None`` NONE."""
    if dump is True:
        return PassDumpLevel.CONCISE
    if dump in (False, None):
        return PassDumpLevel.NONE
    return PassDumpLevel(int(dump))


@dataclass(frozen=True)
class PassInfo:
    """A pass as the manager sees it (built-in modules and user passes alike). ``builtin``: a pass
    module of this package (``pypto.passes.*``); see :func:`run_passes` for what that changes."""

    name: str
    run: Callable
    requires: tuple = ()
    produces: tuple = ()
    builtin: bool = field(default=False, compare=False)


def as_pass(p) -> PassInfo:
    """Accept a pass module, a :class:`PassInfo`, or a user function ``Program -> Program`` (its
    ``__name__`` names it; a second parameter, if any, receives the :class:`PassContext`)."""
    if isinstance(p, PassInfo):
        return PassInfo(_check_name(p.name, p), p.run, p.requires, p.produces, p.builtin)
    if hasattr(p, "NAME") and hasattr(p, "run"):
        builtin = isinstance(p, types.ModuleType) and p.__name__.startswith("pypto.passes.")
        return PassInfo(_check_name(p.NAME, p), p.run, tuple(getattr(p, "REQUIRES", ())),
                        tuple(getattr(p, "PRODUCES", ())), builtin)
    if callable(p):
        import inspect

        try:
            nparams = len(inspect.signature(p).parameters)
        except (TypeError, ValueError):
            nparams = 1
        run = p if nparams >= 2 else (lambda prog, ctx, _f=p: _f(prog))
        return PassInfo(_check_name(getattr(p, "NAME", getattr(p, "__name__", "UserPass")), p), run)
    raise TypeError(f"not a pass: {p!r}")


def _check_name(name, p) -> str:
    """A pass name names a file, ``passes_dump/NN_after_<name>.py``: it must be one file-name
    component. ``"../x"`` or ``"a/b"`` would put the dump elsewhere; a lambda's ``"<lambda>"`` is
    fine."""
    if (not isinstance(name, str) or not name or name.startswith(".") or any(c in name for c in "/\\\0")
            or not name.isprintable()):
        raise ValueError(f"pass {p!r} is named {name!r}, which cannot be a file name (it becomes "
                         "passes_dump/NN_after_<name>.py: no '/', no '\\', not starting with '.'). Give the "
                         "function a plain name, or the pass a NAME attribute such as NAME = 'MyPass'")
    return name


@dataclass
class PipelineResult:
    """The lowered program plus what the manager recorded on the way."""

    program: Program
    stages: list[tuple[str, Program]] = field(default_factory=list)
    timings: list[tuple[str, float]] = field(default_factory=list)
    diagnostics: list = field(default_factory=list)

    def add_diagnostics(self, found) -> None:
        """Keep each finding once (a check may see the same statement after several passes)."""
        seen = {(d.code, d.span, d.message) for d in self.diagnostics}
        for d in found:
            if (d.code, d.span, d.message) not in seen:
                seen.add((d.code, d.span, d.message))
                self.diagnostics.append(d)


def run_one(info: PassInfo, program: Program, ctx: PassContext) -> Program:
    """Run one pass, its failures translated: a type rule rejecting a call a pass built or
    re-checked is a :class:`PassTypeError` (the source parsed, so not a ParserError; message, span
    and hint kept), a user error passes through, anything else is an :class:`InternalError` naming
    the pass."""
    try:
        return info.run(program, ctx)
    except InvalidOperationError as e:
        raise PassTypeError(e.message, e.span, e.hint) from e
    except PyptoError:
        raise
    except Exception as e:
        raise InternalError(f"pass '{info.name}' failed: {type(e).__name__}: {e}") from e


def run_passes(program: Program, passes: Sequence, ctx: PassContext, *, verification_level=None,
               dump_dir: Path | None = None, dump_level=PassDumpLevel.NONE, diagnostic_phase=None,
               disabled_diagnostics=None, observe: Callable | None = None) -> PipelineResult:
    """Run ``passes`` in order. Verifies per ``verification_level`` (below); writes ``00_frontend.py``
    and ``NN_after_<Pass>.py`` into ``dump_dir`` when ``dump_level`` is not NONE; runs the diagnostic
    checks of :mod:`pypto.passes.diagnostics` at their phases (``diagnostic_phase``,
    ``disabled_diagnostics``) and collects them in ``result.diagnostics``.

    Verification (``BASIC``): TypeChecked on the input; after a built-in pass (``PassInfo.builtin``)
    the properties it produces; after any other pass (a user's), TypeChecked and every property
    established so far; on the final program, TypeChecked and every established property. Whenever
    a check fails, or a pass raises, the stages not yet fully checked are checked in order first, so
    the error names the first pass after which a property no longer held, as checking everything
    after every pass would (``ROUNDTRIP`` does: the full set after every pass, plus the round trip).
    Re-checking every established property after every built-in pass was ~40% of a small kernel's
    pipeline; the reference checks each property once, when it is produced.

    ``observe(when, info, program)``, if given, is called with ``"before"`` and the pass's input,
    then (after the manager's own verification) ``"after"`` and its result: the instruments of an
    active :class:`pypto.passes.api.PassContext` (:func:`pypto.passes.api.observer`)."""
    phase = resolve_phase(diagnostic_phase)
    off = tuple(disabled_diagnostics or ())
    level = resolve_verification_level(verification_level)
    dump_level = resolve_dump_level(dump_level)
    infos = [as_pass(p) for p in passes]
    result = PipelineResult(program, [("frontend", program)])
    printed: dict = {}   # the dumps' function texts: a pass leaves most functions as they were
    if dump_dir is not None and dump_level != PassDumpLevel.NONE:
        dump_dir.mkdir(parents=True, exist_ok=True)
        _write(dump_dir / "00_frontend.py", _dump_text(program, dump_level, printed))
    established: list[str] = []
    # the established properties after each stage, and the last stage checked against all of them
    props_at: list[tuple] = [()]
    checked = 0
    verifying = level != VerificationLevel.NONE
    if verifying:
        # the frontend's IR is pre-SSA: SSA is checked from the pass producing it (ConvertToSSA) on
        verify(program, ["TypeChecked"], ctx, "pipeline_input")
    result.add_diagnostics(run_checks(program, DP.PRE_PIPELINE, phase, off, ctx, "pipeline_input"))
    post_pass_checks = has_checks(DP.POST_PASS)
    for i, info in enumerate(infos):
        if observe is not None:
            observe("before", info, program)
        t0 = time.perf_counter()
        try:
            new = run_one(info, program, ctx)
        except PyptoError:
            if verifying:   # a pass that fails on IR an earlier pass broke: name that pass instead
                _first_broken(result, props_at, checked + 1, ctx)
            raise
        if not isinstance(new, Program):
            raise TypeError(f"pass '{info.name}' returned {type(new).__name__}, not a Program")
        result.timings.append((info.name, time.perf_counter() - t0))
        program = new
        established.extend(p for p in info.produces if p not in established)
        result.stages.append((info.name, program))
        props_at.append(tuple(established))
        if verifying:
            full = not info.builtin or level == VerificationLevel.ROUNDTRIP
            try:
                verify(program, ["TypeChecked", *established] if full else info.produces, ctx, info.name)
            except VerificationError:
                _first_broken(result, props_at, checked + 1, ctx, len(result.stages) - 1)
                raise
            if full:
                checked = len(result.stages) - 1
        if level == VerificationLevel.ROUNDTRIP:
            roundtrip_check(program, info.name)
        if observe is not None:
            observe("after", info, program)
        if post_pass_checks:
            result.add_diagnostics(run_checks(program, DP.POST_PASS, phase, off, ctx, info.name))
        if dump_dir is not None and dump_level != PassDumpLevel.NONE:
            _write(dump_dir / f"{i + 1:02d}_after_{info.name}.py", _dump_text(program, dump_level, printed))
    if verifying and checked < len(result.stages) - 1:
        try:
            verify(program, ["TypeChecked", *established], ctx, result.stages[-1][0])
        except VerificationError:
            _first_broken(result, props_at, checked + 1, ctx)
            raise
    result.add_diagnostics(run_checks(program, DP.POST_PIPELINE, phase, off, ctx, "pipeline_output"))
    result.program = program
    return result


def _first_broken(result: PipelineResult, props_at: list, start: int, ctx, stop: int | None = None) -> None:
    """Check the stages ``start`` .. ``stop - 1`` (default: all from ``start``) in order against
    TypeChecked and the properties established at each; raise the first failure, which names the
    pass that produced the stage. (Functions a stage shares with an earlier checked one are not
    checked again: see :func:`pypto.ir.verifier.verify`.)"""
    stop = len(result.stages) if stop is None else stop
    for k in range(start, stop):
        name, stage = result.stages[k]
        verify(stage, ["TypeChecked", *props_at[k]], ctx, name)


def emit_diagnostics(diagnostics, report_dir: Path | None = None, stream=None) -> None:
    """Report compile-time findings. Warnings print in full (file:line:col, caret, [CODE]); perf hints
    go in full to ``report_dir/perf_hints.log`` with one summary line on the stream, as the reference
    does, so they inform without drowning the warnings. Everything is also appended to
    ``report_dir/diagnostics.log``."""
    import sys

    if not diagnostics:
        return
    out = stream or sys.stderr
    warnings_ = [d for d in diagnostics if d.severity != Severity.PerfHint]
    hints = [d for d in diagnostics if d.severity == Severity.PerfHint]
    if warnings_:
        out.write("\n".join(d.render() for d in warnings_) + "\n")
    if report_dir is not None:
        report_dir.mkdir(parents=True, exist_ok=True)
        with open(report_dir / "diagnostics.log", "a", encoding="utf-8") as fh:
            fh.write("\n".join(d.render() for d in diagnostics) + "\n")
        if hints:
            with open(report_dir / "perf_hints.log", "a", encoding="utf-8") as fh:
                fh.write("\n".join(d.render() for d in hints) + "\n")
    if hints:
        sites = len({d.span for d in hints})
        where = f"see {report_dir / 'perf_hints.log'}" if report_dir is not None else "see .diagnostics"
        out.write(f"[perf_hint] {len(hints)} hint{'s' if len(hints) != 1 else ''} across {sites} "
                  f"site{'s' if sites != 1 else ''} ({', '.join(sorted({d.code for d in hints}))}); {where}\n")


def roundtrip_check(program: Program, pass_name: str) -> None:
    """Print, re-parse and compare; raise :class:`VerificationError` naming the pass on a difference."""
    text = program.as_python()
    try:
        reparsed = parse(text, filename=f"<roundtrip after {pass_name}>")
        assert_structural_equal(program, reparsed)
    except (StructuralMismatch, PyptoError) as e:
        raise VerificationError(f"[Roundtrip] printed IR after '{pass_name}' does not parse back to the same "
                                f"program: {e}") from None


def _dump_text(program: Program, level: PassDumpLevel, memo: dict | None = None) -> str:
    """A stage's dump: EXPLICIT is the program's full print; CONCISE leaves out the annotations the
    parser re-infers (both parse back to the same program). ``memo``: see ``print_program``."""
    return print_program(program, concise=level == PassDumpLevel.CONCISE, memo=memo)


def _write(path: Path, text: str) -> None:
    atomic_write_text(path, text)   # a private temp name: concurrent compiles never share one
