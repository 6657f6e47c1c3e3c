"""Platform descriptions (:mod:`.platforms`), native cast tables (:mod:`.cast_table`) and the
reference's backend vocabulary over them (:mod:`.backend_type`: ``BackendType``,
``set_backend_type`` / ``get_backend_type``, ``Backend910B`` / ``Backend950``, the SoC hierarchy)."""
from pypto.backend.backend_type import (
    Backend, Backend910B, Backend950, BackendHandler, BackendType, Cluster, Core, CoreType, Die, Mem, SoC,
    get_backend_instance, get_backend_type, get_handler, is_backend_configured, reset_for_testing, set_backend_type,
)
from pypto.backend.platforms import A2A3SIM, A5SIM, PLATFORMS, Platform, get_platform

__all__ = ["A2A3SIM", "A5SIM", "PLATFORMS", "Platform", "get_platform", "Backend", "Backend910B", "Backend950",
           "BackendHandler", "BackendType", "Cluster", "Core", "CoreType", "Die", "Mem", "SoC", "get_backend_instance",
           "get_backend_type", "get_handler", "is_backend_configured", "reset_for_testing", "set_backend_type"]
