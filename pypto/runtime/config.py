"""``RunConfig``: how a kernel is compiled and run (``from pypto.runtime import RunConfig``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from pypto.backend.platforms import get_platform


@dataclass
class RunConfig:
    """Options for compiling and running a kernel on a simulated platform.

    ``platform`` is ``"a2a3sim"`` (default) or ``"a5sim"``; the real devices ``"a2a3"`` / ``"a5"``
    raise :class:`pypto.errors.PlatformError` naming the simulator to use. ``rtol`` / ``atol`` are
    the harness's golden-comparison tolerances. ``dump_passes`` (bool or ``PassDumpLevel``) writes
    ``passes_dump/`` into the artifact directory; ``save_kernels_dir`` chooses that directory.
    ``sim_seed`` fixes the simulator's timing jitter (``None``: vary per run, as hardware does).
    """

    platform: str = "a2a3sim"
    device_id: int = 0
    rtol: float = 1e-5
    atol: float = 1e-5
    dump_passes: object = False
    save_kernels: bool = False
    save_kernels_dir: Optional[str] = None
    verification_level: object = None
    diagnostic_phase: object = None
    disabled_diagnostics: Optional[frozenset] = None
    enable_dep_gen: bool = False
    enable_dump_args: int = 0
    enable_chip_swimlane: int = 0
    golden_data_dir: Optional[str] = None
    sim_seed: Optional[int] = None
    extra: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self._platform = get_platform(self.platform)
        for name in ("rtol", "atol"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
                raise ValueError(f"RunConfig.{name} must be a number >= 0, got {v!r}")
        if self.enable_dump_args not in (0, 1, 2):
            raise ValueError(f"RunConfig.enable_dump_args must be 0, 1 or 2, got {self.enable_dump_args!r}")

    @property
    def backend_type(self) -> str:
        """``Ascend910B`` for a2a3 platforms, ``Ascend950`` for a5."""
        return self._platform.backend_type

    def compile_options(self) -> dict:
        """Keyword arguments for :func:`pypto.ir.compile` taken from this config."""
        return {"platform": self.platform, "dump_passes": self.dump_passes, "output_dir": self.save_kernels_dir,
                "verification_level": self.verification_level, "diagnostic_phase": self.diagnostic_phase,
                "disabled_diagnostics": self.disabled_diagnostics}

    def cache_key(self) -> tuple:
        """The compile-relevant part of the config (part of the jit compile-cache key)."""
        return (self.platform, repr(self.dump_passes), self.save_kernels_dir, repr(self.verification_level),
                repr(self.diagnostic_phase), repr(sorted(self.disabled_diagnostics or ())))
