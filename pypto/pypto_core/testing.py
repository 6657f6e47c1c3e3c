"""``pypto.pypto_core.testing``: the reference's error-raising helpers (used to check how errors reach
Python), raising our exception classes."""
from __future__ import annotations

from pypto.errors import InternalError, PyptoError, Span


def raise_value_error(message: str):
    """Raise ``ValueError(message)``."""
    raise ValueError(message)


def raise_type_error(message: str):
    """Raise ``TypeError(message)``."""
    raise TypeError(message)


def raise_runtime_error(message: str):
    """Raise ``RuntimeError(message)``."""
    raise RuntimeError(message)


def raise_not_implemented_error(message: str):
    """Raise ``NotImplementedError(message)``."""
    raise NotImplementedError(message)


def raise_index_error(message: str):
    """Raise ``IndexError(message)``."""
    raise IndexError(message)


def raise_generic_error(message: str):
    """Raise :class:`pypto.Error` (our base error class)."""
    raise PyptoError(message)


def raise_assertion_error(message: str):
    """Raise ``AssertionError(message)``."""
    raise AssertionError(message)


def raise_internal_error(message: str):
    """Raise :class:`pypto.InternalError`."""
    raise InternalError(message)


def raise_internal_error_with_span(message: str, filename: str, line: int, col: int):
    """Raise :class:`pypto.InternalError` pointing at ``filename:line:col``."""
    raise InternalError(message, Span(filename, line, col, line, col + 1))
