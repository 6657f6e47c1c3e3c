"""AutoTileMatmulL0: a ``tile.matmul`` / ``tile.matmul_acc`` whose operands do not fit in L0
(Left / Right) is split along K into a loop of chunks that do.

Requires: IncoreTileOps. Produces: MatmulL0Tiled.

* Scope: InCore functions; 2-D static ``tile.matmul`` / ``tile.matmul_acc`` whose lhs and rhs are
  in Mat or not placed yet (a tile already moved to Left/Right by the user is left alone: if it
  does not fit, AllocateMemoryAddr reports the space and the tiles).
* Trigger: lhs ``[M, K]`` larger than Left or rhs ``[K, N]`` larger than Right (platform bytes).
* Chunk: the largest ``kc`` that divides K, is a multiple of 16, and keeps each chunk within half
  of Left / Right (two chunk buffers, as a double-buffered pipeline would use). K must then be a
  multiple of 16, else a compile error.
* Rewrite of ``c = tile.matmul(a, b)``::

      c__a0 = tile.extract(a, [0, 0], [M, kc], target_memory=Left)
      c__b0 = tile.extract(b, [0, 0], [kc, N], target_memory=Right)
      c__k0 = tile.matmul(c__a0, c__b0)
      for c__ko, (c__it,) in pl.range(1, K // kc, init_values=(c__k0,)):
          c__ak = tile.extract(a, [0, c__ko * kc], [M, kc], target_memory=Left)
          c__bk = tile.extract(b, [c__ko * kc, 0], [kc, N], target_memory=Right)
          c__acc = tile.matmul_acc(c__it, c__ak, c__bk)
          c__it_next = pl.yield_(c__acc)   # c is the loop's result

  ``tile.matmul_acc(acc0, a, b)`` becomes the same loop from chunk 0 with ``acc0`` as initial value.
* Numerics: the split changes the FP32 (INT32) accumulation order: the result is
  ``((a0@b0 + a1@b1) + a2@b2) + ...`` with each chunk product summed in FP32, instead of one
  K-long sum. The reference executor runs the lowered IR, so reference and simulator still agree
  bit for bit; versus an unsplit matmul the last bits may differ.
* Not done yet: M/N splitting. A matmul whose result ``[M, N]`` exceeds Acc, or whose M (N) alone
  is too large for a 16-wide K chunk, is a compile error (CapacityError naming Acc/Left/Right).
"""
from __future__ import annotations

from pypto.errors import CapacityError, InvalidOperationError
from pypto.ir.nodes import AssignStmt, BinOp, Call, ConstInt, ForStmt, MakeTuple, Program, Var, YieldStmt
from pypto.ir.types import ScalarType, TileType
from pypto.ir.visit import Mutator
from pypto.language.dtypes import INDEX
from pypto.language.enums import FunctionType, MemorySpace as M
from pypto.passes.context import PassContext

NAME = "AutoTileMatmulL0"
REQUIRES = ("IncoreTileOps",)
PRODUCES = ("MatmulL0Tiled",)

_OPS = ("tile.matmul", "tile.matmul_acc")


def run(program: Program, ctx: PassContext) -> Program:
    return program.replace(functions=tuple(
        _Tile(ctx.platform).function(f) if f.func_type == FunctionType.InCore else f for f in program.functions))


def choose_k_chunk(m: int, k: int, n: int, elem_bytes: int, left: int, right: int,
                   rhs_bytes: int | None = None) -> int | None:
    """Largest multiple of 16 dividing ``k`` whose lhs/rhs chunks fit in half of Left/Right
    (``rhs_bytes``: the rhs element size when it differs from the lhs's)."""
    rb = elem_bytes if rhs_bytes is None else rhs_bytes
    best = None
    for kc in range(16, k + 1, 16):
        if k % kc == 0 and m * kc * elem_bytes <= left // 2 and kc * n * rb <= right // 2:
            best = kc
    return best


def _ints(*vals):
    return MakeTuple(tuple(v if not isinstance(v, int) else ConstInt(v) for v in vals))


class _Tile(Mutator):
    def __init__(self, platform):
        super().__init__()
        self.platform = platform

    def visit_AssignStmt(self, s: AssignStmt):
        s = self.default_stmt(s)
        v = s.value
        if not (isinstance(v, Call) and v.op in _OPS):
            return s
        acc0 = v.args[0] if v.op == "tile.matmul_acc" else None
        a, b = (v.args[1], v.args[2]) if acc0 is not None else (v.args[0], v.args[1])
        if not all(isinstance(x, Var) and isinstance(x.type, TileType) and x.type.memory_space in (None, M.Mat)
                   for x in (a, b)):
            return s
        (m, k), (_, n) = a.type.shape, b.type.shape
        esz = a.type.dtype.bits // 8
        p = self.platform
        left, right, acc_cap = p.capacity(M.Left), p.capacity(M.Right), p.capacity(M.Acc)
        out_t = s.var.type
        if m * n * (out_t.dtype.bits // 8) > acc_cap:
            raise CapacityError(
                f"{v.op}: result [{m}, {n}] {out_t.dtype.name} ({m * n * out_t.dtype.bits // 8} bytes) exceeds the "
                f"Acc buffer ({acc_cap} bytes) on {p.name}; AutoTileMatmulL0 does not split M/N yet",
                v.span, "split M or N yourself: a loop over row/column blocks, each matmul stored to GM")
        if m * k * esz <= left and k * n * esz <= right:
            return s
        if k % 16:
            raise InvalidOperationError(
                f"{v.op}: operands [{m}, {k}] @ [{k}, {n}] exceed L0 (Left {left} B, Right {right} B) and K={k} is "
                f"not a multiple of 16, so it cannot be split automatically", v.span,
                "pad K to a multiple of 16 or split K yourself with matmul_acc")
        kc = choose_k_chunk(m, k, n, esz, left, right)
        if kc is None:
            raise CapacityError(
                f"{v.op}: even a K chunk of 16 of [{m}, {k}] @ [{k}, {n}] {a.type.dtype.name} does not fit in half of "
                f"Left ({left} B) / Right ({right} B) on {p.name}; AutoTileMatmulL0 does not split M/N yet",
                v.span, "split M or N yourself")
        return self._split(s, acc0, a, b, m, k, n, kc)

    def _split(self, s: AssignStmt, acc0, a: Var, b: Var, m: int, k: int, n: int, kc: int):
        sp, name = s.span, s.var.name
        acc_t = TileType(s.var.type.shape, s.var.type.dtype)
        lt = TileType((m, kc), a.type.dtype, M.Left)
        rt = TileType((kc, n), b.type.dtype, M.Right)
        out = []

        def extract(src, offs, t, vname):
            x = Var(vname, t, sp)
            out_stmts.append(AssignStmt(x, Call("tile.extract", (src, _ints(*offs), _ints(*t.shape), t.memory_space,
                                                                  False), t, sp), sp))
            return x

        start = 0
        init = acc0
        if acc0 is None:
            out_stmts = out
            a0 = extract(a, (0, 0), lt, f"{name}__a0")
            b0 = extract(b, (0, 0), rt, f"{name}__b0")
            init = Var(f"{name}__k0", acc_t, sp)
            out.append(AssignStmt(init, Call("tile.matmul", (a0, b0, None, False, False), acc_t, sp), sp))
            start = 1
        ko = Var(f"{name}__ko", ScalarType(INDEX), sp)
        it = Var(f"{name}__it", acc_t, sp)
        off = BinOp("mul", ko, ConstInt(kc), ScalarType(INDEX), sp)
        body: list = []
        out_stmts = body
        ak = extract(a, (0, off), lt, f"{name}__ak")
        bk = extract(b, (off, 0), rt, f"{name}__bk")
        nxt = Var(f"{name}__acc", acc_t, sp)
        body.append(AssignStmt(nxt, Call("tile.matmul_acc", (it, ak, bk, False, False), acc_t, sp), sp))
        body.append(YieldStmt((nxt,), sp))
        out.append(ForStmt(loop_var=ko, start=ConstInt(start), stop=ConstInt(k // kc), step=ConstInt(1),
                           iter_args=(it,), init_values=(init,), body=tuple(body), return_vars=(s.var,), span=sp))
        return out
