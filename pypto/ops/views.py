"""View and element-write ops: ``reinterpret_view`` (tensor and tile), ``write`` (tensor and tile),
``tile.set_validshape``, ``tile.transpose_view`` and ``tensor.view``. Helpers: :mod:`pypto.ops.support.views`.

* ``reinterpret_view(x, dtype, *, shape=None)``: the same bytes read as another dtype. Both dtypes
  byte-addressable (INT8..INT64, UINT8..UINT64, FP16, BF16, FP32) and different. Without ``shape``
  the innermost (physically contiguous, row-major) extent is scaled by the byte ratio
  (``[8, 16] FP32 -> [8, 32] INT16``); an explicit ``shape`` must hold the same number of bytes and,
  for a partially valid tile, be that scaled shape. The valid shape's innermost extent is scaled
  the same way (a wider target dtype needs it divisible). The reference's op is zero-copy; ours is a
  bit copy into the result's buffer: in SSA form nothing can observe the difference.
* ``write(x, indices, value)``: ``x`` with one element set to ``value`` converted to ``x``'s dtype
  (as ``full`` converts its value). ``pl.tile.write(t, [i, j], v)`` as a statement rebinds ``t``;
  ``t = pl.write(t, ...)`` is the same. ``tensor.write`` on a global tensor in an InCore function
  lowers to a one-element ``tile.full`` stored at ``indices`` (a scalar store); in orchestration it
  writes the element directly. A bare index is a flat index of a rank-1 operand. An index out of
  range is a compile error when constant, a :class:`SimulationError` at run time otherwise.
* ``tile.set_validshape(tile, valid_rows, valid_cols)``: the tile with another valid shape (2-D,
  each extent a constant within the shape, or an integer scalar: a run-time extent; any memory
  space). No data moves: the elements are unchanged (those newly inside the valid region hold
  whatever the buffer held: a load's zeros, or earlier values).
* ``tile.transpose_view(tile)``: the reference's zero-copy NZ<->ZN reinterpretation of a fractal
  (Mat) tile, which is the transposed matrix (``[..., N, K] -> [..., K, N]``). Our tiles are stored
  row-major, not in fractal layouts, so it is the transpose itself (a copy); the valid shape is
  transposed too. A rank > 2 tile is a stack of pages, each transposed; FlattenTileNdTo2D keeps the
  op on the flattened tile and records the N-D shape in ``nd_shape``.
* ``tensor.view(x, shape=None, valid_shape=None, *, layout=None)``: the same elements in another
  shape (row-major, same element count; a reshape). ``layout=pl.ND`` is the identity; DN (a
  column-major reinterpretation) is refused with a located error (our tensors are ND).
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.nodes import AssignStmt, Call, ConstInt, MakeTuple, Var
from pypto.ir.types import DynDim, ScalarType, TensorType, TileType, describe
from pypto.language.dtypes import BF16, FP16, FP32, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64
from pypto.language.enums import MemorySpace
from pypto.ops.builder import build
from pypto.ops.registry import OpArgs, OpDef, Param, get_op, register
from pypto.ops.traits import InPlaceSafe, Lockstep, MemorySpaces
from pypto.ops.rules import VEC_SPACES, const_ints, expect, scalar_dtype, static_ints

_BYTE_DTYPES = (INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64, FP16, BF16, FP32)


def _valid(x) -> str:
    v = getattr(x.type, "valid_shape", None)
    return "None" if v is None else repr(list(v))


def _partial(t) -> bool:
    return isinstance(t, TileType) and t.valid_shape is not None and tuple(t.valid_shape) != tuple(t.shape)


def _array(level: str, shape, dtype, valid=None):
    if level == "tensor":
        return TensorType(tuple(shape), dtype)
    full = valid is None or tuple(valid) == tuple(shape)
    return TileType(tuple(shape), dtype, None, None if full else tuple(valid))


# ------------------------------------------------------------------ reinterpret_view
def _scale(op: str, what: str, n, src: int, dst: int, span: Span):
    if src >= dst:
        return n * (src // dst)
    k = dst // src
    expect(isinstance(n, int), op, f"cannot prove that the dynamic innermost {what} extent is divisible by {k}", span)
    expect(n % k == 0, op, f"the innermost {what} extent {n} is not divisible by {k} for the wider dtype", span,
           "reinterpret a region whose innermost extent holds whole target elements")
    return n // k


def _reinterpret_rule(level: str):
    op = f"{level}.reinterpret_view"

    def infer(a: OpArgs, span: Span):
        t, dt = a.x.type, a.dtype
        for what, d in (("source", t.dtype), ("target", dt)):
            expect(d in _BYTE_DTYPES, op, f"does not support {what} dtype {d.name}; byte-addressable "
                   "INT8..INT64, UINT8..UINT64, FP16, BF16 and FP32 only", span)
        expect(t.dtype != dt, op, f"source and target dtypes are both {dt.name}", span,
               "use pl.reshape for a shape-only change")
        sb, db = t.dtype.itemsize, dt.itemsize
        auto = tuple(t.shape[:-1]) + (_scale(op, "shape", t.shape[-1], sb, db, span),)
        shape = auto
        if a.shape is not None:
            shape = static_ints(op, "shape", a.shape, span)
            if tuple(shape) != auto:
                n = 1
                for d in t.shape:
                    n *= d
                m = 1
                for d in shape:
                    m *= d
                expect(n * sb == m * db, op, f"source has {n * sb} bytes, target shape {list(shape)} of {dt.name} "
                       f"{m * db}", span)
                expect(not _partial(t), op, "cannot carry a partial valid_shape through an arbitrary shape", span,
                       f"omit shape= (the result is {list(auto)})")
        valid = None
        if _partial(t):
            v = t.valid_shape
            valid = tuple(v[:-1]) + (_scale(op, "valid_shape", v[-1], sb, db, span),)
        return _array(level, shape, dt, valid)
    return infer


for _level in ("tensor", "tile"):
    register(OpDef(
        name=f"{_level}.reinterpret_view",
        params=(Param("x", _level, aliases=("data",)), Param("dtype", "dtype"),
                Param("shape", "ints", None, optional=True)),
        infer=_reinterpret_rule(_level),
        ref=lambda a: f"_pto.reinterpret({a.x}, {a.dtype}, {a.shape})",
        sim=(lambda a, dst: f"_pto.reinterpret({a.x}, {a.dtype}, {a.shape}, out={dst})") if _level == "tile" else None,
        dsl="reinterpret_view", operand_kinds=(_level,),
        lowers_to="tile.reinterpret_view" if _level == "tensor" else None,
        traits=(VEC_SPACES, Lockstep.COPY) if _level == "tile" else (),
        doc="the same bytes as another dtype (the innermost extent scaled by the byte ratio)",
    ))


# ------------------------------------------------------------------ write
def _write_args(args: list, kwargs: dict, span: Span):
    """A bare index (``pl.write(t, i, v)``) is the one-element index list ``[i]``."""
    from pypto.ir.nodes import Expr

    if len(args) >= 2 and not isinstance(args[1], (list, tuple, MakeTuple)) and (
            isinstance(args[1], (int, Expr))):
        args = [args[0], [args[1]], *args[2:]]
    if "indices" in kwargs and not isinstance(kwargs["indices"], (list, tuple, MakeTuple)):
        kwargs = {**kwargs, "indices": [kwargs["indices"]]}
    return args, kwargs


def _write_rule(level: str):
    op = f"{level}.write"

    def infer(a: OpArgs, span: Span):
        t = a.x.type
        idx = const_ints(a.indices)
        expect(len(idx) == len(t.shape), op, f"needs {len(t.shape)} indices for {describe(t)}, got {len(idx)}", span)
        for i, n in zip(idx, t.shape):
            expect(i is None or not isinstance(n, int) or 0 <= i < n, op,
                   f"indices {idx} out of bounds for shape {list(t.shape)}", span)
        vd = scalar_dtype(a.value.type)
        expect(vd.is_float() or vd.is_int() or vd.name == "BOOL", op, f"value must be a number, got {vd.name}", span)
        if level == "tensor":
            return TensorType(t.shape, t.dtype)
        return TileType(t.shape, t.dtype, None, t.valid_shape)
    return infer


def _lower_write(call: Call, result: Var, conv):
    """tensor.write in an InCore function: tile.write of the on-chip tile, or a one-element tile.full
    stored at the indices when the tensor is in global memory."""
    x, indices, value = call.args
    src = conv.tile_of.get(id(x)) if isinstance(x, Var) else None
    src = src if src is not None else conv.expr(x)
    idx = conv.expr(indices)
    val = conv.expr(value)
    if isinstance(src.type, TileType):
        args = (src, idx, val)
        t = get_op("tile.write").infer_type(args, call.span)
        nv = Var(result.name, t, result.span)
        return [AssignStmt(nv, Call("tile.write", args, t, call.span), call.span)], nv
    rank = len(src.type.shape)
    ones = MakeTuple(tuple(ConstInt(1) for _ in range(rank)))
    fargs = (ones, src.type.dtype, val)
    ft = get_op("tile.full").infer_type(fargs, call.span)
    elem = Var(f"{result.name}_elem", ft, call.span)
    sargs = (elem, idx, src, get_op("tile.store").param("atomic").default)
    st = get_op("tile.store").infer_type(sargs, call.span)
    # the result is the global tensor's new version (not a tile): it keeps its Var, as a store's does
    return [AssignStmt(elem, Call("tile.full", fargs, ft, call.span), call.span),
            AssignStmt(conv.var(result), Call("tile.store", sargs, st, call.span), call.span)], None


register(OpDef(
    name="tensor.write",
    params=(Param("x", "tensor", aliases=("tensor",)), Param("indices", "ints"), Param("value", "scalar")),
    infer=_write_rule("tensor"),
    ref=lambda a: f"_pto.write_({a.x}, {a.indices}, {a.value})",
    orch=lambda a: f"_rt.write_({a.x}, {a.indices}, {a.value})",   # waits for pending tasks on it (Runtime.write_)
    dsl="write", operand_kinds=("tensor",), lower=_lower_write, writes="x", dsl_args=_write_args,
    doc="set one element of a tensor (a scalar store); returns the tensor",
))
register(OpDef(
    name="tile.write",
    params=(Param("x", "tile", aliases=("tile",)), Param("indices", "ints"), Param("value", "scalar")),
    infer=_write_rule("tile"),
    ref=lambda a: f"_pto.write({a.x}, {a.indices}, {a.value})",
    sim=lambda a, dst: f"_pto.write({a.x}, {a.indices}, {a.value}, out={dst})",
    dsl="write", operand_kinds=("tile",), updates="x", dsl_args=_write_args,
    traits=(VEC_SPACES,),
    doc="the tile with one element set (a new version of it)",
))


# ------------------------------------------------------------------ set_validshape
def _set_valid_rule(a: OpArgs, span: Span) -> TileType:
    op = "tile.set_validshape"
    t = a.x.type
    expect(len(t.shape) == 2, op, f"needs a rank-2 tile, got {describe(t)}", span)
    vals = []
    for what, e, n in (("valid_rows", a.valid_rows, t.shape[0]), ("valid_cols", a.valid_cols, t.shape[1])):
        if isinstance(e, ConstInt):
            expect(0 <= e.value <= n, op, f"{what} {e.value} is outside [0, {n}]", span)
            vals.append(e.value)
            continue
        # a run-time extent (a scalar of the kernel: a parameter, a value read from a tensor): the
        # result's valid shape is that expression; the ops that honour the valid region (store,
        # the reductions) read it when they run
        ty = getattr(e, "type", None)
        expect(isinstance(ty, ScalarType) and ty.dtype.is_int(), op,
               f"{what} must be an integer constant or an integer scalar, got {describe(getattr(e, 'type', e))}",
               span, "pass an int or a pl.Scalar[pl.INDEX]")
        vals.append(e)
    if all(isinstance(v, int) for v in vals) and tuple(vals) == tuple(t.shape):
        return TileType(t.shape, t.dtype, None, None)
    return TileType(t.shape, t.dtype, None, tuple(vals))


register(OpDef(
    name="tile.set_validshape",
    params=(Param("x", "tile", aliases=("tile",)), Param("valid_rows", "scalar"), Param("valid_cols", "scalar")),
    infer=_set_valid_rule,
    ref=lambda a: f"{a.x}.clone()",
    sim=lambda a, dst: f"{dst}.copy_({a.x})",
    dsl="set_validshape", operand_kinds=("tile",),
    # any space: a cube-side producer narrows its Acc tile before pushing it to the vector cores
    traits=(MemorySpaces((), None), InPlaceSafe(), Lockstep.COPY),
    doc="the tile with another valid shape; no data moves",
))


# ------------------------------------------------------------------ transpose_view
def _transpose_view_rule(a: OpArgs, span: Span) -> TileType:
    op = "tile.transpose_view"
    t = a.x.type
    if a.nd_shape is not None:
        # FlattenTileNdTo2D's form of a rank > 2 view: the operand is the flattened 2-D tile of the
        # N-D shape ``nd_shape``; the result is the flattened per-page transpose
        nd = static_ints(op, "nd_shape", a.nd_shape, span)
        n = 1
        for d in nd:
            n *= d
        expect(len(t.shape) == 2 and len(nd) > 2 and n == t.shape[0] * t.shape[1] and t.shape[1] == nd[-1], op,
               f"nd_shape {list(nd)} is not the N-D form of the 2-D operand {describe(t)}", span)
        expect(not _partial(t), op, "the flattened form of an N-D view needs a full tile", span)
        return TileType((n // nd[-2], nd[-2]), t.dtype)
    expect(len(t.shape) >= 2, op, f"needs a tile of rank >= 2, got {describe(t)}", span)
    shape = tuple(t.shape[:-2]) + (t.shape[-1], t.shape[-2])
    valid = None
    if t.valid_shape is not None:
        valid = tuple(t.valid_shape[:-2]) + (t.valid_shape[-1], t.valid_shape[-2])
    return TileType(shape, t.dtype, None, valid)


def _transpose_view_src(a, gang_safe: bool = False) -> str:
    if str(a.nd_shape) == "None":               # (generated code passes attributes as source text)
        return f"{a.x}.transpose(-2, -1)"
    if gang_safe:
        # the simulator's form, for a tile and a lockstep gang's view of it alike ([n, *shape]: the
        # leading axis kept through the N-D form), so that the op is data movement on either
        # (Lockstep.COPY); the same elements as the single-tile form
        return (f"{a.x}.reshape({a.x}.shape[:{a.x}.dim() - 2] + tuple({a.nd_shape}))"
                f".transpose(-2, -1).flatten({a.x}.dim() - 2, -2)")
    return f"{a.x}.reshape({a.nd_shape}).transpose(-2, -1).flatten(0, -2)"


register(OpDef(
    name="tile.transpose_view",
    params=(Param("x", "tile", aliases=("tile",)), Param("nd_shape", "ints", None, optional=True)),
    infer=_transpose_view_rule,
    ref=lambda a: f"{_transpose_view_src(a)}.contiguous()",
    sim=lambda a, dst: f"{dst}.copy_({_transpose_view_src(a, gang_safe=True)})",
    dsl="transpose_view", operand_kinds=("tile",),
    traits=(MemorySpaces((MemorySpace.Vec, MemorySpace.Mat), None), Lockstep.COPY),
    doc="the transposed matrix (the reference's NZ<->ZN view; a copy on our row-major tiles)",
))


# ------------------------------------------------------------------ tensor.view
def _view_layouts(a: OpArgs) -> tuple[bool, bool]:
    """(source is DN, result is DN) of a ``tensor.view`` (checked by its rule)."""
    from pypto.language.enums import TensorLayout

    src_dn = a.x.type.layout == TensorLayout.DN
    return src_dn, src_dn if a.layout in (None, "None") else (a.layout == TensorLayout.DN or str(a.layout).endswith("DN"))


def _view_rule(a: OpArgs, span: Span) -> TensorType:
    op = "tensor.view"
    t = a.x.type
    from pypto.language.enums import TensorLayout

    expect(a.shape is not None or a.layout is not None, op, "needs shape= or layout=", span)
    expect(a.layout in (None, TensorLayout.ND, TensorLayout.DN), op,
           f"layout {a.layout!r} is not a tensor layout: a view is ND (row-major) or DN (column-major trailing pair)",
           span, "pass layout=pl.TensorLayout.ND or pl.TensorLayout.DN (NZ is a tile layout)")
    src_dn, dst_dn = _view_layouts(a)
    layout = TensorLayout.DN if dst_dn else None
    if a.shape is None:
        expect(a.valid_shape is None, op, "valid_shape= needs shape=", span)
        if src_dn == dst_dn:
            return TensorType(t.shape, t.dtype, layout)
        # the layout-only flip: the same bytes, the trailing pair read the other way round
        expect(len(t.shape) >= 2, op, f"a layout flip needs rank >= 2, got {describe(t)}", span)
        return TensorType((*t.shape[:-2], t.shape[-1], t.shape[-2]), t.dtype, layout)
    shape = static_ints(op, "shape", a.shape, span)
    expect(len(shape) >= 1, op, "a view needs rank >= 1", span)
    expect(not dst_dn or len(shape) >= 2, op, f"a DN view needs rank >= 2, got shape {list(shape)}", span)
    n = m = 1
    for d in t.shape:
        n *= d
    for d in shape:
        m *= d
    expect(n == m, op, f"cannot view {describe(t)} as {list(shape)} (element counts {n} and {m} differ)", span)
    if a.valid_shape is not None:
        v = static_ints(op, "valid_shape", a.valid_shape, span)
        expect(tuple(v) == tuple(shape), op, f"valid_shape {list(v)} narrower than shape {list(shape)}: a tensor has "
               "no padding", span, "omit valid_shape=")
    return TensorType(shape, t.dtype, layout)


def _lower_view(call: Call, result: Var, conv):
    """In a kernel, a view of a global tensor is its data on chip: the tensor loaded whole (its
    logical elements), then rearranged as the view reads the bytes: a DN source's bytes are its
    transpose row-major, a DN result is the transpose of the bytes read row-major in the swapped
    shape."""
    x, shape = call.args[0], call.args[1]
    src = conv.expr(x)
    t_in = x.type if isinstance(x.type, TensorType) else None
    stmts: list = []
    if isinstance(src.type, TileType):
        tile = src
    else:
        from pypto.ops.index import _as_tile

        tile = _as_tile(conv, x, call.span, stmts)
    out_t = call.type
    src_dn = t_in is not None and t_in.layout is not None
    dst_dn = out_t.layout is not None
    steps: list = []
    if shape is None and src_dn != dst_dn:
        steps = [("t", None)]
    elif shape is not None and (src_dn or dst_dn):
        tgt = [e.value for e in shape.elements]
        if dst_dn:
            tgt[-2], tgt[-1] = tgt[-1], tgt[-2]
        steps = ([("t", None)] if src_dn else []) + [("r", tgt)] + ([("t", None)] if dst_dn else [])
    else:
        steps = [("r", list(out_t.shape))]

    cur = tile
    for i, (kind, arg) in enumerate(steps):
        last = i == len(steps) - 1
        if kind == "t":
            r = len(cur.type.shape)
            c = build("tile.transpose", call.span, x=cur, axis1=r - 2, axis2=r - 1)
        else:
            c = build("tile.reshape", call.span, x=cur, shape=arg)
        nv = Var(result.name if last else f"{result.name}_v{i}", c.type, result.span)
        stmts.append(AssignStmt(nv, c, call.span))
        cur = nv
    return stmts, cur


def _view_src(a) -> str:
    src_dn, dst_dn = _view_layouts(a)
    shape = a.shape if a.shape != "None" else None
    if src_dn or dst_dn:
        return f"_pto.layout_view({a.x}, {shape}, {src_dn}, {dst_dn})"
    return f"{a.x}.reshape({shape if shape is not None else list(a.x.type.shape)})"


register(OpDef(
    name="tensor.view",
    params=(Param("x", "tensor", aliases=("tensor",)), Param("shape", "ints", None, optional=True),
            Param("valid_shape", "ints", None, optional=True), Param("layout", "str", None)),
    infer=_view_rule,
    ref=_view_src,
    orch=_view_src,
    dsl=None, lowers_to="tile.reshape", lower=_lower_view,
    doc="the same global-memory bytes as another shape and/or layout (ND or DN; a view in orchestration)",
))


# tensor.dim (static and dynamic extents) is defined once, in pypto.ops.shape_ops.


# ------------------------------------------------------------------ expand_clone
# ``pl.expand_clone(input, target)`` (tensor, rank 3 as in the reference): ``target`` filled with
# ``input`` cloned along at most one dimension where input has extent 1 (the others equal); returns
# the target. Lowered to a whole load of ``input`` and one store of it per position of the cloned
# dimension (none cloned: one store). Same dtype for both (the store writes input's elements as they are).
def _expand_clone_rule(a: OpArgs, span: Span) -> TensorType:
    op = "tensor.expand_clone"
    x, t = a.input.type, a.target.type
    expect(len(x.shape) == 3, op, f"input must be rank 3, got {describe(x)}", span)
    expect(len(t.shape) == 3, op, f"target must be rank 3 (input's), got {describe(t)}", span)
    expect(x.dtype == t.dtype, op, f"input dtype {x.dtype.name} differs from target dtype {t.dtype.name}", span,
           "cast the input first with pl.cast(x, ...)")
    dims = [i for i, (s, d) in enumerate(zip(x.shape, t.shape)) if s != d]
    for i in dims:
        expect(x.shape[i] == 1, op, f"only a dimension of extent 1 can be cloned: input {list(x.shape)} -> target "
               f"{list(t.shape)} at dim {i}", span)
    expect(len(dims) <= 1, op, f"clones along at most one dimension, got {len(dims)} (input {list(x.shape)}, "
           f"target {list(t.shape)})", span)
    return TensorType(t.shape, t.dtype)


def _lower_expand_clone(call: Call, result: Var, conv):
    """2-D tiles over the rank-3 tensors (a 2-D tile load / store of a rank-3 tensor addresses its
    row-major [d0 * d1, d2] view): the input is loaded once; cloning dim 0 stores it at [p, 0, 0]
    for each p; dim 1 stores each input row i at [i, p, 0]; dim 2 row-expands the [d0 * d1, 1] input
    over the columns first."""
    x, target = call.args
    span = call.span
    xs, ts = x.type.shape, target.type.shape
    dims = [i for i, (s, d) in enumerate(zip(xs, ts)) if s != d]
    d = dims[0] if dims else None
    stmts: list = []

    def ints(*v):
        return MakeTuple(tuple(ConstInt(int(i)) for i in v))

    def emit(name, op, args):
        t = get_op(op).infer_type(args, span)
        v = Var(name, t, span)
        stmts.append(AssignStmt(v, Call(op, args, t, span), span))
        return v

    src = conv.tile_of.get(id(x)) if isinstance(x, Var) else None
    if src is not None:
        from pypto.errors import UnsupportedFeatureError

        raise UnsupportedFeatureError("tensor.expand_clone: the input must be a global tensor (not a value computed "
                                      "in this kernel)", span, hint="store it first, or use pl.row_expand / col_expand")
    rows = xs[0] * xs[1]
    tile = emit(f"{result.name}_in", "tile.load", (conv.var(x), ints(0, 0, 0), ints(rows, xs[2]), None, None))
    if d == 2:
        shell = emit(f"{result.name}_shell", "tile.create", (ints(rows, ts[2]), x.type.dtype, None))
        tile = emit(f"{result.name}_wide", "tile.row_expand", (shell, tile))
    plan = []                                  # (tile, offsets) per store
    if d == 0:
        plan = [(tile, (p, 0, 0)) for p in range(ts[0])]
    elif d == 1:
        for i in range(xs[0]):
            row = emit(f"{result.name}_r{i}", "tile.slice", (tile, ints(1, xs[2]), ints(i, 0), None))
            plan += [(row, (i, p, 0)) for p in range(ts[1])]
    else:
        plan = [(tile, (0, 0, 0))]
    cur = conv.var(target)
    atomic = get_op("tile.store").param("atomic").default
    for k, (t, offs) in enumerate(plan):
        args = (t, ints(*offs), cur, atomic)
        st = get_op("tile.store").infer_type(args, span)
        nv = conv.var(result) if k == len(plan) - 1 else Var(f"{result.name}_{k}", st, span)
        stmts.append(AssignStmt(nv, Call("tile.store", args, st, span), span))
        cur = nv
    return stmts, None


register(OpDef(
    name="tensor.expand_clone",
    params=(Param("input", "tensor", aliases=("src",)), Param("target", "tensor")),
    infer=_expand_clone_rule,
    ref=lambda a: f"{a.target}.copy_({a.input}.expand({a.target}.shape))",
    dsl="expand_clone", operand_kinds=("tensor", "tensor"), lowers_to="tile.store", lower=_lower_expand_clone,
    writes="target",
    doc="target filled with input cloned along its one extent-1 dimension (rank 3); returns target",
))
