"""AutoTileMatmulL0: a ``tile.matmul`` / ``tile.matmul_acc`` whose operands do not fit in L0
(Left / Right) is split along K into a loop of chunks that do.

Requires: IncoreTileOps. Produces: MatmulL0Tiled.

* Scope: InCore functions; 2-D static ``tile.matmul`` / ``tile.matmul_acc`` whose lhs and rhs are
  in Mat or not placed yet (a tile already moved to Left/Right by the user is left alone: if it
  does not fit, AllocateMemoryAddr reports the space and the tiles).
* K block: the reference's roofline chooser (:func:`pypto.backend.l0_tile_chooser.choose_l0_tile`,
  with the platform's L0 capacities) for a matmul whose ``[M, N]`` it keeps whole, also when the
  operands fit L0 (the pipelined K loop is its faster design), provided a K loop's two live
  accumulators fit Acc. Without such an answer (K not a multiple of 16, a partial valid shape) a
  matmul whose lhs ``[M, K]`` exceeds Left or rhs ``[K, N]`` exceeds Right takes the largest
  ``kc`` that divides K, is a multiple of 16, and keeps each chunk within half of Left / Right
  (K must then be a multiple of 16, else a compile error).
* Rewrite of ``c = tile.matmul(a, b)`` with K block ``k`` (the reference's form)::

      c__init = tile.create([M, N], dt, target_memory=Acc)      # overwritten by block 0
      for c__ko, (c__it,) in pl.pipeline(0, K // k * k, k, stage=2, init_values=(c__init,)):
          c__a = tile.extract(a, [0, c__ko], [M, k], target_memory=Left)
          c__b = tile.extract(b, [c__ko, 0], [k, N], target_memory=Right)
          c__acc = tile.matmul_acc(c__it, c__a, c__b, init_cond=(c__ko == 0))
          c = pl.yield_(c__acc)
      # K % k != 0: one more matmul_acc of the [M, K % k] / [K % k, N] tail block

  (``init_cond`` makes block 0 the plain product: the reference's ``if ko == 0: matmul else:
  matmul_acc`` without a phi tile.) One full block is straight-line. ``tile.matmul_acc(acc0, a, b)``
  is the same loop from ``acc0`` (no ``init_cond``); ``tile.matmul_bias`` runs block 0 as
  ``matmul_bias`` before the loop. LowerPipelineLoops later copies the loop body per stage.
* Split-K reduction loop (the reference's #2232 rewrite): the frontend's ``acc = create; for ..:
  loads; if ..: acc = matmul(la, lb) else: acc = matmul_acc(acc, la, lb); store(acc)`` whose
  accumulator does not fit Acc (five ``[M, N]`` copies live at the loop's peak) becomes, per
  ``[m, n]`` output tile, its own placeholder and a clone of the whole loop with the two loads
  narrowed to the tile's rows / columns, then the tile's stores: no ``[M, N]`` Acc exists.
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
  Mat scratch (the reference's chained-matmul placement): when the oversized result is read only
  as the lhs/rhs of matmuls, directly or through one foldable cast, each sub-tile is drained into
  one Mat tile instead (``scratch = tile.create([M, N], Mat)``, then per sub-tile
  ``scratch_i = tile.assemble(scratch_{i-1}, sub, [mi, ni])``, the cube's Acc -> Mat FIXPIPE
  writeback), and the consumers read the scratch. The cast is dropped: FIXPIPE narrows FP32 to
  BF16/FP16 round-half-to-even, so only ``mode="rint"`` folds. An FP32 scratch (no cast) exists
  on a5 only; a2a3's drain narrows (CapacityError naming the cast).
* Split-K chain: ``acc = matmul(..); acc = matmul_acc(acc, ..) ...; store(acc)`` (each link's result
  read once, by the next), when the result exceeds Acc, is tiled as a whole: every sub-tile runs
  the first matmul and then each link's ``matmul_acc`` on its own ``[m, n]`` window (each link
  K-chunked as it needs), then stores.
* Cast fold (fits Acc): ``cb = tile.cast(c, BF16|FP16, rint)`` of a matmul result ``c`` whose every
  use is a matmul lhs/rhs becomes one whole-tile ``tile.assemble`` into a fresh Mat tile. A cast
  that cannot fold (other mode or dtypes) stays a vector cast where the platform has Acc -> Vec
  (a5); on a2a3 it is a PassError at the cast naming ``mode="rint"``.
  Tile choice (:func:`choose_mn_tile`): the fewest sub-tiles whose Acc footprint fits and whose K
  chunks fit half of Left/Right, then the fewest K chunks, then the tallest tile. One K chunk
  ``kc`` serves every sub-tile, so every output element is accumulated the same way: FP32
  (INT32) sums of ``kc``-long chunk products, added in K order. The reference picks its tile with
  a roofline cost model; ours is simpler, so for some shapes its K block (and hence the last bits)
  differs from the reference's device run, never the accumulation rule.
* Double-buffered C (when ``PassContext.l0c_double_buffer``: planner DSA_RP / PTOAS, or PYPTO with
  ``enable_pypto_l0c_double_buffer``): a plain ``tile.matmul`` drained by one ``tile.store`` or
  into a Mat scratch, whose roofline design (:func:`choose_dbc_design`) is dbC = 2 with full K,
  becomes nested loops over its full ``[tm, tn]`` tiles; the inner (moving) loop, marked
  ``attrs={"pipeline_double_buffer_c": True}``, runs two tiles per iteration as matmul, matmul,
  drain, drain, so the two results hold two Acc slots; boundary tiles follow straight-line. Full
  K per tile: the values equal the untiled matmul's (docs/compiler.md).
"""
from __future__ import annotations

import functools

from pypto.backend import l0_tile_chooser as ch
from pypto.errors import CapacityError, InvalidOperationError, PassError
from pypto.ir.nodes import AssignStmt, BinOp, Call, ConstInt, ForStmt, IfStmt, MakeTuple, Program, Var, YieldStmt
from pypto.ir.types import ScalarType, TileType
from pypto.ir.visit import Mutator
from pypto.language.dtypes import BOOL, INDEX
from pypto.language.enums import KERNEL_TYPES, ForKind, MemorySpace as M
from pypto.passes import transposed_extracts
from pypto.passes.context import PassContext

NAME = "AutoTileMatmulL0"
REQUIRES = ("IncoreTileOps",)
PRODUCES = ("MatmulL0Tiled",)

_OPS = ("tile.matmul", "tile.matmul_acc", "tile.matmul_bias")
# the loop attribute marking a dbC = 2 loop (the reference's kPipelineDoubleBufferCAttr)
DOUBLE_BUFFER_C = "pipeline_double_buffer_c"


def run(program: Program, ctx: PassContext) -> Program:
    # then the chunks of a transposed operand are extracted transposed from its natural Mat tile
    # (pypto.passes.transposed_extracts: no second, transposed copy in Mat)
    return program.replace(functions=tuple(
        transposed_extracts.fold(_Tile(ctx.platform, ctx.l0c_double_buffer).function(f))
        if f.func_type in KERNEL_TYPES else f for f in program.functions))


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
                   acc_cap: int, vec_bytes: int = 0, vec_cap: int = 0, max_n: int = 0,
                   live: int = 0) -> tuple[int, int, int] | None:
    """``(tm, tn, kc)`` for an M/N split of ``[m, k] @ [k, n]``: sub-tile extents (multiples of 16,
    or the whole extent) whose ``tm x tn`` accumulator fits ``acc_cap`` and whose K chunk ``kc``
    fits L0; fewest sub-tiles first, then fewest K chunks, then the tallest tile. None if none fits.
    ``vec_bytes``: bytes per element a sub-tile also needs in Vec (the cast of the result to another
    dtype runs there: its FP32 copy plus the cast result), within ``vec_cap``. ``max_n``: the widest
    sub-tile allowed (a matmul_bias's ``[1, tn]`` bias window must fit the Bias buffer). ``live``:
    when given, the number of ``[tm, tn]`` accumulators live together at a sub-tile's peak (else
    one, two with a K loop)."""
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
            need = live * tm * tn * acc_bytes if live else _acc_need(tm, tn, acc_bytes, kc is not None and kc < k)
            if kc is None or need > acc_cap:
                continue
            first = tiles if first is None else first
            score = (tiles, k // kc, -tm)
            if best is None or score < best[0]:
                best = (score, (tm, tn, kc))
    return None if best is None else best[1]


class _Design:
    """The chooser's double-buffered-C design point for one matmul: ``tm x tn`` output tiles, full
    K, ``rows_outer`` (the outer loop walks M row blocks, the Left panel stays and the Right panel
    moves) or not (the outer loop walks N column blocks)."""

    def __init__(self, tm: int, tn: int, rows_outer: bool):
        self.tm, self.tn, self.rows_outer = tm, tn, rows_outer


def choose_dbc_design(platform, m: int, k: int, n: int, bytes_a: int, bytes_b: int, bytes_c: int):
    """The reference's roofline chooser (:func:`pypto.backend.l0_tile_chooser.choose_l0_tile`)
    run with ``platform``'s L0 capacities and every regime allowed; a :class:`_Design` when its
    answer is a double-buffered-C, full-K output tiling, else None (the other tilings keep our
    own rule)."""
    cfg = ch.L0TileConfig()
    cfg.M, cfg.K, cfg.N = m, k, n
    cfg.l0a_bytes, cfg.l0b_bytes = platform.capacity(M.Left), platform.capacity(M.Right)
    cfg.l0c_bytes = platform.capacity(M.Acc)
    cfg.bytes_a, cfg.bytes_b, cfg.bytes_c = bytes_a, bytes_b, bytes_c
    cfg.allow_a_stationary = cfg.allow_b_stationary = cfg.allow_double_buffer_c = True
    cfg.allow_k_boundary = True
    try:
        r = ch.choose_l0_tile(cfg)
    except ValueError:
        return None
    if not r.double_buffer_c or r.k != k:
        return None
    rows_outer = r.stationarity == ch.Stationarity.AStationary or (
        r.stationarity == ch.Stationarity.OutputStationary and r.os_holds_a)
    return _Design(r.m, r.n, rows_outer)


def _edges(arch: str) -> dict:
    from pypto.passes.infer_tile_memory_space import _EDGES

    return _EDGES.get(arch, _EDGES["a2a3"])


def _extract(src, offs, shape, space, vname, into, sp):
    """``vname = tile.extract(src, offs, shape, target_memory=space)`` appended to ``into``; the new Var."""
    t = TileType(shape, src.type.dtype, space)
    x = Var(vname, t, sp)
    into.append(AssignStmt(x, Call("tile.extract", (src, _ints(*offs), _ints(*shape), space, False), t, sp), sp))
    return x


def _ints(*vals):
    return MakeTuple(tuple(v if not isinstance(v, int) else ConstInt(v) for v in vals))


def _count_uses(v: Var, stmts) -> int:
    """How many times ``v`` is read in ``stmts`` (nested statements included)."""
    from pypto.ir.visit import iter_exprs

    return sum(1 for e in iter_exprs(stmts) if e is v)


def _add_expr(off, d):
    """``off + d`` for an int or index-expression ``d``."""
    if isinstance(d, int):
        return _add(off, d)
    if isinstance(off, ConstInt) and off.value == 0:
        return d
    return BinOp("add", off, d, ScalarType(INDEX), getattr(off, "span", None))


def _add(off, d: int):
    """``off + d`` as an index expression (folded when ``off`` is a constant)."""
    if d == 0:
        return off
    if isinstance(off, ConstInt):
        return ConstInt(off.value + d)
    return BinOp("add", off, ConstInt(d), ScalarType(INDEX), getattr(off, "span", None))


class _Tile(Mutator):
    def __init__(self, platform, dbc: bool = False):
        super().__init__()
        self.platform = platform
        self.dbc = dbc  # the chooser's double-buffered-C design may be realised (planner gate)
        self.results: set[int] = set()  # ids of (original) matmul result Vars
        self.folded: dict[int, Var] = {}  # id of a cast statement -> the Mat scratch replacing its result
        self.links: dict[int, list] = {}  # id of a split matmul statement -> its matmul_acc chain
        self.cur: dict[int, Var] = {}  # id of a chain link's result -> that Var

    def _link(self, s: AssignStmt, plan) -> None:
        """Record ``s = tile.matmul_acc(<pending result>, a, b)`` as the next link of ``plan``'s chain
        (operands static 2-D, in Mat or unplaced, the same output extent)."""
        mm = plan[0]
        v = s.value
        if len(v.args) > 5 and v.args[5] is not None:
            self._mn_error(mm, "a tile.matmul_acc of its chain has init_cond=")
        if any(x is True for x in v.args[3:5]):
            self._mn_error(mm, "a tile.matmul_acc of its chain transposes an operand")
        la, lb = self.var(v.args[1]), self.var(v.args[2])
        m, n = mm.var.type.shape
        ok = all(isinstance(x, Var) and isinstance(x.type, TileType) and x.type.memory_space in (None, M.Mat)
                 and len(x.type.shape) == 2 and all(isinstance(d, int) for d in x.type.shape)
                 and (x.type.valid_shape is None or tuple(x.type.valid_shape) == tuple(x.type.shape))
                 for x in (la, lb))
        if not ok or la.type.shape[0] != m or lb.type.shape[1] != n:
            self._mn_error(mm, f"the operands of its chained tile.matmul_acc ('{s.var.name}') are not static "
                               "[M, K] / [K, N] tiles in Mat")
        self.links.setdefault(id(mm), []).append((s, la, lb))

    # -- Mat scratch: a result consumed on-chip by matmuls ---------------------------------------

    def _cube_operand_only(self, var: Var, rest) -> bool:
        """Every read of ``var`` in ``rest`` is the lhs or rhs of a cube op (not an accumulator,
        bias, yield or anything else), and there is at least one."""
        from pypto.ir.visit import iter_calls

        n = 0
        for _, c in iter_calls(rest):
            if c.op in _OPS:
                mats = c.args[1:3] if c.op == "tile.matmul_acc" else c.args[0:2]
                n += sum(1 for x in mats if x is var)
        return n > 0 and n == _count_uses(var, rest)

    def _foldable(self, cast: Call) -> str | None:
        """Why ``cast`` of an FP32 accumulator cannot be the FIXPIPE drain (None: it can). FIXPIPE
        narrows FP32 to BF16/FP16 round-half-to-even only, on a2a3 and a5 alike."""
        from pypto.numerics.cast import normalize_mode

        src, dst = cast.args[0].type.dtype.name, cast.args[1].name
        if src != "FP32" or dst not in ("BF16", "FP16"):
            return f"it converts {src} -> {dst} (FIXPIPE narrows FP32 -> BF16/FP16 only)"
        try:
            mode = normalize_mode(cast.args[2])
        except ValueError:
            mode = str(cast.args[2])
        if mode != "rint":
            return (f"its mode is {mode!r}, and FIXPIPE rounds half to even only (mode='rint'); other modes need "
                    "the vector cast")
        return None

    def _fold_refused(self, cast_stmt: AssignStmt, why: str):
        raise PassError(
            f"tile.cast: the matmul result '{cast_stmt.value.args[0].name}' (in Acc) feeds only matmuls through "
            f"this cast, which cannot be folded into the cube's Acc -> Mat writeback: {why}; {self.platform.arch} "
            "has no Acc -> Vec path for a vector cast", cast_stmt.span,
            "write pl.cast(c, pl.BF16, mode=\"rint\") (FP32 -> BF16/FP16, round half to even), or store the "
            "result to GM and cast it in another pl.at scope")

    def _fold_cast(self, s: AssignStmt, rest):
        """``cb = tile.cast(c, BF16, rint)`` of a whole matmul result ``c`` read only by matmuls:
        ``scratch = tile.create(Mat)``; ``cb = tile.assemble(scratch, c, [0, 0])`` (the FIXPIPE drain
        into Mat). None when the fold does not apply (the vector cast stays)."""
        v = s.value
        if not (isinstance(s.var.type, TileType) and len(s.var.type.shape) == 2
                and all(isinstance(d, int) for d in s.var.type.shape) and self._cube_operand_only(s.var, rest)):
            return None
        why = self._foldable(v)
        if why is not None:
            if "Vec" not in [sp.name for sp in _edges(self.platform.arch).get(M.Acc, ())]:
                self._fold_refused(s, why)
            return None
        src = self.var(v.args[0])
        shape, dt = tuple(s.var.type.shape), v.args[1]
        mt = TileType(shape, dt, M.Mat)
        scratch = Var(f"{s.var.name}__mat", mt, s.span)
        res = Var(s.var.name, mt, s.span)
        self.redefine(s.var, res)
        return [AssignStmt(scratch, Call("tile.create", (_ints(*shape), dt, M.Mat), mt, s.span), s.span),
                AssignStmt(res, Call("tile.assemble", (scratch, src, _ints(0, 0)), mt, s.span), s.span)]

    def _scratch_chain(self, mm: AssignStmt, rest):
        """For an oversized matmul whose result is read only by matmuls, directly or through one
        foldable cast: ``(cast statement or None, scratch dtype)``; None when that is not the case."""
        var = mm.var
        if mm.value.op == "tile.matmul_acc":
            return None
        if self._cube_operand_only(var, rest):
            if var.type.dtype.name == "FP32" and self.platform.arch == "a2a3":
                self._mn_error(mm, "its FP32 result feeds a matmul, and a2a3 drains Acc into a Mat scratch only "
                                   "as BF16/FP16 (cast it first: pl.cast(c, pl.BF16, mode=\"rint\"))")
            return None, var.type.dtype
        if _count_uses(var, rest) != 1:
            return None
        for s in rest:
            v = s.value if isinstance(s, AssignStmt) else None
            if isinstance(v, Call) and v.op == "tile.cast" and v.args[0] is var:
                if not self._cube_operand_only(s.var, rest):
                    return None
                why = self._foldable(v)
                if why is not None:
                    self._fold_refused(s, why)
                return s, v.args[1]
            if _count_uses(var, (s,)):
                return None
        return None

    def _scratch_grid(self, mm: AssignStmt, a: Var, b: Var, bias, tile, chain):
        """The sub-tile grid of ``mm`` drained into one Mat scratch (an Acc -> Mat ``tile.assemble``
        per sub-tile, narrowing when ``chain`` carries a folded cast), read by the consumers in place
        of the result (or of the cast's result)."""
        cast, dt = chain
        (m, k), (_, n) = a.type.shape, b.type.shape
        tm, tn, kc = tile
        mt = TileType((m, n), dt, M.Mat)
        name = mm.var.name
        cur = Var(f"{name}__mat", mt, mm.span)
        out: list = [AssignStmt(cur, Call("tile.create", (_ints(m, n), dt, M.Mat), mt, mm.span), mm.span)]
        idx = 0
        for mi in range(0, m, tm):
            for ni in range(0, n, tn):
                em, en = min(tm, m - mi), min(tn, n - ni)
                sub = Var(f"{name}__t{idx}", TileType((em, en), mm.var.type.dtype), mm.span)
                self.bias = bias
                if bias is not None and en < n:
                    bt = TileType((1, en), bias.type.dtype, M.Bias)
                    self.bias = Var(f"{name}__bias{idx}", bt, mm.span)
                    out.append(AssignStmt(self.bias, Call("tile.extract", (bias, _ints(0, ni), _ints(1, en), M.Bias,
                                                                           False), bt, mm.span), mm.span))
                out.extend(self._block(mm.span, sub, None, a, b, mi, ni, em, en, k, kc))
                nxt = Var(f"{name}__mat{idx}", mt, mm.span)
                out.append(AssignStmt(nxt, Call("tile.assemble", (cur, sub, _ints(mi, ni)), mt, mm.span), mm.span))
                cur = nxt
                idx += 1
        if cast is None:
            self.redefine(mm.var, cur)
        else:
            self.folded[id(cast)] = cur
        return out

    def stmts(self, stmts) -> tuple:
        # a matmul needing an M/N split is rewritten together with the store consuming it, so the
        # block is walked here: ``pending`` maps the id of a split matmul's result (or of the cast
        # of it) to the grid builder waiting for the store
        stmts = tuple(stmts)
        out: list = []
        pending: dict[int, tuple] = {}
        skip: set[int] = set()
        for i, s in enumerate(stmts):
            if id(s) in skip:
                continue
            if isinstance(s, ForStmt):
                split = self._split_k_loop(s, stmts, i)
                if split is not None:
                    new, consumed = split
                    skip.update(id(x) for x in consumed)
                    dead = consumed[0].var  # the full [M, N] placeholder, emitted already: dropped
                    out = [x for x in out if not (isinstance(x, AssignStmt) and x.var is dead)]
                    out.extend(new)
                    continue
            v = s.value if isinstance(s, AssignStmt) else None
            if isinstance(v, Call) and v.op == "tile.cast" and id(s) in self.folded:
                self.redefine(s.var, self.folded.pop(id(s)))  # drained by the Mat-scratch grid
                continue
            if isinstance(v, Call) and v.op == "tile.cast" and id(v.args[0]) in self.results:
                fold = self._fold_cast(s, stmts[i + 1:])
                if fold is not None:
                    out.extend(fold)
                    continue
            if isinstance(v, Call) and v.op == "tile.cast" and id(v.args[0]) in pending:
                plan = pending.pop(id(v.args[0]))
                self._need_single_use(s.var, stmts[i + 1:], plan)
                pending[id(s.var)] = (*plan[:-1], plan[-1] + ((s.var, v),))
                continue
            if isinstance(v, Call) and v.op == "tile.store" and id(v.args[0]) in pending:
                plan = pending.pop(id(v.args[0]))
                out.extend(self._grid(s, *plan))
                continue
            if isinstance(v, Call) and v.op == "tile.matmul_acc" and id(v.args[0]) in pending \
                    and not pending[id(v.args[0])][-1]:
                # split-K chain (acc = matmul(..); acc = matmul_acc(acc, ..); ...; store(acc)): the
                # grid runs the whole chain per sub-tile, so no full [M, N] accumulator exists
                plan = pending.pop(id(v.args[0]))
                self._link(s, plan)
                self._need_single_use(s.var, stmts[i + 1:], plan)
                self.cur[id(s.var)] = s.var
                pending[id(s.var)] = plan
                continue
            for key, plan in pending.items():
                var = self.cur.get(key, plan[0].var)
                if _count_uses(var, (s,)) or any(_count_uses(c[0], (s,)) for c in plan[-1]):
                    self._mn_error(plan[0], "its result is read by something other than one tile.store")
            if isinstance(v, Call) and v.op in _OPS:
                dbc = self._dbc_plan(s, stmts[i + 1:]) if self.dbc else None
                if dbc is not None and dbc[0] == "store":  # drained by its one tile.store
                    pending[id(s.var)] = dbc[1]
                    continue
                if dbc is not None:  # drained into a Mat scratch read by matmuls
                    out.extend(self._dbc_grid(*dbc[1]))
                    continue
                plan = self._plan(s)
                if plan is not None:
                    chain = self._scratch_chain(s, stmts[i + 1:])
                    if chain is not None:
                        out.extend(self._scratch_grid(*plan[:5], chain))
                        continue
                    self._need_single_use(s.var, stmts[i + 1:], plan)
                    pending[id(s.var)] = plan
                    continue
            r = self.stmt(s)
            if isinstance(v, Call) and v.op in _OPS and isinstance(s.var.type, TileType):
                self.results.add(id(s.var))  # a cube result (in Acc): its cast may fold
            if isinstance(r, (list, tuple)):
                out.extend(r)
            elif r is not None:
                out.append(r)
        for plan in pending.values():
            self._mn_error(plan[0], "its result is not stored in the same block")
        return tuple(out)

    # -- the canonical split-K reduction loop (the reference's #2232 rewrite) ----------------

    def _split_k_match(self, loop: ForStmt, stmts, i):
        """``(create, lhs load, rhs load, matmul stmt, stores)`` when ``loop`` is the frontend's
        split-K reduction into a fresh accumulator whose result only tile.stores read::

            init = tile.create([M, N], dt, Acc)            # read by nothing else
            for kb, (it,) in pl.<any>(.., init_values=(init,)):
                <scalar statements>
                la = tile.load(A, [r, k0], [M, kt]); lb = tile.load(B, [k0, c], [kt, N])
                if <cond>: x = tile.matmul(la, lb) ... yield x
                else: y = tile.matmul_acc(it, la, lb) ... yield y
                yield <the if's result>
            out = tile.store(<loop result>, offs, T)       # one or more, right after the loop

        else None."""
        if len(loop.iter_args) != 1 or not isinstance(loop.init_values[0], Var):
            return None
        init, it, rv = loop.init_values[0], loop.iter_args[0], loop.return_vars[0]
        create = next((x for x in stmts[:i] if isinstance(x, AssignStmt) and x.var is init), None)
        if create is None or not (isinstance(create.value, Call) and create.value.op == "tile.create") \
                or _count_uses(init, stmts) != 1:
            return None
        body = loop.body
        if len(body) < 4 or not isinstance(body[-1], YieldStmt) or not isinstance(body[-2], IfStmt):
            return None
        br = body[-2]
        if len(br.return_vars) != 1 or body[-1].values != (br.return_vars[0],):
            return None

        def one(branch, op):
            xs = [x for x in branch if isinstance(x, AssignStmt)]
            if len(branch) != 2 or len(xs) != 1 or not isinstance(branch[-1], YieldStmt):
                return None
            c = xs[0].value
            if not (isinstance(c, Call) and c.op == op and branch[-1].values == (xs[0].var,)):
                return None
            if any(x is True for x in c.args[(3 if op == "tile.matmul" else 3):5]) or \
                    op == "tile.matmul_acc" and len(c.args) > 5 and c.args[5] is not None:
                return None
            return xs[0]

        mm, acc = one(br.then_body, "tile.matmul"), one(br.else_body, "tile.matmul_acc")
        if mm is None or acc is None or acc.value.args[0] is not it or acc.value.args[1:3] != mm.value.args[:2]:
            return None
        la, lb = mm.value.args[:2]
        loads = {}
        for x in body[:-2]:
            if isinstance(x, AssignStmt) and isinstance(x.var.type, ScalarType):
                continue
            if isinstance(x, AssignStmt) and isinstance(x.value, Call) and x.value.op == "tile.load" \
                    and x.var in (la, lb) and id(x.var) not in loads:
                loads[id(x.var)] = x
                continue
            return None
        if len(loads) != 2 or la is lb:
            return None
        (m, n) = mm.var.type.shape
        for x, want in ((loads[id(la)], (m, None)), (loads[id(lb)], (None, n))):
            t = x.var.type
            if len(t.shape) != 2 or not all(isinstance(d, int) for d in t.shape) or \
                    t.valid_shape is not None and tuple(t.valid_shape) != tuple(t.shape) or \
                    any(w is not None and w != d for w, d in zip(want, t.shape)):
                return None
        if _count_uses(la, body) != 2 or _count_uses(lb, body) != 2:
            return None
        stores, j = [], i + 1
        while j < len(stmts) and isinstance(stmts[j], AssignStmt) and isinstance(stmts[j].value, Call) \
                and stmts[j].value.op == "tile.store" and stmts[j].value.args[0] is rv:
            stores.append(stmts[j])
            j += 1
        if not stores or _count_uses(rv, stmts[i + 1:]) != len(stores) \
                or any(len(st.value.args[1].elements) != 2 for st in stores):
            return None
        return create, loads[id(la)], loads[id(lb)], mm, stores

    def _split_k_loop(self, loop: ForStmt, stmts, i):
        """The split-K reduction loop whose ``[M, N]`` accumulator needs an M/N split, rewritten
        as a grid of ``[m, n]`` output tiles: per tile, its own Acc placeholder and a clone of the
        whole K loop with both loads narrowed to the tile's window (the full K reduction of that
        tile), then its stores. The full accumulator is never materialised. ``(statements, the
        original statements consumed)`` or None (the loop is not that, or fits)."""
        got = self._split_k_match(loop, stmts, i)
        if got is None:
            return None
        create, lda, ldb, mm, stores = got
        (m, kt), (_, n) = lda.var.type.shape, ldb.var.type.shape
        p = self.platform
        abytes = mm.var.type.dtype.bits // 8
        esz = lda.var.type.dtype.bits // 8
        left, right, acc_cap = p.capacity(M.Left), p.capacity(M.Right), p.capacity(M.Acc)
        # the loop holds, at its peak, five [M, N] accumulators in Acc: its placeholder, the carried
        # value, the if's result, and an inner K loop's carried value and block result
        live = 5
        kc = _k_fit(m, kt, n, esz, left, right)
        if kc is not None and live * m * n * abytes <= acc_cap:
            return None  # the accumulator fits: the loop stays, its matmuls are K-tiled as usual
        tile = choose_mn_tile(m, kt, n, esz, abytes, left, right, acc_cap, live=live)
        if tile is None:
            return None  # the ordinary path reports the capacity problem at the matmul
        tm, tn, _ = tile
        out: list = []
        targets = [self.var(st.value.args[2]) for st in stores]
        idx = 0
        for mi in range(0, m, tm):
            for ni in range(0, n, tn):
                em, en = min(tm, m - mi), min(tn, n - ni)
                rv = self._split_k_tile(loop, create, lda, ldb, mm, mi, ni, em, en, idx, out)
                last = mi + tm >= m and ni + tn >= n
                for k, st in enumerate(stores):
                    res = st.var if last else Var(f"{st.var.name}__t{idx}", st.var.type, st.span)
                    offs = [self.expr(x) for x in st.value.args[1].elements]
                    offs = MakeTuple((_add(offs[0], mi), _add(offs[1], ni)))
                    call = Call("tile.store", (rv, offs, targets[k], *[self.expr(x) for x in st.value.args[3:]]),
                                st.var.type, st.span)
                    out.append(AssignStmt(res, call, st.span))
                    targets[k] = res
                idx += 1
        return out, [create, loop, *stores]

    def _split_k_tile(self, loop, create, lda, ldb, mm, mi, ni, em, en, idx, out) -> Var:
        """One output tile's K loop (see :meth:`_split_k_loop`), its statements appended to ``out``
        after AutoTile's own rewrite of them (the narrowed matmuls may be K-tiled); its result."""
        dt = mm.var.type.dtype
        sub = Mutator()
        sub.subst = dict(self.subst)
        init = Var(f"{create.var.name}__t{idx}", TileType((em, en), dt, create.var.type.memory_space), create.span)
        pre = [AssignStmt(init, Call("tile.create", (_ints(em, en), dt, create.var.type.memory_space), init.type,
                                     create.span), create.span)]
        kb = Var(loop.loop_var.name, loop.loop_var.type, loop.loop_var.span)
        sub.subst[id(loop.loop_var)] = kb
        acc_t = TileType((em, en), dt)
        it = Var(loop.iter_args[0].name, acc_t, loop.iter_args[0].span)
        sub.subst[id(loop.iter_args[0])] = it
        body: list = []
        for x in loop.body[:-2]:
            if x is lda or x is ldb:
                t = x.var.type
                offs = [sub.expr(e) for e in x.value.args[1].elements]
                shape = (em, t.shape[1]) if x is lda else (t.shape[0], en)
                offs = (_add_expr(offs[0], mi), offs[1]) if x is lda else (offs[0], _add_expr(offs[1], ni))
                nt = TileType(shape, t.dtype, t.memory_space)
                nv = Var(x.var.name, nt, x.span)
                rest = tuple(sub.expr(e) for e in x.value.args[3:])
                rest = (None, *rest[1:]) if rest else rest  # the full window: no partial valid shape
                body.append(AssignStmt(nv, Call("tile.load", (sub.expr(x.value.args[0]), MakeTuple(offs), _ints(*shape),
                                                              *rest), nt, x.span), x.span))
            else:
                nv = Var(x.var.name, x.var.type, x.span)
                body.append(AssignStmt(nv, sub.expr(x.value), x.span))
            sub.redefine(x.var, nv)
        br = loop.body[-2]
        la, lb = sub.var(mm.value.args[0]), sub.var(mm.value.args[1])
        x1 = Var(mm.var.name, acc_t, mm.span)
        acc_stmt = br.else_body[0]
        x2 = Var(acc_stmt.var.name, acc_t, acc_stmt.span)
        phi = Var(br.return_vars[0].name, acc_t, br.span)
        then = (AssignStmt(x1, Call("tile.matmul", (la, lb, *mm.value.args[2:]), acc_t, mm.span), mm.span),
                YieldStmt((x1,), br.span))
        other = (AssignStmt(x2, Call("tile.matmul_acc", (it, la, lb, *acc_stmt.value.args[3:]), acc_t, acc_stmt.span),
                            acc_stmt.span), YieldStmt((x2,), br.span))
        body.append(IfStmt(sub.expr(br.cond), then, other, (phi,), br.span))
        body.append(YieldStmt((phi,), loop.span))
        rv = Var(loop.return_vars[0].name, acc_t, loop.span)
        new = loop.replace(loop_var=kb, start=sub.expr(loop.start), stop=sub.expr(loop.stop), step=sub.expr(loop.step),
                           iter_args=(it,), init_values=(init,), body=tuple(body), return_vars=(rv,))
        out.extend(pre)
        r = self.stmt(new)  # the narrowed matmuls take the ordinary (K-tiling) rewrite
        out.extend(r if isinstance(r, (list, tuple)) else [r])
        return self.var(rv)

    # -- double-buffered C (the chooser's dbC = 2 design) ------------------------------------

    def _dbc_plan(self, s: AssignStmt, rest):
        """``("store", plan)`` / ``("scratch", args)`` when the chooser's design for matmul ``s`` is a
        double-buffered-C full-K output tiling and its result goes to one ``tile.store`` (the store
        comes through :meth:`stmts`' pending map) or only to matmuls through a Mat scratch; else None
        (the statement takes the single-buffered paths)."""
        v, var = s.value, s.var
        if v.op != "tile.matmul" or any(x is True for x in v.args[3:5]):
            return None
        ops = self._operands(s)
        if ops is None or ops[0] is not None or self.bias is not None:
            return None
        _, a, b = ops
        if not (isinstance(var.type, TileType) and len(var.type.shape) == 2
                and all(isinstance(d, int) for d in var.type.shape)):
            return None
        if any(x.type.valid_shape is not None and tuple(x.type.valid_shape) != tuple(x.type.shape) for x in (a, b)):
            return None
        (m, k), (_, n) = a.type.shape, b.type.shape
        design = choose_dbc_design(self.platform, m, k, n, a.type.dtype.bits // 8, b.type.dtype.bits // 8,
                                   var.type.dtype.bits // 8)
        if design is None:
            return None
        casts = [x for x in rest if isinstance(x, AssignStmt) and isinstance(x.value, Call)
                 and x.value.op == "tile.cast" and x.value.args[0] is var]
        if self._cube_operand_only(var, rest) or casts:
            if self._cube_operand_only(var, rest) and var.type.dtype.name == "FP32" and self.platform.arch == "a2a3":
                return None  # a2a3 drains Acc -> Mat narrowing only: the single-buffered path reports it
            if any(self._foldable(x.value) is not None for x in casts):
                return None  # not a FIXPIPE drain: the single-buffered path keeps or refuses the vector cast
            chain = self._scratch_chain(s, rest)
            if chain is None:
                return None
            # the scratch is carried through the loops, and a carried tile has its own buffer at
            # each loop level (the create, the inner iter_arg, the assemble result, and the outer
            # iter_arg when there is an outer loop): the dbC grid is taken only when those copies
            # and the producer's operands fit Mat, else the straight-line single-buffered grid
            # (one scratch, assembled in place) is used
            outer = (m // design.tm) if design.rows_outer else (n // design.tn)
            copies = 3 + (outer > 1)
            need = copies * m * n * chain[1].bits // 8 + sum(x.type.dtype.bits // 8 * x.type.shape[0] * x.type.shape[1]
                                                             for x in (a, b))
            if need > self.platform.capacity(M.Mat):
                return None
            return "scratch", (s, a, b, design, None, chain)
        if _count_uses(var, rest) != 1:
            return None
        for x in rest:
            if _count_uses(var, (x,)):
                ok = isinstance(x, AssignStmt) and isinstance(x.value, Call) and x.value.op == "tile.store" \
                    and x.value.args[0] is var
                return ("store", (s, a, b, None, design, ())) if ok else None
        return None

    def _dbc_grid(self, mm: AssignStmt, a: Var, b: Var, d: "_Design", store, chain=None):
        """The chooser's dbC = 2 grid of ``mm`` (full K per ``[tm, tn]`` output tile), drained by
        ``store`` (a ``tile.store`` per tile, the tensor chained) or into a Mat scratch (``chain``).

        The full tiles are two nested loops: the outer one walks the stationary axis (M row blocks
        when ``d.rows_outer``, else N column blocks) and extracts that panel once; the inner one,
        marked ``pipeline_double_buffer_c``, walks the moving axis two tiles per iteration in the
        order matmul, matmul, drain, drain, so the two results are live together in two Acc slots
        (tile i's drain can overlap tile i+1's MAD on the device). An odd last full tile follows the
        inner loop; the partial boundary tiles (M or N not a multiple of the tile) follow the loops
        straight-line. Every output element is still one full-K cube accumulation, so the values
        equal the untiled matmul's bit for bit."""
        (m, k), (_, n) = a.type.shape, b.type.shape
        tm, tn, sp, name = d.tm, d.tn, mm.span, mm.var.name
        rdt = mm.var.type.dtype
        idx_t = ScalarType(INDEX)
        out: list = []
        if store is not None:
            st = self.rebuild(store.value)
            cur = self.var(store.value.args[2])
            offs = st.args[1].elements

            def drain(sub, mi, ni, cur, body):
                so = list(offs)
                so[-2], so[-1] = _add_expr(so[-2], mi), _add_expr(so[-1], ni)
                res = Var(f"{store.var.name}__d", store.var.type, store.span)
                body.append(AssignStmt(res, Call("tile.store", (sub, MakeTuple(tuple(so)), cur, *st.args[3:]),
                                                 store.var.type, store.span), store.span))
                return res
        else:
            cast, dt = chain
            mt = TileType((m, n), dt, M.Mat)
            cur = Var(f"{name}__mat", mt, sp)
            out.append(AssignStmt(cur, Call("tile.create", (_ints(m, n), dt, M.Mat), mt, sp), sp))

            def drain(sub, mi, ni, cur, body):
                res = Var(f"{name}__mat", mt, sp)
                body.append(AssignStmt(res, Call("tile.assemble", (cur, sub, _ints(mi, ni)), mt, sp), sp))
                return res

        extract = functools.partial(_extract, sp=sp)

        def tile(mi, ni, em, en, lhs, rhs, body):
            """One [em, en] full-K result at (mi, ni); ``lhs`` / ``rhs``: a panel already in L0, or None."""
            lhs = lhs or extract(a, (mi, 0), (em, k), M.Left, f"{name}__a", body)
            rhs = rhs or extract(b, (0, ni), (k, en), M.Right, f"{name}__b", body)
            sub = Var(f"{name}__c", TileType((em, en), rdt), sp)
            body.append(AssignStmt(sub, Call("tile.matmul", (lhs, rhs, None, False, False), sub.type, sp), sp))
            return sub

        o_t, i_t = (tm, tn) if d.rows_outer else (tn, tm)
        outer_n, inner_n = (m // tm, n // tn) if d.rows_outer else (n // tn, m // tm)

        def at(o_off, i_off):  # (mi, ni) of a tile by its outer / inner offsets
            return (o_off, i_off) if d.rows_outer else (i_off, o_off)

        def outer_body(o_off, cur, body):
            if d.rows_outer:
                panel = (extract(a, (o_off, 0), (tm, k), M.Left, f"{name}__a", body), None)
            else:
                panel = (None, extract(b, (0, o_off), (k, tn), M.Right, f"{name}__b", body))
            pairs = inner_n // 2
            jo = Var(f"{name}__j", idx_t, sp)
            it = Var(f"{name}__it", cur.type, sp)
            inner: list = []
            subs = [(tile(*at(o_off, _add(jo, s * i_t)), tm, tn, *panel, inner), _add(jo, s * i_t)) for s in (0, 1)]
            c = it
            for sub, i_off in subs:  # both drains after both matmuls: two Acc slots live together
                c = drain(sub, *at(o_off, i_off), c, inner)
            inner.append(YieldStmt((c,), sp))
            rv = Var(f"{name}__it", cur.type, sp)
            body.append(ForStmt(loop_var=jo, start=ConstInt(0), stop=ConstInt(pairs * 2 * i_t),
                                step=ConstInt(2 * i_t), iter_args=(it,), init_values=(cur,), body=tuple(inner),
                                return_vars=(rv,), span=sp, attrs=((DOUBLE_BUFFER_C, True),)))
            cur = rv
            if inner_n % 2:  # the odd last full tile of this panel
                i_off = (inner_n - 1) * i_t
                cur = drain(tile(*at(o_off, i_off), tm, tn, *panel, body), *at(o_off, i_off), cur, body)
            return cur

        if outer_n > 1:
            oo = Var(f"{name}__o", idx_t, sp)
            it = Var(f"{name}__ot", cur.type, sp)
            body: list = []
            c = outer_body(oo, it, body)
            body.append(YieldStmt((c,), sp))
            rv = Var(f"{name}__ot", cur.type, sp)
            out.append(ForStmt(loop_var=oo, start=ConstInt(0), stop=ConstInt(outer_n * o_t), step=ConstInt(o_t),
                               iter_args=(it,), init_values=(cur,), body=tuple(body), return_vars=(rv,), span=sp))
            cur = rv
        else:
            cur = outer_body(0, cur, out)
        for mi in range(0, m, tm):  # the partial boundary tiles
            for ni in range(0, n, tn):
                em, en = min(tm, m - mi), min(tn, n - ni)
                if (em, en) != (tm, tn):
                    cur = drain(tile(mi, ni, em, en, None, None, out), mi, ni, cur, out)
        if store is not None:
            self.redefine(store.var, cur)
        elif chain[0] is None:
            self.redefine(mm.var, cur)
        else:
            self.folded[id(chain[0])] = cur
        return out

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
        if isinstance(tile, _Design):
            return self._dbc_grid(mm, a, b, tile, store)
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
                for ls, la, lb in self.links.get(id(mm), ()):  # the split-K chain, on this sub-tile
                    kj = la.type.shape[1]
                    kcj = _k_fit(tm, kj, tn, la.type.dtype.bits // 8, self.platform.capacity(M.Left),
                                 self.platform.capacity(M.Right))
                    if kcj is None:
                        self._mn_error(mm, f"no K chunk of its chained tile.matmul_acc ('{ls.var.name}', K={kj}) "
                                           f"fits L0 for a [{tm}, {tn}] sub-tile")
                    nxt = Var(f"{ls.var.name}__t{idx}", TileType((em, en), ls.var.type.dtype), ls.span)
                    self.bias = None
                    out.extend(self._block(ls.span, nxt, sub, la, lb, mi, ni, em, en, kj, kcj))
                    sub = nxt
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
        kc = self._chooser_k(s, a, b, acc0 is not None)
        if kc is not None:
            return s if kc == k else self._block(s.span, s.var, acc0, a, b, 0, 0, m, n, k, kc)
        if m * k * esz <= left and k * n * esz <= right:
            return s
        if k % 16:
            raise InvalidOperationError(
                f"{v.op}: operands [{m}, {k}] @ [{k}, {n}] exceed L0 (Left {left} B, Right {right} B) and K={k} is "
                f"not a multiple of 16, so it cannot be split automatically", v.span,
                "pad K to a multiple of 16 or split K yourself with matmul_acc")
        kc = choose_k_chunk(m, k, n, esz, left, right)
        return self._block(s.span, s.var, acc0, a, b, 0, 0, m, n, k, kc)

    def _chooser_k(self, s: AssignStmt, a: Var, b: Var, acc_read: bool) -> int | None:
        """The K block of the reference's roofline chooser for matmul ``s`` (whose ``[M, N]`` result
        fits Acc: M/N tiling was decided before), when its design keeps the whole ``[M, N]`` output:
        ``K`` itself (no split) or a 16-aligned block, possibly not dividing K (the partial last
        block is peeled). None when the chooser has no such answer (K not a multiple of 16, or it
        would tile M/N): the capacity rule below decides then."""
        (m, k), (_, n) = a.type.shape, b.type.shape
        for x in (a, b):
            if x.type.valid_shape is not None and tuple(x.type.valid_shape) != tuple(x.type.shape):
                return None  # a partial operand keeps the capacity rule (its padding is not a K block)
        p = self.platform
        cfg = ch.L0TileConfig()
        cfg.M, cfg.K, cfg.N = m, k, n
        cfg.l0a_bytes, cfg.l0b_bytes, cfg.l0c_bytes = p.capacity(M.Left), p.capacity(M.Right), p.capacity(M.Acc)
        cfg.bytes_a, cfg.bytes_b = a.type.dtype.bits // 8, b.type.dtype.bits // 8
        cfg.bytes_c = s.var.type.dtype.bits // 8
        if not all(x in (1, 2, 4) for x in (cfg.bytes_a, cfg.bytes_b, cfg.bytes_c)) or a.type.dtype.bits < 8:
            return None
        cfg.allow_a_stationary = cfg.allow_b_stationary = True
        cfg.allow_double_buffer_c = self.dbc
        cfg.allow_k_boundary = True
        cfg.c_read = acc_read
        try:
            r = ch.choose_l0_tile(cfg)
        except ValueError:
            return None
        if (r.m, r.n) != (m, n) or r.k % 16 and r.k != k:
            return None
        if r.k < k and _acc_need(m, n, cfg.bytes_c, True) > cfg.l0c_bytes:
            return None  # a K loop's two live accumulators would not fit Acc (the reference's planner
            # may share them; ours keeps the placeholder and the carried value apart): no split
        return r.k

    def _first(self, acc0, a0, b0, t, sp) -> Call:
        """The cube op of K chunk 0: matmul, matmul_acc onto ``acc0``, or matmul_bias (the bias is
        added once, by the first chunk, as the initial accumulator value)."""
        if acc0 is not None:
            return Call("tile.matmul_acc", (acc0, a0, b0, False, False), t, sp)
        if self.bias is not None:
            return Call("tile.matmul_bias", (a0, b0, self.bias), t, sp)
        return Call("tile.matmul", (a0, b0, None, False, False), t, sp)

    def _block(self, sp, var: Var, acc0, a: Var, b: Var, mi: int, ni: int, m: int, n: int, k: int, kc: int):
        """Statements computing ``var = [acc0 +] a[mi:mi+m, :] @ b[:, ni:ni+n]``, K in blocks of ``kc``
        accumulated in Acc in K order (the reference's form): one Left/Right extract pair and cube op
        per block, the ``K // kc`` full blocks as a ``pl.pipeline(0, K // kc * kc, kc, stage=2)`` loop
        (straight-line when there is one), then a ``matmul_acc`` of the partial last block when ``kc``
        does not divide K. A fresh result's loop starts from an Acc ``tile.create`` placeholder that
        block 0 overwrites (``matmul_acc(.., init_cond=(ko == 0))``); a ``matmul_acc``'s loop starts
        from its accumulator; a ``matmul_bias``'s block 0 runs before the loop."""
        name = var.name
        acc_t = TileType(var.type.shape, var.type.dtype)
        out: list = []

        extract = functools.partial(_extract, sp=sp)

        def block(dst, prev, off, width, into):
            """``dst = prev + a_blk @ b_blk`` (``prev`` None: the first block's op) for the K block at
            ``off`` of ``width``."""
            ak = extract(a, (mi, off), (m, width), M.Left, f"{name}__a", into)
            bk = extract(b, (off, ni), (width, n), M.Right, f"{name}__b", into)
            call = self._first(None, ak, bk, acc_t, sp) if prev is None else \
                Call("tile.matmul_acc", (prev, ak, bk, False, False), acc_t, sp)
            into.append(AssignStmt(dst, call, sp))
            return dst

        full, tail = k // kc, k % kc
        if kc == k:  # no K split: one extract pair (the operands' [m, K] / [K, n] windows)
            block(var, acc0, 0, k, out)
            return out
        done = var if not tail else Var(f"{name}__kb", acc_t, sp)
        if full == 1:  # one full block: straight-line, then the tail
            block(done, acc0, 0, kc, out)
        else:
            ko = Var(f"{name}__ko", ScalarType(INDEX), sp)
            it = Var(f"{name}__it", acc_t, sp)
            body: list = []
            start = 0
            if acc0 is None and self.bias is not None:
                # the bias is added once, by block 0 (matmul_bias), straight-line before the loop
                init = block(Var(f"{name}__k0", acc_t, sp), None, 0, kc, out)
                start = kc
            elif acc0 is None:
                # a fresh result: the loop starts from an Acc placeholder and block 0 overwrites it
                # (matmul_acc with init_cond=(ko == 0) is matmul there: the product only, as the
                # reference's ``if ko == 0: matmul else: matmul_acc`` computes it, with no phi tile)
                init = Var(f"{name}__init", TileType(var.type.shape, var.type.dtype, M.Acc), sp)
                out.append(AssignStmt(init, Call("tile.create", (_ints(*var.type.shape), var.type.dtype, M.Acc),
                                                 init.type, sp), sp))
            else:
                init = acc0
            first = BinOp("eq", ko, ConstInt(0), ScalarType(BOOL), sp) if acc0 is None and self.bias is None else None
            ak = extract(a, (mi, ko), (m, kc), M.Left, f"{name}__a", body)
            bk = extract(b, (ko, ni), (kc, n), M.Right, f"{name}__b", body)
            nxt = Var(f"{name}__acc", acc_t, sp)
            body.append(AssignStmt(nxt, Call("tile.matmul_acc", (it, ak, bk, False, False, first), acc_t, sp), sp))
            body.append(YieldStmt((nxt,), sp))
            out.append(ForStmt(loop_var=ko, start=ConstInt(start), stop=ConstInt(full * kc), step=ConstInt(kc),
                               iter_args=(it,), init_values=(init,), body=tuple(body), return_vars=(done,),
                               kind=ForKind.Pipeline, span=sp, stage=2))
        if tail:  # the partial last K block (16-aligned when K and kc are)
            block(var, done, full * kc, tail, out)
        return out
