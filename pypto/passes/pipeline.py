"""Custom pipelines: the default pipeline with a pass inserted, dropped or replaced.

    from pypto.passes.pipeline import Pipeline

    def swap_sub(program):            # a user pass: Program -> Program, named by __name__
        ...
    pipe = Pipeline.default().insert_after("ConvertTensorToTileOps", swap_sub)
    compiled = pypto.ir.compile(program, passes=pipe)      # or RunConfig(passes=pipe) on @pl.jit

A user pass may also take ``(program, ctx)`` to see the :class:`PassContext` (platform). The pass
manager verifies, dumps and times user passes exactly like built-in ones, so a planted fault shows up
in ``passes_dump/NN_after_<name>.py`` and in ``validate_ir``.
"""
from __future__ import annotations

from typing import Iterator, Sequence

from pypto.passes.manager import PassInfo, as_pass
from pypto.passes import PIPELINE


class Pipeline(Sequence):
    """An immutable, ordered list of passes; the editing methods return new pipelines."""

    def __init__(self, passes: Sequence = ()):
        self._passes: tuple[PassInfo, ...] = tuple(as_pass(p) for p in passes)
        names = [p.name for p in self._passes]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"pipeline has duplicate pass names: {sorted(dup)}; give user passes distinct names")

    @classmethod
    def default(cls) -> "Pipeline":
        """The pipeline ``pypto.ir.compile`` runs by default."""
        return cls(PIPELINE)

    @property
    def names(self) -> list[str]:
        """Pass names in order."""
        return [p.name for p in self._passes]

    def _index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no pass named {name!r} in the pipeline; passes: {', '.join(self.names)}") from None

    def insert_after(self, name: str, p) -> "Pipeline":
        """A copy with ``p`` run right after the pass ``name``."""
        i = self._index(name) + 1
        return Pipeline(self._passes[:i] + (as_pass(p),) + self._passes[i:])

    def insert_before(self, name: str, p) -> "Pipeline":
        """A copy with ``p`` run right before the pass ``name``."""
        i = self._index(name)
        return Pipeline(self._passes[:i] + (as_pass(p),) + self._passes[i:])

    def drop(self, name: str) -> "Pipeline":
        """A copy without the pass ``name``."""
        i = self._index(name)
        return Pipeline(self._passes[:i] + self._passes[i + 1:])

    def replace(self, name: str, p) -> "Pipeline":
        """A copy with the pass ``name`` replaced by ``p``."""
        i = self._index(name)
        return Pipeline(self._passes[:i] + (as_pass(p),) + self._passes[i + 1:])

    def __getitem__(self, i):
        return self._passes[i]

    def __len__(self) -> int:
        return len(self._passes)

    def __iter__(self) -> Iterator[PassInfo]:
        return iter(self._passes)

    def __repr__(self) -> str:
        return f"Pipeline({' -> '.join(self.names)})"
