"""The command line of a tool that generates a committed file from the registry (``op_reference``,
``stubgen``, ``cast_table``): ``-o PATH`` writes it atomically, no argument prints it."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable


def main(prog: str, description: str, render: Callable[[], str], argv=None) -> int:
    """Parse ``argv``; write ``render()`` to ``-o`` (0; an unwritable path: a one-line error, 2) or
    print it (0)."""
    ap = argparse.ArgumentParser(prog=f"python -m {prog}", description=description)
    ap.add_argument("-o", "--output", type=Path, default=None, help="where to write it (default: print it)")
    args = ap.parse_args(argv)
    text = render()
    if args.output is None:
        sys.stdout.write(text)
        return 0
    from pypto.safe_files import atomic_write_text

    try:
        atomic_write_text(args.output, text)
    except OSError as e:
        print(f"{prog.rsplit('.', 1)[-1]}: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.output}")
    return 0
