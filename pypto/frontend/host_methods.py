"""The HOST-level methods of ``@pl.program`` classes (``@pl.function(level=pl.Level.HOST)``): kept
as source for the multi-rank host interpreter (:mod:`pypto.runtime.distributed.host`), not parsed
into the Program (they run on the host, over host values). A side table keyed by the Program's
identity, since IR nodes are frozen; it holds the program so the key stays valid."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

_TABLE: dict[int, tuple[Any, list]] = {}


@dataclass(frozen=True)
class HostMethod:
    """One HOST method: its AST, source info, the class's globals and its parameter names."""

    name: str
    node: ast.FunctionDef
    src: Any
    globals_: dict
    params: tuple[str, ...]
    annotations: tuple
    role: str | None = None       # "Orchestrator" / "SubWorker" (pl.Role), None when not given
    pyfunc: Any = None            # a sub-worker's Python function (run on the host as written)

    @property
    def is_subworker(self) -> bool:
        """A sub-worker: host Python called by the orchestrator, not interpreted."""
        return self.role == "SubWorker"


def register(program, methods: list[HostMethod]) -> None:
    """Record ``program``'s HOST methods."""
    if methods:
        _TABLE[id(program)] = (program, list(methods))


def host_methods(program) -> list[HostMethod]:
    """``program``'s HOST methods (empty for a single-card program)."""
    hit = _TABLE.get(id(program))
    return list(hit[1]) if hit is not None and hit[0] is program else []
