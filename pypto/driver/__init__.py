"""The compiler driver: :func:`compile` (pass pipeline, code generation, the build directory and its
cache), :class:`CompiledProgram` (a build that runs on the simulator), the reference's
``PassManager`` and the build-directory helpers (:mod:`.artifacts`).

It sits above every other compiler layer (ir, ops, passes, codegen, runtime; see
docs/architecture.md, "Layers"), which is why it is not part of :mod:`pypto.ir`: ``import pypto.ir``
loads the IR only. The reference's paths (``pypto.ir.compile(...)``, ``pypto.ir.compiled_program``,
``pypto.ir.pass_manager``, ``pypto.ir.artifacts``) name these same modules and objects.
"""
from pypto.driver.build import compile, compile_settings, default_pipeline, run_pipeline
from pypto.driver.compiled import CompiledProgram
from pypto.driver.pass_manager import OptimizationStrategy, PassManager

__all__ = ["compile", "compile_settings", "default_pipeline", "run_pipeline", "CompiledProgram",
           "OptimizationStrategy", "PassManager"]
