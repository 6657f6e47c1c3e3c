"""The table of property checks: a check is registered under its property's name with :func:`prop`."""
from __future__ import annotations

from typing import Callable

from pypto.ir.nodes import Function, Program, Stmt

Check = Callable[[Program, object], list[tuple[Function, Stmt | None, str]]]
PROPERTIES: dict[str, Check] = {}


def prop(name: str):
    """Register a property check ``(program, ctx) -> [(function, stmt, message)]``."""
    def deco(fn: Check) -> Check:
        PROPERTIES[name] = fn
        return fn
    return deco
