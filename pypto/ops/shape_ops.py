"""Extents of tensors: ``pl.tensor.dim(t, axis)``.

* ``tensor.dim(x, axis)``: extent ``axis`` of tensor ``x`` (negative axes count from the end) as an
  ``INDEX`` scalar. A static extent folds to its int at parse time (no call is left); a dynamic one
  (``pl.dynamic``) is read at run time — in orchestration from the tensor, in a kernel from the
  global tensor the task was given (``tile.tensor_dim``, what ``tensor.dim`` lowers to in an InCore
  function: the tensor is not loaded for it).
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.nodes import AssignStmt, Call, ConstInt
from pypto.ir.types import ScalarType, TensorType, describe
from pypto.language.dtypes import INDEX
from pypto.ops.builder import build
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.traits import Lockstep
from pypto.ops.rules import expect


def _axis(a: OpArgs, op: str, span: Span) -> int:
    t = a.x.type
    expect(isinstance(t, TensorType), op, f"takes a tensor, got {describe(t)}", span)
    ax = a.axis
    expect(isinstance(ax, ConstInt), op, "the axis must be a constant int", span, "write e.g. pl.tensor.dim(t, 0)")
    rank = len(t.shape)
    i = ax.value + rank if ax.value < 0 else ax.value
    expect(0 <= i < rank, op, f"axis {ax.value} is out of range for {describe(t)} (rank {rank})", span)
    return i


def _infer(op: str):
    def infer(a: OpArgs, span: Span):
        _axis(a, op, span)
        return ScalarType(INDEX)
    return infer


def _fold(a: OpArgs):
    t = a.x.type
    if not isinstance(t, TensorType) or not isinstance(a.axis, ConstInt):
        return None
    i = a.axis.value + len(t.shape) if a.axis.value < 0 else a.axis.value
    d = t.shape[i] if 0 <= i < len(t.shape) else None
    return d if isinstance(d, int) and not isinstance(d, bool) else None


def _lower(call: Call, result, conv):
    x, axis = call.args
    # the global tensor itself, never a tile loaded from it
    dim = build("tile.tensor_dim", call.span, x=conv.var(x), axis=axis)
    return [AssignStmt(conv.var(result), dim, call.span)], None


def _src(a: OpArgs) -> str:
    return f"int({a.x}.shape[{a.axis}])"


register(OpDef(
    name="tensor.dim",
    params=(Param("x", "tensor", aliases=("tensor",)), Param("axis", "scalar")),
    infer=_infer("tensor.dim"), fold=_fold, lower=_lower,
    dsl="dim", operand_kinds=("tensor",),
    ref=_src, orch=_src,
    doc="extent of one dimension of a tensor (an INDEX scalar; a static extent folds to its int)",
))
register(OpDef(
    name="tile.tensor_dim",
    params=(Param("x", "tensor"), Param("axis", "scalar")),
    infer=_infer("tile.tensor_dim"), fold=_fold,
    ref=_src, sim=lambda a, dst: _src(a), traits=(Lockstep.PLAN,),
    doc="tensor.dim in a kernel: the extent of the global tensor the task was given",
))
