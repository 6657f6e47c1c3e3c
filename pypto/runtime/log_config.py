"""``pypto.runtime.log_config``: the reference's runtime-log switch, over :mod:`pypto.log`.

The reference configures its device runtime's log here; the simulator logs through pypto's own log,
so ``configure_log(level)`` sets that threshold (a ``LogLevel``, its name, or the reference's
runtime level names ``"debug"``, ``"info"``, ``"warn"``, ``"error"``, ``"timing"`` — the last one
maps to INFO: the simulator's timings are in ``benchmark`` and the swimlane, not in the log).
"""
from __future__ import annotations

from pypto.log import LogLevel, get_log_level, set_log_level

_NAMES = {"debug": LogLevel.DEBUG, "info": LogLevel.INFO, "warn": LogLevel.WARN, "warning": LogLevel.WARN,
          "error": LogLevel.ERROR, "fatal": LogLevel.FATAL, "timing": LogLevel.INFO, "none": LogLevel.NONE}


def configure_log(level=None) -> LogLevel:
    """Set the log threshold (``None``: leave it) and return the one in effect."""
    if level is not None:
        if isinstance(level, str) and level.lower() in _NAMES:
            level = _NAMES[level.lower()]
        set_log_level(level)
    return get_log_level()


def current_level() -> LogLevel:
    """The log threshold in effect."""
    return get_log_level()


__all__ = ["configure_log", "current_level"]
