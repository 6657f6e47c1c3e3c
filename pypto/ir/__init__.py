"""The compiler: IR nodes and types, printing/parsing, structural equality, ``compile``."""
from pypto.ir.compile import compile, default_pipeline, run_pipeline
from pypto.ir.compiled import CompiledProgram
from pypto.ir.equality import StructuralMismatch, assert_structural_equal, structural_equal
from pypto.ir.nodes import Function, Program
from pypto.ir.printer import print_program as python_print
from pypto.passes.manager import PassDumpLevel, VerificationLevel
from pypto.language.program import parse, loads

__all__ = ["compile", "default_pipeline", "run_pipeline", "CompiledProgram", "StructuralMismatch",
           "assert_structural_equal", "structural_equal", "Function", "Program", "python_print",
           "PassDumpLevel", "VerificationLevel", "parse", "loads"]
