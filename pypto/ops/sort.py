"""Sort ops: ``sort32`` and ``mrgsort`` (tensor and tile), ``gather_mask`` (tile) to take the values or
the indices out of a sorted list. Helpers, layout and order: :mod:`pypto.ops.support.sort`.

* ``sort32(src, idx)``: FP32 / FP16 ``src [R, C]`` (``C`` a multiple of 32) and its index tile
  (UINT32 / INT32): each 32-element block sorted descending, result ``[R, 2C]`` FP32 / ``[R, 4C]``
  FP16 of 8-byte (value, index-bits) structs (layout: :mod:`pypto.ops.support.sort`).
* ``mrgsort(src, block_len=L)`` (format 1): merges each group of 4 sorted runs of ``L`` columns
  (a multiple of 32 structs: 64 FP32 / 128 FP16 columns) into one run; ``mrgsort(src0, src1[, src2[, src3]], tmp=t)`` (format 2): merges
  2..4 sorted lists into one of ``t``'s shape. ``exhausted=True`` (the device's early-stop mode) is
  refused: its output is not specified by the reference.
* ``pl.tile.scatter_mask(dst, src, mask_pattern)``: the inverse: ``dst`` with the selected columns
  replaced by ``src``'s (``pl.tensor.scatter(input, mask_pattern=p, dst=d)`` lowers to it).
* ``pl.tile.gather_mask(src, mask_pattern, output_dtype=None)``: the columns selected by
  ``pl.tile.MaskPattern`` (P0101 = even columns: the values of a sorted list; P1010 = odd: the
  indices, with ``output_dtype=pl.UINT32``; P0001..P1000 every 4th; P1111 all), reinterpreted as
  ``output_dtype`` (same element size).

No lockstep gang form.
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.nodes import ConstInt
from pypto.ir.types import TensorType, TileType, describe
from pypto.language.dtypes import FP16, FP32, INT32, UINT32
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.rules import VEC_SPACES, expect, scalar_dtype

_STRIDE = {1: 2, 2: 2, 3: 4, 4: 4, 5: 4, 6: 4, 7: 1}


def _like(level: str, shape, dtype):
    return TileType(tuple(shape), dtype) if level == "tile" else TensorType(tuple(shape), dtype)


def _fp32(op: str, t, span: Span, what: str = "src") -> None:
    expect(t.dtype in (FP32, FP16), op, f"{what} must be FP32 or FP16, got {t.dtype.name}", span,
           "cast to FP32 with pl.cast(x, pl.FP32)")


def _slots(t) -> int:
    """FP32 / FP16 slots of one 8-byte sorted struct."""
    return 2 if t.dtype == FP32 else 4


def _sort32_rule(level: str):
    op = f"{level}.sort32"

    def infer(a: OpArgs, span: Span):
        s, i = a.src.type, a.idx.type
        _fp32(op, s, span)
        expect(len(s.shape) == 2, op, f"src must be rank 2, got {describe(s)}", span)
        expect(s.shape[-1] % 32 == 0, op, f"the row length must be a multiple of 32, got {s.shape[-1]}", span)
        expect(i.dtype in (UINT32, INT32), op, f"idx must be UINT32 (or INT32), got {i.dtype.name}", span)
        expect(tuple(i.shape) == tuple(s.shape), op, f"idx shape {list(i.shape)} differs from src {list(s.shape)}",
               span)
        return _like(level, (s.shape[0], _slots(s) * s.shape[1]), s.dtype)
    return infer


for _level in ("tensor", "tile"):
    _t = _level == "tile"
    register(OpDef(
        name=f"{_level}.sort32",
        params=(Param("src", _level), Param("idx", _level)),
        infer=_sort32_rule(_level),
        ref=lambda a: f"_pto.sort32({a.src}, {a.idx})",
        sim=(lambda a, dst: f"_pto.sort32({a.src}, {a.idx}, out={dst})") if _t else None,
        dsl="sort32", operand_kinds=(_level, _level),
        lowers_to=None if _t else "tile.sort32",
        traits=(VEC_SPACES,) if _t else (),
        doc="sort 32-element blocks descending into (value, index) pairs",
    ))


def _mrgsort_rule(level: str):
    op = f"{level}.mrgsort"

    def infer(a: OpArgs, span: Span):
        s0 = a.src0.type
        _fp32(op, s0, span, "src0")
        others = [x for x in (a.src1, a.src2, a.src3) if x is not None]
        if a.block_len is not None:
            expect(not others and a.tmp is None, op, "format 1 (block_len=...) takes one source and no tmp", span)
            expect(scalar_dtype(a.block_len.type).is_int(), op, "block_len must be an integer", span)
            k = _slots(s0)
            if isinstance(a.block_len, ConstInt):
                expect(a.block_len.value > 0 and a.block_len.value % (32 * k) == 0, op,
                       f"block_len must be a positive multiple of {32 * k}, got {a.block_len.value}", span)
            expect(len(s0.shape) == 2 and s0.shape[-1] % k == 0, op,
                   f"src must be a rank-2 list of (value, index) structs, got {describe(s0)}", span)
            return _like(level, s0.shape, s0.dtype)
        expect(others, op, "needs block_len=... (format 1) or at least two sources and tmp=... (format 2)", span,
               "pl.mrgsort(src, block_len=64) or pl.mrgsort(src0, src1, tmp=t)")
        expect(a.tmp is not None, op, "format 2 needs tmp=<tile> (its shape is the result's)", span)
        expect(not a.exhausted, op, "exhausted=True is not supported (the device's early-stop output is not "
               "specified)", span)
        for x in others:
            expect(x.type.dtype == s0.dtype, op, f"every source must be {s0.dtype.name} (src0's), got "
                   f"{x.type.dtype.name}", span)
        expect(a.tmp.type.dtype == s0.dtype, op, f"tmp must be {s0.dtype.name}, got {a.tmp.type.dtype.name}", span)
        return _like(level, a.tmp.type.shape, s0.dtype)
    return infer


def _mrgsort_src(a: OpArgs, dst: str | None = None) -> str:
    tail = "" if dst is None else f", out={dst}"
    if a.block_len != "None":
        return f"_pto.mrgsort1({a.src0}, {a.block_len}{tail})"
    srcs = ", ".join(s for s in (a.src0, a.src1, a.src2, a.src3) if s != "None")
    return f"_pto.mrgsort2([{srcs}], list({a.tmp}.shape){tail})"


for _level in ("tensor", "tile"):
    _t = _level == "tile"
    register(OpDef(
        name=f"{_level}.mrgsort",
        params=(Param("src0", _level), Param("src1", _level, None), Param("src2", _level, None),
                Param("src3", _level, None), Param("tmp", _level, None), Param("exhausted", "bool", False),
                Param("block_len", "scalar", None)),
        infer=_mrgsort_rule(_level),
        ref=lambda a: _mrgsort_src(a),
        sim=(lambda a, dst: _mrgsort_src(a, dst)) if _t else None,
        dsl="mrgsort", operand_kinds=(_level,),
        lowers_to=None if _t else "tile.mrgsort",
        traits=(VEC_SPACES,) if _t else (),
        doc="merge sorted runs (format 1, block_len) or sorted lists (format 2, tmp)",
    ))


def mask_result(op: str, s, p, output_dtype, span: Span):
    """Shape and dtype of a mask-pattern gather of ``s`` (shared with ``tensor.gather``'s mask form)."""
    expect(isinstance(p, int) and not isinstance(p, bool) and p in _STRIDE, op,
           f"mask_pattern must be 1..7 (pl.tile.MaskPattern), got {p!r}", span)
    dt = output_dtype if output_dtype is not None else s.dtype
    expect(dt.itemsize == s.dtype.itemsize, op, f"output_dtype {dt.name} must have the size of {s.dtype.name}", span)
    expect(len(s.shape) == 2 and s.shape[-1] % _STRIDE[p] == 0, op,
           f"the row length {s.shape[-1]} must be a multiple of the pattern's stride {_STRIDE[p]}", span)
    return (s.shape[0], s.shape[1] // _STRIDE[p]), dt


def _gather_mask_rule(a: OpArgs, span: Span) -> TileType:
    shape, dt = mask_result("tile.gather_mask", a.src.type, a.mask_pattern, a.output_dtype, span)
    return TileType(shape, dt)


register(OpDef(
    name="tile.gather_mask",
    params=(Param("src", "tile"), Param("mask_pattern", "str"), Param("output_dtype", "dtype", None)),
    infer=_gather_mask_rule,
    ref=lambda a: f"_pto.gather_mask({a.src}, {a.mask_pattern}, "
                  f"{a.output_dtype if a.output_dtype != 'None' else a.src + '.dtype'})",
    sim=lambda a, dst: f"_pto.gather_mask({a.src}, {a.mask_pattern}, {dst}.dtype, out={dst})",
    dsl="gather_mask", operand_kinds=("tile",),
    traits=(VEC_SPACES,),
    doc="the columns a mask pattern selects, reinterpreted as output_dtype",
))


def _scatter_mask_rule(a: OpArgs, span: Span) -> TileType:
    op = "tile.scatter_mask"
    d, s = a.dst.type, a.src.type
    shape, _ = mask_result(op, d, a.mask_pattern, None, span)
    expect(d.dtype == s.dtype, op, f"dst dtype {d.dtype.name} differs from src dtype {s.dtype.name}", span)
    expect(tuple(s.shape) == tuple(shape), op, f"src must have shape {list(shape)} (dst {list(d.shape)} with the "
           f"pattern's stride), got {list(s.shape)}", span)
    return TileType(d.shape, d.dtype, None, getattr(d, "valid_shape", None))


register(OpDef(
    name="tile.scatter_mask",
    params=(Param("dst", "tile"), Param("src", "tile"), Param("mask_pattern", "str")),
    infer=_scatter_mask_rule,
    ref=lambda a: f"_pto.scatter_mask({a.dst}, {a.src}, {a.mask_pattern})",
    sim=lambda a, dst: f"_pto.scatter_mask({a.dst}, {a.src}, {a.mask_pattern}, out={dst})",
    dsl="scatter_mask", operand_kinds=("tile", "tile"),
    traits=(VEC_SPACES,),
    doc="dst with the columns a mask pattern selects replaced by src's",
))
