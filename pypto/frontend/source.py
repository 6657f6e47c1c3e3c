"""Getting a kernel's source text and the offsets that map its AST back to the file."""
from __future__ import annotations

import ast
import inspect
import itertools
import linecache
import textwrap

from pypto.errors import ParserError
from pypto.frontend.parser import SourceInfo

_counter = itertools.count()


def function_source(fn) -> tuple[ast.FunctionDef | ast.ClassDef, SourceInfo]:
    """Parse the source of a Python function or class; spans point into its real file."""
    try:
        lines, start = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError) as e:
        raise ParserError(
            f"@pl.jit cannot retrieve source code for '{getattr(fn, '__name__', fn)}': {e}",
            hint="define kernels in a .py file (the REPL, Jupyter and exec() keep no source)") from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = _indent_width(text, dedented)
    tree = ast.parse(dedented)
    node = tree.body[0]
    # ast line numbers are 1-based within the snippet; the snippet starts at line `start`.
    return node, SourceInfo(filename, start - 1, indent)


def string_source(code: str, filename: str | None = None) -> tuple[ast.Module, SourceInfo]:
    """Parse a string; it is registered in linecache so errors can show the offending line."""
    name = filename or f"<pypto-ir-{next(_counter)}>"
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    return ast.parse(code, filename=name), SourceInfo(name)


def _indent_width(original: str, dedented: str) -> int:
    for a, b in zip(original.splitlines(), dedented.splitlines()):
        if b.strip():
            return len(a) - len(b)
    return 0
