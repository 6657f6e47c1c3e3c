"""Device geometry for the reference executor: ``pl.system.available_cluster_count()`` /
``available_aiv_count()`` read the core counts of the platform the program is run for.

The simulator answers them from its own platform (``runtime.simulator``); the reference executor
has no device, so whoever runs it passes the platform down with :func:`reference_platform`
(validate_ir, the doctor and the differential fuzzer do, from the compiled program's platform).
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

from pypto.errors import PlatformError

# the platform the reference executor sizes launches on; unset: it has no device to ask
REFERENCE_PLATFORM: contextvars.ContextVar = contextvars.ContextVar("pypto_reference_platform", default=None)


@contextlib.contextmanager
def reference_platform(name: str | None) -> Iterator[None]:
    """Within the block, the reference executor's ``available_*_count()`` answer for platform ``name``."""
    token = REFERENCE_PLATFORM.set(name)
    try:
        yield
    finally:
        REFERENCE_PLATFORM.reset(token)


def available_cores(kind: str) -> int:
    """``pl.system.available_cluster_count()`` (``kind`` "aic") / ``available_aiv_count()`` ("aiv")
    in the reference executor: the count of the platform set by :func:`reference_platform`."""
    name = REFERENCE_PLATFORM.get()
    what = "available_cluster_count" if kind == "aic" else "available_aiv_count"
    if name is None:
        raise PlatformError(f"pl.system.{what}() needs a device: the reference executor was run without a "
                            "platform", hint="run it inside pypto.ops.support.reference_platform('a2a3sim') "
                            "(or the platform you compile for), or launch a literal block count")
    from pypto.backend.platforms import get_platform  # (ops sits below backend: LAZY_UP in the import-graph test)

    p = get_platform(name)
    return p.num_aic if kind == "aic" else p.num_aiv
