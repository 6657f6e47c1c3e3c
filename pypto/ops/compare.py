"""Comparisons and selection at tensor and tile level: ``cmp`` / ``cmps`` and ``sel`` / ``sels``.

``cmp(lhs, rhs, cmp_type)`` and ``cmps(lhs, scalar, cmp_type)`` compare elementwise; ``cmp_type``
is an int attribute: EQ 0, NE 1, LT 2, LE 3, GT 4, GE 5 (default 0). The result is a BOOL
tensor/tile of the operand's shape (and valid shape). On the device a tile comparison produces a
*packed predicate mask* (one bit per element); we model it as a BOOL tile, one byte per element,
which is what ``sel``/``sels`` consume. Operands are compared in their promoted dtype (exact: no
rounding is involved); NaN compares unequal to everything (NE is true), as in IEEE.

``sel(mask, a, b)`` is ``torch.where(mask, a, b)``; ``sels(mask, a, scalar)`` takes a scalar for
the false branch. Both take the shape and valid shape of ``a``.
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.language.dtypes import BOOL
from pypto.ir.pysource import py_literal
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.rules import (TENSOR_ELEMENTWISE, TILE_ELEMENTWISE, arith_dtype, expect, promote, promote_scalar,
                              same_shape, scalar_dtype, with_dtype)

CMP_TYPES = {"EQ": 0, "NE": 1, "LT": 2, "LE": 3, "GT": 4, "GE": 5}


def _check_cmp_type(op: str, v, span: Span) -> None:
    expect(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 5, op,
           f"cmp_type must be an int in 0..5 (EQ0 NE1 LT2 LE3 GT4 GE5), got {v!r}", span)


def _cmp_rule(op: str, scalar: bool):
    def infer(a: OpArgs, span: Span):
        _check_cmp_type(op, a.cmp_type, span)
        arith_dtype(op, a.lhs.type.dtype, span)
        if not scalar:
            arith_dtype(op, a.rhs.type.dtype, span)
            same_shape(op, a.lhs.type, a.rhs.type, span)
            promote(a.lhs.type.dtype, a.rhs.type.dtype, op, span)
        return with_dtype(a.lhs.type, BOOL)
    return infer


def _sel_rule(op: str, scalar: bool):
    def infer(a: OpArgs, span: Span):
        m, x = a.mask.type, a.lhs.type
        expect(m.dtype == BOOL, op, f"mask must be BOOL (a cmp/cmps result), got {m.dtype.name}", span)
        same_shape(op, m, x, span)
        arith_dtype(op, x.dtype, span)
        if scalar:
            dtype = promote_scalar(x.dtype, scalar_dtype(a.rhs.type))
        else:
            same_shape(op, x, a.rhs.type, span)
            arith_dtype(op, a.rhs.type.dtype, span)
            dtype = promote(x.dtype, a.rhs.type.dtype, op, span)
        return with_dtype(x, dtype)
    return infer


def _sels_args(args: list, kwargs: dict, span):
    """``sels(mask, src, tmp, scalar)`` (the reference's order) -> the schema's
    ``(mask, lhs, rhs=scalar, tmp)``; ``sels(mask, src, scalar)`` is left alone."""
    if len(args) == 4:
        tmp = args.pop(2)
        args.append(tmp)
    elif len(args) == 3 and "scalar" in kwargs and hasattr(getattr(args[2], "type", None), "shape"):
        kwargs["tmp"] = args.pop(2)  # sels(mask, src, tmp, scalar=s)
    return args, kwargs


def _sels_dtype(a: OpArgs) -> str:
    return py_literal(promote_scalar(a.lhs.type.dtype, scalar_dtype(a.rhs.type)))


for _level in ("tensor", "tile"):
    _tile = _level == "tile"
    for _suffix, _rhs in (("", _level), ("s", "scalar")):
        _op = f"{_level}.cmp{_suffix}"
        register(OpDef(
            name=_op,
            params=(Param("lhs", _level), Param("rhs", _rhs), Param("cmp_type", "str", 0)),
            infer=_cmp_rule(_op, bool(_suffix)),
            ref=lambda a: f"_pto.cmp({a.lhs}, {a.rhs}, {a.cmp_type})",
            sim=(lambda a, dst: f"_pto.cmp({a.lhs}, {a.rhs}, {a.cmp_type}, out={dst})") if _tile else None,
            dsl=f"cmp{_suffix}", operand_kinds=(_level, _rhs),
            lowers_to=None if _tile else f"tile.cmp{_suffix}",
            traits=TILE_ELEMENTWISE if _tile else TENSOR_ELEMENTWISE,
            doc=f"elementwise comparison ({'scalar' if _suffix else 'array'} rhs) -> BOOL mask",
        ))
    _op = f"{_level}.sel"
    # the reference's sel(mask, lhs, rhs, tmp) / sels(mask, src, tmp, scalar): ``tmp`` is the
    # device's TSEL scratch; the simulators need none (it is kept as an operand, never read)
    register(OpDef(
        name=_op,
        params=(Param("mask", _level), Param("lhs", _level), Param("rhs", _level))
        + ((Param("tmp", "tile", None),) if _tile else ()),
        infer=_sel_rule(_op, False),
        ref=lambda a: f"torch.where({a.mask}, {a.lhs}, {a.rhs})",
        sim=(lambda a, dst: f"torch.where({a.mask}, {a.lhs}, {a.rhs}, out={dst})") if _tile else None,
        dsl="sel", operand_kinds=(_level, _level, _level),
        lowers_to=None if _tile else "tile.sel",
        traits=TILE_ELEMENTWISE if _tile else TENSOR_ELEMENTWISE,
        doc="select: mask ? lhs : rhs",
    ))
    _op = f"{_level}.sels"
    register(OpDef(
        name=_op,
        params=(Param("mask", _level), Param("lhs", _level, aliases=("src",)), Param("rhs", "scalar", aliases=("scalar",)))
        + ((Param("tmp", "tile", None),) if _tile else ()),
        infer=_sel_rule(_op, True),
        ref=lambda a: f"_pto.sels({a.mask}, {a.lhs}, {a.rhs}, {_sels_dtype(a)})",
        sim=(lambda a, dst: f"_pto.sels({a.mask}, {a.lhs}, {a.rhs}, {_sels_dtype(a)}, out={dst})") if _tile else None,
        dsl="sels", operand_kinds=(_level, _level, "scalar"), dsl_args=_sels_args if _tile else None,
        lowers_to=None if _tile else "tile.sels",
        traits=TILE_ELEMENTWISE if _tile else TENSOR_ELEMENTWISE,
        doc="select with a scalar false branch: mask ? lhs : scalar",
    ))
