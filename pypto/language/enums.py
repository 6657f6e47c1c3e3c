"""Enumerations exposed on ``pl``: memory spaces, levels, function kinds, pad values, ...

They are plain :class:`enum.Enum` classes whose ``repr`` is the DSL spelling, so the IR printer can
print any enum attribute as ``repr(value)`` and the parser reads it back.
"""
from __future__ import annotations

import enum

# The DSL spelling of an enum class when it differs from the class name (pl.Mem is the short alias).
_PREFIX = {"MemorySpace": "Mem", "ParamDirection": "Direction"}


class _DslEnum(enum.Enum):
    """An enum whose repr is its DSL spelling, e.g. ``pl.Mem.Vec``."""

    def __repr__(self) -> str:
        return f"pl.{_PREFIX.get(type(self).__name__, type(self).__name__)}.{self.name}"

    __str__ = __repr__


class MemorySpace(_DslEnum):
    """On-chip and global memory spaces (``pl.Mem`` is an alias)."""

    DDR = "ddr"
    Vec = "vec"          # UB, vector core
    Mat = "mat"          # L1, cube core
    Left = "left"        # L0A
    Right = "right"      # L0B
    Acc = "acc"          # L0C
    Bias = "bias"
    LeftScale = "left_scale"
    RightScale = "right_scale"
    ScalarLocal = "scalar_local"


Mem = MemorySpace


class TensorLayout(_DslEnum):
    """Layout of a global tensor: ``ND`` (row-major) or ``DN`` (the trailing pair column-major: a
    ``pl.transpose`` view, ``pl.TensorView(layout=DN)``, ``pl.tensor.view(..., layout=DN)``,
    ``pl.create_tensor(..., layout=DN)``; docs/language.md "Layouts"). ``NZ`` is a tile layout,
    refused on a tensor. ``MX_A_ZZ`` / ``MX_B_NN`` name the reference's packed layouts of MX scale
    tensors (FP8E8M0, the ``matmul_mx`` A / B scales): accepted in a ``pl.Tensor`` annotation, where
    ``pl.load`` unpacks them (:mod:`pypto.numerics.mx`); ``pl.create_tensor`` and views refuse them."""

    ND = "nd"
    DN = "dn"
    NZ = "nz"
    MX_A_ZZ = "mx_a_zz"
    MX_B_NN = "mx_b_nn"


class TileLayout(_DslEnum):
    """Block / scatter layout of a tile (the reference's ``TileView`` ``blayout`` / ``slayout``):
    ``none_box``, ``row_major``, ``col_major``. Where the device puts each element in the buffer:
    ``pl.move(..., blayout=, slayout=)`` and ``pl.TileView(...)`` accept and check it; every op
    converts between layouts, so the simulators hold a tile as its logical matrix and no value
    depends on it (docs/language.md "Layouts")."""

    none_box = "none_box"
    row_major = "row_major"
    col_major = "col_major"


class CompactMode(_DslEnum):
    """How layout-changing ops pack a partial boxed tile (the reference's ``CompactMode``):
    ``null`` (the ordinary physical layout) or ``normal`` (only the valid region). A name only:
    boxed layouts are not modelled (see :class:`TileLayout`)."""

    null = "null"
    normal = "normal"


class PipeType(_DslEnum):
    """The device's execution pipes (the reference's ``PipeType``, in its order: ``int(p)`` is the
    reference's code): MTE1 (L1 -> L0A/L0B), MTE2 (DDR -> on-chip), MTE3 (on-chip -> DDR), M (cube),
    V (vector), S (scalar), FIX (L0C write-back), ALL. The simulators order work by data
    dependencies, not by pipes; this is the name the reference's synchronisation ops take."""

    MTE1 = 0
    MTE2 = 1
    MTE3 = 2
    M = 3
    V = 4
    S = 5
    FIX = 6
    ALL = 7

    def __int__(self) -> int:
        return self.value


class SplitMode(_DslEnum):
    """How the device splits one vector kernel over the two AIV lanes of a core group
    (``pl.at(..., optimizations=[pl.split(mode)])``): halving the rows (``UP_DOWN``), the columns
    (``LEFT_RIGHT``), or not at all (``NONE``). Each lane computes the same elements it would
    alone, so the result is the same whatever the mode: the simulators run the kernel once."""

    NONE = "none"
    UP_DOWN = "up_down"
    LEFT_RIGHT = "left_right"


class ScopeMode(_DslEnum):
    """Dependency tracking of a ``with pl.scope(mode=...)`` region: ``AUTO`` (inferred, the
    default everywhere) or ``MANUAL`` (only ``deps=`` orders tasks, as ``pl.manual_scope()``)."""

    AUTO = "auto"
    MANUAL = "manual"


class Level(_DslEnum):
    """Hierarchy levels; ``CORE_GROUP`` on ``pl.at`` makes an InCore scope."""

    AIV = "aiv"
    AIC = "aic"
    CORE_GROUP = "core_group"
    CHIP_DIE = "chip_die"
    CHIP = "chip"
    HOST = "host"
    CLUSTER_0 = "cluster_0"
    CLUSTER_1 = "cluster_1"
    CLUSTER_2 = "cluster_2"
    GLOBAL = "global"


class Role(_DslEnum):
    """Function roles in the hierarchy."""

    Orchestrator = "orchestrator"
    SubWorker = "subworker"


class FunctionType(_DslEnum):
    """IR function kinds."""

    Opaque = "opaque"
    Orchestration = "orchestration"
    InCore = "incore"
    AIC = "aic"
    AIV = "aiv"
    Group = "group"
    Spmd = "spmd"
    Inline = "inline"
    Graph = "graph"


# the function kinds that are kernels of one core (tile code, lowered by the InCore pipeline):
# InCore (either core kind, as the ops need), AIC (the cube core), AIV (a vector core)
KERNEL_TYPES = frozenset({FunctionType.InCore, FunctionType.AIC, FunctionType.AIV})
# what an orchestration call dispatches as a task: a kernel, or a Group (a mixed kernel: one AIC
# function and one AIV function on one cluster, talking through cross-core pipes)
TASK_TYPES = KERNEL_TYPES | {FunctionType.Group}


class ForKind(_DslEnum):
    """Loop kinds: ``pl.range`` / ``pl.parallel`` / ``pl.unroll`` / ``pl.pipeline``."""

    Sequential = "sequential"
    Parallel = "parallel"
    Unroll = "unroll"
    Pipeline = "pipeline"


class PadValue(_DslEnum):
    """What ``fillpad`` writes outside a tile's valid region."""

    null = "null"
    zero = "zero"
    max = "max"
    min = "min"


class AtomicType(_DslEnum):
    """Store/assemble atomicity: ``Add`` accumulates into global memory."""

    None_ = 0
    Add = 1


class ParamDirection(_DslEnum):
    """Direction of a function parameter."""

    In = "in"
    Out = "out"
    InOut = "inout"
