"""The pass pipeline. Reading :data:`PIPELINE` tells the lowering story:

1. InlineFunctions          each call of a ``@pl.jit.inline`` function becomes a copy of its body
2. UnrollLoops              each ``pl.unroll`` loop becomes one body copy per iteration
3. Simplify                 constant scalars fold and propagate; dead branches, 0/1-trip loops and
                            unused scalar assignments disappear
4. OutlineIncoreScopes      each ``pl.at`` scope becomes an InCore kernel; the entry orchestrates
                            (from here on every call's arguments match the callee's directions)
5. ConvertTensorToTileOps   tensor ops in kernels become loads, tile ops and stores
6. FlattenTileNdTo2D        every kernel tile becomes 2-D (leading dims merged, rank 1 -> [1, N])
7. LegalizeTileCast         casts the platform lacks become chains of native casts
8. AutoTileMatmulL0         a matmul whose operands exceed L0 becomes a loop over K chunks
9. InferTileMemorySpace     every tile gets a memory space; moves where an op needs another
10. NormalizeReturnOrder    a kernel's i-th result is its i-th Out/InOut parameter; call sites follow
11. AllocateMemoryAddr      every tile gets an address in its space (capacity checked; no two live
                            tiles overlap)
12. DeriveCallDirections    every task dispatch gets its per-argument runtime tags (INPUT / INOUT /
                            OUTPUT_EXISTING / NO_DEP / SCALAR; Out promoted by R-seq, R-prior,
                            R-enclosing)
13. FinalSimplify           Simplify once more on the final program

Each pass is a module with ``NAME``, ``REQUIRES``, ``PRODUCES`` and ``run(program, ctx)``; the
manager (:mod:`pypto.passes.manager`) runs them, verifies, dumps and times them. ``docs/compiler.md``
describes each pass and property.
"""
from __future__ import annotations

from pypto.passes import (
    allocate_memory_addr, auto_tile_matmul_l0, convert_tensor_to_tile_ops, derive_call_directions, final_simplify,
    flatten_tile_nd_to_2d, infer_tile_memory_space, inline_functions, legalize_tile_cast, normalize_return_order,
    outline_incore_scopes, simplify, unroll_loops,
)

PIPELINE = (
    inline_functions,
    unroll_loops,
    simplify,
    outline_incore_scopes,
    convert_tensor_to_tile_ops,
    flatten_tile_nd_to_2d,
    legalize_tile_cast,
    auto_tile_matmul_l0,
    infer_tile_memory_space,
    normalize_return_order,
    allocate_memory_addr,
    derive_call_directions,
    final_simplify,
)

__all__ = ["PIPELINE"]
