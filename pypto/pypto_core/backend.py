"""``pypto.pypto_core.backend``: the reference's native backend module; ours is
:mod:`pypto.backend.backend_type` (re-exported)."""
from pypto.backend.backend_type import *  # noqa: F401,F403
from pypto.backend.backend_type import __all__  # noqa: F401
