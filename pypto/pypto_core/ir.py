"""``pypto.pypto_core.ir``: the reference's native IR module, as names of ours.

IR nodes (:mod:`pypto.ir.nodes`), types (:mod:`pypto.ir.types`), enums of the language and
``IRMutator`` / ``IRVisitor`` (:class:`pypto.ir.visit.Mutator` / :class:`~pypto.ir.visit.Visitor`).
Our nodes are frozen dataclasses; a mutator rebuilds, never edits in place.
"""
from pypto.backend.backend_type import CoreType
from pypto.ir.nodes import (
    AssignStmt, BinOp, Call, ConstBool, ConstFloat, ConstInt, EvalStmt, Expr, ForStmt, FuncCall, Function, IfStmt,
    MakeTuple, Node, Program, ReturnStmt, ScopeStmt, Stmt, TupleGetItem, UnaryOp, Var, WhileStmt, YieldStmt,
)
from pypto.ir.scalar_exprs import *  # noqa: F403  (the reference's scalar nodes, as BinOp / UnaryOp builders)
from pypto.ir.scalar_exprs import __all__ as _SCALAR_EXPRS
from pypto.ir.types import DynDim, MemRef, ScalarType, TensorType, TileType, TupleType, Type
from pypto.ir.visit import Mutator as IRMutator
from pypto.ir.visit import Visitor as IRVisitor
from pypto.language.dtypes import DataType
from pypto.language.enums import ForKind, FunctionType, Level, MemorySpace, ParamDirection, Role
from pypto.errors import Span

__all__ = ["AssignStmt", "BinOp", "Call", "ConstBool", "ConstFloat", "ConstInt", "CoreType", "DataType", "DynDim",
           "EvalStmt", "Expr", "ForKind", "ForStmt", "FuncCall", "Function", "FunctionType", "IRMutator", "IRVisitor",
           "IfStmt", "Level", "MakeTuple", "MemRef", "MemorySpace", "Node", "ParamDirection", "Program", "ReturnStmt",
           "Role", "ScalarType", "ScopeStmt", "Span", "Stmt", "TensorType", "TileType", "TupleGetItem", "TupleType",
           "Type", "UnaryOp", "Var", "WhileStmt", "YieldStmt", *_SCALAR_EXPRS]
