"""Python-source spelling shared by everything that writes Python: unique identifiers for Vars
(:class:`Namer`) and literals (:func:`py_literal`).

The printer (:mod:`pypto.ir.printer`), the code generators (:mod:`pypto.codegen`) and op
definitions whose ``sim`` / ``ref`` source embeds a constant (:mod:`pypto.ops`) all use these; they
live here, below all of them and importing nothing but the dtype vocabulary, so that none of those
layers has to import another sideways (the printer <-> ops <-> codegen circle of the past).
"""
from __future__ import annotations

import enum
import keyword
import math
from typing import Any

from pypto.language.dtypes import DataType

__all__ = ["Namer", "sanitize", "py_literal"]


class Namer:
    """Unique printable names for the Vars of one function (a Var is keyed by identity; its
    ``name`` is a hint: ``x``, ``x_1``, ``x_2`` ...). ``used`` holds the names already taken."""

    def __init__(self):
        self.names: dict[int, str] = {}
        self.used: set[str] = {"pl", "self", "torch"}

    def define(self, v) -> str:
        """The name of ``v``, chosen now if it has none yet."""
        if id(v) in self.names:
            return self.names[id(v)]
        base = sanitize(v.name)
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        self.names[id(v)] = name
        return name

    def use(self, v) -> str:
        """The name of ``v`` at a use."""
        # A use before any definition is a free variable (a malformed program): still print it.
        return self.names.get(id(v)) or self.define(v)


def sanitize(name: str) -> str:
    """``name`` made a Python identifier (other characters become ``_``; a keyword or a leading
    digit gets a ``v_`` prefix)."""
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "v"
    if out[0].isdigit() or keyword.iskeyword(out):
        out = "v_" + out
    return out


def py_literal(v: Any) -> str:
    """Python source for an attribute value in generated code (dtype -> torch dtype; non-finite
    floats as ``float("inf")`` / ``float("nan")``, which ``repr`` does not spell as source)."""
    if isinstance(v, DataType):
        return f"torch.{str(v.torch).split('.')[-1]}"
    if isinstance(v, enum.Enum):
        return repr(v)
    if isinstance(v, float):
        if math.isnan(v):
            return 'float("nan")'
        if math.isinf(v):
            return 'float("inf")' if v > 0 else '-float("inf")'
    return repr(v)
