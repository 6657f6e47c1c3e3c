"""The ``pypto`` command (also ``python -m pypto``).

    pypto doctor SCRIPT [--case NAME] [--html PATH] [--seeds N] [--json] [--quiet]
                                      narrow down a precision gap, cheapest step first
    pypto fuzz SCRIPT [--case NAME] [--seeds N] [--jobs J] [--backend local|ray] [--json]
                                      run under N simulated schedules, classify the variation, look for races
    pypto cast-check SRC DST [--platform a5sim] [--mode round] [--json]
                                      is the cast chain bit-identical to a direct cast?

SCRIPT is a Python file defining a function (case by default, or --case NAME) that returns a dict:
kernel (the @pl.jit kernel), inputs (every argument, by name or in order), and the golden:
expected (outputs by name), golden_data_dir or reference; optional rtol, atol, platform, passes.

Exit status: 0 clean (no gap, no race), 1 a finding (the report says what), 2 a usage error (bad
arguments, a script that cannot be loaded, a kernel that does not compile).
"""
from __future__ import annotations

import argparse
import sys


def _cast_check(args) -> int:
    from pypto.debug.cast_check import certify

    try:
        cert = certify(args.src, args.dst, args.platform, args.mode, samples=args.samples)
    except (ValueError, TypeError, KeyError) as e:
        # bad input is a usage error (exit 2), as argparse reports its own: usage line first
        print(args.usage.rstrip(), file=sys.stderr)
        print(f"pypto cast-check: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        import json

        print(json.dumps(cert.to_dict(), indent=2))
    else:
        print(cert.format())
    return 0 if cert.exact is not False else 1


class _UsageError(Exception):
    """Bad input to a subcommand: printed as one message, exit status 2."""


def _load_case(path: str, name: str) -> dict:
    import importlib.util
    import os
    from pathlib import Path

    script = Path(path)
    if not script.is_file():
        raise _UsageError(f"{script}: no such file")
    if script.suffix != ".py":
        raise _UsageError(f"{script}: expected a Python file (.py) defining {name}()")
    sys.path.insert(0, str(script.resolve().parent))
    spec = importlib.util.spec_from_file_location(f"pypto_case_{script.stem}", script)
    mod = importlib.util.module_from_spec(spec)
    cwd = os.getcwd()
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001 - the user's script: report it, do not crash
        raise _UsageError(f"loading {script} failed: {_one_line(e)}") from None
    finally:
        os.chdir(cwd)
    fn = getattr(mod, name, None)
    if not callable(fn):
        found = sorted(n for n, v in vars(mod).items() if callable(v) and not n.startswith("_")
                       and getattr(v, "__module__", None) == mod.__name__ and not hasattr(v, "fn"))
        raise _UsageError(f"{script} defines no function {name!r} returning the case (a dict with kernel, "
                          f"inputs, expected/golden_data_dir/reference)"
                          + (f"; functions it defines: {', '.join(found)} (pick one with --case)" if found else ""))
    try:
        case = fn()
    except Exception as e:  # noqa: BLE001
        raise _UsageError(f"{script}: {name}() failed: {_one_line(e)}") from None
    if not isinstance(case, dict) or "kernel" not in case or "inputs" not in case:
        raise _UsageError(f"{script}:{name}() must return a dict with at least 'kernel' and 'inputs'")
    if not hasattr(case["kernel"], "fn"):
        raise _UsageError(f"{script}:{name}(): 'kernel' must be a @pl.jit function")
    return case


def _one_line(e: BaseException) -> str:
    from pypto.errors import PyptoError

    if isinstance(e, PyptoError):
        return str(e)          # already file:line:col, the source line and a caret
    return f"{type(e).__name__}: {e}"


def _fail(cmd: str, msg: str) -> int:
    print(f"pypto {cmd}: error: {msg}", file=sys.stderr)
    return 2


def _doctor(args) -> int:
    import json

    from pypto.debug.doctor import doctor
    from pypto.errors import PyptoError

    try:
        case = _load_case(args.script, args.case)
    except _UsageError as e:
        return _fail("doctor", str(e))
    keys = ("expected", "golden_data_dir", "rtol", "atol", "platform", "reference", "seeds", "passes",
            "distributed_config")
    kw = {k: case[k] for k in keys if k in case}
    if args.seeds is not None:
        kw["seeds"] = args.seeds

    def step(n: int, name: str) -> None:
        if not args.quiet:
            print(f"pypto doctor: step {n}/5: {name} ...", file=sys.stderr, flush=True)
    try:
        report = doctor(case["kernel"], case["inputs"], html=args.html, on_step=step, **kw)
    except PyptoError as e:
        return _fail("doctor", f"the kernel does not compile or run:\n{e}")
    except (TypeError, ValueError, KeyError, OSError) as e:
        return _fail("doctor", f"the case is not usable: {_one_line(e)}")
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.format())
    return 0 if report.clean else 1


def _fuzz(args) -> int:
    import json

    from pypto.debug.fuzz import fuzz
    from pypto.errors import PyptoError

    try:
        case = _load_case(args.script, args.case)
    except _UsageError as e:
        return _fail("fuzz", str(e))
    inputs = case["inputs"]
    if isinstance(inputs, dict):
        import inspect

        names = list(inspect.signature(case["kernel"].fn).parameters)
        missing = [n for n in names if n not in inputs]
        if missing:
            return _fail("fuzz", f"the case gives no value for parameter(s) {missing}")
        inputs = [inputs[n] for n in names]
    try:
        report = fuzz(case["kernel"], inputs, seeds=args.seeds, platform=case.get("platform", "a2a3sim"),
                      jobs=args.jobs, backend=args.backend, expected=case.get("expected"),
                      rtol=case.get("rtol", 1e-5), atol=case.get("atol", 1e-5))
    except PyptoError as e:
        return _fail("fuzz", f"the kernel does not compile or run:\n{e}")
    except (TypeError, ValueError, RuntimeError) as e:
        return _fail("fuzz", _one_line(e))
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.format())
    return 0 if report.clean else 1


def _positive(text: str) -> int:
    import argparse

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _at_least_two(text: str) -> int:
    import argparse

    n = _positive(text)
    if n < 2:
        raise argparse.ArgumentTypeError("fuzzing compares runs: give at least 2 seeds")
    return n


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    ap = argparse.ArgumentParser(prog="pypto", description=__doc__.replace("``", ""), formatter_class=argparse.RawDescriptionHelpFormatter)
    from pypto import __version__

    ap.add_argument("--version", action="version", version=f"pypto {__version__}", help="print the version and exit")
    sub = ap.add_subparsers(dest="command", required=True)
    cc = sub.add_parser("cast-check", help="is the chain of casts the compiler emits for SRC -> DST (where the platform "
                        "has no direct cast) bit-identical to a direct cast?")
    cc.add_argument("src", help="source dtype, e.g. int32")
    cc.add_argument("dst", help="destination dtype, e.g. fp16")
    cc.add_argument("--platform", default="a2a3sim", choices=["a2a3sim", "a5sim"],
                    help="the platform whose native casts decide the chain (default a2a3sim)")
    cc.add_argument("--mode", default="round", choices=["none", "rint", "round", "floor", "ceil", "trunc", "odd"],
                    help="the rounding mode of the cast (default round: ties away from zero)")
    cc.add_argument("--samples", type=int, default=1_000_000, help="random samples for 32-bit sources")
    cc.add_argument("--json", action="store_true", help="print the verdict as JSON on stdout instead of text")
    cc.set_defaults(func=_cast_check, usage=cc.format_usage())
    dr = sub.add_parser("doctor", help="run the five steps of the precision workflow and stop at the one that "
                                       "explains the gap",
                        description="Run the precision workflow's five steps on a kernel, its inputs and its "
                                    "golden, cheapest first; print what was checked, what settled it and the fix "
                                    "(tried on a copy of the kernel first). Exit 0 when there is no gap and no "
                                    "race, 1 when there is a finding, 2 on bad input.")
    dr.add_argument("script", help="a .py file defining case() that returns the case dict (see pypto --help)")
    dr.add_argument("--case", default="case", help="the function of SCRIPT returning the case dict (default: case)")
    dr.add_argument("--html", default=None, help="where to write the HTML report (default: a temporary file, "
                                                 "named in the output)")
    dr.add_argument("--seeds", type=_positive, default=None,
                    help="simulated schedules to run at step 1 (default: the case's, else 16)")
    dr.add_argument("--json", action="store_true", help="print the report as JSON on stdout instead of text")
    dr.add_argument("--quiet", action="store_true", help="do not print each step on stderr as it starts")
    dr.set_defaults(func=_doctor)
    fz = sub.add_parser("fuzz", help="run a kernel under many simulated schedules, classify the variation and "
                                     "look for races",
                        description="Run the case under N simulated schedules, classify how the results vary "
                                    "(none, last bits only, larger), run the race detector and compare every run "
                                    "with the case's expected output. Exit 0 when clean, 1 on a finding, 2 on bad "
                                    "input.")
    fz.add_argument("script", help="a .py file defining case() that returns the case dict (see pypto --help)")
    fz.add_argument("--case", default="case", help="the function of SCRIPT returning the case dict (default: case)")
    fz.add_argument("--seeds", type=_at_least_two, default=16, help="how many schedules (seeds) to run "
                                                                    "(default: 16, at least 2)")
    fz.add_argument("--jobs", type=_positive, default=None, help="worker processes (default: one per CPU)")
    fz.add_argument("--backend", choices=["local", "ray"], default="local",
                    help="local: worker processes on this machine (default); ray: fan out on a Ray cluster "
                         "(pip install ray)")
    fz.add_argument("--json", action="store_true", help="print the report as JSON on stdout instead of text")
    fz.set_defaults(func=_fuzz)
    return ap


def main(argv=None) -> int:
    """Entry point of the ``pypto`` command; exit 0 ok, 1 a negative verdict, 2 bad input."""
    import os

    args = build_parser().parse_args(argv)
    silence = args.command in ("doctor", "fuzz") and "PYPTO_DEBUG_PRINT" not in os.environ
    if not silence:
        return args.func(args)
    # they run the kernel many times: its pl.debug_print lines would repeat per run and, with
    # --json, break the JSON on stdout. Silenced unless PYPTO_DEBUG_PRINT is set explicitly, for
    # this command only (main(argv) called in-process must not change the caller's environment)
    os.environ["PYPTO_DEBUG_PRINT"] = "0"
    try:
        return args.func(args)
    finally:
        os.environ.pop("PYPTO_DEBUG_PRINT", None)


if __name__ == "__main__":
    sys.exit(main())
