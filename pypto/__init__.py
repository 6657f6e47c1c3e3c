"""pypto: a pure-Python implementation of the PyPTO tile programming model.

``import pypto.language as pl`` for the DSL; :mod:`pypto.ir` for the compiler; :mod:`pypto.runtime`
for ``RunConfig`` and the simulator; :mod:`pypto.debug` for the precision-debugging tools.
Subpackages load on first attribute access (``pypto.debug.torch_codegen`` works after
``import pypto``) so that importing the package stays cheap.
"""
import importlib

from pypto.errors import PyptoError as Error

__version__ = "0.1.0"
__all__ = ["Error", "__version__", "language", "ir", "runtime", "debug", "passes", "ops", "backend"]

_SUBPACKAGES = {"language", "ir", "runtime", "debug", "passes", "ops", "backend", "frontend", "codegen",
                "numerics"}


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        return importlib.import_module(f"pypto.{name}")
    raise AttributeError(f"module 'pypto' has no attribute {name!r}")
