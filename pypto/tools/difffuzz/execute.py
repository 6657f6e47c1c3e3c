"""Run one fuzz case on the simulator and on the reference executor, and classify the outcome.

Outcomes (:class:`Outcome.kind`):

* ``agree`` — every tensor argument after the simulator run is bit-identical to the reference
  executor's (``torch_codegen`` of the lowered program), and, for generated float kernels, the
  reference is within the float64 oracle's tolerance;
* ``rejected`` — a :class:`pypto.errors.PyptoError` that is a user error (not ``InternalError`` /
  ``VerificationError``) and names a source location (file:line) — or, for argument errors
  raised before anything runs, names the parameter;
* ``explained`` — the executors differ, and pypto predicted it: the compiler warned why (a race it
  diagnosed, PTO-W003; an uninitialised read, PTO-P004; a scratch tile read after a reduction,
  PTO-W004), or the race detector (:mod:`pypto.debug.races`) finds unordered conflicting tasks;
* ``disagree`` — an unexplained difference (sim vs reference, or reference vs float64): a bug;
* ``internal`` — anything else raised: ``InternalError``, ``VerificationError``, an unlocated
  error, or a Python exception escaping from pypto (a traceback for the user): a bug;
* ``timeout`` — the case ran past its limit of CPU time, or hung (see :func:`time_limit`).
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import signal
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import torch

# what a warning must say for a difference between the executors to be predicted
EXPLAINING = ("[PTO-W003]", "[PTO-P004]", "[PTO-W004]")


@dataclass
class Outcome:
    """What happened to one case."""

    kind: str
    detail: str = ""
    error: str = ""


def load_module(source: str, path: Path, name: str):
    """Write ``source`` to ``path`` and import it as module ``name`` (kernels are parsed from
    their source file, so the file must exist while the module is used)."""
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return mod


def classify_error(e: BaseException) -> Outcome:
    """``rejected`` for a located user error, ``internal`` for everything else."""
    from pypto.errors import InternalError, PyptoError, VerificationError

    text = f"{type(e).__name__}: {e}"
    if isinstance(e, PyptoError) and not isinstance(e, (InternalError, VerificationError)):
        if e.span is not None and e.span.line > 0:
            return Outcome("rejected", type(e).__name__, text)
        return Outcome("internal", "unlocated " + type(e).__name__, text)
    if _argument_error(e):
        return Outcome("rejected", "argument " + type(e).__name__, text)
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__)[-6:])
    return Outcome("internal", type(e).__name__, text + "\n" + tb)


def _argument_error(e: BaseException) -> bool:
    """A TypeError / ValueError raised by pypto's argument checks (it names the parameter), not from
    deep inside the compiler: the raising frame is one of the checking functions."""
    if not isinstance(e, (TypeError, ValueError)):
        return False
    tb = e.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is None:
        return False
    code = last.tb_frame.f_code
    return (code.co_filename.endswith(("runtime/simulator.py", "runtime/arguments.py", "frontend/specialize.py"))
            and ("argument" in str(e) or "parameter" in str(e)))


class _Timeout(Exception):
    """A case ran past its limit; ``str()`` says which clock."""


# Why CPU time (decided for issue 13): the campaign shares its machine (CI runners, developers'
# laptops, a 2-core box running eight jobs at once). A wall-clock limit fired there for cases that
# were merely waiting for a core: a 10,000-mutant campaign reported 2 "timeouts" that passed when
# re-run alone. The limit therefore counts the process's CPU time (ITIMER_PROF: every thread,
# user + system), which load does not inflate; a case that is slow by itself still trips it.
# A case that hangs uses no CPU (a deadlock waits), so a wall-clock backstop of WALL_FACTOR times
# the limit stays, far above any slowdown that load alone causes (load 16 on 2 cores is 8x).
WALL_FACTOR = 15


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise :class:`_Timeout` in the main thread once the process has used ``seconds`` of CPU
    time inside the block, or ``WALL_FACTOR * seconds`` of wall-clock time have passed (a hang).
    No limit off the main thread (signals are delivered there only)."""
    import threading

    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def fire(signum, frame):
        raise _Timeout(f"past {seconds:g}s of CPU time" if signum == signal.SIGPROF else
                       f"past {WALL_FACTOR * seconds:g}s of wall-clock time (a hang: little CPU used)")

    old_prof = signal.signal(signal.SIGPROF, fire)
    old_alrm = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, WALL_FACTOR * seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, old_prof)
        signal.signal(signal.SIGALRM, old_alrm)


def _clone(args):
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-identical, NaN payloads aside (a NaN is a NaN in both)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.is_floating_point:
        na, nb = torch.isnan(a), torch.isnan(b)
        if not torch.equal(na, nb):
            return False
        ia = a.view({1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()])
        ib = b.view(ia.dtype)
        return bool(torch.all((ia == ib) | na))
    return torch.equal(a, b)


def _race(kernel, args, platform: str, seed: int, limit_s: float) -> str | None:
    """``"race detector: ..."`` when :func:`pypto.debug.races.detect_races` finds unordered
    conflicting tasks in the case (the simulator's result then depends on the schedule: a
    difference from the reference executor is the race's, predicted by the tool users run)."""
    from pypto.debug.races import detect_races

    try:
        with time_limit(limit_s), contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            rep = detect_races(kernel, _clone(args), platform=platform, seed=seed)
    except Exception:   # noqa: BLE001 - no explanation then
        return None
    return f"race detector: {len(rep.races)} race(s)" if rep.races else None


def run_case(kernel, args, platform: str, seed: int, limit_s: float = 20.0, oracle=None) -> Outcome:
    """Run ``kernel(*args)`` on the simulator of ``platform`` and under ``torch_codegen`` (each on
    fresh copies of the arguments) and classify. ``oracle(ref_args) -> str`` (empty when fine)
    checks the reference against an independent computation. The artifact directory is removed
    afterwards (a campaign compiles thousands of kernels)."""
    holder: list = []
    try:
        return _run_case(kernel, args, platform, seed, limit_s, oracle, holder)
    finally:
        if holder:
            import shutil

            shutil.rmtree(holder[0].output_dir, ignore_errors=True)


def _run_case(kernel, args, platform: str, seed: int, limit_s: float, oracle, holder: list) -> Outcome:
    import inspect

    from pypto.debug.torch_codegen import torch_codegen
    from pypto.ops.support import reference_platform
    from pypto.runtime import RunConfig

    err = io.StringIO()
    compiled = None
    try:
        with time_limit(limit_s), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            sim_args = _clone(args)
            cfg = RunConfig(platform=platform, sim_seed=seed)
            compiled = kernel.compile(*sim_args, config=cfg)
            holder.append(compiled)
            sim_ret = kernel(*sim_args, config=cfg)     # (the compile cache hands back the same program)
            ref_args = _clone(args)
            ns: dict = {}
            exec(compile(torch_codegen(compiled.lowered), f"<ref {kernel.__name__}>", "exec"), ns)
            by_name = dict(zip(inspect.signature(kernel.fn).parameters, ref_args))
            with reference_platform(platform):   # (pl.system.available_*_count() of the fuzzed platform)
                ref_ret = ns[compiled.lowered.entry.name](*[by_name[p.name] for p in compiled.lowered.entry.params])
    except _Timeout as e:
        return Outcome("timeout", str(e))
    except RecursionError as e:
        return Outcome("internal", "RecursionError", str(e)[:200])
    except Exception as e:   # noqa: BLE001 - classifying is the point
        return classify_error(e)
    warned = {f"[{d.code}]" for d in compiled.diagnostics}
    pairs = list(zip(sim_args, ref_args))
    if sim_ret is not None:   # values the program created and returns (not written into an argument)
        sr = sim_ret if isinstance(sim_ret, tuple) else (sim_ret,)
        rr = ref_ret if isinstance(ref_ret, tuple) else (ref_ret,)
        if len(sr) != len(rr):
            return Outcome("disagree", f"the simulator returned {len(sr)} values, torch_codegen {len(rr)}")
        pairs += list(zip(sr, rr))
    elif any(isinstance(v, torch.Tensor) and not any(v is a for a in ref_args)
             for v in (ref_ret if isinstance(ref_ret, tuple) else (ref_ret,))):
        return Outcome("disagree", "torch_codegen returned a tensor the simulator did not")
    for i, (s, r) in enumerate(pairs):
        if isinstance(s, torch.Tensor) and not same_bits(s, r):
            n = int((s != r).sum()) if s.shape == r.shape and s.dtype == r.dtype else -1
            why = next((w for w in EXPLAINING if w in warned), None) or _race(kernel, args, platform, seed, limit_s)
            detail = f"{'argument' if i < len(sim_args) else 'returned value'} {i}: simulator and torch_codegen differ in {n} elements"
            return Outcome("explained" if why else "disagree", detail + (f" (warned {why})" if why else ""))
    if oracle is not None:
        msg = oracle(ref_args)
        if msg:
            return Outcome("disagree", "float64 oracle: " + msg)
    return Outcome("agree")
