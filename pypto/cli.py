"""The ``pypto`` command (also ``python -m pypto``).

    pypto doctor SCRIPT [--case NAME] [--html PATH]     narrow down a precision gap, cheapest step first
    pypto fuzz SCRIPT [--case NAME] [--seeds N] [--jobs J] [--backend local|ray]
                                                         run under N simulator seeds, classify the variation
    pypto cast-check SRC DST [--platform a5sim] [--mode round]   certify a LegalizeTileCast chain

``SCRIPT`` is a Python file defining a function (``case`` by default, or ``--case NAME``) that returns
a dict: ``kernel`` (the ``@pl.jit`` kernel), ``inputs`` (every argument, by name or in order), and for
the doctor the golden — ``expected`` (outputs by name), ``golden_data_dir`` or ``reference`` — plus
optional ``rtol``, ``atol``, ``platform``, ``passes``.
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
    print(cert.format())
    return 0 if cert.exact is not False else 1


def _load_case(path: str, name: str) -> dict:
    import importlib.util
    import os
    from pathlib import Path

    script = Path(path)
    if not script.is_file():
        raise FileNotFoundError(f"{script}: no such file")
    sys.path.insert(0, str(script.resolve().parent))
    spec = importlib.util.spec_from_file_location(f"pypto_case_{script.stem}", script)
    mod = importlib.util.module_from_spec(spec)
    cwd = os.getcwd()
    try:
        spec.loader.exec_module(mod)
    finally:
        os.chdir(cwd)
    fn = getattr(mod, name, None)
    if not callable(fn):
        raise AttributeError(f"{script} defines no function {name!r} returning the case "
                             "(dict with kernel, inputs, expected/golden_data_dir/reference)")
    case = fn()
    if not isinstance(case, dict) or "kernel" not in case or "inputs" not in case:
        raise TypeError(f"{script}:{name}() must return a dict with at least 'kernel' and 'inputs'")
    return case


def _doctor(args) -> int:
    from pypto.debug.doctor import doctor

    try:
        case = _load_case(args.script, args.case)
    except (OSError, AttributeError, TypeError) as e:
        print(f"pypto doctor: error: {e}", file=sys.stderr)
        return 2
    keys = ("expected", "golden_data_dir", "rtol", "atol", "platform", "reference", "seeds", "passes")
    report = doctor(case["kernel"], case["inputs"], html=args.html, **{k: case[k] for k in keys if k in case})
    print(report.format())
    return 0 if report.settled_step is not None else 1


def _fuzz(args) -> int:
    from pypto.debug.fuzz import fuzz

    try:
        case = _load_case(args.script, args.case)
    except (OSError, AttributeError, TypeError) as e:
        print(f"pypto fuzz: error: {e}", file=sys.stderr)
        return 2
    inputs = case["inputs"]
    if isinstance(inputs, dict):
        import inspect

        inputs = [inputs[n] for n in inspect.signature(case["kernel"].fn).parameters]
    report = fuzz(case["kernel"], inputs, seeds=args.seeds, platform=case.get("platform", "a2a3sim"),
                  jobs=args.jobs, backend=args.backend)
    print(report.format())
    return {"none": 0, "last_bits": 0, "larger": 1}[report.classification]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    ap = argparse.ArgumentParser(prog="pypto", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    cc = sub.add_parser("cast-check", help="is the cast chain LegalizeTileCast emits bit-identical to a direct cast?")
    cc.add_argument("src", help="source dtype, e.g. int32")
    cc.add_argument("dst", help="destination dtype, e.g. fp16")
    cc.add_argument("--platform", default="a2a3sim", choices=["a2a3sim", "a5sim"])
    cc.add_argument("--mode", default="round", help="none rint round floor ceil trunc odd (default round)")
    cc.add_argument("--samples", type=int, default=1_000_000, help="random samples for 32-bit sources")
    cc.set_defaults(func=_cast_check, usage=cc.format_usage())
    dr = sub.add_parser("doctor", help="run the five steps of the precision workflow and stop at the one that "
                                       "explains the gap")
    dr.add_argument("script", help="a .py file defining case() (see pypto --help)")
    dr.add_argument("--case", default="case", help="the function returning the case dict (default: case)")
    dr.add_argument("--html", default=None, help="where to write the HTML report")
    dr.set_defaults(func=_doctor)
    fz = sub.add_parser("fuzz", help="run a kernel under many simulator seeds and classify the variation")
    fz.add_argument("script", help="a .py file defining case() (see pypto --help)")
    fz.add_argument("--case", default="case")
    fz.add_argument("--seeds", type=int, default=16)
    fz.add_argument("--jobs", type=int, default=None, help="worker processes (default: one per CPU)")
    fz.add_argument("--backend", choices=["local", "ray"], default="local",
                    help="ray: fan out on a Ray cluster (pip install ray)")
    fz.set_defaults(func=_fuzz)
    return ap


def main(argv=None) -> int:
    """Entry point of the ``pypto`` command; exit 0 ok, 1 a negative verdict, 2 bad input."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
