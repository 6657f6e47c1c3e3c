"""The pass pipeline. Reading :data:`PIPELINE` tells the lowering story:

1. InlineFunctions          each call of a ``@pl.jit.inline`` function becomes a copy of its body
2. UnrollLoops              each ``pl.unroll`` loop becomes one body copy per iteration
3. OutlineIncoreScopes      each ``pl.at`` scope becomes an InCore kernel; the entry orchestrates
4. ConvertTensorToTileOps   tensor ops in kernels become loads, tile ops and stores
5. LegalizeTileCast         casts the platform lacks become chains of native casts
6. AutoTileMatmulL0         a matmul whose operands exceed L0 becomes a loop over K chunks
7. InferTileMemorySpace     every tile gets a memory space; moves where an op needs another
8. AllocateMemoryAddr       every tile gets an address in its space (capacity checked)

Each pass is a module with ``NAME``, ``REQUIRES``, ``PRODUCES`` and ``run(program, ctx)``; the
manager (:mod:`pypto.passes.manager`) runs them, verifies, dumps and times them.
"""
from __future__ import annotations

from pypto.passes import (
    allocate_memory_addr, auto_tile_matmul_l0, convert_tensor_to_tile_ops, infer_tile_memory_space,
    inline_functions, legalize_tile_cast, outline_incore_scopes, unroll_loops,
)

PIPELINE = (
    inline_functions,
    unroll_loops,
    outline_incore_scopes,
    convert_tensor_to_tile_ops,
    legalize_tile_cast,
    auto_tile_matmul_l0,
    infer_tile_memory_space,
    allocate_memory_addr,
)

__all__ = ["PIPELINE"]
