"""The pass pipeline. Reading :data:`PIPELINE` tells the lowering story:

1. OutlineIncoreScopes      each ``pl.at`` scope becomes an InCore kernel; the entry orchestrates
2. ConvertTensorToTileOps   tensor ops in kernels become loads, tile ops and stores
3. LegalizeTileCast         casts the platform lacks become chains of native casts
4. InferTileMemorySpace     every tile gets a memory space; moves where an op needs another
5. AllocateMemoryAddr       every tile gets an address in its space (capacity checked)

Each pass is a module with ``NAME``, ``REQUIRES``, ``PRODUCES`` and ``run(program, ctx)``; the
manager (:mod:`pypto.passes.manager`) runs them, verifies, dumps and times them.
"""
from __future__ import annotations

from pypto.passes import (
    allocate_memory_addr, convert_tensor_to_tile_ops, infer_tile_memory_space, legalize_tile_cast,
    outline_incore_scopes,
)

PIPELINE = (
    outline_incore_scopes,
    convert_tensor_to_tile_ops,
    legalize_tile_cast,
    infer_tile_memory_space,
    allocate_memory_addr,
)

__all__ = ["PIPELINE"]
