"""The table of property checks: a check is registered under its property's name with :func:`prop`,
or, when it judges each function on its own, with :func:`function_prop`."""
from __future__ import annotations

from typing import Callable, Hashable

from pypto.ir.nodes import Function, Program, Stmt

Check = Callable[[Program, object], list[tuple[Function, Stmt | None, str]]]
FunctionCheck = Callable[[Function, Program, object], list[tuple[Function, Stmt | None, str]]]
PROPERTIES: dict[str, Check] = {}
# name -> (check of one function, what of the *other* functions it reads): the properties the
# verifier may skip for a function it already accepted in this compilation (see verify)
PER_FUNCTION: dict[str, tuple[FunctionCheck, Callable[[Program], Hashable] | None]] = {}


def prop(name: str):
    """Register a property check ``(program, ctx) -> [(function, stmt, message)]``."""
    def deco(fn: Check) -> Check:
        PROPERTIES[name] = fn
        return fn
    return deco


def function_prop(name: str, reads: Callable[[Program], Hashable] | None = None):
    """Register a check ``(function, program, ctx) -> [(function, stmt, message)]`` whose verdict on
    a function depends only on that function, the context and ``reads(program)`` (a hashable
    summary of whatever it reads of the other functions, e.g. their signatures; ``None``: nothing).
    ``PROPERTIES[name]`` is the whole-program form: every function, in program order."""
    def deco(fn: FunctionCheck) -> FunctionCheck:
        PER_FUNCTION[name] = (fn, reads)
        PROPERTIES[name] = lambda program, ctx: [b for f in program.functions for b in fn(f, program, ctx)]
        return fn
    return deco
