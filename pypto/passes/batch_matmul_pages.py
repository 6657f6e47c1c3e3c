"""FlattenTileNdTo2D's per-batch form of a ``tile.batch_matmul`` whose operands do not fit in Mat.

A batch matmul normally stays one op on the flattened tiles: both operands are loaded whole into
Mat (L1) and the cube runs one matmul per batch page. When the two whole operands together exceed
Mat (the reference's capacity gate: ``bytes(lhs) + bytes(rhs) > Mat``), that whole load cannot
exist; the reference then loads each operand **per batch** instead, and so do we:

    cm = tile.batch_matmul(la, lb, b_trans=True)     # la = load(a, o, [B, M, K]), lb = load(b, p, [B, N, K])
    out = tile.store(cm, q, c)

becomes, for each flat batch index ``i`` (batch dims broadcast, numpy style: an operand's size-1
batch dim reads page 0)::

    cm_lhs_b{i} = tile.load(a, o + [i, 0, 0], [M, K], target_memory=Mat)
    cm_rhs_b{i} = tile.load(b, p + [i, 0, 0], [N, K], target_memory=Mat)
    cm_rhs_t{i} = tile.transpose_view(cm_rhs_b{i})      # b_trans: the page in [K, N] orientation
    cm_b{i}     = tile.matmul(cm_lhs_b{i}, cm_rhs_t{i})
    out_b{i}    = tile.store(cm_b{i}, q + [i, 0, 0], out_b{i-1})   # the last one is ``out``

and the whole loads, read by nothing else, are dropped. The same form is taken when the whole
operands fit Mat but the one op still cannot run (a batch page exceeds Left / Right, or the whole
``[B * M, N]`` result exceeds Acc: the op is not split further): the reference then slices the
pages from the whole Mat tiles and splits each page matmul; we load the pages instead (the same
values, one page in Mat at a time). Each page's matmul is then an ordinary 2-D
matmul: AutoTileMatmulL0 splits it into K chunks / output sub-tiles where L0 or Acc needs it, and
extracts its Right chunks transposed straight from the natural ``[N, K]`` page (no Mat copy of the
transpose, as the reference's zero-copy view). Values: each batch is the same cube product as
before; only the page matmul's own K split (if any) changes the FP32 summation order.

Scope (anything else keeps the whole-tile op, whose capacity error then names the buffers):
``tile.batch_matmul`` (not ``_acc``) whose result is read once, by the next statement, a
``tile.store`` into a tensor of the result's rank; each operand a Var loaded in the same block by a
``tile.load`` (into Mat, or not placed yet: a ``pl.slice``) of a tensor of the tile's rank, static,
with no valid_shape, and read only by this matmul. (The reference also re-loads a load-sourced operand per batch when the other one is a
Vec result moved to Mat; that mixed case keeps the whole-tile path here.)
"""
from __future__ import annotations

import itertools
import math

from pypto.ir.nodes import AssignStmt, BinOp, Call, ConstInt, MakeTuple, Var
from pypto.ir.types import DynDim, ScalarType, TensorType, TileType
from pypto.ir.visit import iter_exprs
from pypto.language.dtypes import INDEX
from pypto.language.enums import MemorySpace as M
from pypto.ops.matmul_ext import broadcast_batch
from pypto.ops.registry import get_op


def _uses(v: Var, stmts) -> int:
    return sum(1 for e in iter_exprs(stmts) if e is v)


def _static(t) -> bool:
    return all(isinstance(d, int) and not isinstance(d, DynDim) for d in t.shape)


def _load_of(v, defs: dict, rank: int):
    """The ``tile.load`` statement defining operand ``v`` when it qualifies (see the module docstring)."""
    s = defs.get(id(v)) if isinstance(v, Var) else None
    c = s.value if s is not None else None
    if not (isinstance(c, Call) and c.op == "tile.load"):
        return None
    t, tensor = v.type, c.args[0]
    names = [p.name for p in get_op("tile.load").params]
    shapes = c.args[names.index("shapes")]
    if not (isinstance(t, TileType) and t.valid_shape is None and _static(t) and len(t.shape) == rank
            and c.args[names.index("target_memory")] in (None, M.Mat) and c.args[names.index("valid_shape")] is None
            and isinstance(tensor.type, TensorType) and len(tensor.type.shape) == rank
            and isinstance(shapes, MakeTuple) and len(shapes.elements) == rank
            and all(isinstance(e, ConstInt) for e in shapes.elements)):
        return None
    return s


def _whole_op_fits(lt: TileType, rt: TileType, result: TileType, platform) -> bool:
    """Whether the one whole-tile op can run: both whole operands in Mat together (the reference's
    gate), one batch page of each in Left / Right and the whole result in Acc (the op does not
    split: AutoTileMatmulL0 splits 2-D matmuls only)."""
    cap = platform.capacity
    page = lambda t: t.nbytes // max(1, math.prod(t.shape[:-2]))  # noqa: E731
    return lt.nbytes + rt.nbytes <= cap(M.Mat) and page(lt) <= cap(M.Left) and page(rt) <= cap(M.Right) \
        and result.nbytes <= cap(M.Acc)


def plan(stmts, platform) -> dict:
    """``{id(batch matmul statement): (lhs load stmt, rhs load stmt, store stmt)}`` for the batch
    matmuls of the block ``stmts`` that take the per-batch form."""
    stmts = tuple(stmts)
    defs: dict[int, AssignStmt] = {}
    out: dict = {}
    for i, s in enumerate(stmts):
        if not isinstance(s, AssignStmt):
            continue
        defs[id(s.var)] = s
        c = s.value
        if not (isinstance(c, Call) and c.op == "tile.batch_matmul" and c.args[2] is None and i + 1 < len(stmts)):
            continue
        lhs, rhs = c.args[0], c.args[1]
        if not (isinstance(lhs, Var) and isinstance(rhs, Var)):
            continue
        lt, rt = lhs.type, rhs.type
        if not (isinstance(lt, TileType) and isinstance(rt, TileType) and _static(lt) and _static(rt)):
            continue
        if not isinstance(s.var.type, TileType) or _whole_op_fits(lt, rt, s.var.type, platform):
            continue
        nxt = stmts[i + 1]
        st = nxt.value if isinstance(nxt, AssignStmt) else None
        rank = len(s.var.type.shape)
        if not (isinstance(st, Call) and st.op == "tile.store" and st.args[0] is s.var
                and _uses(s.var, stmts[i + 1:]) == 1 and len(st.args[2].type.shape) == rank):
            continue
        ll, rl = _load_of(lhs, defs, len(lt.shape)), _load_of(rhs, defs, len(rt.shape))
        if ll is None or rl is None or lhs is rhs or _uses(lhs, stmts) != 1 or _uses(rhs, stmts) != 1:
            continue
        out[id(s)] = (ll, rl, nxt)
    return out


def _add(e, d: int):
    if d == 0:
        return e
    if isinstance(e, ConstInt):
        return ConstInt(e.value + d, e.dtype)
    return BinOp("add", e, ConstInt(d), ScalarType(INDEX), e.span)


def _shifted(offsets: MakeTuple, index: tuple, nbatch: int) -> MakeTuple:
    """``offsets`` with the batch ``index`` added to its first ``nbatch`` (batch) entries."""
    el = offsets.elements
    return MakeTuple(tuple(_add(e, index[d]) if d < nbatch else e for d, e in enumerate(el)), offsets.span)


def unroll(mut, s: AssignStmt, entry) -> list:
    """The per-batch statements replacing ``s`` (the batch matmul) and its store; ``mut`` is the
    FlattenTileNdTo2D mutator (its ``expr`` reads the scalar operands of offsets through its
    substitution)."""
    ll, rl, store = entry
    c, sp = s.value, s.span
    a_trans, b_trans = bool(c.args[4]), bool(c.args[5])
    lt, rt = c.args[0].type, c.args[1].type
    lb, rb = tuple(lt.shape[:-2]), tuple(rt.shape[:-2])
    ob = broadcast_batch("tile.batch_matmul", lb, rb, c.span)
    load_names = [p.name for p in get_op("tile.load").params]
    i_off, i_shp, i_mem = load_names.index("offsets"), load_names.index("shapes"), load_names.index("target_memory")
    name = s.var.name
    out: list = []
    cur = mut.expr(store.value.args[2])
    nb = math.prod(ob)

    def page(load: AssignStmt, batch: tuple, index: tuple, trans: bool, tag: str, b: int) -> Var:
        lc = load.value
        opb = tuple(0 if d == 1 else index[len(ob) - len(batch) + k] for k, d in enumerate(batch))
        rows, cols = load.var.type.shape[-2:]
        t = TileType((rows, cols), load.var.type.dtype, M.Mat)
        args = list(mut.expr(a) for a in lc.args)
        args[i_off] = _shifted(args[i_off], opb, len(batch))
        args[i_shp] = MakeTuple((ConstInt(rows), ConstInt(cols)))
        args[i_mem] = M.Mat   # (a cube operand page: into L1, as the reference's per-batch load)
        v = Var(f"{name}_{tag}_b{b}", t, sp)
        out.append(AssignStmt(v, lc.replace(args=tuple(args), type=t), sp))
        if not trans:
            return v
        tv_args = (v, None)
        tt = get_op("tile.transpose_view").infer_type(tv_args, c.span)
        w = Var(f"{name}_{tag}_t{b}", tt, sp)
        out.append(AssignStmt(w, Call("tile.transpose_view", tv_args, tt, c.span), sp))
        return w

    for b, index in enumerate(itertools.product(*(range(d) for d in ob))):
        lhs = page(ll, lb, index, a_trans, "lhs", b)
        rhs = page(rl, rb, index, b_trans, "rhs", b)
        mm_args = (lhs, rhs, None, False, False)
        mt = get_op("tile.matmul").infer_type(mm_args, c.span)
        mm = Var(f"{name}_b{b}", mt, sp)
        out.append(AssignStmt(mm, Call("tile.matmul", mm_args, mt, c.span), sp))
        sc = store.value
        st_args = list(mut.expr(a) for a in sc.args)
        st_args[0], st_args[2] = mm, cur
        st_args[1] = _shifted(st_args[1], index, len(ob))
        res = store.var if b == nb - 1 else Var(f"{store.var.name}_b{b}", store.var.type, store.span)
        out.append(AssignStmt(res, sc.replace(args=tuple(st_args)), store.span))
        cur = res
    return out
