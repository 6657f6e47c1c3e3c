"""MX (micro-scaled) matmul on the cube, A5: ``tile.matmul_mx(lhs, lhs_scale, rhs, rhs_scale)``,
``tile.matmul_mx_acc(acc, lhs, lhs_scale, rhs, rhs_scale)`` (``acc +`` the product) and
``tile.matmul_mx_bias(lhs, lhs_scale, rhs, rhs_scale, bias)`` (``bias +`` it, ``bias`` ``[1, N]``).

Operands (the reference's type rules): ``lhs`` ``[M, K]`` in Left and ``rhs`` ``[K, N]`` in Right,
both FP8E4M3FN (an FP4 operand is cast to FP8E4M3FN first, with ``pl.cast``: there is no native FP4
matmul); ``lhs_scale`` ``[M, ceil(K/32)]`` in LeftScale and ``rhs_scale`` ``[ceil(K/32), N]`` in
RightScale, FP8E8M0, one scale per 32 consecutive K elements. Physical M % 16, K % 64 and N % 32
must be 0 (the instruction's alignment); valid K rounds up to the same group count as physical K.
The result is an FP32 ``[M, N]`` Acc tile with valid shape ``[lhs valid M, rhs valid N]``.

Scale tiles come from GM tensors annotated ``pl.MX_A_ZZ`` / ``pl.MX_B_NN`` (the reference's packed
scale layouts): ``tile.load`` unpacks them, so a scale tile holds the logical ``[M, G]`` / ``[G, N]``
scales. Numerics (exact decode, float64 accumulation, one rounding to FP32; acc / bias joining that
sum) are :mod:`pypto.numerics.mx`'s, the one function both executors call.
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.types import TileType
from pypto.language.dtypes import FP32, DataType
from pypto.language.enums import MemorySpace as M
from pypto.numerics.mx import groups
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.rules import expect
from pypto.ops.traits import InPlaceSafe, MemorySpaces


def _platform_rule(arch: str, args: tuple):
    if arch != "a5":
        return f"the MX matmul (TMATMUL_MX) exists only on A5, not on {arch}; run on a5sim"
    return None


def _dim(t: TileType, i: int):
    return t.shape[i]


def _valid(t: TileType, i: int):
    return t.effective_valid_shape[i]


def _static(x) -> bool:
    return isinstance(x, int)


def _check_data(op: str, name: str, dt: DataType, span: Span) -> None:
    fp4 = "; there is no native FP4 matmul: cast the FP4 operand with pl.cast(x, pl.FP8E4M3FN) first" \
        if dt.name == "FP4" else ""
    expect(dt.name == "FP8E4M3FN", op, f"{name} must be FP8E4M3FN, got {dt.name}{fp4}", span)


def _check_scale(op: str, name: str, t, phys: tuple, valid: tuple, span: Span) -> None:
    expect(isinstance(t, TileType), op, f"{name} must be a tile", span)
    expect(t.dtype.name == "FP8E8M0", op, f"{name} must be FP8E8M0 (the MX scales), got {t.dtype.name}", span)
    expect(len(t.shape) == 2, op, f"{name} must be 2-D, got {len(t.shape)}-D", span)
    for axis, (want, got) in enumerate(zip(phys, t.shape)):
        expect(not (_static(want) and _static(got)) or want == got, op,
               f"{name} must have shape {list(phys)} ([M, ceil(K/32)] / [ceil(K/32), N]), got {list(t.shape)}", span)
    for want, got in zip(valid, t.effective_valid_shape):
        expect(not (_static(want) and _static(got)) or want == got, op,
               f"{name} must have valid shape {list(valid)}, got {list(t.effective_valid_shape)}", span)


def _mx_type(op: str, lhs, lhs_scale, rhs, rhs_scale, span: Span) -> TileType:
    lt, rt = lhs.type, rhs.type
    expect(isinstance(lt, TileType) and isinstance(rt, TileType), op, "lhs and rhs must be tiles", span)
    expect(len(lt.shape) == 2 and len(rt.shape) == 2, op,
           f"lhs and rhs must be 2-D, got ranks {len(lt.shape)} and {len(rt.shape)}", span)
    _check_data(op, "lhs", lt.dtype, span)
    _check_data(op, "rhs", rt.dtype, span)
    m, k, k2, n = _dim(lt, 0), _dim(lt, 1), _dim(rt, 0), _dim(rt, 1)
    for what, v, align in (("M", m, 16), ("N", n, 32), ("lhs K", k, 64), ("rhs K", k2, 64)):
        expect(not _static(v) or (v > 0 and v % align == 0), op,
               f"physical {what} must be a positive multiple of {align} (the MX instruction's alignment), got {v}",
               span)
    expect(not (_static(k) and _static(k2)) or k == k2, op, f"inner dimensions differ: lhs K={k}, rhs K={k2}", span)
    vm, vk, vk2, vn = _valid(lt, 0), _valid(lt, 1), _valid(rt, 0), _valid(rt, 1)
    expect(not (_static(vk) and _static(vk2)) or vk == vk2, op,
           f"valid K differs: lhs {vk}, rhs {vk2}", span)
    for side, pk, vkk in (("lhs", k, vk), ("rhs", k2, vk2)):
        expect(not (_static(pk) and _static(vkk)) or groups(vkk) == groups(pk), op,
               f"{side} valid K={vkk} must round up to the same number of 32-element scale groups as physical "
               f"K={pk} (ceil(validK/32) == ceil(K/32))", span)
    g = groups(k) if _static(k) else lhs_scale.type.shape[1]
    gv = groups(vk) if _static(vk) else g
    _check_scale(op, "lhs_scale", lhs_scale.type, (m, g), (vm, gv), span)
    g2 = groups(k2) if _static(k2) else rhs_scale.type.shape[0]
    gv2 = groups(vk2) if _static(vk2) else g2
    _check_scale(op, "rhs_scale", rhs_scale.type, (g2, n), (gv2, vn), span)
    valid = None if lt.valid_shape is None and rt.valid_shape is None else (vm, vn)
    return TileType((m, n), FP32, None, valid)


def _infer(a: OpArgs, span: Span) -> TileType:
    return _mx_type("tile.matmul_mx", a.lhs, a.lhs_scale, a.rhs, a.rhs_scale, span)


def _acc_infer(a: OpArgs, span: Span) -> TileType:
    op = "tile.matmul_mx_acc"
    out = _mx_type(op, a.lhs, a.lhs_scale, a.rhs, a.rhs_scale, span)
    t = a.acc.type
    expect(isinstance(t, TileType) and t.dtype == FP32, op,
           f"acc must be an FP32 tile, got {getattr(t.dtype, 'name', t)}", span)
    expect(tuple(t.shape) == tuple(out.shape), op,
           f"accumulator shape {list(t.shape)} differs from the product shape {list(out.shape)}", span)
    for want, got in zip(out.effective_valid_shape, t.effective_valid_shape):
        expect(not (_static(want) and _static(got)) or want == got, op,
               f"accumulator valid shape {list(t.effective_valid_shape)} differs from the product's "
               f"{list(out.effective_valid_shape)}", span)
    # like matmul_acc: the result lives where the accumulator does, so a loop carrying it keeps one type
    return TileType(out.shape, FP32, t.memory_space, t.valid_shape)


def _bias_infer(a: OpArgs, span: Span) -> TileType:
    op = "tile.matmul_mx_bias"
    out = _mx_type(op, a.lhs, a.lhs_scale, a.rhs, a.rhs_scale, span)
    t = a.bias.type
    expect(isinstance(t, TileType) and t.dtype == FP32 and len(t.shape) == 2, op,
           f"bias must be a 2-D FP32 tile, got {t}", span)
    expect(tuple(t.shape) == (1, out.shape[1]), op, f"bias must have shape [1, {out.shape[1]}], got {list(t.shape)}",
           span)
    expect(t.effective_valid_shape[0] == 1, op, "bias valid rows must be 1", span)
    return out


_DATA = (("lhs", (M.Left,)), ("lhs_scale", (M.LeftScale,)), ("rhs", (M.Right,)), ("rhs_scale", (M.RightScale,)))
_OPERANDS = ("tile", "tile", "tile", "tile")


def _args(a: OpArgs) -> str:
    return f"{a.lhs}, {a.lhs_scale}, {a.rhs}, {a.rhs_scale}"


register(OpDef(
    name="tile.matmul_mx",
    params=(Param("lhs", "tile"), Param("lhs_scale", "tile"), Param("rhs", "tile"), Param("rhs_scale", "tile")),
    infer=_infer,
    ref=lambda a: f"_pto.matmul_mx({_args(a)})",
    sim=lambda a, dst: f"_pto.matmul_mx_into({dst}, {_args(a)})",
    traits=(MemorySpaces(_DATA, M.Acc),),
    dsl="matmul_mx", operand_kinds=_OPERANDS, platform_rule=_platform_rule,
    doc="MX block-scaled lhs @ rhs (FP8E4M3FN data, FP8E8M0 scale per 32 K elements) -> FP32 Acc (A5)",
))

register(OpDef(
    name="tile.matmul_mx_acc",
    params=(Param("acc", "tile"), Param("lhs", "tile"), Param("lhs_scale", "tile"), Param("rhs", "tile"),
            Param("rhs_scale", "tile")),
    infer=_acc_infer,
    ref=lambda a: f"_pto.matmul_mx({_args(a)}, acc={a.acc})",
    sim=lambda a, dst: f"_pto.matmul_mx_into({dst}, {_args(a)}, acc={a.acc})",
    updates="acc",
    # the sim computes the whole result before writing dst: dst may be acc's buffer
    traits=(MemorySpaces((("acc", (M.Acc,)), *_DATA), M.Acc), InPlaceSafe()),
    dsl="matmul_mx_acc", operand_kinds=("tile", *_OPERANDS), platform_rule=_platform_rule,
    doc="acc + MX block-scaled lhs @ rhs, one FP32 rounding (A5)",
))

register(OpDef(
    name="tile.matmul_mx_bias",
    params=(Param("lhs", "tile"), Param("lhs_scale", "tile"), Param("rhs", "tile"), Param("rhs_scale", "tile"),
            Param("bias", "tile")),
    infer=_bias_infer,
    ref=lambda a: f"_pto.matmul_mx({_args(a)}, bias={a.bias})",
    sim=lambda a, dst: f"_pto.matmul_mx_into({dst}, {_args(a)}, bias={a.bias})",
    traits=(MemorySpaces((*_DATA, ("bias", (M.Bias,))), M.Acc),),
    dsl="matmul_mx_bias", operand_kinds=(*_OPERANDS, "tile"), platform_rule=_platform_rule,
    doc="bias[1, N] + MX block-scaled lhs @ rhs, one FP32 rounding (A5)",
))
