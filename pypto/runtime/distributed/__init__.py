"""Multi-rank programs on simulated cards (issue 17): the host orchestrator interpreter
(:mod:`.host`), the engines (:mod:`.engine`) and the program / worker objects (:mod:`.program`).
See docs/distributed.md."""
from pypto.runtime.distributed.program import (  # noqa: F401
    DistributedCompiledProgram, DistributedRunHandle, DistributedWorker, HostFunction, execute_distributed_compiled,
)
