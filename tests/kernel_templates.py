"""Test kernels generated from templates (CONTRIBUTING.md, "Test kernels from templates").

A family of near-identical test kernels (one op, dtype, shape or planted bug apart) is written once
as a template string with ``$name`` placeholders; :func:`kernels` fills it in and runs the text as a
module, so each kernel is parsed by the frontend from its source exactly as a kernel in a ``.py``
file is (``@pl.jit`` / ``@pl.program`` read it with ``inspect``). The text is registered in
``linecache`` under the file name ``<FAMILY.NAME>``, as ``pl.parse`` registers the strings it parses
(pypto/frontend/source.py), and the module's loader serves it to ``inspect`` and to :func:`source`:
error spans, carets, race and deadlock reports name real lines of the generated text
(``<kernels_sync.EventHandoff>:23``), which :func:`where` looks up for tests that assert a report
names a line.

Why ``linecache`` and not files on disk: nothing to write, clean up or race on under pytest-xdist,
and Python itself uses ``<...>`` file names for source that is not a file (``<string>``).
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import inspect
import linecache
import os
import re
import string
import sys
import textwrap
import types

HEADER = "import pypto.language as pl\nimport pypto.language.distributed as pld\n"


class _TextLoader(importlib.abc.InspectLoader):
    """Serves a generated module's text (``get_source``); with a loader, ``inspect.getsourcefile``
    accepts the ``<...>`` file name and reads the lines from ``linecache``."""

    def __init__(self, text: str):
        self._text = text

    def get_source(self, fullname: str) -> str:
        return self._text


def render(template: str, **params) -> str:
    """``template`` (dedented) with each ``$name`` / ``${name}`` replaced by ``str(params[name])``.

    A placeholder alone on its line stands for statements: a multi-line value is indented like the
    placeholder, line by line, and an empty one removes the line. A placeholder with no parameter
    raises ``KeyError``: a kernel is never built half filled in."""
    values = {k: str(v) for k, v in params.items()}
    lines = []
    for line in textwrap.dedent(template).splitlines(True):
        m = _ALONE.match(line)
        if m is not None and (m.group(2) or m.group(3)) in values:
            value = values[m.group(2) or m.group(3)]
            lines += [m.group(1) + v + "\n" for v in textwrap.dedent(value).splitlines() if v.strip()]
            continue
        lines.append(string.Template(line).substitute(values))
    return "".join(lines)


_ALONE = re.compile(r"^([ \t]*)\$(?:(\w+)|\{(\w+)\})[ \t]*\n?$")


def kernels(name: str, template: str, *, family: str | None = None, header: str = HEADER,
            consts: dict | None = None, **params) -> types.ModuleType:
    """The module built from ``header`` + ``render(template, name=name, **params)``: its kernels are
    attributes (``kernels("chunked_mm", T, chunk=192).chunked_mm`` where ``T`` defines ``$name``).

    ``family`` (default: the calling module's last dotted name, e.g. ``kernels_sync``) and ``name``
    name the module (``tests_kernels.FAMILY.NAME``) and its source file (``<FAMILY.NAME>``, what
    spans and reports print). ``consts`` become module constants of the text (``D = 16``) that its
    kernels read as globals, as a hand-written kernel module's do. One name, one text: building a
    name again with other text is an error, so two cases cannot silently share (and overwrite) one
    source."""
    if family is None:
        family = sys._getframe(1).f_globals.get("__name__", "tests").rpartition(".")[2]
    text = header + "".join(f"{k} = {v!r}\n" for k, v in (consts or {}).items()) + "\n" \
        + render(template, name=name, **params)
    filename = f"<{family}.{name}>"
    modname = f"tests_kernels.{family}.{name}"
    old = sys.modules.get(modname)
    if old is not None:
        if old.__loader__.get_source(modname) != text:
            raise ValueError(f"kernel module {modname!r} was already built from another text")
        return old
    loader = _TextLoader(text)
    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader(modname, loader, origin=filename))
    mod.__file__ = filename
    # the frontend reads each kernel's source with inspect (linecache) while the module runs
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    sys.modules[modname] = mod
    try:
        exec(compile(text, filename, "exec"), mod.__dict__)
    except BaseException:
        sys.modules.pop(modname, None)
        raise
    return mod


def source(obj) -> str:
    """The text of the module that holds ``obj`` (a kernel, a program or a module): the generated
    text for what :func:`kernels` built, else the module's file."""
    mod = _module_of(obj)
    return mod.__loader__.get_source(mod.__name__)


def where(obj, marker: str) -> str:
    """``FILE:LINE`` of the first line holding ``marker`` in the text of the module that holds
    ``obj`` (:func:`source`), ``FILE`` as the simulator's reports print it (the base name:
    ``<kernels_sync.EventHandoff>``, ``kernels_sync.py``); tests check reports name it."""
    mod = _module_of(obj)
    for n, line in enumerate(source(mod).splitlines(), 1):
        if marker in line:
            return f"{os.path.basename(mod.__file__)}:{n}"
    raise LookupError(f"no line of {mod.__file__} holds {marker!r}")


def filename(obj) -> str:
    """The file name reports print for the module that holds ``obj`` (as in :func:`where`)."""
    return os.path.basename(_module_of(obj).__file__)


def _module_of(obj) -> types.ModuleType:
    if isinstance(obj, types.ModuleType):
        return obj
    fn = getattr(obj, "fn", obj)   # a @pl.jit kernel: its Python function
    if inspect.isfunction(fn) or inspect.isclass(fn):
        return sys.modules[fn.__module__]
    # a parsed @pl.program is an IR node: the module that holds it (a generated one first)
    mods = sorted(sys.modules.items(), key=lambda kv: not kv[0].startswith("tests_kernels."))
    for _, mod in mods:
        if getattr(mod, "__file__", None) and any(v is obj for v in list(vars(mod).values())):
            return mod
    raise LookupError(f"no module holds {obj!r}")
