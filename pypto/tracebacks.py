"""Tracebacks of user errors without the compiler's own frames (issue 19).

A :class:`pypto.errors.PyptoError` that reaches the user already says everything: the message, the
kernel's ``file:line:col``, the source line, a caret and a hint. The dozens of frames of parser,
passes and runtime that Python would print above it only bury that. The public entry points
(``kernel(...)``, ``kernel.compile``, ``kernel.lower``, calling a compiled program) are wrapped with
:func:`user_facing`: a user error leaving them keeps only the frames of the user's own code (the
script line that called the kernel) and one line of the entry point.

``PYPTO_TRACEBACK=full`` keeps every frame, for reporting a bug in pypto. An
:class:`~pypto.errors.InternalError` (a bug of ours, not bad input) always keeps every frame.
"""
from __future__ import annotations

import functools
import os
import types
from pathlib import Path

from pypto.errors import InternalError, PyptoError

_PACKAGE = str(Path(__file__).resolve().parent) + os.sep
ENV = "PYPTO_TRACEBACK"


def full_tracebacks() -> bool:
    """``PYPTO_TRACEBACK=full``: show the compiler's frames too."""
    return os.environ.get(ENV, "").strip().lower() == "full"


def _internal(frame) -> bool:
    """The frame runs pypto's own code (a file of this package; generated kernel modules too)."""
    f = frame.f_code.co_filename
    return f.startswith(_PACKAGE) or frame.f_globals.get("__name__", "").startswith("pypto_gen_")


def strip(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` without its frames of pypto's own code (the user's frames keep their order)."""
    kept = []
    while tb is not None:
        if not _internal(tb.tb_frame):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def user_facing(fn):
    """Wrap a public entry point: a user error raised inside loses the compiler's frames."""

    @functools.wraps(fn)
    def entry(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except PyptoError as e:
            if isinstance(e, InternalError) or full_tracebacks():
                raise
            e.__suppress_context__ = True   # the chain is internal too (set PYPTO_TRACEBACK=full to see it)
            raise e.with_traceback(strip(e.__traceback__)) from None

    return entry
