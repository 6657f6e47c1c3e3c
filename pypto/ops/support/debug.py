"""Runtime support of ``pl.debug_print`` (``tile.debug_print``), called from generated code as ``_pto.*``.

In a simulator kernel the print is ``yield _pto.DebugPrint(...)``: the kernel hands the record to the
scheduler, which knows what the kernel does not — the task, the core and the simulated time — and
resumes the kernel at once. The record carries the cycles of the instructions the kernel executed
since its previous yield (they are not spent yet), so the time printed is the moment the printed
value is complete; handing the record over draws no random number and spends no time, so a kernel
prints under exactly the schedule it runs without the print.

The reference executor (``torch_codegen``) calls :func:`debug_print_ref`: the same line, labelled
``reference`` instead of task, core and time.

Every line goes to ``sys.stdout`` when it happens; the records of the latest simulated call are
kept (``pypto.runtime.simulator.last_prints()``). ``PYPTO_DEBUG_PRINT=0`` keeps the records but
prints nothing (tools that re-run a kernel many times).
"""
from __future__ import annotations

import os
import sys
from typing import NamedTuple, Optional

import torch


class DebugPrint:
    """What a kernel's ``pl.debug_print`` hands the scheduler: ``value`` (a copy of the tile's valid
    region, or a scalar), ``label``, ``where`` (``file:line``), ``cycles`` spent since the kernel's
    previous yield."""

    __slots__ = ("value", "label", "where", "cycles")

    def __init__(self, value, label: str, where: str, cycles: int):
        self.value = value
        self.label = label
        self.where = where
        self.cycles = cycles


class PrintRecord(NamedTuple):
    """One printed line: the task label (``r<ring>t<index>``, ``reference`` for the reference
    executor), the core (``core <n>``, as the doctor's timeline names it; ``-`` there), the simulated time in cycles (None there), where
    it is in the source, the label, the value."""

    task: str
    core: str
    time: Optional[float]
    where: str
    label: str
    value: object

    def format(self) -> str:
        """The line as printed: ``[debug_print r0t3 core 2 t=1234] k.py:12 s: FP32[16, 1] tensor(...)``."""
        when = f" t={self.time:.0f}" if self.time is not None else ""
        return f"[debug_print {self.task} {self.core}{when}] {self.where} {self.label}: {describe(self.value)}"


def describe(value) -> str:
    """``DTYPE[shape] values`` of a tile, the value of a scalar."""
    if isinstance(value, torch.Tensor):
        from pypto.language.dtypes import dtype_from_torch

        try:
            name = dtype_from_torch(value.dtype).name
        except (KeyError, ValueError, TypeError):
            name = str(value.dtype).replace("torch.", "")
        body = str(value).replace("\n", "\n    ")
        return f"{name}{list(value.shape)} {body}"
    return repr(value)


def valid(view, valid_shape):
    """A copy of the region of ``view`` that holds data: ``valid_shape`` (run-time values allowed)
    clipped to the view; the padding outside it is undefined and not printed."""
    if isinstance(view, torch.Tensor):
        if valid_shape is not None:
            view = view[tuple(slice(0, int(n)) for n in valid_shape)]
        return view.detach().clone()
    return view


def emit(rec: PrintRecord) -> None:
    """Write one line to stdout (unless ``PYPTO_DEBUG_PRINT=0``)."""
    if os.environ.get("PYPTO_DEBUG_PRINT", "1") == "0":
        return
    from pypto.progress import clear

    clear()   # a progress line on the terminal would be overwritten mid-line
    print(rec.format(), file=sys.stdout, flush=True)


def debug_print_ref(value, label: str, where: str):
    """The reference executor's ``pl.debug_print``: the same line, without task, core and time."""
    emit(PrintRecord("reference", "-", None, where, label, valid(value, None)))
    return None
