"""Turning generated module text into Python modules, keyed by content.

A compiled program keeps the text of its kernel and orchestration modules as it wrote (or, reopened,
verified) them, and the simulator executes that text, never whatever a path holds at run time: a
directory shared by several builds, or rewritten by another thread or process, cannot make one
program run another's kernels, and a deleted directory does not stop a program already compiled.
Identical text gives one shared module object (modules hold no per-run state).
"""
from __future__ import annotations

import hashlib
import sys
import threading
import types
from pathlib import Path

_lock = threading.Lock()
_MODULES: dict[tuple[str, str], types.ModuleType] = {}


def module_from_source(text: str, filename: str | Path) -> types.ModuleType:
    """The module built from ``text`` (``filename`` names it in tracebacks); cached by content."""
    filename = str(filename)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    key = (digest, filename)
    with _lock:
        mod = _MODULES.get(key)
    if mod is not None:
        return mod
    name = f"pypto_gen_{digest[:16]}_{Path(filename).stem}"
    mod = types.ModuleType(name)
    mod.__file__ = filename
    code = compile(text, filename, "exec")
    # generated code may refer to its own module by name (e.g. pickling); register it before running
    with _lock:
        existing = _MODULES.get(key)
        if existing is not None:
            return existing
        sys.modules[name] = mod
    try:
        exec(code, mod.__dict__)
    except BaseException:
        with _lock:
            sys.modules.pop(name, None)
        raise
    with _lock:
        return _MODULES.setdefault(key, mod)


def load_module(path: Path) -> types.ModuleType:
    """Read ``path`` once and build its module (:func:`module_from_source`). Prefer
    :meth:`pypto.driver.compiled.CompiledProgram.load_modules`, which checks the text is the program's."""
    path = Path(path)
    return module_from_source(path.read_text(encoding="utf-8"), path.resolve())
