"""The ``pypto`` command (also ``python -m pypto``).

    pypto cast-check SRC DST [--platform a5sim] [--mode round]   certify a LegalizeTileCast chain
"""
from __future__ import annotations

import argparse
import sys


def _cast_check(args) -> int:
    from pypto.debug.cast_check import certify

    try:
        cert = certify(args.src, args.dst, args.platform, args.mode, samples=args.samples)
    except (ValueError, TypeError, KeyError) as e:
        print(f"pypto cast-check: error: {e}", file=sys.stderr)
        return 2
    print(cert.format())
    return 0 if cert.exact is not False else 1


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    ap = argparse.ArgumentParser(prog="pypto", description="pypto: PyPTO kernels on a simulated device, and the "
                                                           "tools that narrow down precision gaps")
    sub = ap.add_subparsers(dest="command", required=True)
    cc = sub.add_parser("cast-check", help="is the cast chain LegalizeTileCast emits bit-identical to a direct cast?")
    cc.add_argument("src", help="source dtype, e.g. int32")
    cc.add_argument("dst", help="destination dtype, e.g. fp16")
    cc.add_argument("--platform", default="a2a3sim", choices=["a2a3sim", "a5sim"])
    cc.add_argument("--mode", default="round", help="none rint round floor ceil trunc odd (default round)")
    cc.add_argument("--samples", type=int, default=1_000_000, help="random samples for 32-bit sources")
    cc.set_defaults(func=_cast_check)
    return ap


def main(argv=None) -> int:
    """Entry point of the ``pypto`` command; exit 0 ok, 1 a negative verdict, 2 bad input."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
