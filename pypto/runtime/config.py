"""``RunConfig``: how a kernel is compiled and run (``from pypto.runtime import RunConfig``).

Every field of the reference's ``RunConfig`` is accepted and validated (docs/compatibility.md,
"``RunConfig`` fields"); the simulator reads ``platform``, the DFX
flags (``enable_dep_gen``, ``enable_dump_args``, ``enable_chip_swimlane``, ``enable_scope_stats``),
``sim_seed``, ``sim_poison`` and ``dump_budget_bytes`` and the ring sizes (a scope that holds more tasks, heap bytes or dependency
entries than its ring has deadlocks the device: the simulator reports it, see
:meth:`pypto.runtime.simulator.Runtime.scope`; ``enable_scope_stats`` writes what each scope held of
its ring: :mod:`pypto.runtime.scope_stats`). ``device_id``, ``aicpu_thread_num`` and ``enable_pmu``
are validated but have no effect on the simulator.
"""
from __future__ import annotations

import enum
import os
import warnings
from dataclasses import dataclass, field
from typing import ClassVar, Optional

from pypto.backend.platforms import get_platform
from pypto.backend.backend_type import BackendType


class OptimizationStrategy(enum.Enum):
    """The compiler's optimisation strategy (``pypto.ir.pass_manager.OptimizationStrategy``);
    ``Default`` (the full pipeline) is the only member, as in the reference. Defined here, with
    :class:`RunConfig` whose field it types, because the runtime sits below the driver that also
    takes it (docs/architecture.md, "Layers")."""

    Default = "Default"


_RINGS = 4


def _check_ring(name: str, value, check):
    """Normalise a ring override: ``None``, a scalar for every ring, or exactly 4 entries (0 = default)."""
    if value is None:
        return None
    items = list(value) if isinstance(value, (list, tuple)) else None
    if items is None:
        vals = [value]
    else:
        if len(items) != _RINGS:
            raise ValueError(f"RunConfig.{name} must be a scalar or a list of exactly {_RINGS} entries, got {value!r}")
        vals = items
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"RunConfig.{name} entries must be int, got {v!r}")
        if items is not None and v == 0:
            continue  # 0 = the runtime default for that ring
        check(v)
    return items if items is not None else value


def _pow2(name: str, lo: int):
    def check(v):
        if v < lo or v & (v - 1):
            raise ValueError(f"RunConfig.{name} must be a power of two >= {lo}, got {v}")
    return check


def _dep_pool(v):
    if not 4 <= v <= 2 ** 31 - 1:
        raise ValueError(f"RunConfig.ring_dep_pool must be in [4, 2^31-1], got {v}")


@dataclass
class RunConfig:
    """Options for compiling and running a kernel on a simulated platform.

    ``platform`` is ``"a2a3sim"`` (default) or ``"a5sim"``; the real devices ``"a2a3"`` / ``"a5"``
    run on their simulator with one warning line on stderr (``PYPTO_STRICT_PLATFORM=1``: a
    :class:`pypto.errors.PlatformError` instead). ``backend_type`` (a ``pypto.backend.BackendType``)
    is derived from the platform, as in the reference: a value that disagrees is overwritten
    (``RunConfig(backend_type=BackendType.Ascend950)`` alone still runs a2a3sim; give
    ``platform="a5sim"``). ``strategy`` is ``OptimizationStrategy.Default`` (the only one).
    ``rtol`` / ``atol`` are the harness's golden-comparison tolerances. ``compile_profiling`` writes
    ``report/pipeline_profile.{txt,json}``. ``memory_planner`` (a ``MemoryPlanner``) is recorded in
    ``compiled_meta.json``; one memory planner runs whatever its value, which decides only whether
    AutoTileMatmulL0 may double-buffer Acc (``DSA_RP`` / ``PTOAS``: dbC=2, as in the reference;
    docs/compiler.md). ``dump_ptoas_passes`` is recorded and changes nothing here (no ptoas). ``distributed_config`` (a ``DistributedConfig``) gives the cards of a
    ``@pl.jit.host`` program (docs/distributed.md). ``codegen_only`` compiles without running; ``golden_data_dir`` is where the golden
    form of :func:`pypto.runtime.run` keeps its data files. ``dump_passes`` (bool or ``PassDumpLevel``) writes
    ``passes_dump/`` into the artifact directory; ``save_kernels_dir`` chooses that directory (default:
    a content-keyed entry of the compile cache under ``$PYPTO_PROG_BUILD_DIR``, see docs/compile-cache.md).
    ``analyze_auto_scopes_for_deps`` (a bool) lets the AutoDeriveTaskDependencies pass replace the
    tensormap lookups it can prove by compiler edges (``source: "compiler"`` in ``deps.json``).

    DFX (written under ``<output_dir>/dfx_outputs/``; any of them forces ``save_kernels``):
    ``enable_dep_gen`` writes ``deps.json``; ``enable_dump_args`` 1 dumps tagged tensors
    (``pl.dump_tag`` / ``dumps=``), 2 every task's arguments (``args_dump/``); ``enable_chip_swimlane``
    (0-4, ``True`` = 4) writes ``swimlane.json`` (Chrome trace of the simulated timeline).

    Simulator only: ``sim_seed`` fixes the timing jitter and the scheduler's choices (``None``: vary
    per run, as hardware does; an int: bit-identical reruns). ``dump_budget_bytes`` caps the bytes
    tensor dumps may write; a tensor that does not fit is skipped with a warning and flagged
    ``truncated``. ``sim_poison`` starts core memory filled with the byte 0xFF (NaN in every float
    dtype) instead of zeros and leaves the padding of ``valid_shape`` loads poisoned, so a kernel that
    lets padding or a never-written tile into its result gets NaNs (see
    :func:`pypto.debug.races.detect_uninitialized` for the per-task report). ``sim_lockstep`` (default
    on) lets the scheduler start ready tasks of one kernel together on adjacent cores and run them in
    lockstep, one torch call per instruction for all of them, when that cannot change any result:
    the kernel's instructions do not depend on the task and the tasks touch disjoint global memory
    (see docs/simulator.md, "Lockstep gangs"); ``False`` runs every task on its own. ``sim_batch``
    (default on, with ``sim_lockstep``) runs loops the compiler proved to have independent iterations
    as batched orchestration: one task per call site and loop step for all iterations, its members
    ganged (docs/simulator.md, "Batched orchestration"; bit-identical results); ``False`` submits
    every task on its own.
    ``max_while_iterations`` (default 2**20) bounds every ``while`` loop: one that runs longer stops
    the run with a :class:`pypto.errors.SimulationError` at the loop (a condition that never turns
    false would hang the device; here it is a located error).

    No effect on the simulator (validated, then unused; docs/compatibility.md): ``device_id`` (there
    is one simulated device), ``aicpu_thread_num`` (the scheduler is not threaded), ``enable_pmu``
    (no hardware counters), ``dump_ptoas_passes``.
    """

    # The fields that do nothing on a simulator (validated, then unused; "no effect" below and in
    # docs/compatibility.md): a program may set them for a device run and still run here.
    SIM_NO_EFFECT: ClassVar[frozenset] = frozenset({
        "device_id", "aicpu_thread_num", "enable_pmu", "dump_ptoas_passes"})

    # the reference's fields, in its order (positional construction binds the same way) ...
    platform: str = "a2a3sim"
    device_id: int = 0                      # no effect on a simulator: one simulated device
    rtol: float = 1e-5
    atol: float = 1e-5
    strategy: OptimizationStrategy = OptimizationStrategy.Default
    backend_type: object = None
    dump_passes: object = False
    save_kernels: bool = False
    save_kernels_dir: Optional[str] = None
    codegen_only: bool = False
    enable_chip_swimlane: int = 0
    enable_dump_args: int = 0
    enable_pmu: int = 0                     # no effect on a simulator: no hardware counters
    enable_dep_gen: bool = False
    enable_scope_stats: bool = False        # dfx_outputs/scope_stats/scope_stats.jsonl (the ring model)
    compile_profiling: bool = False
    diagnostic_phase: object = None
    disabled_diagnostics: object = None
    golden_data_dir: Optional[str] = None
    aicpu_thread_num: Optional[int] = None  # no effect on a simulator: the scheduler is not threaded
    ring_task_window: object = None
    ring_heap: object = None
    ring_dep_pool: object = None
    distributed_config: object = None
    analyze_auto_scopes_for_deps: bool = False
    memory_planner: object = None           # recorded; DSA_RP / PTOAS let AutoTileMatmulL0 double-buffer Acc
    dump_ptoas_passes: bool = False         # no effect on a simulator: there is no ptoas step
    # ... then ours
    verification_level: object = None
    sim_seed: Optional[int] = None
    dump_budget_bytes: int = 1 << 30
    sim_poison: bool = False
    sim_lockstep: bool = True
    sim_batch: bool = True
    passes: object = None  # a custom pipeline (pypto.passes.pipeline.Pipeline); None = the default
    extra: dict = field(default_factory=dict, repr=False)
    # a while loop (kernel, orchestration or torch_codegen) that runs more iterations than this
    # stops the run with an error located at the loop: a condition that never becomes false must
    # not hang the simulator (pypto.ops.support.while_loops)
    max_while_iterations: int = 1 << 20
    # how the ranks of a @pl.jit.host program run (docs/distributed.md, "Engines"): "inprocess"
    # (None: the default, a thread per rank) or "ray" (a Ray actor per rank). Ours: the reference
    # has no such field (its ranks are processes it forks)
    distributed_backend: Optional[str] = None

    def __post_init__(self):
        # (1) platform, (2) backend_type (a property), (3) swimlane level, (4) DFX forces save_kernels,
        # (5) ring overrides.

        self._platform = get_platform(self.platform)
        # As in the reference, the platform decides the backend: backend_type is derived from it
        # (a value that disagrees is overwritten; see the class docstring).
        if self.backend_type is not None:
            BackendType.of(self.backend_type)  # a clear error for a bad value
        self.backend_type = BackendType.of(self._platform)
        if self.distributed_backend not in (None, "inprocess", "ray"):
            raise ValueError(f"RunConfig.distributed_backend must be 'inprocess' or 'ray', got {self.distributed_backend!r}")
        if self.distributed_config is not None:
            from pypto.ir.distributed_compiled_program import DistributedConfig

            if not isinstance(self.distributed_config, DistributedConfig):
                raise ValueError("RunConfig.distributed_config must be a pypto.ir.distributed_compiled_program."
                                 f"DistributedConfig, got {type(self.distributed_config).__name__}")
        if self.memory_planner is not None:
            from pypto.pypto_core.passes import MemoryPlanner

            self.memory_planner = MemoryPlanner(self.memory_planner)
        for name in ("rtol", "atol"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
                raise ValueError(f"RunConfig.{name} must be a number >= 0, got {v!r}")
        if not isinstance(self.strategy, OptimizationStrategy):
            raise ValueError(f"RunConfig.strategy must be an OptimizationStrategy, got {self.strategy!r}")
        lvl = self.enable_chip_swimlane
        if lvl is True:
            lvl = 4
        elif lvl is False or lvl is None:
            lvl = 0
        if isinstance(lvl, bool) or not isinstance(lvl, int) or not 0 <= lvl <= 4:
            raise ValueError(f"RunConfig.enable_chip_swimlane must be a level 0-4 or a bool, got {self.enable_chip_swimlane!r}")
        self.enable_chip_swimlane = lvl
        d = self.enable_dump_args
        if d is True:
            d = 2
        elif d is False:
            d = 0
        if d not in (0, 1, 2):
            raise ValueError(f"RunConfig.enable_dump_args must be 0, 1 or 2, got {self.enable_dump_args!r}")
        self.enable_dump_args = int(d)
        if isinstance(self.enable_pmu, bool) or not isinstance(self.enable_pmu, int) or self.enable_pmu < 0:
            raise ValueError(f"RunConfig.enable_pmu must be an int >= 0, got {self.enable_pmu!r}")
        if self.aicpu_thread_num is not None and (isinstance(self.aicpu_thread_num, bool) or
                                                  not isinstance(self.aicpu_thread_num, int) or
                                                  self.aicpu_thread_num < 2):
            raise ValueError(f"RunConfig.aicpu_thread_num must be an int >= 2, got {self.aicpu_thread_num!r}")
        if self.sim_seed is not None and (isinstance(self.sim_seed, bool) or not isinstance(self.sim_seed, int)):
            raise ValueError(f"RunConfig.sim_seed must be None or an int, got {self.sim_seed!r}")
        if isinstance(self.dump_budget_bytes, bool) or not isinstance(self.dump_budget_bytes, int) \
                or self.dump_budget_bytes < 0:
            raise ValueError(f"RunConfig.dump_budget_bytes must be an int >= 0, got {self.dump_budget_bytes!r}")
        if not isinstance(self.sim_poison, bool):
            raise ValueError(f"RunConfig.sim_poison must be a bool, got {self.sim_poison!r}")
        if not isinstance(self.sim_lockstep, bool):
            raise ValueError(f"RunConfig.sim_lockstep must be a bool, got {self.sim_lockstep!r}")
        if not isinstance(self.sim_batch, bool):
            raise ValueError(f"RunConfig.sim_batch must be a bool, got {self.sim_batch!r}")
        if isinstance(self.max_while_iterations, bool) or not isinstance(self.max_while_iterations, int) \
                or self.max_while_iterations < 1:
            raise ValueError(f"RunConfig.max_while_iterations must be an int >= 1, got {self.max_while_iterations!r}")
        if not isinstance(self.analyze_auto_scopes_for_deps, bool):
            raise ValueError(f"RunConfig.analyze_auto_scopes_for_deps must be a bool, "
                             f"got {self.analyze_auto_scopes_for_deps!r}")
        if self.any_dfx_enabled():
            self.save_kernels = True
        self.ring_task_window = _check_ring("ring_task_window", self.ring_task_window, _pow2("ring_task_window", 4))
        self.ring_heap = _check_ring("ring_heap", self.ring_heap, _pow2("ring_heap", 1024))
        self.ring_dep_pool = _check_ring("ring_dep_pool", self.ring_dep_pool, _dep_pool)

    def ring_limits(self) -> tuple[list[int], list[int], list[int]]:
        """Per ring (4): task window, heap bytes and dependency-pool entries. As on the device, an
        override here wins; a ``None`` / ``0`` entry falls back to the process-wide environment
        variable ``PTO2_RING_TASK_WINDOW`` / ``PTO2_RING_HEAP`` / ``PTO2_RING_DEP_POOL`` when set
        (validated like the field), then to the platform's default."""
        plat = self._platform

        def per_ring(name, value, default, check):
            env = os.environ.get(f"PTO2_RING_{name.upper()}", "").strip()
            if env:
                try:
                    default = int(env, 0)
                except ValueError:
                    raise ValueError(f"environment variable PTO2_RING_{name.upper()} must be an int, got {env!r}") \
                        from None
                try:
                    check(default)
                except ValueError as e:
                    raise ValueError(f"environment variable PTO2_RING_{name.upper()}: {e}") from None
            vals = value if isinstance(value, list) else [value] * _RINGS
            return [default if not v else v for v in vals]

        return (per_ring("task_window", self.ring_task_window, plat.ring_task_window, _pow2("ring_task_window", 4)),
                per_ring("heap", self.ring_heap, plat.ring_heap, _pow2("ring_heap", 1024)),
                per_ring("dep_pool", self.ring_dep_pool, plat.ring_dep_pool, _dep_pool))

    def any_dfx_enabled(self) -> bool:
        """Whether any DFX output is requested (swimlane, dumps, pmu, dep_gen, scope stats)."""
        return bool(self.enable_chip_swimlane > 0 or self.enable_dump_args > 0 or self.enable_pmu > 0
                    or self.enable_dep_gen or self.enable_scope_stats)

    @property
    def enable_l2_swimlane(self):
        """Deprecated alias of ``enable_chip_swimlane``."""
        warnings.warn("RunConfig.enable_l2_swimlane is deprecated; use enable_chip_swimlane",
                      DeprecationWarning, stacklevel=2)
        return self.enable_chip_swimlane

    @enable_l2_swimlane.setter
    def enable_l2_swimlane(self, value):
        warnings.warn("RunConfig.enable_l2_swimlane is deprecated; use enable_chip_swimlane",
                      DeprecationWarning, stacklevel=2)
        self.enable_chip_swimlane = RunConfig(enable_chip_swimlane=value).enable_chip_swimlane

    def compile_options(self) -> dict:
        """Keyword arguments for :func:`pypto.ir.compile` taken from this config."""
        return {"platform": self.platform, "strategy": self.strategy, "backend_type": self.backend_type,
                "dump_passes": self.dump_passes, "output_dir": self.save_kernels_dir,
                "verification_level": self.verification_level, "diagnostic_phase": self.diagnostic_phase,
                "disabled_diagnostics": self.disabled_diagnostics, "passes": self.passes,
                "analyze_auto_scopes_for_deps": self.analyze_auto_scopes_for_deps,
                "profiling": self.compile_profiling, "memory_planner": self.memory_planner,
                "dump_ptoas_passes": self.dump_ptoas_passes}

    def cache_key(self) -> tuple:
        """The compile-relevant part of the config (part of the jit compile-cache key)."""
        return (self.platform, repr(self.dump_passes), self.save_kernels_dir, repr(self.verification_level),
                repr(self.diagnostic_phase), repr(sorted(map(str, self.disabled_diagnostics or ()))),
                tuple(p.name for p in self.passes) if self.passes is not None else None, IdentityKey(self.passes),
                self.analyze_auto_scopes_for_deps, repr(self.memory_planner), self.compile_profiling)


class IdentityKey:
    """A cache-key part compared by identity that keeps its object alive: a bare ``id(obj)`` can be
    reused by a new object once ``obj`` is freed, and the key would then match the wrong pipeline."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other) -> bool:
        return isinstance(other, IdentityKey) and other.obj is self.obj

    def __repr__(self) -> str:
        return f"IdentityKey({type(self.obj).__name__} at {id(self.obj):#x})"


_dataclass_init = RunConfig.__init__


def _init(self, *args, enable_l2_swimlane=None, **kwargs):
    if enable_l2_swimlane is not None:
        warnings.warn("RunConfig(enable_l2_swimlane=...) is deprecated; use enable_chip_swimlane",
                      DeprecationWarning, stacklevel=2)
        if "enable_chip_swimlane" in kwargs:
            raise ValueError("pass only one of enable_chip_swimlane and the deprecated enable_l2_swimlane")
        kwargs["enable_chip_swimlane"] = enable_l2_swimlane
    _dataclass_init(self, *args, **kwargs)


_init.__doc__ = _dataclass_init.__doc__
_init.__signature__ = __import__("inspect").signature(_dataclass_init)
RunConfig.__init__ = _init  # accepts the deprecated ``enable_l2_swimlane`` keyword
