"""``pypto.pypto_core``: the reference's native (C++) module, as adapters over this package.

Submodules: :mod:`.passes` (passes, PassContext, MemoryPlanner, diagnostics), :mod:`.ir` (IR nodes
and types, IRMutator / IRVisitor), :mod:`.backend` (BackendType and the SoC description),
:mod:`.logging` (log levels and checks), :mod:`.testing` (error-raising helpers). The reference's
``codegen`` (PTO/MLIR emission) and ``arith`` (its integer-set analyzer) have no counterpart: this
package generates Python kernels for its simulator and folds constants in its Simplify pass.
See docs/compatibility.md for every name and its difference on a simulator.
"""
import importlib

from pypto.language.dtypes import DataType
from pypto.log import (  # noqa: F401
    LogLevel, _clear_thread_log_level, _set_thread_log_level, check, get_log_level, internal_check,
    internal_check_span, log_debug, log_error, log_event, log_fatal, log_info, log_warn, set_log_level,
)
from pypto.errors import InternalError, PyptoError as Error

_SUBMODULES = ("passes", "ir", "backend", "logging", "testing")
_ABSENT = {"codegen": "PTO/MLIR code generation (this package generates Python kernels for its simulator)",
           "arith": "the reference's integer-set analyzer (constant folding is our Simplify pass)"}


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"pypto.pypto_core.{name}")
    if name in _ABSENT:
        raise AttributeError(f"pypto.pypto_core.{name} has no counterpart here: {_ABSENT[name]}; "
                             "see docs/compatibility.md")
    raise AttributeError(f"module 'pypto.pypto_core' has no attribute {name!r}")


__all__ = ["DataType", "Error", "InternalError", "LogLevel", "check", "get_log_level", "internal_check",
           "internal_check_span", "log_debug", "log_error", "log_event", "log_fatal", "log_info", "log_warn",
           "set_log_level", *_SUBMODULES]
