"""Running kernels: :class:`RunConfig`, the simulated device (:mod:`.simulator`), golden files
(:func:`write_golden`), the golden harness (:func:`run`, :class:`RunResult`) and the reference's
work-directory entry points (:mod:`.runner`: :func:`compile_program`, :func:`execute_compiled`) and
workers with resident device tensors (:class:`ChipWorker`, :class:`DeviceTensor`)."""
from pypto.runtime.bench import BenchmarkStats, TraceInvocation, TraceSpan, benchmark
from pypto.runtime.config import RunConfig
from pypto.runtime.log_config import configure_log
from pypto.runtime.log_config import current_level as log_level
from pypto.runtime.golden import GoldenFileError, ScalarSpec, TensorSpec, load_golden, write_golden
from pypto.runtime.harness import RunResult, run
from pypto.runtime.device_tensor import DeviceTensor, StackedDeviceTensor
from pypto.runtime.runner import compile_program, execute_compiled
from pypto.runtime.worker import ChipWorker, RegistrationHandle, Worker

__all__ = ["RunConfig", "GoldenFileError", "ScalarSpec", "TensorSpec", "load_golden", "write_golden", "RunResult",
           "run", "compile_program", "execute_compiled", "ChipWorker", "RegistrationHandle", "Worker", "DeviceTensor",
           "StackedDeviceTensor", "benchmark", "BenchmarkStats", "TraceSpan", "TraceInvocation", "configure_log",
           "log_level"]

_DISTRIBUTED = ("DistributedWorker", "DistributedRunHandle", "execute_distributed_compiled")


def __getattr__(name: str):
    # the multi-rank names (issue 17), loaded on first use: importing the runtime stays as cheap as before
    if name in _DISTRIBUTED:
        from pypto.runtime.distributed import program

        return getattr(program, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
