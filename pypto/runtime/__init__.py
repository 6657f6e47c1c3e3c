"""Running kernels: :class:`RunConfig`, the simulated device (:mod:`.simulator`), golden files
(:func:`write_golden`) and the golden harness (:func:`run`, :class:`RunResult`)."""
from pypto.runtime.config import RunConfig
from pypto.runtime.golden import GoldenFileError, ScalarSpec, TensorSpec, load_golden, write_golden
from pypto.runtime.harness import RunResult, run

__all__ = ["RunConfig", "GoldenFileError", "ScalarSpec", "TensorSpec", "load_golden", "write_golden", "RunResult",
           "run"]
