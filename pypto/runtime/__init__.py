"""Running kernels: :class:`RunConfig` and the simulated device (:mod:`.simulator`)."""
from pypto.runtime.config import RunConfig

__all__ = ["RunConfig"]
