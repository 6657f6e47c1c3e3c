"""``pypto.pypto_core.logging``: the reference's native logging module; ours is :mod:`pypto.log`."""
from pypto.errors import InternalError, PyptoError as Error
from pypto.log import (  # noqa: F401
    LogLevel, _clear_thread_log_level, _set_thread_log_level, check, get_log_level, internal_check,
    internal_check_span, log_debug, log_error, log_event, log_fatal, log_info, log_warn, set_log_level,
)

__all__ = ["Error", "InternalError", "LogLevel", "check", "get_log_level", "internal_check", "internal_check_span",
           "log_debug", "log_error", "log_event", "log_fatal", "log_info", "log_warn", "set_log_level"]
