"""pypto's log: a level threshold (``LogLevel``) and ``log_*`` functions writing to stderr, plus the
``check`` / ``internal_check`` helpers (the reference's logging framework, top-level names of
``pypto``).

The threshold starts at ``PYPTO_LOG_LEVEL`` (a level name, default ``WARN``). A thread may override
it (``_set_thread_log_level``), as the reference's test harness does per test.
"""
from __future__ import annotations

import enum
import os
import sys
import threading

from pypto.errors import InternalError, Span


class LogLevel(enum.IntEnum):
    """Log levels, in increasing severity; ``NONE`` silences everything."""

    DEBUG = 0
    INFO = 1
    WARN = 2
    ERROR = 3
    FATAL = 4
    EVENT = 5
    NONE = 6


def _initial() -> LogLevel:
    name = os.environ.get("PYPTO_LOG_LEVEL", "").strip().upper()
    return LogLevel[name] if name in LogLevel.__members__ else LogLevel.WARN


_GLOBAL = [_initial()]
_THREAD = threading.local()


def _level(level) -> LogLevel:
    if isinstance(level, str) and level.upper() in LogLevel.__members__:
        return LogLevel[level.upper()]
    try:
        return LogLevel(level)
    except ValueError:
        raise ValueError(f"unknown log level {level!r}; choose one of: {', '.join(LogLevel.__members__)}") from None


def set_log_level(level) -> None:
    """Set the process-wide threshold: messages at or above it are written."""
    _GLOBAL[0] = _level(level)


def get_log_level() -> LogLevel:
    """The process-wide threshold (a thread override does not show here)."""
    return _GLOBAL[0]


def _set_thread_log_level(level) -> None:
    """Override the threshold for the calling thread."""
    _THREAD.level = _level(level)


def _clear_thread_log_level() -> None:
    """Remove the calling thread's override."""
    _THREAD.__dict__.pop("level", None)


def effective_log_level() -> LogLevel:
    """The threshold that applies to the calling thread."""
    return getattr(_THREAD, "level", _GLOBAL[0])


def _log(level: LogLevel, message: str) -> None:
    if level >= effective_log_level() and effective_log_level() != LogLevel.NONE:
        sys.stderr.write(f"pypto [{level.name}] {message}\n")


def log_debug(message: str) -> None:
    """Log at DEBUG."""
    _log(LogLevel.DEBUG, message)


def log_info(message: str) -> None:
    """Log at INFO."""
    _log(LogLevel.INFO, message)


def log_warn(message: str) -> None:
    """Log at WARN."""
    _log(LogLevel.WARN, message)


def log_error(message: str) -> None:
    """Log at ERROR."""
    _log(LogLevel.ERROR, message)


def log_fatal(message: str) -> None:
    """Log at FATAL."""
    _log(LogLevel.FATAL, message)


def log_event(message: str) -> None:
    """Log at EVENT."""
    _log(LogLevel.EVENT, message)


def check(condition, message: str) -> None:
    """Raise ``ValueError(message)`` unless ``condition`` holds (a user-input check)."""
    if not condition:
        raise ValueError(message)


def internal_check(condition, message: str) -> None:
    """Raise :class:`pypto.InternalError` unless ``condition`` holds (an invariant of pypto itself)."""
    if not condition:
        raise InternalError(message)


def internal_check_span(condition, message: str, span: Span) -> None:
    """:func:`internal_check` whose error points at ``span``."""
    if not condition:
        raise InternalError(message, span)


__all__ = ["LogLevel", "set_log_level", "get_log_level", "effective_log_level", "log_debug", "log_info", "log_warn",
           "log_error", "log_fatal", "log_event", "check", "internal_check", "internal_check_span"]
