"""Run a script or a command's ``main(argv)`` inside the test process, the way a fresh interpreter would.

Why: a subprocess pays a torch import (seconds on a loaded CI core) before it does anything; most tests
that ran scripts or CLIs in a subprocess only want the exit status and the output. ``run_script`` and
``run_main`` give the same observable result (``returncode``, ``stdout``, ``stderr``) without the new
interpreter. Each folder (examples, precision cases, CLIs) keeps one real subprocess smoke test, so the
``python script.py`` / ``python -m pypto`` path itself stays covered.

What is isolated, and restored afterwards: ``sys.argv``, ``sys.path`` (the script's directory is put
first, as ``python script.py`` does), the working directory, ``$PYPTO_PROG_BUILD_DIR`` (a fresh build
directory per run), and the modules imported from the script's own directory (the examples' sibling
helpers share names such as ``_check`` across folders, so a stale one must never be reused), and the
global random state of Python and torch (scripts seed it; later tests must not inherit that). Modules
of pypto itself stay imported: dropping them would give later tests a second copy of every class.

An exception escaping the script or ``main`` becomes ``returncode`` 1 with the traceback in ``stderr``,
as in a real interpreter, so a test asserting "exit 1 and no traceback" still sees the traceback;
``SystemExit`` gives its code.
"""
from __future__ import annotations

import contextlib
import io
import os
import random
import runpy
import sys
import tempfile
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Result:
    """What a finished run left: the exit status and everything written to stdout / stderr."""
    returncode: int
    stdout: str
    stderr: str


def _exit_code(exc: SystemExit) -> int:
    """The status ``sys.exit(code)`` gives a real process (``None`` -> 0, a message -> 1)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


# a module file -> its resolved folder: resolving every module's path (realpath: an lstat per path
# component, ~2000 modules once torch is in) cost ~50 ms of CPU per call, two calls per script run
_FOLDER: dict[str, Path] = {}


def _modules_under(folder: Path) -> list[str]:
    """Names of imported modules whose file lies directly in ``folder``."""
    out = []
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if not f:
            continue
        parent = _FOLDER.get(f)
        if parent is None:
            parent = _FOLDER[f] = Path(f).resolve().parent
        if parent == folder:
            out.append(name)
    return out


def _rng_state():
    """Python's and torch's global random state: a script seeding them must not reseed later tests."""
    torch = sys.modules.get("torch")
    return random.getstate(), (torch.random.get_rng_state() if torch is not None else None)


def _set_rng_state(state) -> None:
    py, tt = state
    random.setstate(py)
    torch = sys.modules.get("torch")
    if tt is not None and torch is not None:
        torch.random.set_rng_state(tt)


@contextlib.contextmanager
def _isolated(argv: list[str], cwd: Path | None, build_dir: Path | None, script_dir: Path | None):
    old_argv, old_path, old_cwd = sys.argv[:], sys.path[:], os.getcwd()
    old_build = os.environ.get("PYPTO_PROG_BUILD_DIR")
    rng = _rng_state()
    tmp = None
    if build_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="pypto-inproc-")
        build_dir = Path(tmp.name) / "build"
    if script_dir is not None:
        for name in _modules_under(script_dir):
            del sys.modules[name]
        sys.path.insert(0, str(script_dir))
    sys.argv = list(argv)
    os.environ["PYPTO_PROG_BUILD_DIR"] = str(build_dir)
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(old_cwd)
        sys.argv, sys.path[:] = old_argv, old_path
        if old_build is None:
            os.environ.pop("PYPTO_PROG_BUILD_DIR", None)
        else:
            os.environ["PYPTO_PROG_BUILD_DIR"] = old_build
        if script_dir is not None:
            for name in _modules_under(script_dir):
                del sys.modules[name]
        _set_rng_state(rng)
        if tmp is not None:
            tmp.cleanup()


def _capture(fn) -> Result:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rv = fn()
            code = rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
        except SystemExit as e:
            code = _exit_code(e)
        except BaseException as e:       # noqa: BLE001 - a real interpreter reports any escape as exit 1
            if isinstance(e, KeyboardInterrupt):
                raise
            traceback.print_exc()
            code = 1
    return Result(code, out.getvalue(), err.getvalue())


def _run_path(script: Path) -> int:
    runpy.run_path(str(script), run_name="__main__")
    return 0


def run_script(script, *args, cwd=None, build_dir=None) -> Result:
    """Run ``python script *args`` in this process (``__name__ == "__main__"``).

    ``cwd`` defaults to the script's directory (what the examples expect); ``build_dir`` to a fresh
    temporary directory removed afterwards (pass one to inspect the artifacts)."""
    script = Path(script).resolve()
    argv = [str(script), *map(str, args)]
    with _isolated(argv, Path(cwd) if cwd else script.parent, build_dir, script.parent):
        return _capture(lambda: _run_path(script))


def run_module(module: str, *args, cwd=None, build_dir=None) -> Result:
    """Run ``python -m module *args`` in this process: the module (or a package's ``__main__``) runs
    as ``__main__``, its ``if __name__ == "__main__"`` block included.

    ``build_dir`` defaults to the caller's ``$PYPTO_PROG_BUILD_DIR`` (the test's own tmp dir)."""
    argv = [module, *map(str, args)]
    if build_dir is None and os.environ.get("PYPTO_PROG_BUILD_DIR"):
        build_dir = Path(os.environ["PYPTO_PROG_BUILD_DIR"])

    def go():
        with warnings.catch_warnings():
            # runpy warns when the module was imported before (other tests did): python -m would not
            warnings.filterwarnings("ignore", message=".*found in sys.modules after import of package",
                                    category=RuntimeWarning)
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    with _isolated(argv, Path(cwd) if cwd else None, build_dir, None):
        return _capture(go)


def run_main(main, *args, cwd=None, build_dir=None, prog="pypto") -> Result:
    """Call a command's ``main(argv)`` as ``prog *args`` would run it; its return value is the status.

    ``build_dir`` defaults to the caller's ``$PYPTO_PROG_BUILD_DIR`` (the test's own tmp dir)."""
    argv = [str(a) for a in args]
    if build_dir is None and os.environ.get("PYPTO_PROG_BUILD_DIR"):
        build_dir = Path(os.environ["PYPTO_PROG_BUILD_DIR"])
    with _isolated([prog, *argv], Path(cwd) if cwd else None, build_dir, None):
        return _capture(lambda: main(argv))


_EXAMPLE_RUNS: dict[Path, Result] = {}


def run_example(script) -> Result:
    """``run_script(script)`` once per test session: several test files check the same example script
    (its exit status here, its printed verdicts there), and a script is deterministic, so its one run
    is shared instead of being repeated."""
    script = Path(script).resolve()
    if script not in _EXAMPLE_RUNS:
        # a scratch working directory: some examples write relative paths (case5_war: build_output/),
        # which must not land in the source tree; the sibling imports go through sys.path
        with tempfile.TemporaryDirectory(prefix="pypto-example-") as cwd:
            _EXAMPLE_RUNS[script] = run_script(script, cwd=cwd, build_dir=Path(cwd) / "build")
    return _EXAMPLE_RUNS[script]
