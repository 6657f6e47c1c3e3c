"""The PyPTO kernel language, imported as ``pl``::

    import pypto.language as pl

    @pl.jit
    def add(a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
            out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, b)
        return out

Kernel bodies are parsed into IR, never executed. See ``docs/`` for the language guide.
"""
from __future__ import annotations

from pypto.language.annotations import (
    Array,
    AsyncEvent,
    AsyncSession,
    InOut,
    MemRef,
    Out,
    PrefetchAsyncContext,
    Scalar,
    Tensor,
    Tile,
    TensorView,
    TileView,
    Tuple,
)
from pypto.language.constructs import RUNTIME, DslName, DslOp, OpNamespace
from pypto.language.dtypes import (
    BF16,
    BOOL,
    FP4,
    FP8E4M3FN,
    FP8E5M2,
    FP8E8M0,
    FP16,
    FP32,
    HF4,
    HF8,
    INDEX,
    INT4,
    INT8,
    INT16,
    INT32,
    INT64,
    TASK_ID,
    UINT4,
    UINT8,
    UINT16,
    UINT32,
    UINT64,
    DataType,
)
from pypto.language.enums import (
    AtomicType,
    CompactMode,
    ForKind,
    FunctionType,
    Level,
    Mem,
    MemorySpace,
    PadValue,
    ParamDirection,
    PipeType,
    Role,
    ScopeMode,
    SplitMode,
    TensorLayout,
    TileLayout,
)
from pypto.language.enums import ParamDirection as Direction
from pypto.language.jit import JITFunction, jit
from pypto.language.program import function, loads, loads_program, parse, parse_program, program

# the reference re-exports the TensorLayout members at top level (pl.NZ, pl.MX_A_ZZ, ...)
ND, DN, NZ = TensorLayout.ND, TensorLayout.DN, TensorLayout.NZ
MX_A_ZZ, MX_B_NN = TensorLayout.MX_A_ZZ, TensorLayout.MX_B_NN

inline = jit.inline   # @pl.inline: a helper spliced into each call site (= @pl.jit.inline)

# -- op entry points: pl.<name> for every DSL name in the op registry (pl.add, pl.load, ...) is
# resolved by __getattr__ below, so an op is declared once, in pypto/ops, and nowhere else.
tile = OpNamespace("tile")
tensor = OpNamespace("tensor")
dist = OpNamespace("dist")  # issue 17: the printed form of pld.* ops (pl.dist.notify(...)) parses back
prefetch = OpNamespace("prefetch")   # pl.prefetch.make_context / async_prefetch / session / wait (pypto/ops/prefetch.py)


class MaskPattern:
    """``pl.tile.MaskPattern``: the column patterns of ``pl.tile.gather_mask`` (bit k set: column k of
    each group is kept). Plain ints, so a printed program shows the number it passes."""

    P0101 = 1   # even columns (stride 2)
    P1010 = 2   # odd columns
    P0001 = 3   # column 0 of every 4
    P0010 = 4
    P0100 = 5
    P1000 = 6
    P1111 = 7   # every column


tile.MaskPattern = MaskPattern

# pl.min / pl.max: the scalar min / max of two values (the reference's; not a tile reduction, see
# row_min / col_max). They are Python's builtins, which the parser already understands: constants
# fold, runtime scalars become a scalar ``min`` / ``max`` expression.
from builtins import max, min  # noqa: E402,A004
tile.max, tile.min = max, min   # pl.tile.max / pl.tile.min: the same scalar max / min (the reference's)

# -- constructs
at = DslName("at")
range = DslName("range")
parallel = DslName("parallel")
unroll = DslName("unroll")
pipeline = DslName("pipeline")   # pl.pipeline(..., stage=F): the body replicated F times (UnrollLoops)
spmd = DslName("spmd")           # for i in pl.spmd(n): / with pl.spmd(n) as tid: one task of n blocks
spmd_submit = DslName("spmd_submit")   # res, tid = pl.spmd_submit(self.k, *args, core_num=n, deps=[...])
yield_ = DslName("yield_")
while_ = DslName("while_")       # for (x,) in pl.while_(init_values=(0,)): pl.cond(x < n) ... (WhileStmt)
cond = DslName("cond")           # the first statement of a pl.while_ body: its loop condition
const = DslName("const")
static_print = DslName("static_print")
static_assert = DslName("static_assert")
manual_scope = DslName("manual_scope")   # with pl.manual_scope(): no auto dependencies inside
scope = DslName("scope")                 # with pl.scope(mode=pl.ScopeMode.AUTO|MANUAL):
cluster = DslName("cluster")             # with pl.cluster(): dispatches co-scheduled on one cluster
split_aiv = DslName("split_aiv")         # for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN): per-lane region
split = DslName("split")                 # pl.at(..., optimizations=[pl.split(pl.SplitMode.UP_DOWN)])
cross_core_slot = DslName("cross_core_slot")   # pl.at(..., optimizations=[pl.cross_core_slot(slot_num=n)])
submit = DslName("submit")               # res, tid = pl.submit(self.k, *args, deps=[...], dumps=[...])
no_dep = DslName("no_dep")
AUTO = -1   # pl.reserve_buffer(..., base=pl.AUTO): the compiler / simulator picks the address


class _ArrayNamespace(OpNamespace):
    """``pl.array.create(n, pl.TASK_ID)``: an array of TaskIds (``deps=[tids]`` waits on every slot)."""

    create = DslName("array_create")
    get_element = DslName("array_get_element")         # pl.array.get_element(tids, i): as tids[i]
    update_element = DslName("array_update_element")   # tids = pl.array.update_element(tids, i, tid)

    def __repr__(self) -> str:
        return "pl.array"


array = _ArrayNamespace("array")
del _ArrayNamespace


class _SystemNamespace(OpNamespace):
    """``pl.system.task_dummy(deps=[...])``: a join task with no kernel; its TaskId stands for all of
    ``deps`` (the printed form is ``pl.tensor.task_dummy([...])``)."""

    task_dummy = DslName("task_dummy")
    # the reference's pl.system spellings of the cross-core pipe ops (registered as tile.*, pypto/ops/cross_core.py)
    tpush_to_aic, tpush_to_aiv = DslOp("tile.tpush_to_aic"), DslOp("tile.tpush_to_aiv")
    tpop_from_aic, tpop_from_aiv = DslOp("tile.tpop_from_aic"), DslOp("tile.tpop_from_aiv")
    tfree_to_aic, tfree_to_aiv = DslOp("tile.tfree_to_aic"), DslOp("tile.tfree_to_aiv")
    aic_initialize_pipe, aiv_initialize_pipe = DslOp("tile.aic_initialize_pipe"), DslOp("tile.aiv_initialize_pipe")
    reserve_buffer, import_peer_buffer = DslOp("tile.reserve_buffer"), DslOp("tile.import_peer_buffer")

    def __repr__(self) -> str:
        return "pl.system"


system = _SystemNamespace("system")
del _SystemNamespace
no_dep = no_dep               # pl.submit(self.k, pl.no_dep(t), ...): t is NO_DEP for that task


def DynVar(name: str):  # noqa: N802  (the reference's class name)
    """``pl.DynVar("M")``: the same as ``pl.dynamic("M")`` (the reference's name for its type)."""
    return dynamic(name)


def dynamic(name: str):
    """``M = pl.dynamic("M")``: a dynamic dimension for annotations (``pl.Tensor[[M, 128], pl.FP32]``).

    Use the same object wherever the same extent is meant. A ``@pl.jit`` kernel is not recompiled
    for a new extent of a dynamic dimension (the cache key holds ``None`` there).
    """
    from pypto.ir.types import DynDim

    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"pl.dynamic needs an identifier name, got {name!r}")
    return DynDim(name)


__all__ = [
    "BF16",
    "BOOL",
    "DN",
    "FP4",
    "FP8E4M3FN",
    "FP8E5M2",
    "FP8E8M0",
    "FP16",
    "FP32",
    "HF4",
    "HF8",
    "INDEX",
    "INT4",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "MX_A_ZZ",
    "MX_B_NN",
    "ND",
    "NZ",
    "RUNTIME",
    "TASK_ID",
    "UINT4",
    "UINT8",
    "UINT16",
    "UINT32",
    "UINT64",
    "AtomicType",
    "CompactMode",
    "DataType",
    "DynVar",
    "Direction",
    "DslName",
    "DslOp",
    "ForKind",
    "FunctionType",
    "InOut",
    "JITFunction",
    "Level",
    "Mem",
    "MemRef",
    "MemorySpace",
    "OpNamespace",
    "Out",
    "PadValue",
    "ParamDirection",
    "PipeType",
    "Role",
    "Scalar",
    "ScopeMode",
    "SplitMode",
    "Tensor",
    "TensorLayout",
    "Tile",
    "TileLayout",
    "TensorView",
    "TileView",
    "Tuple",
    "Array",
    "AsyncEvent",
    "AsyncSession",
    "PrefetchAsyncContext",
    "array",
    "at",
    "const",
    "cross_core_slot",
    "dynamic",
    "function",
    "jit",
    "loads",
    "loads_program",
    "inline",
    "manual_scope",
    "no_dep",
    "submit",
    "parallel",
    "parse",
    "parse_program",
    "pipeline",
    "prefetch",
    "program",
    "range",
    "scope",
    "split",
    "spmd",
    "split_aiv",
    "spmd_submit",
    "static_assert",
    "static_print",
    "system",
    "tensor",
    "tile",
    "unroll",
    "while_",
    "cond",
    "yield_",
]


def _dsl_names() -> set[str]:
    from pypto.ops.registry import dsl_names

    return dsl_names()


def _scalar_form_dsl(name: str) -> str | None:
    """The dispatching name behind a scalar-form spelling: ``pl.fmods`` -> ``fmod``, ``pl.ands`` ->
    ``and_``, ``pl.maximums`` -> ``maximum`` (the reference exposes both spellings; the registry
    declares one dispatching name per op, and ``pl.fmod(t, 2.0)`` already selects ``fmods``)."""
    from pypto.ops.registry import all_ops

    for op in all_ops().values():
        if op.dsl and op.dsl != name and op.name.split(".", 1)[1] == name:
            return op.dsl
    return None


def __getattr__(name: str):
    """``pl.<op>``: a dispatching entry point for each DSL name the op registry declares."""
    if not name.startswith("_") and name in _dsl_names():
        op = DslOp(name)
        globals()[name] = op  # cache: later lookups are plain attribute reads
        return op
    from pypto.language.constructs import OP_ALIASES

    alias = OP_ALIASES.get(name) or (None if name.startswith("_") else _scalar_form_dsl(name))
    if alias is not None:
        op = DslOp(alias)
        globals()[name] = op
        return op
    raise AttributeError(f"module 'pypto.language' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _dsl_names())
