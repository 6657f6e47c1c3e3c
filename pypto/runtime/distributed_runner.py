"""The reference's ``pypto.runtime.distributed_runner`` names: :class:`DistributedWorker`,
:class:`DistributedRunHandle`, :func:`execute_distributed_compiled` (and its ``execute_distributed``
spelling)."""
from pypto.runtime.distributed.program import (  # noqa: F401
    DistributedRunHandle, DistributedWorker, execute_distributed_compiled,
)


def execute_distributed(compiled, args, config=None):
    """``execute_distributed_compiled(compiled, args, {}, config)``."""
    return execute_distributed_compiled(compiled, tuple(args), {}, config)
