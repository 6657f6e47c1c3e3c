"""Module aliases: an old import path that names a module which now lives elsewhere.

``alias_modules({"pypto.ir.compile": "pypto.driver.build"})`` makes ``import pypto.ir.compile`` and
``from pypto.driver.build import run_pipeline`` give the module ``pypto.driver.build`` itself: one
module object under two names, so a ``monkeypatch`` through either name is seen by both, and no
class is defined twice. The target is imported only when the alias is first imported, which is what
lets a low package (``pypto.ir``) keep the reference's paths to a higher one (the driver) without
importing it: there is no file at the old path, hence no import edge (docs/architecture.md, "Layers").

Why not a thin module at the old path (``from pypto.driver.build import *``)? It would be a second
module object (private names and monkeypatches do not travel) and a real import edge from the low
package up to the high one.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["alias_modules"]


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the aliased names; "loading" one imports its target and returns that module."""

    def __init__(self):
        self.targets: dict[str, str] = {}
        self._real_specs: dict = {}   # alias name -> the target's spec, between create and exec

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.targets:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(self.targets[spec.name])
        # the import system now overwrites ``__spec__`` with the alias's spec: keep the real one
        # (importlib.reload, pickling by module name and tracebacks use it)
        self._real_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        # the target already ran: nothing to execute; the alias name's spec is the import system's
        module.__spec__ = self._real_specs.pop(module.__spec__.name)


_FINDER = _AliasFinder()


def alias_modules(aliases: dict[str, str]) -> None:
    """Register ``{old module name: real module name}`` (idempotent)."""
    _FINDER.targets.update(aliases)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
