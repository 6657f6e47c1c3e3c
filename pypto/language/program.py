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

    On a method the decorator itself does nothing at run time: the enclosing ``@pl.program``
    parses the source. On a standalone function (no ``self`` parameter) it parses the function
    into an IR :class:`pypto.ir.Function` at once (printable with ``.as_python()``).
    """
    if fn is None:
        return lambda f: function(f, **kwargs)
    params = list(inspect.signature(fn).parameters)
    if params and params[0] == "self":
        return fn
    if kwargs.get("level") is not None and getattr(kwargs["level"], "name", "") == "HOST":
        # a HOST-level function of a multi-rank program (a sub-worker: host Python the host
        # orchestrator calls, issue 17) stays the Python function; its @pl.program records it
        return fn
    from pypto.frontend.program_parser import parse_function_def
    from pypto.frontend.source import function_source

    node, src = function_source(fn)
    globals_ = dict(fn.__globals__)
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    if caller is not None and caller.f_code.co_name == "<lambda>":  # @pl.function(...): via the lambda above
        caller = caller.f_back
    if caller is not None:
        globals_.update(caller.f_locals)
    if fn.__closure__:
        globals_.update({n: c.cell_contents for n, c in zip(fn.__code__.co_freevars, fn.__closure__)})
    return parse_function_def(node, src, globals_)


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
    return parse_program_class(node, src, globals_, pyfuncs=dict(vars(cls)))


def parse(code: str, filename: str | None = None):
    """Parse DSL text: a module holding one ``@pl.program`` class (printed IR) gives a Program,
    one holding a single ``@pl.function`` (and no class) a Function, as the reference's
    ``pl.parse`` auto-detects. Module-level ``NAME = <literal>`` / ``pl.dynamic(...)`` lines name
    constants the kernels use; nothing else of the text is executed."""
    import pypto.language as pl
    import pypto.language.distributed as pld
    from pypto.frontend.program_parser import parse_function_def, parse_program_class
    from pypto.frontend.source import string_source

    tree, src = string_source(code, filename)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    globals_ = {"pl": pl, "pld": pld}   # pld: printed window-view parameters (pld.DistributedTensor)
    for node in tree.body:  # module-level constants: `N = 64`, `SHAPE = [32, 64]`
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                globals_[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError):
                pass
    if not classes and len(funcs) == 1:
        return parse_function_def(funcs[0], src, globals_)
    if len(classes) != 1:
        raise ParserSyntaxError(f"expected exactly one @pl.program class (or one @pl.function), found "
                                f"{len(classes)} classes and {len(funcs)} functions")
    for node in tree.body:  # `M = pl.dynamic("M")` lines name the program's dynamic dimensions
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute) \
                and node.value.func.attr == "dynamic" and len(node.value.args) == 1 \
                and isinstance(node.value.args[0], ast.Constant):
            globals_[node.targets[0].id] = pl.dynamic(node.value.args[0].value)
    return parse_program_class(classes[0], src, globals_)


def loads(path) -> object:
    """Parse a printed-IR file (e.g. a pass dump) into a Program (or a Function, see :func:`parse`)."""
    p = Path(path)
    return parse(p.read_text(encoding="utf-8"), filename=str(p))


def parse_program(code: str, filename: str | None = None):
    """:func:`parse` that must find an ``@pl.program`` class (the reference's older spelling)."""
    from pypto.ir.nodes import Program

    result = parse(code, filename)
    if not isinstance(result, Program):
        raise ParserSyntaxError("parse_program: the text holds a @pl.function, not a @pl.program class; "
                                "use pl.parse")
    return result


def loads_program(path):
    """:func:`loads` that must find an ``@pl.program`` class."""
    p = Path(path)
    return parse_program(p.read_text(encoding="utf-8"), filename=str(p))
