"""Lowered IR -> Python modules in the artifact directory: kernels (run on simulated cores) and
orchestration (submits tasks). See :mod:`.kernel` and :mod:`.orchestration`."""
from pypto.codegen.kernel import generate_kernel
from pypto.codegen.orchestration import generate_orchestration

__all__ = ["generate_kernel", "generate_orchestration"]
