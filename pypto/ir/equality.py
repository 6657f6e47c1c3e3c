"""Structural equality of IR: same shape of tree, same types and attributes, Vars matched by a
bijection (names and spans ignored).

This is what "``parse(print(p))`` equals ``p``" means; :func:`assert_structural_equal` reports the
first difference with the path to it.
"""
from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

from pypto.ir.nodes import Node, Var


class StructuralMismatch(AssertionError):
    """Two IR trees differ; the message gives the path and both sides."""


def structural_equal(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` are the same IR up to Var identity and names."""
    try:
        assert_structural_equal(a, b)
        return True
    except StructuralMismatch:
        return False


def assert_structural_equal(a: Any, b: Any) -> None:
    """Raise :class:`StructuralMismatch` describing the first difference."""
    _Eq().check(a, b, "root")


class _Eq:
    def __init__(self):
        self.fwd: dict[int, Var] = {}
        self.bwd: dict[int, Var] = {}

    def fail(self, path: str, a: Any, b: Any, why: str) -> None:
        raise StructuralMismatch(f"at {path}: {why}\n  left:  {_short(a)}\n  right: {_short(b)}")

    def check(self, a: Any, b: Any, path: str) -> None:
        if isinstance(a, Var) or isinstance(b, Var):
            if not (isinstance(a, Var) and isinstance(b, Var)):
                self.fail(path, a, b, "Var vs non-Var")
            self.var(a, b, path)
            return
        if isinstance(a, Node) or isinstance(b, Node):
            if type(a) is not type(b):
                self.fail(path, a, b, f"node kind {type(a).__name__} vs {type(b).__name__}")
            for f in fields(a):
                if not f.compare:
                    continue
                if f.name == "name" and type(a).__name__ == "Program":
                    continue
                self.check(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
            return
        if isinstance(a, tuple) and isinstance(b, tuple):
            if len(a) != len(b):
                self.fail(path, a, b, f"length {len(a)} vs {len(b)}")
            for i, (x, y) in enumerate(zip(a, b)):
                self.check(x, y, f"{path}[{i}]")
            return
        if isinstance(a, float) and isinstance(b, float):
            if a != a and b != b:
                return  # NaN literals compare equal structurally
            if a != b or math.copysign(1.0, a) != math.copysign(1.0, b):
                # -0.0 == 0.0 in Python, but 1 / x tells them apart: a pass may not flip the sign
                self.fail(path, a, b, "values differ")
            return
        if type(a) is not type(b) or (a != b and not self.same_runtime_valid(a, b, path)):
            self.fail(path, a, b, "values differ")

    def var(self, a: Var, b: Var, path: str) -> None:
        if id(a) in self.fwd:
            if self.fwd[id(a)] is not b:
                self.fail(path, a, b, "Var bound to a different Var")
            return
        if id(b) in self.bwd:
            self.fail(path, a, b, "Var already matched to another Var")
        if a.type != b.type and not self.same_runtime_valid(a.type, b.type, path):
            self.fail(path, a.type, b.type, f"type of Var {a.name!r} vs {b.name!r}")
        self.fwd[id(a)] = b
        self.bwd[id(b)] = a

    def same_runtime_valid(self, ta, tb, path: str) -> bool:
        """Tile types equal but for a runtime valid shape whose scalars correspond (Var mapping)."""
        from pypto.ir.types import runtime_valid

        if not (runtime_valid(ta) and runtime_valid(tb)) or len(ta.valid_shape) != len(tb.valid_shape) \
                or ta.with_(valid_shape=None) != tb.with_(valid_shape=None):
            return False
        for i, (x, y) in enumerate(zip(ta.valid_shape, tb.valid_shape)):
            self.check(x, y, f"{path}.type.valid_shape[{i}]")
        return True


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) < 300 else text[:300] + "..."
