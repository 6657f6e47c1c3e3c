"""Tensor views inside a kernel, for ConvertTensorToTileOps.

``v = x[1]`` or ``v = pl.slice(x, shape, offs)`` of a global tensor in an InCore function is a tile
(the region, loaded) when it is used as a value. It may also be the *tensor* operand of an explicit
``pl.load`` / ``pl.store`` (``pl.load(x[b], [r, 0], [16, 32])``): that access is the same access of
``x`` at the summed offsets, which is what this module rewrites it to. The load of the whole region
that the slice lowered to is dropped afterwards when nothing reads it (:func:`prune`), so a large
view that is only accessed piecewise never occupies on-chip memory.

A view is recorded as ``(root, base offsets, kept axes)``: view axis ``k`` is axis ``kept[k]`` of the
root tensor, the other root axes are fixed at their base offset (dropped by a rank-reducing
subscript, through the ``tensor.reshape`` the parser builds for it). Supported accesses: one of the
view's own rank when no axis was dropped (a box), or a 2-D one of a view whose kept axes are the
root's last two (the flattened 2-D access ``tile.load`` / ``tile.store`` define for a rank > 2
tensor, :func:`pypto.ops.memory._flat_region`, which then addresses exactly the box). Anything else
is a located error naming the direct form.
"""
from __future__ import annotations

from pypto.errors import UnsupportedFeatureError
from pypto.ir.nodes import AssignStmt, BinOp, Call, ConstInt, MakeTuple, Var
from pypto.ir.types import ScalarType, TensorType
from pypto.ir.visit import iter_exprs
from pypto.language.dtypes import INDEX
from pypto.ops.registry import get_op


def _add(a, b, span):
    if isinstance(a, ConstInt) and isinstance(b, ConstInt):
        return ConstInt(a.value + b.value, INDEX, span)
    if isinstance(b, ConstInt) and b.value == 0:
        return a
    if isinstance(a, ConstInt) and a.value == 0:
        return b
    return BinOp("add", a, b, ScalarType(INDEX), span)


def record(conv, s: AssignStmt) -> None:
    """Remember ``s.var`` as a view when ``s`` is a ``tensor.slice`` of a global tensor (or of a
    view), or a ``tensor.reshape`` of a view that only drops unit axes."""
    v = s.value
    x = v.args[0]
    if not isinstance(x, Var) or not isinstance(x.type, TensorType):
        return
    base = conv.views.get(id(x))
    if base is None and id(x) in conv.tile_of:   # a value on chip (loaded or computed): not a view
        return
    if v.op == "tensor.slice":
        offs = [conv.expr(o) for o in v.args[2].elements]
        if base is None:
            base = (conv.var(x), [ConstInt(0, INDEX, s.span)] * len(offs), list(range(len(offs))))
        root, b, kept = base
        b = list(b)
        for k, o in enumerate(offs):
            b[kept[k]] = _add(b[kept[k]], o, s.span)
        conv.views[id(s.var)] = (root, b, kept)
    elif base is not None:   # tensor.reshape dropping unit axes of a view
        old, new = list(x.type.shape), [e.value if isinstance(e, ConstInt) else e for e in v.args[1].elements]
        keep = [k for k, n in enumerate(old) if n != 1]
        if [n for n in new if n != 1] != [old[k] for k in keep] or any(n == 1 for n in new):
            return
        root, b, kept = base
        conv.views[id(s.var)] = (root, b, [kept[k] for k in keep])


def rebase(conv, s: AssignStmt):
    """``s`` (a ``tile.load`` / ``tile.store``) with its tensor operand a recorded view rewritten to
    the root tensor, or None when the operand is not a view."""
    v = s.value
    t = v.args[0] if v.op == "tile.load" else v.args[2]
    view = conv.views.get(id(t)) if isinstance(t, Var) else None
    if view is None:
        return None
    root, base, kept = view
    offs = [conv.expr(o) for o in (v.args[1].elements)]
    rank = len(root.type.shape)
    if v.op == "tile.load":
        ext = [e.value for e in v.args[2].elements]
    else:
        ext = list(conv.expr(v.args[0]).type.shape)
    box = len(kept) == rank and len(offs) == rank
    flat = len(offs) == 2 and len(ext) == 2 and kept == [rank - 2, rank - 1]
    if not (box or flat):
        raise UnsupportedFeatureError(
            f"a {len(ext)}-D {'load from' if v.op == 'tile.load' else 'store into'} the view '{t.name}' (axes "
            f"{kept} of a rank-{rank} tensor) is not supported in a kernel", v.span,
            f"access '{root.name}' directly with full-rank offsets")
    full = list(base)
    for k, o in enumerate(offs):
        full[kept[k]] = _add(full[kept[k]], o, s.span)
    offsets = MakeTuple(tuple(full), v.args[1].span)
    if v.op == "tile.load":
        args = (root, offsets, *(conv.expr(a) for a in v.args[2:]))
    else:
        args = (conv.expr(v.args[0]), offsets, root, *(conv.expr(a) for a in v.args[3:]))
    call = Call(v.op, args, _infer(v.op, args, v.span), v.span)
    nv = Var(s.var.name, call.type, s.var.span)
    conv.redefine(s.var, nv)
    if v.op == "tile.store":
        conv.views[id(s.var)] = view   # the stored version is the same view
    return AssignStmt(nv, call, s.span)


def _infer(op, args, span):
    return get_op(op, span).infer_type(args, span)


def prune(body: tuple, loads: set) -> tuple:
    """``body`` without the assignments of the view tiles in ``loads`` (ids of their tile Vars: the
    region loads and their rank-reducing reshapes) that nothing reads, to a fixed point."""
    while loads:
        used = {id(e) for e in iter_exprs(body) if isinstance(e, Var)}
        dead = {i for i in loads if i not in used}
        if not dead:
            return body
        body = _drop(body, dead)
        loads = loads - dead
    return body


def _drop(body: tuple, dead: set) -> tuple:

    def keep(stmts):
        out = []
        for st in stmts:
            if isinstance(st, AssignStmt) and id(st.var) in dead:
                continue
            repl = {n: tuple(keep(getattr(st, n))) for n in ("body", "then_body", "else_body") if hasattr(st, n)}
            out.append(st.replace(**repl) if repl else st)
        return out
    return tuple(keep(body))
