"""``python -m pypto.tools.difffuzz --mutants N [--generated M] [--seed S] [--examples DIR]``.

Exit status: 0 when no case failed, 1 when some did (the report lists them), 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pypto.tools.difffuzz",
                                 description="differential fuzzing: simulator vs torch_codegen vs float64")
    ap.add_argument("--mutants", type=int, default=1000, help="mutants of the examples to run (default 1000)")
    ap.add_argument("--generated", type=int, default=None,
                    help="generated kernels to run (default: a fifth of --mutants)")
    ap.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    ap.add_argument("--examples", type=Path, default=None, help="directory of example modules to mutate")
    ap.add_argument("--limit", type=float, default=20.0, help="seconds of CPU time allowed per case (default 20); a case that hangs is cut "
                         "after 15 times as many seconds of wall-clock time")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    args = ap.parse_args(argv)
    if args.mutants < 0 or (args.generated is not None and args.generated < 0):
        ap.error("--mutants and --generated must be >= 0")
    if args.examples is not None and not args.examples.is_dir():
        ap.error(f"--examples {args.examples}: not a directory")
    generated = args.generated if args.generated is not None else args.mutants // 5

    from pypto.tools.difffuzz import campaign

    t0 = time.time()

    shown = [0]

    def progress(src, done, total, report):
        for f in report.failures[shown[0]:]:     # each failure at once (the log keeps it if the run is cut)
            print(f"FAIL {f['kind']} {f['where']}: {f['detail']} edits={f.get('edits')}", file=sys.stderr, flush=True)
        shown[0] = len(report.failures)
        if not args.quiet and (done % 100 == 0 or done == total):
            print(f"[{time.time() - t0:7.1f}s] {src} {done}/{total}; failures so far: {len(report.failures)}",
                  file=sys.stderr, flush=True)

    report = campaign(args.mutants, generated, args.seed, args.examples, args.limit, progress)
    print(report.format())
    print(f"elapsed {time.time() - t0:.1f}s")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
