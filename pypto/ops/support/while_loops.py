"""The iteration bound of ``while`` loops in generated code (kernels, orchestration, torch_codegen).

A ``while`` whose condition never becomes false would hang the simulator (and, on the device, the
core). Every generated ``while`` counts its iterations with :func:`while_step`, which raises a
:class:`~pypto.errors.SimulationError` located at the loop once the count passes the limit:
``RunConfig.max_while_iterations`` (default :data:`DEFAULT_WHILE_LIMIT`), set for one run with
:func:`while_limit`. Why a count and not a time limit: it is deterministic (the same program stops at
the same iteration on every machine) and costs one integer compare per iteration. The limit is a
context variable, so runs in different threads keep their own.
"""
from __future__ import annotations

import contextlib
import contextvars

import torch

from pypto.errors import SimulationError, Span

DEFAULT_WHILE_LIMIT = 1 << 20

_LIMIT: contextvars.ContextVar[int] = contextvars.ContextVar("pypto_while_limit", default=DEFAULT_WHILE_LIMIT)


@contextlib.contextmanager
def while_limit(n: int | None):
    """Within the block, a ``while`` loop may run at most ``n`` iterations (None: the default)."""
    if n is None:
        n = DEFAULT_WHILE_LIMIT
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"max_while_iterations must be an int >= 1, got {n!r}")
    token = _LIMIT.set(n)
    try:
        yield n
    finally:
        _LIMIT.reset(token)


class IntArray(list):
    """The run-time value of an integer ``pl.Array``: a list of Python ints that wraps every
    written value to the element type (two's complement), as the device's store into an ``i32``
    stack slot does. It matters for a value of another integer type (an ``INDEX`` count written
    into an ``INT32`` array is converted as the device's ``index_cast`` would: truncated)."""

    __slots__ = ("bits", "signed")

    def wrap(self, v):
        m = 1 << self.bits
        v = int(v) & (m - 1)
        return v - m if self.signed and v >= m >> 1 else v


def array_new(n: int, dtype):
    """A fresh ``pl.array.create(n, dtype)``: ``n`` zeros (an :class:`IntArray` for an integer
    ``dtype``, a plain list for BOOL)."""
    if dtype == torch.bool:
        return [False] * n
    arr = IntArray([0] * n)
    info = torch.iinfo(dtype)
    arr.bits, arr.signed = info.bits, info.min < 0
    return arr


def array_get(arr: list, i: int):
    """Element ``i`` of a ``pl.array`` (a Python list at run time); a bad index is a SimulationError
    (located by the caller's SPANS), not an IndexError from inside generated code."""
    i = int(i)
    if not 0 <= i < len(arr):
        raise SimulationError(f"pl.array index {i} is out of range for an array of {len(arr)} element(s)")
    return arr[i]


def array_set(arr: list, i: int, v):
    """``arr[i] = v`` in place (a ``pl.array.update_element``); returns ``arr``, the new version."""
    i = int(i)
    if not 0 <= i < len(arr):
        raise SimulationError(f"pl.array index {i} is out of range for an array of {len(arr)} element(s)")
    arr[i] = arr.wrap(v) if type(arr) is IntArray else v
    return arr


def reshape_view(x, shape):
    """``x`` viewed in ``shape`` (row-major). A tensor with run-time dimensions is reshaped to a
    static shape only when the element counts agree, else a SimulationError (located by SPANS)."""
    n = 1
    for d in shape:
        n *= int(d)
    if n != x.numel():
        raise SimulationError(f"reshape: the tensor has {x.numel()} elements at run time (shape "
                              f"{list(x.shape)}), the reshape's shape {list(shape)} has {n}: the element count "
                              f"must not change")
    try:
        return x.view(list(shape))
    except RuntimeError:
        # not expressible as a view of x (a DN / transposed or column-sliced tensor): a copy, fine
        # to read; the runtime refuses a task writing it (the write would not reach x)
        r = x.reshape(list(shape))
        r._pypto_reshape_copy = True
        return r


def while_step(count: int, where: tuple | None = None) -> int:
    """``count + 1``, the iterations a ``while`` loop has begun; raises when that passes the limit.
    ``where``: the loop's source span ``(file, line, col, end_line, end_col)``."""
    count += 1
    limit = _LIMIT.get()
    if count > limit:
        span = Span(*where) if where else Span.unknown()
        raise SimulationError(f"this while loop ran more than {limit} iterations: its condition never became "
                              f"false (a loop that would hang the device)", span,
                              "check the condition and the values the body carries; if the loop really needs "
                              "more iterations, raise RunConfig(max_while_iterations=...)")
    return count
