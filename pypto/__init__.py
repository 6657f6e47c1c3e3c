"""pypto: a pure-Python implementation of the PyPTO tile programming model.

``import pypto.language as pl`` for the DSL; :mod:`pypto.ir` for the compiler; :mod:`pypto.runtime`
for ``RunConfig`` and the simulator; :mod:`pypto.debug` for the precision-debugging tools.
Subpackages load on first attribute access (``pypto.debug.torch_codegen`` works after
``import pypto``) so that importing the package stays cheap.
"""
import importlib

from pypto.errors import InternalError
from pypto.errors import PyptoError as Error
from pypto.log import (
    LogLevel, check, get_log_level, internal_check, internal_check_span, log_debug, log_error, log_event, log_fatal,
    log_info, log_warn, set_log_level,
)

# ``pypto.DataType`` and ``pypto.DT_FP32`` ...: the reference's dtype constants (the low-precision
# ones included: their storage and casts are described in docs/numerics.md).
# Loaded on first access, like the subpackages (they import torch).
_DTYPE_NAMES = ("BOOL", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64", "FP16", "BF16",
                "FP32", "INDEX", "INT4", "UINT4", "FP4", "FP8E4M3FN", "FP8E5M2", "FP8E8M0", "HF4", "HF8")

__version__ = "0.1.0"
__all__ = ["Error", "InternalError", "DataType", "LogLevel", "set_log_level", "get_log_level", "log_debug",
           "log_info", "log_warn", "log_error", "log_fatal", "log_event", "check", "internal_check",
           "internal_check_span", "__version__", "language", "ir", "runtime", "debug", "passes", "ops", "backend",
           "testing", "pypto_core", *(f"DT_{n}" for n in _DTYPE_NAMES)]

_SUBPACKAGES = {"language", "ir", "runtime", "debug", "passes", "ops", "backend", "frontend", "codegen",
                "numerics", "testing", "pypto_core", "tools"}


def __getattr__(name: str):
    if name == "DataType" or (name.startswith("DT_") and name[3:] in _DTYPE_NAMES):
        from pypto.language import dtypes

        return dtypes.DataType if name == "DataType" else getattr(dtypes, name[3:])
    if name in _SUBPACKAGES:
        return importlib.import_module(f"pypto.{name}")
    raise AttributeError(f"module 'pypto' has no attribute {name!r}")
