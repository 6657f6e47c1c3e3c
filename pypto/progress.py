"""A one-line progress display for the debugging tools (doctor steps, fuzz seeds, validate_ir passes,
cast-check sampling, the race and poison checks).

``Progress(label, total)`` writes a single updating line to stderr — ``label: 3/16 (19%) detail`` —
but only when stderr is a terminal and the work has already taken more than ``delay`` seconds (1 s),
so quick calls, tests and logs stay clean. Bars nest: an inner bar (fuzz seeds inside a doctor step)
is drawn after the outer one on the same line (``doctor: step 2/5 › fuzz: 3/16``). The line is erased
when the outermost bar closes.

Standard library only. Force the display on or off with ``force=True/False`` or the environment
variable ``PYPTO_PROGRESS`` (``1``: always, ``0``: never; the delay still applies unless
``PYPTO_PROGRESS_DELAY`` sets it, e.g. ``0``).
"""
from __future__ import annotations

import os
import sys
import time
from typing import Optional, TextIO

_STACK: list["Progress"] = []   # the bars open now, outermost first
_DRAWN = [0]                    # width of the line on screen (0: nothing drawn)
_MIN_INTERVAL = 0.1             # redraw at most ten times a second


def _enabled(stream, force: Optional[bool]) -> bool:
    if force is not None:
        return force
    env = os.environ.get("PYPTO_PROGRESS", "")
    if env in ("0", "1"):
        return env == "1"
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """One unit of work with ``total`` steps (``None``: unknown); also a context manager."""

    def __init__(self, label: str, total: Optional[int] = None, *, stream: Optional[TextIO] = None,
                 force: Optional[bool] = None, delay: Optional[float] = None):
        self.label = label
        self.total = total
        self.done = 0
        self.detail = ""
        self.stream = stream if stream is not None else sys.stderr
        outer = _STACK[0] if _STACK else None
        # a nested bar follows its outermost bar's decision and stream
        self.on = outer.on if outer is not None else _enabled(self.stream, force)
        if outer is not None:
            self.stream = outer.stream
        if delay is None and outer is not None:
            delay = outer.delay
        if delay is None:
            env = os.environ.get("PYPTO_PROGRESS_DELAY")
            delay = float(env) if env else 1.0
        self.delay = delay
        self.start = outer.start if outer is not None else time.monotonic()
        self._last = 0.0
        self.closed = False
        _STACK.append(self)

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def text(self) -> str:
        """This bar's part of the line."""
        if self.total:
            s = f"{self.label}: {self.done}/{self.total} ({100 * self.done // self.total}%)"
        else:
            s = f"{self.label}: {self.done}" if self.done else self.label
        return f"{s} {self.detail}" if self.detail else s

    def update(self, n: int = 1, detail: Optional[str] = None) -> None:
        """Advance by ``n`` steps (``detail``: what is being done now) and redraw when due."""
        self.done += n
        if detail is not None:
            self.detail = detail
        self._draw()

    def set(self, done: int, detail: Optional[str] = None) -> None:
        """Set the number of finished steps."""
        self.update(done - self.done, detail)

    def _draw(self, now: Optional[float] = None) -> None:
        if not self.on:
            return
        now = time.monotonic() if now is None else now
        if now - self.start < self.delay or now - self._last < _MIN_INTERVAL:
            return
        self._last = now
        line = " › ".join(p.text() for p in _STACK)
        try:
            width = os.get_terminal_size(self.stream.fileno()).columns - 1
        except (AttributeError, OSError, ValueError):
            width = 119
        line = line[:width]
        pad = " " * max(0, _DRAWN[0] - len(line))
        self.stream.write("\r" + line + pad)
        self.stream.flush()
        _DRAWN[0] = len(line)

    def close(self) -> None:
        """Finish this bar (and any bar opened inside it that is still open); the outermost one erases the line."""
        if self.closed:
            return
        while _STACK and _STACK[-1] is not self and self in _STACK:
            _STACK[-1].close()
        self.closed = True
        if self in _STACK:
            _STACK.remove(self)
        if not _STACK and _DRAWN[0]:
            self.stream.write("\r" + " " * _DRAWN[0] + "\r")
            self.stream.flush()
            _DRAWN[0] = 0
        elif _STACK:
            _STACK[-1]._last = 0.0


def track(items, label: str, total: Optional[int] = None, detail=None, **kwargs):
    """Iterate over ``items`` with a :class:`Progress` bar (closed however the loop ends);
    ``detail(item)`` names the item being worked on."""
    if total is None:
        try:
            total = len(items)
        except TypeError:
            total = None
    bar = Progress(label, total, **kwargs)
    try:
        for item in items:
            if detail is not None:
                bar.detail = str(detail(item))
                bar._draw()
            yield item
            bar.update()
    finally:
        bar.close()


def clear() -> None:
    """Erase the progress line (before printing something else to the terminal); the next update
    draws it again."""
    if _DRAWN[0] and _STACK:
        stream = _STACK[0].stream
        stream.write("\r" + " " * _DRAWN[0] + "\r")
        stream.flush()
        _DRAWN[0] = 0
        for p in _STACK:
            p._last = 0.0
