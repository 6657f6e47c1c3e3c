"""pypto: a pure-Python implementation of the PyPTO tile programming model.

``import pypto.language as pl`` for the DSL; :mod:`pypto.ir` for the compiler; :mod:`pypto.runtime`
for ``RunConfig`` and the simulator; :mod:`pypto.debug` for the precision-debugging tools.
"""
from pypto.errors import PyptoError as Error

__version__ = "0.1.0"
__all__ = ["Error", "__version__"]
