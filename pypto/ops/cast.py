"""``cast`` at tensor and tile level, with the hardware's seven rounding modes.

The numerics live in :mod:`pypto.numerics.cast` (bit-exact, vectorised); both executors call it
through ``_pto.cast``. Casts the platform cannot do in one instruction are expanded into chains of
native casts by the LegalizeTileCast pass; every hop keeps the mode.
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.numerics.cast import normalize_mode
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.rules import VEC_SPACES, expect, with_dtype
from pypto.ops.traits import Elementwise, Lockstep


def _define(level: str) -> None:
    op = f"{level}.cast"

    def infer(a: OpArgs, span: Span):
        try:
            normalize_mode(a.mode)
        except ValueError as e:
            expect(False, op, str(e), span)
        return with_dtype(a.x.type, a.dtype)

    register(OpDef(
        name=op,
        params=(Param("x", level, aliases=("input", "tile")), Param("dtype", "dtype", aliases=("target_type",)),
                Param("mode", "mode", "round")),
        infer=infer,
        ref=lambda a: f"_pto.cast({a.x}, {a.dtype}, {a.mode})",
        sim=None if level == "tensor" else (
            lambda a, dst: f"_pto.cast_into({dst}, {a.x}, {a.dtype}, {a.mode})"),
        dsl="cast", operand_kinds=(level,),
        lowers_to="tile.cast" if level == "tensor" else None,
        # elementwise, but not in-place: the result's dtype is another one
        traits=(Elementwise(), Lockstep.ROWS, VEC_SPACES) if level == "tile" else (Elementwise(),),
        doc="convert to another dtype under a rounding mode (none rint round floor ceil trunc odd)",
    ))


_define("tensor")
_define("tile")
