"""The reference's ``pypto.runtime.distributed_runner`` names: :class:`DistributedWorker`,
:class:`DistributedRunHandle`, :func:`execute_distributed_compiled` (and its ``execute_distributed``
spelling), and ``_tensor_from_continuous`` (a sub-worker override's tensor argument as a tensor)."""
from pypto.runtime.distributed.program import (  # noqa: F401
    DistributedRunHandle, DistributedWorker, execute_distributed_compiled,
)
from pypto.runtime.distributed.continuous import tensor_from_continuous as _tensor_from_continuous  # noqa: F401


def execute_distributed(compiled, args, config=None):
    """``execute_distributed_compiled(compiled, args, {}, config)``."""
    return execute_distributed_compiled(compiled, tuple(args), {}, config)
