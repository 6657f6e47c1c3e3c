"""Getting a kernel's source text and the offsets that map its AST back to the file."""
from __future__ import annotations

import ast
from pypto import pyast  # ast.parse behind a lock (CPython 3.11 is not thread-safe there)
import hashlib
import inspect
import itertools
import linecache
import textwrap
from dataclasses import dataclass

from pypto.errors import ParserError
from pypto.frontend.parser import SourceInfo

_counter = itertools.count()


@dataclass(frozen=True)
class SourceSnapshot:
    """The text of a function as it was when it was decorated: ``text`` (its lines), the file and
    the 1-based line it starts at, or ``error`` when Python keeps no source for it.

    A kernel's source is read once. Reading it again at a later specialisation would read the
    file as it is *then*: after an edit, the line the code object points at may hold another
    function, and a kernel would silently compile another's body."""

    text: str = ""
    filename: str = "<unknown>"
    start: int = 1
    error: str | None = None
    name: str = ""

    @property
    def digest(self) -> str:
        """SHA-256 of the file name, start line and text."""
        return hashlib.sha256(f"{self.filename}\0{self.start}\0{self.text}".encode()).hexdigest()


def snapshot_source(fn) -> SourceSnapshot:
    """Read the source of ``fn`` now (see :class:`SourceSnapshot`)."""
    name = getattr(fn, "__name__", repr(fn))
    try:
        filename = inspect.getsourcefile(fn) or "<unknown>"
        lines, start = inspect.getsourcelines(fn)  # re-validates linecache against the file
    except (OSError, TypeError) as e:
        return SourceSnapshot(error=str(e), name=name)
    return SourceSnapshot("".join(lines), filename, max(start, 1), None, name)


def function_source(fn, snapshot: SourceSnapshot | None = None) -> tuple[ast.FunctionDef | ast.ClassDef, SourceInfo]:
    """Parse the source of a Python function or class (``snapshot``: as read earlier; default: now);
    spans point into its real file."""
    snap = snapshot if snapshot is not None else snapshot_source(fn)
    if snap.error is not None:
        raise ParserError(
            f"@pl.jit cannot retrieve source code for '{snap.name or getattr(fn, '__name__', fn)}': {snap.error}",
            hint="define kernels in a .py file (the REPL, Jupyter and exec() keep no source)")
    text, filename, start = snap.text, snap.filename, snap.start
    dedented = textwrap.dedent(text)
    indent = _indent_width(text, dedented)
    expected = getattr(fn, "__name__", None)
    try:
        tree = pyast.parse(dedented)
    except SyntaxError as e:
        # the text Python points at is not a whole definition: the file was edited after the import
        raise ParserError(f"the source of '{expected}' in {filename} (line {start}) no longer parses ({e.msg}); "
                          "the file changed since it was imported",
                          hint="re-import the module (or restart) after editing it") from None
    node = tree.body[0]
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and expected and node.name != expected:
        # the file changed between the import and the first read: its line now holds other code
        raise ParserError(f"the source of '{expected}' in {filename} changed since it was imported (line {start} "
                          f"now defines '{node.name}')", hint="re-import the module (or restart) after editing it")
    # ast line numbers are 1-based within the snippet; the snippet starts at line `start`.
    return node, SourceInfo(filename, start - 1, indent)


def string_source(code: str, filename: str | None = None) -> tuple[ast.Module, SourceInfo]:
    """Parse a string; it is registered in linecache so errors can show the offending line."""
    name = filename or f"<pypto-ir-{next(_counter)}>"
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    return pyast.parse(code, filename=name), SourceInfo(name)


def _indent_width(original: str, dedented: str) -> int:
    for a, b in zip(original.splitlines(), dedented.splitlines()):
        if b.strip():
            return len(a) - len(b)
    return 0
