"""LowerCompositeOps: ``tile.sin`` / ``tile.cos`` of FP32 tiles become the device's recipe of
primitive FP32 tile ops (Cody-Waite range reduction with a 4-part pi, a degree-9 odd polynomial).

Requires: nothing. Produces: nothing (the rewrite stays within tile ops).

Not in :data:`pypto.passes.PIPELINE`: the simulator runs ``tile.sin`` / ``tile.cos`` as primitives
(torch's FP32 sin/cos, correctly rounded or nearly so); this pass is what the reference's
``passes.lower_composite_ops()`` does, for programs that call it, and gives the device's numerics
(every step is an exact IEEE FP32 op, so the result is the device's bit for bit). FP16 / BF16 sin
and cos are left alone (the reference accepts FP32 only).

For ``y = sin(x)`` (``cos`` differs in steps 1-2 only), each step one tile op:

1. ``k = float(round(x * PI_INV))`` (cast to INT32 mode ``round``, ties away from zero, and back);
   cos: ``k = float(rint(x * PI_INV + 0.5))``
2. ``t = x - k*PI_V2 - k*PI_C1 - k*PI_C2 - k*PI_C3 - k*PI_C4``; cos adds ``PI_HALF_HEAD`` after the
   ``PI_C1`` term and ``PI_HALF_TAIL`` last
3. ``sign = floor(k * 0.5) * 4 + k * (-2) + 1`` (``(-1)^k``; floor through INT32 mode ``floor``)
4. ``p = (((R0*t^2 + R1)*t^2 + R2)*t^2 + R3)*t^2 + 1``; ``y = sign * (t * p)``

The constants are the reference's FP32 literals. The original Var keeps the final statement, so
later uses are unchanged; the temporaries are named ``<var>__sin_<k>``.
"""
from __future__ import annotations

from pypto.ir.nodes import AssignStmt, Call, Program, Var
from pypto.ir.visit import Mutator
from pypto.language.dtypes import FP32, INT32
from pypto.ops.builder import build
from pypto.passes.context import PassContext

NAME = "LowerCompositeOps"
REQUIRES = ()
PRODUCES = ()

PI_INV = 0.31830988732818603515625
PI_V2 = 3.140625
PI_C1 = 0.0009670257568359375
PI_C2 = 6.2771141529083251953125e-7
PI_C3 = 1.21644916362129151821e-10
PI_C4 = -1.0290623200529979163e-13
PI_HALF_HEAD = 1.57079637050628662109375
PI_HALF_TAIL = -4.371139000189375e-8
R0, R1, R2, R3 = 2.604926501e-6, -1.980894471e-4, 8.333049340e-3, -1.666665792e-1


def run(program: Program, ctx: PassContext | None) -> Program:
    return program.replace(functions=tuple(_Lower().function(f) for f in program.functions))


class _Lower(Mutator):
    def function(self, f):
        return f.replace(body=self.stmts(f.body))

    def visit_AssignStmt(self, s: AssignStmt):
        s = self.default_stmt(s)
        v = s.value
        if not (isinstance(v, Call) and v.op in ("tile.sin", "tile.cos") and v.type.dtype == FP32):
            return s
        return _recipe(s, v.args[0], v.op == "tile.cos")


def _recipe(s: AssignStmt, x, is_cos: bool) -> list:
    out: list = []
    stem = f"{s.var.name}__{'cos' if is_cos else 'sin'}_"

    def emit(op: str, **kw) -> Var:
        call = build(op, s.value.span, **kw)
        var = Var(f"{stem}{len(out)}", call.type, s.var.span)
        out.append(AssignStmt(var, call, s.span))
        return var

    # 1. k: the multiple of pi nearest x (cos: of the midpoint below x)
    q = emit("tile.muls", lhs=x, rhs=PI_INV)
    if is_cos:
        q = emit("tile.adds", lhs=q, rhs=0.5)
    k_i = emit("tile.cast", x=q, dtype=INT32, mode="rint" if is_cos else "round")
    k = emit("tile.cast", x=k_i, dtype=FP32, mode="none")
    # 2. t = x - k*pi (+ pi/2 for cos), pi in parts so that each product is exact
    t = x
    parts = [PI_V2, PI_C1, "half_head", PI_C2, PI_C3, PI_C4, "half_tail"]
    for part in parts:
        if part == "half_head" or part == "half_tail":
            if is_cos:
                t = emit("tile.adds", lhs=t, rhs=PI_HALF_HEAD if part == "half_head" else PI_HALF_TAIL)
            continue
        t = emit("tile.sub", lhs=t, rhs=emit("tile.muls", lhs=k, rhs=part))
    # 3. sign = (-1)^k = floor(k / 2) * 4 - 2k + 1
    half = emit("tile.muls", lhs=k, rhs=0.5)
    fl = emit("tile.cast", x=emit("tile.cast", x=half, dtype=INT32, mode="floor"), dtype=FP32, mode="none")
    sign = emit("tile.adds", lhs=emit("tile.add", lhs=emit("tile.muls", lhs=fl, rhs=4.0),
                                          rhs=emit("tile.muls", lhs=k, rhs=-2.0)), rhs=1.0)
    # 4. the odd polynomial t * P(t^2), Horner
    t2 = emit("tile.mul", lhs=t, rhs=t)
    p = emit("tile.adds", lhs=emit("tile.muls", lhs=t2, rhs=R0), rhs=R1)
    for r in (R2, R3, 1.0):
        p = emit("tile.adds", lhs=emit("tile.mul", lhs=p, rhs=t2), rhs=r)
    tp = emit("tile.mul", lhs=t, rhs=p)
    out.append(s.replace(value=build("tile.mul", s.value.span, lhs=sign, rhs=tp)))
    return out
