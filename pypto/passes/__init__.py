"""The pass pipeline. Reading :data:`PIPELINE` tells the lowering story:

1. InlineFunctions          each call of a ``@pl.jit.inline`` function becomes a copy of its body
2. UnrollLoops              each ``pl.unroll`` loop becomes one body copy per iteration
2b. AccWindows              ``pl.matmul_acc`` into a ``pl.tile.slice`` column window of an
                            accumulator re-assigns the accumulator (the device writes it in place)
3. ConvertToSSA             the frontend's imperative IR becomes SSA: re-assignments get fresh Vars,
                            values re-assigned in a loop become carried values (iter_arg + yield +
                            return var), values assigned in an ``if`` become phis
4. Simplify                 constant scalars fold and propagate; dead branches, 0/1-trip loops and
                            unused scalar assignments disappear
5. FlattenCallExpr          every nested call is bound to a temporary: one call per statement
6. OutlineIncoreScopes      each ``pl.at`` scope becomes an InCore kernel; the entry orchestrates
                            (from here on every call's arguments match the callee's directions)
7. ConvertTensorToTileOps   tensor ops in kernels become loads, tile ops and stores
7b. FuseCreateAssembleToView  an orchestration create that a kernel fills and an assemble copies
                            into a bigger tensor becomes a view of that region (written in place)
7c. OptimizeOrchTensors     an orchestration loop's per-iteration output tensor for a kernel that only
                            turns the carried tensor into the next becomes the carried tensor (InOut)
8. FlattenTileNdTo2D        every kernel tile becomes 2-D (leading dims merged, rank 1 -> [1, N])
9. LegalizeTileCast         casts the platform lacks become chains of native casts
10. AutoTileMatmulL0        a matmul whose operands exceed L0 becomes a loop over K chunks
10b. LowerPipelineLoops     each ``pl.pipeline(stage=F)`` loop (the user's and AutoTile's K loops)
                            becomes F body copies per stride, plus a tail loop
11. InferTileMemorySpace    every tile gets a memory space; moves where an op needs another
11a. LowerAutoVectorSplit  an InCore kernel with pl.split_aiv regions, or an automatic pl.split,
                            is put in per-lane form: region heads become the lane index, the
                            vector side of a pl.split kernel is halved, crossings are named
                            (tile.aiv_shard / tile.aic_gather); split_aiv stamped
11b. ExpandMixedKernel     an InCore function whose tiles cross between cube and vector cores
                            becomes an AIC + AIV function pair called by a Group function
11c. InjectGMPipeBuffer    (a2a3) each function setting up a cross-core pipe, and its kernel-side
                            callers, get the GM slot workspace ``__gm_pipe_buffer`` as a parameter;
                            orchestration creates one per dispatch
11d. SplitVectorKernel      an AIV function with attrs split=UP_DOWN / LEFT_RIGHT (full-shape tiles)
                            becomes its per-lane form on both vector cores: halved tiles, offsets
                            + lane * half, valid extents shared out per lane (split_aiv ones only
                            get dual_aiv_dispatch)
12. NormalizeReturnOrder    a kernel's i-th result is its i-th Out/InOut parameter; call sites follow
13. InitMemRef              every kernel tile gets a buffer of its own, ``MemRef("mem_vec_3", 0,
                            size)`` (no address yet); a loop's carried value and result share one
14. MemoryReuse             tiles whose lifetimes do not overlap share a buffer (same size, first
                            fit, largest first; in-place and loop-entry hand-offs preferred)
15. AllocateMemoryAddr      every buffer gets an address in its space (buffers with disjoint
                            lifetimes packed onto the same bytes; capacity checked; no two live
                            tiles overlap)
16. DeriveCallDirections    every task dispatch gets its per-argument runtime tags (INPUT / INOUT /
                            OUTPUT_EXISTING / NO_DEP / SCALAR; Out promoted by R-seq, R-prior,
                            R-enclosing)
17. AutoDeriveTaskDependencies  (only with ``analyze_auto_scopes_for_deps``) producer edges the
                            compiler can prove are recorded on the consumer call
18. FinalSimplify           Simplify once more on the final program
19. InsertCommFence         kernels: a cache invalidate + fence after each write into a window view,
                            a fence after each remote write, an invalidate after each wait (the
                            reference's data-before-signal markers; no-ops on the simulator)

The frontend emits pre-SSA IR with nested calls (see :mod:`pypto.frontend.parser`): passes 1-2
work on that form, SSA is verified from pass 3 on and NoNestedCalls from pass 5 on.

Each pass is a module with ``NAME``, ``REQUIRES``, ``PRODUCES`` and ``run(program, ctx)``; the
manager (:mod:`pypto.passes.manager`) runs them, verifies, dumps and times them. ``docs/compiler.md``
describes each pass and property.
"""
from __future__ import annotations

from pypto.passes import (
    allocate_memory_addr, auto_derive_task_dependencies, auto_tile_matmul_l0, convert_tensor_to_tile_ops,
    convert_to_ssa, derive_call_directions, final_simplify, flatten_call_expr, flatten_tile_nd_to_2d,
    fuse_create_assemble, infer_tile_memory_space, init_mem_ref, inline_functions, legalize_tile_cast, memory_reuse,
    normalize_return_order, outline_incore_scopes, simplify, unroll_loops,
)
from pypto.passes import lower_pipeline_loops, optimize_orch_tensors  # noqa: E402  (issue 15)
from pypto.passes import (  # noqa: E402  (issue 16: mixed cube + vector kernels)
    expand_mixed_kernel, inject_gm_pipe_buffer, lower_auto_vector_split, split_vector_kernel,
)
from pypto.passes import insert_comm_fence  # noqa: E402  (issue 17: multi-rank kernels)
from pypto.passes import acc_windows  # noqa: E402  (issue 15: matmul_acc into an Acc column window)

PIPELINE = (
    inline_functions,
    unroll_loops,
    acc_windows,
    convert_to_ssa,
    simplify,
    flatten_call_expr,
    outline_incore_scopes,
    convert_tensor_to_tile_ops,
    fuse_create_assemble,
    optimize_orch_tensors,
    flatten_tile_nd_to_2d,
    legalize_tile_cast,
    auto_tile_matmul_l0,
    lower_pipeline_loops,
    infer_tile_memory_space,
    lower_auto_vector_split,
    expand_mixed_kernel,
    inject_gm_pipe_buffer,
    split_vector_kernel,
    normalize_return_order,
    init_mem_ref,
    memory_reuse,
    allocate_memory_addr,
    derive_call_directions,
    auto_derive_task_dependencies,
    final_simplify,
    insert_comm_fence,
)



# The reference's pass-level API (its ``pypto.passes`` is the native ``pypto_core.passes``): the
# PassContext, instruments and pipeline classes, and each pass module callable as the reference's
# factory (``passes.convert_to_ssa()`` is a Pass running ours). See pypto.passes.api.
from pypto.passes import api as _api  # noqa: E402
from pypto.passes.api import (  # noqa: E402,F401
    BY_CONSTRUCTION as _BY_CONSTRUCTION, CallbackInstrument, DiagnosticCheck, DiagnosticCheckSet, DiagnosticInstrument,
    DiagnosticPhase, MemoryPlanner, Pass, PassContext, PassInstrument, PassPipeline, ReportInstrument, RuntimeKind,
    VerificationInstrument, VerificationLevel, VerificationMode, get_default_diagnostic_phase,
    get_default_verification_level, runtime_kind_from_name, runtime_kind_to_name,
)

from pypto.passes import lower_composite_ops  # noqa: E402  (the reference's; not in PIPELINE, see its module)
# the HOST orchestrator's pipeline (issue 17): the reference's distributed passes over the host body
from pypto.passes import host_pipeline  # noqa: E402,F401
from pypto.passes.host_pipeline import (  # noqa: E402,F401
    lower_host_tensor_collectives, materialize_comm_domain_scopes, synthesize_allreduce_signals,
)

_api.make_modules_callable((*PIPELINE, lower_composite_ops))
fuse_create_assemble_to_slice = _api.fuse_create_assemble_to_slice
ctrl_flow_transform = _api.ctrl_flow_transform
normalize_stmt_structure = _api.normalize_stmt_structure
outline_hierarchy_scopes = _api.outline_hierarchy_scopes
outline_cluster_scopes = _api.outline_cluster_scopes


def __getattr__(name: str):
    # a reference pass with no counterpart: an AttributeError naming what covers its work here
    raise _api.absent(name)


__all__ = ["PIPELINE", *_api.__all__]
