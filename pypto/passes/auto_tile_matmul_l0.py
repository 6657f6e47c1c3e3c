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
* M/N split: when the result ``[M, N]`` exceeds Acc (or M / N alone is too large for a 16-wide K
  chunk), the output is cut into a ``ceil(M/m) x ceil(N/n)`` grid of ``[m, n]`` sub-tiles (boundary
  tiles ``[min(m, M-mi), min(n, N-ni)]``), each computed on its own (Left/Right extracts of
  ``a[mi:mi+m, :]`` / ``b[:, ni:ni+n]``, K-chunked as above when needed) and stored straight to the
  output, the tensor chained through the stores (``out -> out__t0 -> out__t1 -> ...``), as the
  reference's direct-store placement does. This needs the result's only use to be one
  ``tile.store`` (optionally through one ``tile.cast`` whose only use is that store) in the same
  block: a full ``[M, N]`` accumulator is never materialised. Any other use, and a
  ``tile.matmul_acc`` whose accumulator exceeds Acc, is a CapacityError naming the fix.
  ``tile.matmul_bias`` splits the same way: K chunk 0 of each sub-tile is ``matmul_bias`` with the
  sub-tile's ``[1, n]`` bias window (``tile.extract`` of the Mat bias into Bias; the whole bias when
  N is not split), the later chunks ``matmul_acc``, so the bias is added once, first. A bias wider
  than the Bias buffer forces an N split.
  Tile choice (:func:`choose_mn_tile`): the fewest sub-tiles whose Acc footprint fits and whose K
  chunks fit half of Left/Right, then the fewest K chunks, then the tallest tile. One K chunk
  ``kc`` serves every sub-tile, so every output element is accumulated the same way: FP32
  (INT32) sums of ``kc``-long chunk products, added in K order. The reference picks its tile with
  a roofline cost model; ours is simpler, so for some shapes its K block (and hence the last bits)
  differs from the reference's device run, never the accumulation rule.
"""
from __future__ import annotations

from pypto.errors import CapacityError, InvalidOperationError
from pypto.ir.nodes import AssignStmt, BinOp, Call, ConstInt, ForStmt, MakeTuple, Program, Var, YieldStmt
from pypto.ir.types import ScalarType, TileType
from pypto.ir.visit import Mutator
from pypto.language.dtypes import INDEX
from pypto.language.enums import KERNEL_TYPES, MemorySpace as M
from pypto.passes.context import PassContext

NAME = "AutoTileMatmulL0"
REQUIRES = ("IncoreTileOps",)
PRODUCES = ("MatmulL0Tiled",)

_OPS = ("tile.matmul", "tile.matmul_acc", "tile.matmul_bias")


def run(program: Program, ctx: PassContext) -> Program:
    return program.replace(functions=tuple(
        _Tile(ctx.platform).function(f) if f.func_type in KERNEL_TYPES else f for f in program.functions))


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


def _k_fit(m: int, k: int, n: int, esz: int, left: int, right: int) -> int | None:
    """The K chunk for an ``[m, k] @ [k, n]`` block: ``k`` itself when both operands fit L0 whole,
    else :func:`choose_k_chunk` (None: no chunk fits, or K is not a multiple of 16)."""
    if m * k * esz <= left and k * n * esz <= right:
        return k
    return choose_k_chunk(m, k, n, esz, left, right) if k % 16 == 0 else None


def _acc_need(m: int, n: int, acc_bytes: int, k_loop: bool) -> int:
    """Acc bytes of an ``[m, n]`` result: twice that with a K loop, whose first chunk's product and
    the loop's accumulator are live together (the loop-entry hand-off is not always shared)."""
    return m * n * acc_bytes * (2 if k_loop else 1)


def choose_mn_tile(m: int, k: int, n: int, esz: int, acc_bytes: int, left: int, right: int,
                   acc_cap: int, vec_bytes: int = 0, vec_cap: int = 0, max_n: int = 0) -> tuple[int, int, int] | None:
    """``(tm, tn, kc)`` for an M/N split of ``[m, k] @ [k, n]``: sub-tile extents (multiples of 16,
    or the whole extent) whose ``tm x tn`` accumulator fits ``acc_cap`` and whose K chunk ``kc``
    fits L0; fewest sub-tiles first, then fewest K chunks, then the tallest tile. None if none fits.
    ``vec_bytes``: bytes per element a sub-tile also needs in Vec (the cast of the result to another
    dtype runs there: its FP32 copy plus the cast result), within ``vec_cap``. ``max_n``: the widest
    sub-tile allowed (a matmul_bias's ``[1, tn]`` bias window must fit the Bias buffer)."""
    def extents(total):
        return sorted({total, *range(16, total + 1, 16)}, reverse=True)

    best = None
    for tm in extents(m):
        first = None  # the sub-tile count of this tm's widest fitting tn
        for tn in extents(n):
            tiles = -(-m // tm) * -(-n // tn)
            if first is not None and tiles > first:
                break  # narrower tiles only add sub-tiles for this tm
            if tm * tn * acc_bytes > acc_cap or tm * tn * vec_bytes > vec_cap or max_n and tn > max_n:
                continue
            kc = _k_fit(tm, k, tn, esz, left, right)
            if kc is None or _acc_need(tm, tn, acc_bytes, kc < k) > acc_cap:
                continue
            first = tiles if first is None else first
            score = (tiles, k // kc, -tm)
            if best is None or score < best[0]:
                best = (score, (tm, tn, kc))
    return None if best is None else best[1]


def _ints(*vals):
    return MakeTuple(tuple(v if not isinstance(v, int) else ConstInt(v) for v in vals))


def _count_uses(v: Var, stmts) -> int:
    """How many times ``v`` is read in ``stmts`` (nested statements included)."""
    from pypto.ir.visit import iter_exprs

    return sum(1 for e in iter_exprs(stmts) if e is v)


def _add(off, d: int):
    """``off + d`` as an index expression (folded when ``off`` is a constant)."""
    if d == 0:
        return off
    if isinstance(off, ConstInt):
        return ConstInt(off.value + d)
    return BinOp("add", off, ConstInt(d), ScalarType(INDEX), getattr(off, "span", None))


class _Tile(Mutator):
    def __init__(self, platform):
        super().__init__()
        self.platform = platform

    def stmts(self, stmts) -> tuple:
        # a matmul needing an M/N split is rewritten together with the store consuming it, so the
        # block is walked here: ``pending`` maps the id of a split matmul's result (or of the cast
        # of it) to the grid builder waiting for the store
        stmts = tuple(stmts)
        out: list = []
        pending: dict[int, tuple] = {}
        for i, s in enumerate(stmts):
            v = s.value if isinstance(s, AssignStmt) else None
            if isinstance(v, Call) and v.op == "tile.cast" and id(v.args[0]) in pending:
                plan = pending.pop(id(v.args[0]))
                self._need_single_use(s.var, stmts[i + 1:], plan)
                pending[id(s.var)] = (*plan[:-1], plan[-1] + ((s.var, v),))
                continue
            if isinstance(v, Call) and v.op == "tile.store" and id(v.args[0]) in pending:
                plan = pending.pop(id(v.args[0]))
                out.extend(self._grid(s, *plan))
                continue
            for plan in pending.values():
                if _count_uses(plan[0].var, (s,)) or any(_count_uses(c[0], (s,)) for c in plan[-1]):
                    self._mn_error(plan[0], "its result is read by something other than one tile.store")
            if isinstance(v, Call) and v.op in _OPS:
                plan = self._plan(s)
                if plan is not None:
                    self._need_single_use(s.var, stmts[i + 1:], plan)
                    pending[id(s.var)] = plan
                    continue
            r = self.stmt(s)
            if isinstance(r, (list, tuple)):
                out.extend(r)
            elif r is not None:
                out.append(r)
        for plan in pending.values():
            self._mn_error(plan[0], "its result is not stored in the same block")
        return tuple(out)

    # -- M/N split ---------------------------------------------------------------------------

    def _mn_error(self, s: AssignStmt, why: str):
        (m, n), dt = s.var.type.shape, s.var.type.dtype
        cap = self.platform.capacity(M.Acc)
        raise CapacityError(
            f"{s.value.op}: result [{m}, {n}] {dt.name} ({m * n * dt.bits // 8} bytes; twice that with a K loop) "
            f"does not fit the Acc buffer ({cap} bytes) on {self.platform.name} (or its bias the Bias buffer), and AutoTileMatmulL0 can split M/N only when the result goes "
            f"straight to one tile.store (optionally through one tile.cast); here {why}",
            s.span, "store the matmul result directly (out = pl.store(c, offsets, out)), or split M/N yourself: "
                    "a loop over row/column blocks, each matmul stored to GM")

    def _need_single_use(self, var: Var, rest, plan) -> None:
        if _count_uses(var, rest) != 1:
            self._mn_error(plan[0], "its result is used more than once" if _count_uses(var, rest)
                           else "its result is never stored")

    def _operands(self, s: AssignStmt):
        v = s.value
        acc0 = v.args[0] if v.op == "tile.matmul_acc" else None
        a, b = (v.args[1], v.args[2]) if acc0 is not None else (v.args[0], v.args[1])
        a, b = self.var(a), self.var(b)
        if not all(isinstance(x, Var) and isinstance(x.type, TileType) and x.type.memory_space in (None, M.Mat)
                   and len(x.type.shape) == 2 and all(isinstance(d, int) for d in x.type.shape)
                   for x in (a, b)):
            return None
        self.bias = self.var(v.args[2]) if v.op == "tile.matmul_bias" else None
        return acc0, a, b

    def _plan(self, s: AssignStmt):
        """The M/N split of matmul ``s`` when its result cannot be computed whole in Acc (or its M/N
        leave no room for a 16-wide K chunk), else None (the statement goes through visit_AssignStmt)."""
        ops = self._operands(s)
        if ops is None:
            return None
        acc0, a, b = ops
        (m, k), (_, n) = a.type.shape, b.type.shape
        esz = a.type.dtype.bits // 8
        p = self.platform
        left, right, acc_cap = p.capacity(M.Left), p.capacity(M.Right), p.capacity(M.Acc)
        abytes = s.var.type.dtype.bits // 8
        kc = _k_fit(m, k, n, esz, left, right)
        bias_fits = self.bias is None or n * abytes <= p.capacity(M.Bias) or self.bias.type.memory_space == M.Bias
        if bias_fits and (k % 16 and m * n * abytes <= acc_cap
                          or kc is not None and _acc_need(m, n, abytes, kc < k) <= acc_cap):
            return None  # fits whole (K not a multiple of 16: visit_AssignStmt reports it if needed)
        if acc0 is not None:
            self._mn_error(s, "it is a tile.matmul_acc (its [M, N] accumulator itself does not fit)")
        for x in (a, b):
            if x.type.valid_shape is not None and tuple(x.type.valid_shape) != tuple(x.type.shape):
                self._mn_error(s, f"operand {x.name} has a valid_shape narrower than its shape")
        max_n = p.capacity(M.Bias) // abytes if self.bias is not None else 0
        tile = choose_mn_tile(m, k, n, esz, abytes, left, right, acc_cap, max_n=max_n)
        if tile is None:
            raise CapacityError(
                f"{s.value.op}: no [m, n] sub-tile of [{m}, {k}] @ [{k}, {n}] {a.type.dtype.name} fits Acc "
                f"({acc_cap} B) with its K chunks in Left ({left} B) / Right ({right} B) on {p.name}"
                + (f" (K={k} is not a multiple of 16, so K cannot be chunked)" if k % 16 else ""),
                s.span, "pad K to a multiple of 16, or split the matmul yourself")
        if self.bias is not None and tile[1] < n and self.bias.type.memory_space not in (None, M.Mat):
            self._mn_error(s, f"its bias '{self.bias.name}' is already in {self.bias.type.memory_space.name} (an N "
                              "split extracts [1, n] windows of it from Mat)")
        return (s, a, b, self.bias, tile, ())

    def _grid(self, store: AssignStmt, mm: AssignStmt, a: Var, b: Var, bias, tile, casts):
        """The sub-tile grid of ``mm`` feeding ``store`` (through ``casts``)."""
        (m, k), (_, n) = a.type.shape, b.type.shape
        if casts:  # the casts run in Vec: the sub-tile's FP32 copy and its cast results must fit there
            p = self.platform
            vec = mm.var.type.dtype.bits // 8 + sum(cv.type.dtype.bits // 8 for cv, _ in casts)
            tile = choose_mn_tile(m, k, n, a.type.dtype.bits // 8, mm.var.type.dtype.bits // 8, p.capacity(M.Left),
                                  p.capacity(M.Right), p.capacity(M.Acc), vec, p.capacity(M.Vec),
                                  max_n=tile[1] if bias is not None else 0) or tile
        tm, tn, kc = tile
        st = self.rebuild(store.value)
        tensor = self.var(store.value.args[2])
        offs = st.args[1].elements
        out: list = []
        idx = 0
        name = mm.var.name
        for mi in range(0, m, tm):
            for ni in range(0, n, tn):
                em, en = min(tm, m - mi), min(tn, n - ni)
                sub = Var(f"{name}__t{idx}", TileType((em, en), mm.var.type.dtype), mm.span)
                self.bias = bias
                if bias is not None and en < n:  # this sub-tile's [1, en] window of the bias, in Bias
                    bt = TileType((1, en), bias.type.dtype, M.Bias)
                    self.bias = Var(f"{name}__bias{idx}", bt, mm.span)
                    out.append(AssignStmt(self.bias, Call("tile.extract", (bias, _ints(0, ni), _ints(1, en), M.Bias,
                                                                           False), bt, mm.span), mm.span))
                out.extend(self._block(mm.span, sub, None, a, b, mi, ni, em, en, k, kc))
                val = sub
                for cv, c in casts:
                    ct = TileType((em, en), cv.type.dtype)
                    cvar = Var(f"{cv.name}__t{idx}", ct, c.span)
                    out.append(AssignStmt(cvar, Call("tile.cast", (val, *c.args[1:]), ct, c.span), c.span))
                    val = cvar
                last = mi + tm >= m and ni + tn >= n
                res = store.var if last else Var(f"{store.var.name}__t{idx}", store.var.type, store.span)
                so = list(offs)
                so[-2], so[-1] = _add(so[-2], mi), _add(so[-1], ni)
                out.append(AssignStmt(res, Call("tile.store", (val, MakeTuple(tuple(so)), tensor, *st.args[3:]),
                                                store.var.type, store.span), store.span))
                tensor = res
                idx += 1
        return out

    # -- K split -----------------------------------------------------------------------------

    def visit_AssignStmt(self, s: AssignStmt):
        s = self.default_stmt(s)
        v = s.value
        if not (isinstance(v, Call) and v.op in _OPS):
            return s
        ops = self._operands(s)
        if ops is None:
            return s
        acc0, a, b = ops
        (m, k), (_, n) = a.type.shape, b.type.shape
        esz = a.type.dtype.bits // 8
        p = self.platform
        left, right = p.capacity(M.Left), p.capacity(M.Right)
        if m * k * esz <= left and k * n * esz <= right:
            return s
        if k % 16:
            raise InvalidOperationError(
                f"{v.op}: operands [{m}, {k}] @ [{k}, {n}] exceed L0 (Left {left} B, Right {right} B) and K={k} is "
                f"not a multiple of 16, so it cannot be split automatically", v.span,
                "pad K to a multiple of 16 or split K yourself with matmul_acc")
        kc = choose_k_chunk(m, k, n, esz, left, right)
        return self._block(s.span, s.var, acc0, a, b, 0, 0, m, n, k, kc)

    def _first(self, acc0, a0, b0, t, sp) -> Call:
        """The cube op of K chunk 0: matmul, matmul_acc onto ``acc0``, or matmul_bias (the bias is
        added once, by the first chunk, as the initial accumulator value)."""
        if acc0 is not None:
            return Call("tile.matmul_acc", (acc0, a0, b0, False, False), t, sp)
        if self.bias is not None:
            return Call("tile.matmul_bias", (a0, b0, self.bias), t, sp)
        return Call("tile.matmul", (a0, b0, None, False, False), t, sp)

    def _block(self, sp, var: Var, acc0, a: Var, b: Var, mi: int, ni: int, m: int, n: int, k: int, kc: int):
        """Statements computing ``var = [acc0 +] a[mi:mi+m, :] @ b[:, ni:ni+n]``, K in chunks of ``kc``
        (one Left/Right extract pair and cube op per chunk, chunk 0 first)."""
        name = var.name
        acc_t = TileType(var.type.shape, var.type.dtype)
        lt = TileType((m, kc), a.type.dtype, M.Left)
        rt = TileType((kc, n), b.type.dtype, M.Right)
        out: list = []

        def extract(src, offs, t, vname):
            x = Var(vname, t, sp)
            out_stmts.append(AssignStmt(x, Call("tile.extract", (src, _ints(*offs), _ints(*t.shape), t.memory_space,
                                                                  False), t, sp), sp))
            return x

        out_stmts = out
        if kc == k:  # no K split: one extract pair (the operands' [m, K] / [K, n] windows)
            a0 = extract(a, (mi, 0), lt, f"{name}__a0")
            b0 = extract(b, (0, ni), rt, f"{name}__b0")
            out.append(AssignStmt(var, self._first(acc0, a0, b0, acc_t, sp), sp))
            return out
        start = 0
        init = acc0
        if acc0 is None:
            a0 = extract(a, (mi, 0), lt, f"{name}__a0")
            b0 = extract(b, (0, ni), rt, f"{name}__b0")
            init = Var(f"{name}__k0", acc_t, sp)
            out.append(AssignStmt(init, self._first(None, a0, b0, acc_t, sp), sp))
            start = 1
        ko = Var(f"{name}__ko", ScalarType(INDEX), sp)
        it = Var(f"{name}__it", acc_t, sp)
        off = BinOp("mul", ko, ConstInt(kc), ScalarType(INDEX), sp)
        body: list = []
        out_stmts = body
        ak = extract(a, (mi, off), lt, f"{name}__ak")
        bk = extract(b, (off, ni), rt, f"{name}__bk")
        nxt = Var(f"{name}__acc", acc_t, sp)
        body.append(AssignStmt(nxt, Call("tile.matmul_acc", (it, ak, bk, False, False), acc_t, sp), sp))
        body.append(YieldStmt((nxt,), sp))
        out.append(ForStmt(loop_var=ko, start=ConstInt(start), stop=ConstInt(k // kc), step=ConstInt(1),
                           iter_args=(it,), init_values=(init,), body=tuple(body), return_vars=(var,), span=sp))
        return out
