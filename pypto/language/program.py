"""The IR-transcription form: ``@pl.program`` classes, ``@pl.function`` methods, ``pl.parse``
and ``pl.loads`` — the same syntax the IR printer writes, read by the same frontend."""
from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

from pypto.errors import ParserSyntaxError


def function(fn=None, **kwargs):
    """Marks a method of an ``@pl.program`` class (``type=pl.FunctionType.X``, ``level=...``).

    The decorator itself does nothing at run time: the enclosing ``@pl.program`` parses the source.
    """
    if fn is None:
        return lambda f: f
    return fn


def program(cls):
    """Parse the decorated class into an :class:`pypto.ir.Program` (at import time)."""
    from pypto.frontend.program_parser import parse_program_class
    from pypto.frontend.source import function_source

    node, src = function_source(cls)
    module = sys.modules.get(cls.__module__)
    globals_ = dict(vars(module)) if module else {}
    frame = inspect.currentframe()
    if frame is not None and frame.f_back is not None:
        globals_.update(frame.f_back.f_locals)
    return parse_program_class(node, src, globals_)


def parse(code: str, filename: str | None = None):
    """Parse printed IR (a module holding one ``@pl.program`` class) into a Program."""
    import pypto.language as pl
    from pypto.frontend.program_parser import parse_program_class
    from pypto.frontend.source import string_source

    tree, src = string_source(code, filename)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    if len(classes) != 1:
        raise ParserSyntaxError(f"expected exactly one @pl.program class, found {len(classes)}")
    globals_ = {"pl": pl}
    for node in tree.body:  # `M = pl.dynamic("M")` lines name the program's dynamic dimensions
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute) \
                and node.value.func.attr == "dynamic" and len(node.value.args) == 1 \
                and isinstance(node.value.args[0], ast.Constant):
            globals_[node.targets[0].id] = pl.dynamic(node.value.args[0].value)
    return parse_program_class(classes[0], src, globals_)


def loads(path) -> object:
    """Parse a printed-IR file (e.g. a pass dump) into a Program."""
    p = Path(path)
    return parse(p.read_text(encoding="utf-8"), filename=str(p))
