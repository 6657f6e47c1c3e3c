"""The cube's matmul variants (issue 15): ``tile.matmul_bias``, ``tile.gemv`` / ``gemv_acc`` /
``gemv_bias`` and ``tile.batch_matmul`` / ``batch_matmul_acc``; the numerics are those of
:mod:`pypto.ops.support.matmul_ext` (each variant is the plain ``matmul`` / ``matmul_acc`` it stands for).

Type rules (the reference's):

* operands of one dtype, FP16 / BF16 / FP32 -> FP32 accumulator, INT8 -> INT32 (:func:`acc_dtype`);
* a result's ``valid_shape`` is ``[lhs valid M, rhs valid N]`` (its store writes that region);
* ``matmul_bias``: bias ``[1, N]`` in the accumulator dtype, read from Bias (InferTileMemorySpace
  moves a Mat bias there), added once per element;
* ``gemv``: lhs ``[1, K]`` (one physical and one valid row), result ``[16, N]`` with valid ``[1, N]``
  (the cube's 16-row fractal); ``gemv_acc``'s accumulator must have exactly that type;
  ``acc_phase`` ("unspecified" / "partial" / "final") is the hardware's accumulation-phase hint:
  checked and kept, no effect on the values;
* ``batch_matmul``: ``[*lb, M, K] x [*rb, K, N] -> [*broadcast(lb, rb), M, N]``; ``batch_matmul_acc``'s
  accumulator has the broadcast batch shape (it is not broadcast). FlattenTileNdTo2D makes the tiles
  2-D and records the batch shapes in ``lhs_batch`` / ``rhs_batch``; ``a_trans`` / ``b_trans`` mean
  an operand stored transposed in its last two axes (set by the tensor-level lowering of a
  ``pl.matmul(..., b_trans=True)`` on N-D tensors; the reference spells it ``pl.tile.transpose_view``).
  AutoTileMatmulL0 does not split the op; one that cannot run on chip as one op (operands over Mat,
  a page over L0, the result over Acc) is unrolled per batch by FlattenTileNdTo2D when its operands
  are GM loads and its result is stored (pypto.passes.batch_matmul_pages).
"""
from __future__ import annotations

import math

from pypto.errors import Span
from pypto.ir.types import TileType
from pypto.language.enums import MemorySpace as M
from pypto.ops.matmul import _mm_shape, acc_dtype
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.traits import InPlaceSafe, Lockstep, MemorySpaces
from pypto.ops.rules import const_ints, expect

_ACC_PHASES = ("unspecified", "partial", "final")


def _valid(lt: TileType, rt: TileType, m: int, n: int):
    """The product's valid extent ``[lhs valid M, rhs valid N]`` (None: the whole tile)."""
    if lt.valid_shape is None and rt.valid_shape is None:
        return None
    return (lt.effective_valid_shape[0] if len(lt.shape) == 2 else m, rt.effective_valid_shape[-1])


def _check_k(op: str, lt: TileType, rt: TileType, span: Span) -> None:
    lk, rk = lt.effective_valid_shape[-1], rt.effective_valid_shape[0]
    if isinstance(lk, int) and isinstance(rk, int):
        expect(lk <= rk, op, f"rhs valid K {rk} does not cover lhs valid K {lk}", span)


# ------------------------------------------------------------------ matmul_bias

def _check_bias(op: str, bias: TileType, n: int, acc, span: Span, exact_row: bool = False) -> None:
    expect(len(bias.shape) == 2 and bias.shape[0] == 1, op, f"bias must be [1, N], got {list(bias.shape)}", span)
    expect(bias.shape[1] == n, op, f"bias N {bias.shape[1]} differs from the output N {n}", span)
    expect(bias.dtype == acc, op, f"bias dtype {bias.dtype.name} is not the accumulator dtype {acc.name}", span,
           f"load the bias as {acc.name} (the cube adds it to the {acc.name} accumulator)")


def _bias_infer(a: OpArgs, span: Span) -> TileType:
    op = "tile.matmul_bias"
    lt, rt = a.lhs.type, a.rhs.type
    m, _, n = _mm_shape(op, lt.shape, rt.shape, span)
    acc = acc_dtype(op, lt.dtype, rt.dtype, span)
    _check_k(op, lt, rt, span)
    _check_bias(op, a.bias.type, n, acc, span)
    return TileType((m, n), acc, None, _valid(lt, rt, m, n))


register(OpDef(
    name="tile.matmul_bias",
    params=(Param("lhs", "tile"), Param("rhs", "tile"), Param("bias", "tile")),
    infer=_bias_infer,
    ref=lambda a: f"_pto.matmul_bias({a.lhs}, {a.rhs}, {a.bias})",
    sim=lambda a, dst, gang=False: (f"_pto.gang(_pto.matmul_bias_into, {dst}, {a.lhs}, {a.rhs}, {a.bias})" if gang
                                    else f"_pto.matmul_bias_into({dst}, {a.lhs}, {a.rhs}, {a.bias})"),
    traits=(MemorySpaces((("lhs", (M.Left,)), ("rhs", (M.Right,)), ("bias", (M.Bias,))), M.Acc), Lockstep.GANG),
    dsl="matmul_bias", operand_kinds=("tile", "tile", "tile"),
    doc="bias + lhs @ rhs on the cube (bias [1, N] in the accumulator dtype, the accumulator's initial value)",
))


# ------------------------------------------------------------------ gemv

def _gemv_common(op: str, a: OpArgs, span: Span):
    expect(a.acc_phase in _ACC_PHASES, op, f"acc_phase must be one of {', '.join(_ACC_PHASES)}, got "
                                           f"{a.acc_phase!r}", span)
    lt, rt = a.lhs.type, a.rhs.type
    _, _, n = _mm_shape(op, lt.shape, rt.shape, span)
    acc = acc_dtype(op, lt.dtype, rt.dtype, span)
    expect(lt.shape[0] == 1 and lt.effective_valid_shape[0] == 1, op,
           f"lhs must be one row ([1, K]), got {list(lt.shape)}"
           + (f" (valid {list(lt.valid_shape)})" if lt.valid_shape is not None else ""), span,
           "use pl.matmul for more than one row")
    _check_k(op, lt, rt, span)
    from pypto.ops.support.matmul_ext import GEMV_ROWS

    return TileType((GEMV_ROWS, n), acc, None, (1, rt.effective_valid_shape[1])), n, acc


def _gemv_infer(a: OpArgs, span: Span) -> TileType:
    return _gemv_common("tile.gemv", a, span)[0]


def _gemv_acc_infer(a: OpArgs, span: Span) -> TileType:
    want, _, _ = _gemv_common("tile.gemv_acc", a, span)
    t = a.acc.type
    expect(tuple(t.shape) == tuple(want.shape) and t.dtype == want.dtype
           and tuple(t.effective_valid_shape) == tuple(want.effective_valid_shape), "tile.gemv_acc",
           f"accumulator must be {list(want.shape)} {want.dtype.name} with valid shape "
           f"{list(want.effective_valid_shape)} (a gemv result), got {list(t.shape)} {t.dtype.name} valid "
           f"{list(t.effective_valid_shape)}", span, "accumulate into the result of pl.tile.gemv")
    return TileType(want.shape, want.dtype, t.memory_space, want.valid_shape)


def _gemv_bias_infer(a: OpArgs, span: Span) -> TileType:
    want, n, acc = _gemv_common("tile.gemv_bias", a, span)
    _check_bias("tile.gemv_bias", a.bias.type, n, acc, span)
    expect(a.bias.type.effective_valid_shape[0] == 1, "tile.gemv_bias", "bias must have exactly one valid row",
           span)
    return want


def _gemv_sim(fn_args: str, gang: bool, dst: str) -> str:
    return f"_pto.gang(_pto.gemv_into, {dst}, {fn_args})" if gang else f"_pto.gemv_into({dst}, {fn_args})"


_PHASE = Param("acc_phase", "str", "unspecified")

register(OpDef(
    name="tile.gemv",
    params=(Param("lhs", "tile"), Param("rhs", "tile"), _PHASE),
    infer=_gemv_infer,
    ref=lambda a: f"_pto.gemv({a.lhs}, {a.rhs})",
    sim=lambda a, dst, gang=False: _gemv_sim(f"{a.lhs}, {a.rhs}", gang, dst),
    traits=(MemorySpaces((("lhs", (M.Left,)), ("rhs", (M.Right,))), M.Acc), Lockstep.GANG),
    dsl="gemv", operand_kinds=("tile", "tile"),
    doc="C[1, N] = A[1, K] @ B[K, N] on the cube (result [16, N], valid [1, N])",
))

register(OpDef(
    name="tile.gemv_acc",
    params=(Param("acc", "tile"), Param("lhs", "tile"), Param("rhs", "tile"), _PHASE),
    infer=_gemv_acc_infer,
    ref=lambda a: f"_pto.gemv({a.lhs}, {a.rhs}, {a.acc})",
    sim=lambda a, dst, gang=False: _gemv_sim(f"{a.lhs}, {a.rhs}, {a.acc}", gang, dst),
    traits=(MemorySpaces((("acc", (M.Acc,)), ("lhs", (M.Left,)), ("rhs", (M.Right,))), M.Acc), InPlaceSafe(),
            Lockstep.GANG), updates="acc",
    dsl="gemv_acc", operand_kinds=("tile", "tile", "tile"),
    doc="C[1, N] += A[1, K] @ B[K, N] (acc: a gemv result)",
))

register(OpDef(
    name="tile.gemv_bias",
    params=(Param("lhs", "tile"), Param("rhs", "tile"), Param("bias", "tile"), _PHASE),
    infer=_gemv_bias_infer,
    ref=lambda a: f"_pto.gemv({a.lhs}, {a.rhs}, None, {a.bias})",
    sim=lambda a, dst, gang=False: _gemv_sim(f"{a.lhs}, {a.rhs}, None, {a.bias}", gang, dst),
    traits=(MemorySpaces((("lhs", (M.Left,)), ("rhs", (M.Right,)), ("bias", (M.Bias,))), M.Acc), Lockstep.GANG),
    dsl="gemv_bias", operand_kinds=("tile", "tile", "tile"),
    doc="C[1, N] = A[1, K] @ B[K, N] + bias[1, N]",
))


# ------------------------------------------------------------------ batch_matmul

def broadcast_batch(op: str, lb, rb, span: Span) -> tuple:
    """numpy broadcasting of two batch shapes; error naming both when they do not broadcast."""
    n = max(len(lb), len(rb))
    lp, rp = (1,) * (n - len(lb)) + tuple(lb), (1,) * (n - len(rb)) + tuple(rb)
    out = []
    for x, y in zip(lp, rp):
        expect(x == y or x == 1 or y == 1, op, f"batch dims {list(lb)} and {list(rb)} do not broadcast", span)
        out.append(y if x == 1 else x)
    return tuple(out)


def batch_geometry(op: str, lt, rt, lhs_batch, rhs_batch, a_trans: bool, b_trans: bool, span: Span):
    """``(result shape, accumulator dtype)`` of a batch matmul; N-D operands, or the 2-D form with
    ``lhs_batch`` / ``rhs_batch`` (FlattenTileNdTo2D)."""
    if lhs_batch is None:
        expect(len(lt.shape) >= 2 and len(rt.shape) >= 2, op,
               f"operands need rank >= 2, got ranks {len(lt.shape)} and {len(rt.shape)}", span)
        lb, rb = tuple(lt.shape[:-2]), tuple(rt.shape[:-2])
        lm, rm = tuple(lt.shape[-2:]), tuple(rt.shape[-2:])
        flat = False
    else:
        lb, rb = tuple(const_ints(lhs_batch)), tuple(const_ints(rhs_batch))
        expect(len(lt.shape) == 2 and len(rt.shape) == 2 and None not in lb + rb, op,
               "the flattened form needs 2-D operands and constant batch shapes", span)
        pl_, pr = math.prod(lb), math.prod(rb)
        expect(lt.shape[0] % pl_ == 0 and rt.shape[0] % pr == 0, op,
               f"flattened operands {list(lt.shape)} / {list(rt.shape)} do not split into batches {list(lb)} / "
               f"{list(rb)}", span)
        lm, rm = (lt.shape[0] // pl_, lt.shape[1]), (rt.shape[0] // pr, rt.shape[1])
        flat = True
    ob = broadcast_batch(op, lb, rb, span)
    m, _, n = _mm_shape(op, lm, rm, span, a_trans, b_trans)
    acc = acc_dtype(op, lt.dtype, rt.dtype, span)
    return ((math.prod(ob) * m, n) if flat else (*ob, m, n)), acc


def _bmm_infer(a: OpArgs, span: Span) -> TileType:
    shape, acc = batch_geometry("tile.batch_matmul", a.lhs.type, a.rhs.type, a.lhs_batch, a.rhs_batch,
                                a.a_trans, a.b_trans, span)
    return TileType(shape, acc)


def _bmm_acc_infer(a: OpArgs, span: Span) -> TileType:
    op = "tile.batch_matmul_acc"
    shape, acc = batch_geometry(op, a.lhs.type, a.rhs.type, a.lhs_batch, a.rhs_batch, a.a_trans, a.b_trans, span)
    t = a.acc.type
    expect(tuple(t.shape) == tuple(shape) and t.dtype == acc, op,
           f"accumulator must be {list(shape)} {acc.name} (the broadcast product; acc is not broadcast), got "
           f"{list(t.shape)} {t.dtype.name}", span)
    return TileType(shape, acc, t.memory_space, t.valid_shape)


def _bmm_args(a: OpArgs) -> str:
    return f"{a.lhs}, {a.rhs}, {a.lhs_batch}, {a.rhs_batch}, {a.a_trans}, {a.b_trans}"


_BATCH_ATTRS = (Param("lhs_batch", "ints", None, optional=True), Param("rhs_batch", "ints", None, optional=True),
                Param("a_trans", "bool", False), Param("b_trans", "bool", False))


def _gang_bmm(a: OpArgs, dst: str, acc: str = "None") -> str:
    return (f"_pto.gang(lambda d, x, y, c: _pto.batch_matmul_into(d, x, y, {a.lhs_batch}, {a.rhs_batch}, "
            f"{a.a_trans}, {a.b_trans}, c), {dst}, {a.lhs}, {a.rhs}, {acc})")


register(OpDef(
    name="tile.batch_matmul",
    params=(Param("lhs", "tile"), Param("rhs", "tile"), *_BATCH_ATTRS),
    infer=_bmm_infer,
    ref=lambda a: f"_pto.batch_matmul({_bmm_args(a)})",
    sim=lambda a, dst, gang=False: _gang_bmm(a, dst) if gang else f"_pto.batch_matmul_into({dst}, {_bmm_args(a)})",
    traits=(MemorySpaces((("lhs", (M.Left,)), ("rhs", (M.Right,))), M.Acc), Lockstep.GANG),
    dsl="batch_matmul", operand_kinds=("tile", "tile"),
    doc="[*lb, M, K] @ [*rb, K, N] -> [*broadcast(lb, rb), M, N]: one cube matmul per batch",
))

register(OpDef(
    name="tile.batch_matmul_acc",
    params=(Param("acc", "tile"), Param("lhs", "tile"), Param("rhs", "tile"), *_BATCH_ATTRS),
    infer=_bmm_acc_infer,
    ref=lambda a: f"_pto.batch_matmul({_bmm_args(a)}, acc={a.acc})",
    sim=lambda a, dst, gang=False: (_gang_bmm(a, dst, a.acc) if gang
                                    else f"_pto.batch_matmul_into({dst}, {_bmm_args(a)}, acc={a.acc})"),
    traits=(MemorySpaces((("acc", (M.Acc,)), ("lhs", (M.Left,)), ("rhs", (M.Right,))), M.Acc), InPlaceSafe(),
            Lockstep.GANG), updates="acc",
    doc="acc + lhs @ rhs per batch (lhs/rhs batch dims broadcast to acc's)",
))
