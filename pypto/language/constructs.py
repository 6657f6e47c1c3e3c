"""DSL names that are parsed, never executed: op entry points (``pl.add``), loop and scope
constructs (``pl.range``, ``pl.at``), ``pl.yield_``, ``pl.const``.

A kernel body is turned into IR from its source, so these objects only need an identity the
frontend can recognise when it resolves a name. Calling one outside a kernel raises an error that
says so, instead of silently computing something.
"""
from __future__ import annotations

from pypto.errors import PyptoError


class DslName:
    """A name the frontend interprets (``kind`` is ``"op"`` or ``"construct"``)."""

    kind = "construct"

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"pl.{self.name}"

    def __call__(self, *args, **kwargs):
        raise PyptoError(
            f"pl.{self.name} is part of the kernel language: it is parsed inside a @pl.jit kernel "
            "(or a @pl.program function), not called from Python",
            hint="move the call into a kernel body; run the kernel by calling it with torch tensors")


class _OpDoc:
    """``DslOp.__doc__``: the class's own docstring on the class, the op's (from the registry) on
    an instance, computed when asked (``help(pl.add)``), so importing ``pl`` loads no op family."""

    def __init__(self, class_doc: str):
        self.class_doc = class_doc

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.class_doc
        from pypto.ops.signature import docstring  # (the language facade reaches up lazily: LAZY_UP)

        return docstring(obj.name)


class DslOp(DslName):
    """A ``pl.<op>`` entry point; ``pl.add`` dispatches on operand kinds, ``pl.tile.add`` names one op.

    ``help(pl.add)`` / ``inspect.signature(pl.add)`` show the op's schema and doc (the entry point is
    a routine for ``inspect``: it has ``__get__``, returning itself, and a ``__signature__``)."""

    kind = "op"

    def __init__(self, name: str):
        super().__init__(name)
        self.__name__ = self.__qualname__ = name.rsplit(".", 1)[-1]
        self.__module__ = "pypto.language"

    def __get__(self, obj, owner=None):
        return self   # never bound: an entry point stored on a class stays the entry point

    @property
    def __signature__(self):
        from pypto.ops.signature import signature

        return signature(self.name)


DslOp.__doc__ = _OpDoc(DslOp.__doc__)


# other names of an op (the reference's spellings): pl.arange / pl.tile.arange are ``ci``
OP_ALIASES = {"arange": "ci"}
# the reference's level-specific spellings: pl.tile.create_tile is tile.create, pl.tensor.create_tensor
# is tensor.create (pl.create_tile / pl.create_tensor are the ops' dsl names already)
LEVEL_ALIASES = {("tile", "create_tile"): "create", ("tensor", "create_tensor"): "create"}


class OpNamespace:
    """``pl.tile`` / ``pl.tensor``: attribute access names one registry op (``pl.tile.add``)."""

    def __init__(self, level: str):
        self._level = level

    def __getattr__(self, name: str) -> DslOp:
        if name.startswith("__"):
            raise AttributeError(name)
        name = LEVEL_ALIASES.get((self._level, name), name)
        return DslOp(f"{self._level}.{OP_ALIASES.get(name, name)}")

    def __repr__(self) -> str:
        return f"pl.{self._level}"


class _Runtime:
    """``pl.RUNTIME``: keep a scalar parameter a runtime value instead of a specialisation constant."""

    def __repr__(self) -> str:
        return "pl.RUNTIME"


RUNTIME = _Runtime()
