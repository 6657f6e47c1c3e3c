"""FinalSimplify: the second run of :mod:`pypto.passes.simplify`, as the last pass of the pipeline.

Requires: nothing. Produces: nothing. Same rewrites as Simplify (constant folding and propagation,
dead-branch and 0/1-trip loop removal, scalar DCE) on the allocated program; branch and loop
removal is skipped where it would rebind a tile that already has an address. It has its own name
because pass names are unique within a pipeline (``insert_after("Simplify", ...)`` means the first).
"""
from __future__ import annotations

from pypto.passes.simplify import run  # noqa: F401  (the pass entry point)

NAME = "FinalSimplify"
REQUIRES = ()
PRODUCES = ()
