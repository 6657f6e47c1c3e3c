"""The compiler: IR nodes and types, printing/parsing, structural equality, ``compile``.

Also the reference's ``pypto.ir`` names over ours: ``pass_manager`` (``PassManager``,
``OptimizationStrategy``), ``compiled_program``, ``PassContext`` / ``VerificationMode`` /
``DiagnosticPhase`` / ``DiagnosticCheck(Set)`` (from :mod:`pypto.pypto_core.passes`), ``IRMutator`` /
``IRVisitor``, the type classes, ``FunctionType`` / ``ParamDirection`` / ``MemorySpace`` and the
dtype constants (``ir.FP32``). See docs/compatibility.md.
"""
from pypto.ir.compile import compile, default_pipeline, run_pipeline
from pypto.ir.compiled import CompiledProgram
from pypto.ir.equality import StructuralMismatch, assert_structural_equal, structural_equal
from pypto.ir.nodes import Function, Program
from pypto.ir.pass_manager import OptimizationStrategy, PassManager
from pypto.ir.printer import print_program as python_print
from pypto.ir.types import MemRef, ScalarType, TensorType, TileType, TupleType, Type
from pypto.ir.visit import Mutator as IRMutator
from pypto.ir.visit import Visitor as IRVisitor
from pypto.language.dtypes import (
    BF16, BOOL, FP4, FP8E4M3FN, FP8E5M2, FP8E8M0, FP16, FP32, HF4, HF8, INDEX, INT4, INT8, INT16, INT32, INT64,
    UINT4, UINT8, UINT16, UINT32, UINT64, DataType,
)
from pypto.language.enums import FunctionType, MemorySpace, ParamDirection
from pypto.passes.manager import PassDumpLevel, VerificationLevel
from pypto.passes.diagnostics import DiagnosticPhase
from pypto.language.program import parse, loads
from pypto.ir import compiled_program, pass_manager  # noqa: F401  (the reference's module paths)

__all__ = ["compile", "default_pipeline", "run_pipeline", "CompiledProgram", "StructuralMismatch",
           "assert_structural_equal", "structural_equal", "Function", "Program", "python_print",
           "PassDumpLevel", "VerificationLevel", "parse", "loads", "OptimizationStrategy", "PassManager",
           "PassContext", "VerificationMode", "DiagnosticPhase", "DiagnosticCheck", "DiagnosticCheckSet",
           "IRMutator", "IRVisitor", "Type", "ScalarType", "TensorType", "TileType", "TupleType", "MemRef",
           "FunctionType", "MemorySpace", "ParamDirection", "DataType", "compiled_program", "pass_manager",
           "BF16", "BOOL", "FP16", "FP32", "INDEX", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32",
           "UINT64", "FP4", "FP8E4M3FN", "FP8E5M2", "FP8E8M0", "HF4", "HF8", "INT4", "UINT4"]

# From pypto.pypto_core.passes, which imports the IR: loaded on first access (no import cycle).
_FROM_CORE_PASSES = ("DiagnosticCheck", "DiagnosticCheckSet", "PassContext", "VerificationMode")


def __getattr__(name: str):
    if name in _FROM_CORE_PASSES:
        from pypto.pypto_core import passes

        return getattr(passes, name)
    raise AttributeError(f"module 'pypto.ir' has no attribute {name!r}")
