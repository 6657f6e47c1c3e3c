"""``ast.parse`` behind one process-wide lock.

CPython 3.11's conversion of a parse tree into ``ast`` objects keeps its recursion-depth bookkeeping
in interpreter-wide state, so two threads parsing at once can fail with ``SystemError: AST
constructor recursion depth mismatch`` (seen with 8 threads compiling fresh kernels). Every parse of
the package goes through :func:`parse`; parses are short, so serialising them costs nothing measurable.
"""
from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """``ast.parse(source, filename, mode)``, one thread at a time."""
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)
