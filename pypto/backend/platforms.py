"""Platform descriptions: everything architecture-specific lives here and nowhere else.

A :class:`Platform` is a frozen description of a simulated device: its architecture (for the native
cast table), its cores, the bytes of each on-chip memory space and the allocation alignment.
Numbers from the reference SoC table (docs/simulator.md, "The two platforms").
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from pypto.errors import PlatformError
from pypto.language.enums import MemorySpace as M

KB = 1024


@dataclass(frozen=True)
class Platform:
    """A simulated device. ``memory`` / ``alignment`` map a memory space to bytes per core."""

    name: str
    arch: str
    is_simulator: bool
    clusters: int
    aic_per_cluster: int
    aiv_per_cluster: int
    memory: tuple[tuple[M, int], ...]
    alignment: tuple[tuple[M, int], ...]
    backend_type: str
    # Simulated cost model: cycles per instruction and global-memory bandwidth (bytes per cycle).
    gm_bytes_per_cycle: int = 128
    gm_latency_cycles: int = 200
    vector_bytes_per_cycle: int = 256
    # Runtime rings (docs/simulator.md, "Rings"): per ring, task slots, output-heap bytes and dependency
    # entries; RunConfig.ring_* override them
    ring_task_window: int = 16384
    ring_heap: int = 256 * 1024 * 1024
    ring_dep_pool: int = 16384

    def capacity(self, space: M) -> int:
        """Usable bytes of ``space`` on one core (0 when the platform lacks it)."""
        return dict(self.memory).get(space, 0)

    def align(self, space: M) -> int:
        """Allocation alignment of ``space`` in bytes."""
        return dict(self.alignment).get(space, 32)

    @property
    def num_aiv(self) -> int:
        """Vector cores on the chip."""
        return self.clusters * self.aiv_per_cluster

    @property
    def num_aic(self) -> int:
        """Cube cores on the chip."""
        return self.clusters * self.aic_per_cluster


_ALIGN = ((M.Vec, 128), (M.Mat, 128), (M.Left, 64), (M.Right, 64), (M.Acc, 128), (M.Bias, 64),
          (M.LeftScale, 32), (M.RightScale, 32))

A2A3SIM = Platform(
    name="a2a3sim", arch="a2a3", is_simulator=True, clusters=24, aic_per_cluster=1, aiv_per_cluster=2,
    memory=((M.Vec, 184 * KB), (M.Mat, 512 * KB), (M.Left, 64 * KB), (M.Right, 64 * KB), (M.Acc, 128 * KB),
            (M.Bias, 1 * KB)),
    alignment=_ALIGN, backend_type="Ascend910B",
)

A5SIM = Platform(
    name="a5sim", arch="a5", is_simulator=True, clusters=18, aic_per_cluster=1, aiv_per_cluster=2,
    memory=((M.Vec, 240 * KB), (M.Mat, 512 * KB), (M.Left, 64 * KB), (M.Right, 64 * KB), (M.Acc, 256 * KB),
            (M.Bias, 4 * KB), (M.LeftScale, 4 * KB), (M.RightScale, 4 * KB)),
    alignment=_ALIGN, backend_type="Ascend950",
)

PLATFORMS = {p.name: p for p in (A2A3SIM, A5SIM)}
_REAL = {"a2a3": "a2a3sim", "a5": "a5sim"}
_WARNED: set[str] = set()
STRICT_ENV = "PYPTO_STRICT_PLATFORM"


def get_platform(name: str) -> Platform:
    """The simulated platform called ``name``; a clear error for unknown names.

    A real device (``"a2a3"`` / ``"a5"``) runs on its simulator: this package drives no hardware,
    and a script written for the device (the reference's default) then runs unchanged. The first
    time per process and device name, one line on stderr says so. ``PYPTO_STRICT_PLATFORM=1`` makes
    it a :class:`PlatformError` instead (for harnesses that must not mistake a simulation for a
    device run).
    """
    if isinstance(name, Platform):
        return name
    if name in PLATFORMS:
        return PLATFORMS[name]
    if name in _REAL:
        sim = _REAL[name]
        if os.environ.get(STRICT_ENV, "") not in ("", "0"):
            raise PlatformError(
                f"platform '{name}' is a real Ascend device, which this package cannot drive "
                f"({STRICT_ENV} is set); use platform='{sim}', or unset {STRICT_ENV} to run '{name}' on {sim}")
        if name not in _WARNED:
            _WARNED.add(name)
            sys.stderr.write(f"pypto: warning: no '{name}' device here; running on the simulator '{sim}' "
                             f"(set {STRICT_ENV}=1 to make this an error)\n")
        return PLATFORMS[sim]
    raise PlatformError(f"unknown platform {name!r}; choose one of: {', '.join(PLATFORMS)} "
                        "(or the real devices 'a2a3' / 'a5', which run on their simulator)")
