"""Platform descriptions (:mod:`.platforms`) and native cast tables (:mod:`.cast_table`)."""
from pypto.backend.platforms import A2A3SIM, A5SIM, PLATFORMS, Platform, get_platform

__all__ = ["A2A3SIM", "A5SIM", "PLATFORMS", "Platform", "get_platform"]
