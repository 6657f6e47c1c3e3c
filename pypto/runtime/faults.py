"""Source locations for faults the simulated device hits while running generated code.

Each generated kernel and orchestration module carries ``SPANS``: its line number -> the source span
``(file, line, col, end_line, end_col)`` of the kernel statement the line implements
(:mod:`pypto.codegen.kernel`, :mod:`pypto.codegen.orchestration`). When a :class:`SimulationError`
without a span (an out-of-bounds ``tile.load``, a bad ``tensor.read`` index, ...) escapes the
scheduler or the orchestration, :func:`locate` finds the innermost generated frame in its traceback
and returns the same error located at the user's line (``file:line:col``, the line, a caret).
"""
from __future__ import annotations

import bisect
import traceback

from pypto.errors import SimulationError, Span


def _span_at(spans: dict, lineno: int, first: int):
    """The span of the statement generated at or just before ``lineno`` (a statement may take
    several lines) within the function that starts at line ``first``."""
    keys = sorted(spans)
    k = bisect.bisect_right(keys, lineno) - 1
    return spans[keys[k]] if k >= 0 and keys[k] >= first else None


def locate(e: SimulationError) -> SimulationError | None:
    """``e`` located at the kernel source line whose generated code raised it, or ``None`` when
    ``e`` already has a span or no generated frame with a known span is in its traceback."""
    if not e.span.is_unknown():
        return None
    found = None
    for frame, lineno in traceback.walk_tb(e.__traceback__):
        spans = frame.f_globals.get("SPANS")
        if isinstance(spans, dict) and frame.f_globals.get("__name__", "").startswith("pypto_gen_"):
            sp = _span_at(spans, lineno, frame.f_code.co_firstlineno)
            if sp is not None:
                what = frame.f_globals.get("KERNEL_NAME") or frame.f_globals.get("__name__")
                found = (Span(*sp), what)
    if found is None:
        return None
    span, what = found
    located = SimulationError(f"{e.message} (in {what})", span, e.hint)
    located.__cause__ = None
    return located
