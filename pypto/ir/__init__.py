"""The IR: nodes and types, printing/parsing, structural equality, visitors; ``compile``.

``import pypto.ir`` (or any ``pypto.ir.<module>``) loads the IR only — no pass, codegen, runtime or
frontend module (tests/test_import_graph.py). The compiler driver lives in :mod:`pypto.driver`;
the names the reference reaches through ``pypto.ir`` still work and load it on first access:
``ir.compile``, ``ir.run_pipeline``, ``ir.default_pipeline``, ``ir.CompiledProgram``, the modules
``pypto.ir.compile`` / ``compiled`` / ``compiled_program`` / ``pass_manager`` / ``artifacts``
(aliases of the driver's modules: the same module objects), ``PassManager``,
``OptimizationStrategy``, ``PassDumpLevel`` / ``VerificationLevel`` / ``DiagnosticPhase`` (from
:mod:`pypto.passes`) and ``PassContext`` / ``VerificationMode`` / ``DiagnosticCheck(Set)`` (from
:mod:`pypto.pypto_core.passes`). Also the type classes, ``IRMutator`` / ``IRVisitor``,
``FunctionType`` / ``ParamDirection`` / ``MemorySpace`` and the dtype constants (``ir.FP32``), and
the node classes (``ir.Var``, ``ir.ConstInt``, ``ir.YieldStmt`` ...), ``ir.Span``, the reference's
scalar expression constructors (``ir.Add(x, y, dtype, span)``, :mod:`pypto.ir.scalar_exprs`),
``IRBuilder`` (with its helper classes and ``ScopeKind``; module ``pypto.ir.builder``, an alias of
:mod:`pypto.frontend.ir_builder`, loaded on first access). See docs/compatibility.md.
"""
import importlib
import sys
import types as _types

from pypto.errors import Span
from pypto.ir.equality import StructuralMismatch, assert_structural_equal, structural_equal
from pypto.ir.nodes import (  # the node classes, as the reference's pypto.ir re-exports its native ones
    AssignStmt, BinOp, Call, ConstBool, ConstFloat, ConstInt, EvalStmt, Expr, ForStmt, FuncCall, Function, IfStmt,
    MakeTuple, Program, ReturnStmt, ScopeStmt, Stmt, TupleGetItem, UnaryOp, Var, WhileStmt, YieldStmt,
)
from pypto.ir.printer import print_program as python_print
from pypto.ir.scalar_exprs import *  # noqa: F403  (ir.Add(x, y, dtype, span) ...: the reference's scalar nodes)
from pypto.ir.scalar_exprs import __all__ as _SCALAR_EXPRS
from pypto.ir.types import MemRef, ScalarType, TensorType, TileType, TupleType, Type
from pypto.ir.visit import Mutator as IRMutator
from pypto.ir.visit import Visitor as IRVisitor
from pypto.language.dtypes import (
    BF16, BOOL, FP4, FP8E4M3FN, FP8E5M2, FP8E8M0, FP16, FP32, HF4, HF8, INDEX, INT4, INT8, INT16, INT32, INT64,
    UINT4, UINT8, UINT16, UINT32, UINT64, DataType,
)
from pypto.language.enums import ForKind, FunctionType, Level, MemorySpace, ParamDirection, SplitMode
from pypto.language.program import loads, parse
from pypto.module_alias import alias_modules

__all__ = ["compile", "default_pipeline", "run_pipeline", "CompiledProgram", "StructuralMismatch",
           "assert_structural_equal", "structural_equal", "Function", "Program", "python_print",
           "PassDumpLevel", "VerificationLevel", "parse", "loads", "OptimizationStrategy", "PassManager",
           "PassContext", "VerificationMode", "DiagnosticPhase", "DiagnosticCheck", "DiagnosticCheckSet",
           "IRMutator", "IRVisitor", "Type", "ScalarType", "TensorType", "TileType", "TupleType", "MemRef",
           "FunctionType", "MemorySpace", "ParamDirection", "DataType", "ForKind", "Level", "SplitMode",
           "compiled_program", "pass_manager",
           "BF16", "BOOL", "FP16", "FP32", "INDEX", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32",
           "UINT64", "FP4", "FP8E4M3FN", "FP8E5M2", "FP8E8M0", "HF4", "HF8", "INT4", "UINT4", "IRBuilder",
           "FunctionBuilder", "ForLoopBuilder", "WhileLoopBuilder", "IfStmtBuilder", "ScopeBuilder", "ProgramBuilder",
           "GlobalVar", "ScopeKind", "Span", *_SCALAR_EXPRS, "AssignStmt", "BinOp", "Call", "ConstBool",
           "ConstFloat", "ConstInt", "EvalStmt", "Expr", "ForStmt", "FuncCall", "IfStmt", "MakeTuple", "ReturnStmt",
           "ScopeStmt", "Stmt", "TupleGetItem", "UnaryOp", "Var", "WhileStmt", "YieldStmt"]

# The driver's modules under their old (and the reference's) names: ``import pypto.ir.compile``
# gives the module ``pypto.driver.build`` itself (see pypto.module_alias).
_MODULE_ALIASES = {"compile": "pypto.driver.build", "compiled": "pypto.driver.compiled",
                   "builder": "pypto.frontend.ir_builder",
                   "compiled_program": "pypto.driver.compiled", "pass_manager": "pypto.driver.pass_manager",
                   "artifacts": "pypto.driver.artifacts"}
alias_modules({f"{__name__}.{k}": v for k, v in _MODULE_ALIASES.items()})

# Names of higher layers, loaded on first access (importing them here would be an import circle).
_LAZY = {
    "compile": "pypto.driver.build", "default_pipeline": "pypto.driver.build",
    "run_pipeline": "pypto.driver.build", "CompiledProgram": "pypto.driver.compiled",
    "OptimizationStrategy": "pypto.driver.pass_manager", "PassManager": "pypto.driver.pass_manager",
    "PassDumpLevel": "pypto.passes.manager", "VerificationLevel": "pypto.passes.manager",
    "DiagnosticPhase": "pypto.passes.diagnostics",
    "DiagnosticCheck": "pypto.pypto_core.passes", "DiagnosticCheckSet": "pypto.pypto_core.passes",
    "PassContext": "pypto.pypto_core.passes", "VerificationMode": "pypto.pypto_core.passes",
    # the IR builder builds op calls through the op registry (a layer above the IR)
    **{n: "pypto.frontend.ir_builder" for n in ("IRBuilder", "FunctionBuilder", "ForLoopBuilder", "WhileLoopBuilder",
                                                 "IfStmtBuilder", "ScopeBuilder", "ProgramBuilder", "GlobalVar",
                                                 "ScopeKind")},
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _MODULE_ALIASES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module 'pypto.ir' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_MODULE_ALIASES))


class _Package(_types.ModuleType):
    """``pypto.ir.compile`` is the function (the reference's ``ir.compile(...)``), also after
    ``import pypto.ir.compile`` — which would otherwise bind the module of that name onto the
    package, as every submodule import does."""

    def __setattr__(self, name, value):
        if name == "compile" and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
