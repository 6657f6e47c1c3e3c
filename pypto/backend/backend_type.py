"""The reference's backend vocabulary (``BackendType``, ``Backend910B`` / ``Backend950``, the SoC
hierarchy and the process-wide backend setting) as views of our platform descriptions.

Nothing here describes hardware a second time: every number comes from the :class:`Platform` of
:mod:`pypto.backend.platforms`. ``BackendType.Ascend910B`` is the a2a3 architecture (simulated by
``a2a3sim``), ``BackendType.Ascend950`` the a5 architecture (``a5sim``).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from pypto.backend.platforms import PLATFORMS, Platform, get_platform
from pypto.language.enums import MemorySpace


class BackendType(str, enum.Enum):
    """The code-generation target of the reference: one per chip architecture.

    A ``str`` enum (decision): ``BackendType.Ascend950 == "Ascend950"`` holds, so code that compared
    our former string ``backend_type`` keeps working. ``.platform`` is the simulator that runs it.
    """

    Ascend910B = "Ascend910B"
    Ascend950 = "Ascend950"

    @property
    def platform(self) -> str:
        """The simulated platform of this backend (``a2a3sim`` / ``a5sim``)."""
        return _SIM_OF[self]

    @classmethod
    def of(cls, value) -> "BackendType":
        """A :class:`BackendType` from itself, its name, or a platform name (``"a5"``, ``"a2a3sim"``)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, Platform):
            return cls(value.backend_type)
        if isinstance(value, str):
            if value in cls.__members__:
                return cls[value]
            if value in _BACKEND_OF_PLATFORM:
                return _BACKEND_OF_PLATFORM[value]
        raise ValueError(f"unknown backend type {value!r}; choose one of: "
                         f"{', '.join('BackendType.' + m for m in cls.__members__)}")


_SIM_OF = {BackendType.Ascend910B: "a2a3sim", BackendType.Ascend950: "a5sim"}
_BACKEND_OF_PLATFORM = {"a2a3": BackendType.Ascend910B, "a2a3sim": BackendType.Ascend910B,
                        "a5": BackendType.Ascend950, "a5sim": BackendType.Ascend950}


def backend_for_platform(platform) -> BackendType:
    """The backend type of a platform name (real or simulated) or :class:`Platform`."""
    return BackendType.of(platform)


class CoreType(enum.Enum):
    """The two kinds of AI core: ``CUBE`` (AIC, matmul) and ``VECTOR`` (AIV)."""

    CUBE = "cube"
    VECTOR = "vector"


# The memory spaces each kind of core owns (the rest of a platform's spaces are global).
_CUBE_SPACES = (MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc, MemorySpace.Bias,
                MemorySpace.LeftScale, MemorySpace.RightScale)
_VECTOR_SPACES = (MemorySpace.Vec,)


@dataclass(frozen=True)
class Mem:
    """One on-chip memory of a core: its space, bytes and allocation alignment."""

    mem_type: MemorySpace
    mem_size: int
    alignment: int


class CountMap(tuple):
    """A read-only ``thing -> count`` mapping (the reference's SoC maps, ``die_counts`` /
    ``cluster_counts`` / ``core_counts``: ``for die, n in soc.die_counts.items()``), kept hashable so
    that its keys can hold it in turn. Built from ``(key, count)`` pairs; iterates over the keys as a
    dict does."""

    def items(self) -> tuple:
        """The ``(key, count)`` pairs."""
        return tuple(tuple.__iter__(self))

    def keys(self) -> tuple:
        """The keys, in order."""
        return tuple(k for k, _ in self.items())

    def values(self) -> tuple:
        """The counts, in order."""
        return tuple(n for _, n in self.items())

    def __iter__(self):
        return iter(self.keys())

    def __getitem__(self, key):
        for k, n in self.items():
            if k == key:
                return n
        raise KeyError(key)

    def __contains__(self, key) -> bool:
        return key in self.keys()

    def get(self, key, default=None):
        """The count of ``key``, or ``default``."""
        return self[key] if key in self else default


@dataclass(frozen=True)
class Core:
    """A core kind and its memories."""

    core_type: CoreType
    mems: tuple[Mem, ...]


@dataclass(frozen=True)
class Cluster:
    """One cluster: so many cores of each kind."""

    core_counts: CountMap

    def __post_init__(self):
        object.__setattr__(self, "core_counts", CountMap(self.core_counts))

    def total_core_count(self) -> int:
        """Cores in the cluster."""
        return sum(self.core_counts.values())


@dataclass(frozen=True)
class Die:
    """One die: so many identical clusters."""

    cluster_counts: CountMap

    def __post_init__(self):
        object.__setattr__(self, "cluster_counts", CountMap(self.cluster_counts))

    def total_cluster_count(self) -> int:
        """Clusters on the die."""
        return sum(self.cluster_counts.values())

    def total_core_count(self) -> int:
        """Cores on the die."""
        return sum(c.total_core_count() * n for c, n in self.cluster_counts.items())


@dataclass(frozen=True)
class SoC:
    """The chip: one die in both architectures we simulate."""

    die_counts: CountMap

    def __post_init__(self):
        object.__setattr__(self, "die_counts", CountMap(self.die_counts))

    def total_die_count(self) -> int:
        """Dies on the chip."""
        return sum(self.die_counts.values())

    def total_cluster_count(self) -> int:
        """Clusters on the chip."""
        return sum(d.total_cluster_count() * n for d, n in self.die_counts.items())

    def total_core_count(self) -> int:
        """Cores on the chip."""
        return sum(d.total_core_count() * n for d, n in self.die_counts.items())


class BackendHandler:
    """Per-architecture facts the reference's passes ask for, read from the platform."""

    def __init__(self, platform: Platform):
        self._p = platform

    def get_pto_target_arch(self) -> str:
        """``a2a3`` or ``a5``."""
        return self._p.arch

    def get_default_sim_platform(self) -> str:
        """The simulator of this architecture."""
        return self._p.name

    def get_l0a_capacity_bytes(self) -> int:
        """Bytes of L0A (``Left``)."""
        return self._p.capacity(MemorySpace.Left)

    def get_l0b_capacity_bytes(self) -> int:
        """Bytes of L0B (``Right``)."""
        return self._p.capacity(MemorySpace.Right)

    def get_l0c_capacity_bytes(self) -> int:
        """Bytes of L0C (``Acc``)."""
        return self._p.capacity(MemorySpace.Acc)

    def get_bias_capacity_bytes(self) -> int:
        """Bytes of the bias table."""
        return self._p.capacity(MemorySpace.Bias)

    def get_mat_capacity_bytes(self) -> int:
        """Bytes of L1 (``Mat``)."""
        return self._p.capacity(MemorySpace.Mat)

    def get_gm_access_granularity_bytes(self) -> int:
        """Bytes the simulated global memory moves per cycle (its access granularity)."""
        return self._p.gm_bytes_per_cycle


class Backend:
    """A chip architecture: its SoC hierarchy and memories (a view of one :class:`Platform`)."""

    _TYPE: BackendType

    def __init__(self, platform: Platform):
        self.platform = platform

    def get_type_name(self) -> str:
        """``"910B"`` or ``"950"`` (the reference's spelling)."""
        return self._TYPE.value.removeprefix("Ascend")

    @property
    def backend_type(self) -> BackendType:
        """This backend's :class:`BackendType`."""
        return self._TYPE

    def get_handler(self) -> BackendHandler:
        """The per-architecture facts (capacities, target arch)."""
        return BackendHandler(self.platform)

    def get_mem_size(self, mem_type: MemorySpace) -> int:
        """Bytes of one memory space on one core (0 when the architecture lacks it)."""
        return self.platform.capacity(mem_type)

    def get_core_count(self, core_type: CoreType) -> int:
        """Cores of a kind on the chip."""
        return self.platform.num_aic if core_type == CoreType.CUBE else self.platform.num_aiv

    @property
    def soc(self) -> SoC:
        """The SoC hierarchy: one die of ``clusters`` clusters of 1 AIC + 2 AIV."""
        p = self.platform

        def core(kind, spaces):
            return Core(kind, tuple(Mem(s, p.capacity(s), p.align(s)) for s in spaces if p.capacity(s)))

        cluster = Cluster(((core(CoreType.CUBE, _CUBE_SPACES), p.aic_per_cluster),
                           (core(CoreType.VECTOR, _VECTOR_SPACES), p.aiv_per_cluster)))
        return SoC(((Die(((cluster, p.clusters),)), 1),))

    @classmethod
    def instance(cls) -> "Backend":
        """The backend of this architecture."""
        return get_backend_instance(cls._TYPE)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(platform={self.platform.name!r})"


class Backend910B(Backend):
    """Ascend 910B (the a2a3 architecture)."""

    _TYPE = BackendType.Ascend910B


class Backend950(Backend):
    """Ascend 950 (the a5 architecture)."""

    _TYPE = BackendType.Ascend950


_INSTANCES: dict[BackendType, Backend] = {}
_CONFIGURED: list[BackendType] = []  # the process-wide setting (empty: not configured)


def get_backend_instance(backend_type) -> Backend:
    """The :class:`Backend` of a backend type, whatever the process-wide setting."""
    bt = BackendType.of(backend_type)
    if bt not in _INSTANCES:
        cls = Backend910B if bt == BackendType.Ascend910B else Backend950
        _INSTANCES[bt] = cls(PLATFORMS[bt.platform])
    return _INSTANCES[bt]


def set_backend_type(backend_type) -> None:
    """Set the process-wide backend type.

    What it means here: the architecture (hence simulator) that ``PassManager.run_passes`` and the
    pass factories of :mod:`pypto.pypto_core.passes` lower for. ``ir.compile`` sets it to its target
    for each compilation, as the reference does (its own target comes from its arguments, default
    a2a3); so (decision) changing it is allowed, unlike the reference's first-call-wins rule, which
    its own ``compile`` works around.
    """
    bt = BackendType.of(backend_type)
    _CONFIGURED[:] = [bt]


def get_backend_type() -> BackendType:
    """The process-wide backend type; ``ValueError`` when :func:`set_backend_type` was never called."""
    if not _CONFIGURED:
        raise ValueError("the backend type is not configured: call pypto.backend.set_backend_type("
                         "BackendType.Ascend910B) (or Ascend950), or compile a program first")
    return _CONFIGURED[0]


def get_handler() -> BackendHandler:
    """The :class:`BackendHandler` of the configured backend type."""
    return get_backend_instance(get_backend_type()).get_handler()


def is_backend_configured() -> bool:
    """Whether :func:`set_backend_type` (or a compilation) has set the backend type."""
    return bool(_CONFIGURED)


def reset_for_testing() -> None:
    """Forget the process-wide backend type (tests only)."""
    _CONFIGURED.clear()


def default_platform() -> str:
    """The simulator of the configured backend type, ``a2a3sim`` when none is configured."""
    return _CONFIGURED[0].platform if _CONFIGURED else "a2a3sim"


def platform_of(platform=None, backend_type=None) -> str:
    """Resolve the reference's (platform, backend_type) pair of ``ir.compile`` to one platform name.

    As in the reference, an explicit platform wins (it selects the backend); a backend type alone
    selects its simulator; neither gives a2a3sim (``ir.compile``'s default backend type is
    Ascend910B: the process-wide setting does not change a compilation's target).
    """
    if platform is not None:
        return platform.name if isinstance(platform, Platform) else platform
    if backend_type is not None:
        return BackendType.of(backend_type).platform
    return "a2a3sim"


__all__ = ["Backend", "Backend910B", "Backend950", "BackendHandler", "BackendType", "Cluster", "Core", "CoreType",
           "Die", "Mem", "SoC", "backend_for_platform", "get_backend_instance", "get_backend_type", "get_handler",
           "is_backend_configured", "platform_of", "reset_for_testing", "set_backend_type", "default_platform",
           "get_platform"]
