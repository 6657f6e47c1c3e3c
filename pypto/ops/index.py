"""Index ops: ``gather``, ``scatter``, ``scatter_update`` (tensor and tile) and ``mgather`` (tile,
from a global tensor). Helpers and the out-of-range rules: :mod:`pypto.ops.support.index`.

* ``tile.gather(src, indices, tmp=None, dim=None)``: ``dst[i, j] = src.flat[indices[i, j]]``, the
  flat row-major index over the source tile (the reference's index form); the result has the
  indices' shape, valid shape and ``src``'s dtype. ``dim=-1`` (our addition, what
  ``tensor.gather`` lowers to): ``dst[i, j] = src[i, indices[i, j]]``.
* ``tensor.gather(input, dim, index)``: torch.gather (``out[b, k] = input[b, index[b, k]]`` for
  rank 2, dim -1), any rank and dim; ``index`` has ``input``'s rank and may be smaller on the other
  axes. It lowers to ``tile.gather(..., dim=d, nd="<input shape>|<index shape>")``, which still
  means the N-d gather after the tiles are flattened to 2-D.
* ``tile.scatter(dst, src, indexes, dim=None)``: ``dst`` with ``dst.flat[indexes[i, j]] = src[i, j]``
  (``dim=-1``: ``dst[i, indexes[i, j]] = src[i, j]``); ``tensor.scatter(input, dim, index, src)``:
  the row-wise form. Duplicates: the last in row-major order wins.
* ``scatter_update``: row ``index.flat[k]`` of the input becomes ``src[k, :]``
  (``pl.tile.scatter_update(input, index, src)``, ``pl.tensor.scatter_update(input, -2, index, src)``).
* ``tile.mgather(mem, idx, coalesce="row", gather_oob="undefined")``: rows (``"row"``, an
  ``[R, 1]`` or ``[1, R]`` index tile) or elements (``"elem"``) of the global tensor ``mem``;
  ``gather_oob`` ``undefined`` / ``clamp`` / ``wrap`` / ``zero`` (or 0..3), the reference's policies
  (``undefined`` is a run-time error here). The Vec form only.

Indices: INT32 (UINT32 accepted; INT16 with a 16-bit data dtype for gather / scatter), read as
unsigned. ``tmp`` is the device's scratch tile (optional; untouched). These ops have no lockstep
gang form (a flat index spans the whole tile).
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.nodes import AssignStmt, Call, Var
from pypto.ir.types import TensorType, TileType, describe
from pypto.language.dtypes import INT16, INT32, UINT32
from pypto.language.enums import MemorySpace
from pypto.ops.builder import build as build_call
from pypto.ops.registry import OpArgs, OpDef, Param, get_op, register
from pypto.ops.traits import GlobalMemoryAccess, MemorySpaces
from pypto.ops.rules import VEC_SPACES, expect

_VEC = (MemorySpace.Vec,)
_IDX = (INT32, UINT32, INT16)
_COALESCE = {"row": "row", 0: "row", "elem": "elem", 1: "elem"}
_OOB = {"undefined": "undefined", "clamp": "clamp", "wrap": "wrap", "zero": "zero",
        0: "undefined", 1: "clamp", 2: "wrap", 3: "zero"}


def _valid_src(x) -> str:
    v = getattr(x.type, "valid_shape", None)
    return "None" if v is None else repr(list(v))


def _index_dtype(op: str, idx, data, span: Span) -> None:
    expect(idx.dtype in _IDX, op, f"indices must be INT32 (or UINT32 / INT16), got {idx.dtype.name}", span,
           "cast the indices with pl.cast(idx, pl.INT32)")
    expect(idx.dtype != INT16 or data.dtype.itemsize == 2, op,
           f"INT16 indices need a 16-bit data dtype, got {data.dtype.name}", span, "use INT32 indices")


def _check_dim(op: str, dim, span: Span, allowed=(None, -1)) -> None:
    expect(dim in allowed, op, f"dim must be one of {list(allowed)}, got {dim!r}", span,
           "gather / scatter work along the last axis of a rank-2 operand (dim=-1)")


def _rank2(op: str, what: str, t, span: Span) -> None:
    expect(len(t.shape) == 2, op, f"{what} must be rank 2, got {describe(t)}", span)


# ------------------------------------------------------------------ gather
def _tile_gather_rule(a: OpArgs, span: Span) -> TileType:
    op = "tile.gather"
    src, idx = a.src.type, a.indices.type
    _index_dtype(op, idx, src, span)
    if a.nd is not None:
        # the lowered form of a rank-N tensor.gather: nd = "<src shape>|<index shape>" (the tiles may
        # have been flattened to 2-D since); dim counts in those shapes
        expect(isinstance(a.nd, str) and a.dim is not None, op, f"bad nd attribute {a.nd!r}", span)
        return TileType(idx.shape, src.dtype, None, idx.valid_shape)
    _check_dim(op, a.dim, span)
    if a.dim is not None:
        _rank2(op, "src", src, span)
        _rank2(op, "indices", idx, span)
        expect(idx.shape[0] <= src.shape[0], op, f"indices have {idx.shape[0]} rows, src only {src.shape[0]}", span)
    return TileType(idx.shape, src.dtype, None, idx.valid_shape)


def _tensor_gather_rule(a: OpArgs, span: Span) -> TensorType:
    op = "tensor.gather"
    x = a.input.type
    if a.kvalue is not None:
        expect(a.dim is None and a.index is None and a.mask_pattern is None, op,
               "the compare form (kvalue=...) excludes dim / index / mask_pattern", span)
        return _gc_types(op, "tensor", x, a.kvalue, a, span)
    expect(a.part is None and a.out_cols is None, op, "out_cols / part belong to the compare form (kvalue=...)",
           span)
    if a.mask_pattern is not None:
        # the mask form: tile.gather_mask's rule on the tensor's shape
        expect(a.dim is None and a.index is None, op,
               "the index form (dim, index) and the mask form (mask_pattern=...) are mutually exclusive", span)
        from pypto.ops.sort import mask_result

        shape, dtype = mask_result(op, x, a.mask_pattern, a.output_dtype, span)
        return TensorType(shape, dtype)
    expect(a.index is not None and a.dim is not None, op,
           "needs dim and index (the index form) or mask_pattern=... (the mask form)", span,
           "pl.gather(x, dim=-1, index=idx) or pl.gather(x, mask_pattern=pl.tile.MaskPattern.P0101)")
    expect(a.output_dtype is None, op, "output_dtype belongs to the mask form (mask_pattern=...)", span)
    idx = a.index.type
    rank = len(x.shape)
    expect(len(idx.shape) == rank, op, f"index must have input's rank {rank}, got {describe(idx)}", span)
    expect(isinstance(a.dim, int) and not isinstance(a.dim, bool) and -rank <= a.dim < rank, op,
           f"dim must be an int in [{-rank}, {rank}), got {a.dim!r}", span)
    d = a.dim % rank
    _index_dtype(op, idx, x, span)
    for k in range(rank):
        expect(k == d or idx.shape[k] <= x.shape[k], op,
               f"index shape {list(idx.shape)} exceeds input shape {list(x.shape)} on axis {k}", span)
    return TensorType(idx.shape, x.dtype)


def _tensor_gather_ref(a: OpArgs) -> str:
    if a.kvalue != "None":
        return _gc_src(a, a.input)
    if a.mask_pattern != "None":
        dt = a.output_dtype if a.output_dtype != "None" else f"{a.input}.dtype"
        return f"_pto.gather_mask({a.input}, {a.mask_pattern}, {dt})"
    ts, ti = a.input.type.shape, a.index.type.shape
    nd = ",".join(map(str, ts)) + "|" + ",".join(map(str, ti))
    return f"_pto.gather({a.input}, {a.index}, {a.dim}, None, {nd!r})"


def _tensor_gather_args(c, tile):
    src, dim, index, pattern, out_dtype, kvalue, mode, offset, out_cols, count_dtype, part = c.args
    if kvalue is not None:
        return "tile.gather_compare", (tile(src), kvalue, None, mode, offset, out_cols, count_dtype, part)
    if pattern is not None:
        return "tile.gather_mask", (tile(src), pattern, out_dtype)
    nd = ",".join(map(str, src.type.shape)) + "|" + ",".join(map(str, index.type.shape))
    return "tile.gather", (tile(src), tile(index), None, dim, nd)


def _as_tile(conv, v, span, stmts: list):
    """The tile holding tensor value ``v`` in a self-lowering op: the converter's tile, or a whole
    ``tile.load`` of a global tensor emitted here."""
    e = conv.expr(v)
    if isinstance(e.type, TileType):
        return e
    shape = e.type.shape
    load = build_call("tile.load", span, tensor=e, offsets=[0] * len(shape), shapes=list(shape))
    name = getattr(v, "name", "operand")
    tv = Var(f"{name}_tile", load.type, span)
    stmts.append(AssignStmt(tv, load, span))
    return tv


def _lower_to(tile_op: str, build):
    """A ``lower`` hook: operands to tiles, then ``tile_op`` with ``build(call, tiles)`` as args."""
    def lower(call: Call, result: Var, conv):
        stmts: list = []
        args = build(call, lambda v: _as_tile(conv, v, call.span, stmts))
        name = tile_op
        if isinstance(args[0], str):   # the builder chose the tile op
            name, args = args
        op = get_op(name)
        t = op.infer_type(args, call.span)
        nv = Var(result.name, t, result.span)
        stmts.append(AssignStmt(nv, Call(name, args, t, call.span), call.span))
        return stmts, nv
    return lower


register(OpDef(
    name="tile.gather",
    params=(Param("src", "tile"), Param("indices", "tile"), Param("tmp", "tile", None), Param("dim", "str", None),
            Param("nd", "str", None)),
    infer=_tile_gather_rule,
    ref=lambda a: f"_pto.gather({a.src}, {a.indices}, {a.dim}, {_valid_src(a.indices)}, {a.nd})",
    sim=lambda a, dst: f"_pto.gather({a.src}, {a.indices}, {a.dim}, {_valid_src(a.indices)}, {a.nd}, out={dst})",
    dsl="gather", operand_kinds=("tile", "tile"),
    traits=(VEC_SPACES,),
    doc="dst[i, j] = src.flat[indices[i, j]] (dim=-1: src[i, indices[i, j]])",
))
register(OpDef(
    name="tensor.gather",
    params=(Param("input", "tensor"), Param("dim", "str", None), Param("index", "tensor", None),
            Param("mask_pattern", "str", None), Param("output_dtype", "dtype", None),
            # the compare form (tile.gather_compare)
            Param("kvalue", "scalar", None), Param("cmp_mode", "str", "eq"), Param("offset", "str", 0),
            Param("out_cols", "str", None), Param("count_dtype", "dtype", None), Param("part", "str", None)),
    infer=_tensor_gather_rule,
    ref=_tensor_gather_ref,
    dsl="gather", operand_kinds=("tensor",),
    lowers_to="tile.gather",
    lower=_lower_to("tile.gather", _tensor_gather_args),
    doc="out[b, k] = input[b, index[b, k]] (rank 2, dim -1), or the mask form (tile.gather_mask)",
))


# ------------------------------------------------------------------ scatter
def _tile_scatter_rule(a: OpArgs, span: Span) -> TileType:
    op = "tile.scatter"
    d, s, idx = a.dst.type, a.src.type, a.indexes.type
    expect(d.dtype == s.dtype, op, f"dst dtype {d.dtype.name} differs from src dtype {s.dtype.name}", span)
    _index_dtype(op, idx, s, span)
    expect(tuple(idx.shape) == tuple(s.shape), op, f"indexes must have src's shape {list(s.shape)}, got "
           f"{list(idx.shape)}", span)
    _check_dim(op, a.dim, span)
    if a.dim is not None:
        _rank2(op, "dst", d, span)
        _rank2(op, "src", s, span)
        expect(s.shape[0] <= d.shape[0], op, f"src has {s.shape[0]} rows, dst only {d.shape[0]}", span)
    return TileType(d.shape, d.dtype, None, d.valid_shape)


def _tensor_scatter_rule(a: OpArgs, span: Span) -> TensorType:
    op = "tensor.scatter"
    x = a.input.type
    if a.mask_pattern is not None:
        expect(a.dim is None and a.index is None and a.src is None and a.dst is not None, op,
               "the mask form takes (input, mask_pattern=..., dst=...) only", span)
        from pypto.ops.sort import _scatter_mask_rule

        t = _scatter_mask_rule(get_op("tile.scatter_mask").args((_Typed(a.dst.type), _Typed(x), a.mask_pattern)),
                               span)
        return TensorType(t.shape, t.dtype)
    expect(a.dim is not None and a.index is not None and a.src is not None and a.dst is None, op,
           "needs (input, dim, index, src) (the index form) or (input, mask_pattern=..., dst=...) (the mask form)",
           span)
    idx, s = a.index.type, a.src.type
    for what, t in (("input", x), ("index", idx), ("src", s)):
        _rank2(op, what, t, span)
    _check_dim(op, a.dim, span, (-1, 1))
    expect(x.dtype == s.dtype, op, f"input dtype {x.dtype.name} differs from src dtype {s.dtype.name}", span)
    _index_dtype(op, idx, s, span)
    expect(tuple(idx.shape) == tuple(s.shape), op, f"index must have src's shape {list(s.shape)}, got "
           f"{list(idx.shape)}", span)
    expect(s.shape[0] <= x.shape[0], op, f"src has {s.shape[0]} rows, input only {x.shape[0]}", span)
    return TensorType(x.shape, x.dtype)


class _Typed:
    """A stand-in operand carrying only a type (to apply a tile op's rule to tensor operands)."""

    def __init__(self, t):
        self.type = t


def _tensor_scatter_ref(a: OpArgs) -> str:
    if a.mask_pattern != "None":
        return f"_pto.scatter_mask({a.dst}, {a.input}, {a.mask_pattern})"
    return f"_pto.scatter({a.input}, {a.src}, {a.index}, -1)"


def _tensor_scatter_args(c, tile):
    x, dim, index, src, pattern, dst = c.args
    if pattern is not None:
        return "tile.scatter_mask", (tile(dst), tile(x), pattern)
    return "tile.scatter", (tile(x), tile(src), tile(index), -1)


register(OpDef(
    name="tile.scatter",
    params=(Param("dst", "tile"), Param("src", "tile"), Param("indexes", "tile"), Param("dim", "str", None)),
    infer=_tile_scatter_rule,
    ref=lambda a: f"_pto.scatter({a.dst}, {a.src}, {a.indexes}, {a.dim}, {_valid_src(a.indexes)})",
    sim=lambda a, dst: f"_pto.scatter({a.dst}, {a.src}, {a.indexes}, {a.dim}, {_valid_src(a.indexes)}, out={dst})",
    dsl="scatter", operand_kinds=("tile", "tile", "tile"),
    traits=(VEC_SPACES,),
    doc="dst with dst.flat[indexes[i, j]] = src[i, j] (dim=-1: dst[i, indexes[i, j]])",
))
register(OpDef(
    name="tensor.scatter",
    params=(Param("input", "tensor"), Param("dim", "str", None), Param("index", "tensor", None),
            Param("src", "tensor", None), Param("mask_pattern", "str", None), Param("dst", "tensor", None)),
    infer=_tensor_scatter_rule,
    ref=_tensor_scatter_ref,
    dsl="scatter", operand_kinds=("tensor",),
    lowers_to="tile.scatter",
    lower=_lower_to("tile.scatter", _tensor_scatter_args),
    doc="input with input[b, index[b, k]] = src[b, k] (rank 2, dim -1), or the mask form (tile.scatter_mask)",
))


# ------------------------------------------------------------------ scatter_update
def _scatter_update_rule(op: str, level: str):
    def infer(a: OpArgs, span: Span):
        x, idx, s = a.input.type, a.index.type, a.src.type
        expect(a.dim in (-2, 0), op, f"dim must be -2 (rows of a rank-2 input), got {a.dim!r}", span)
        _rank2(op, "input", x, span)
        _rank2(op, "src", s, span)
        expect(x.dtype == s.dtype, op, f"input dtype {x.dtype.name} differs from src dtype {s.dtype.name}", span)
        expect(idx.dtype in _IDX, op, f"index must be INT32 (or UINT32 / INT16), got {idx.dtype.name}", span)
        expect(s.shape[1] == x.shape[1], op, f"src rows have {s.shape[1]} elements, input rows {x.shape[1]}", span)
        n = 1
        for d in idx.shape:
            n *= d
        expect(n <= s.shape[0], op, f"{n} indices but src has only {s.shape[0]} rows", span)
        if level == "tensor":
            return TensorType(x.shape, x.dtype)
        return TileType(x.shape, x.dtype, None, x.valid_shape)
    return infer


register(OpDef(
    name="tile.scatter_update",
    params=(Param("input", "tile"), Param("index", "tile"), Param("src", "tile"), Param("dim", "str", -2)),
    infer=_scatter_update_rule("tile.scatter_update", "tile"),
    ref=lambda a: f"_pto.scatter_update({a.input}, {a.index}, {a.src}, {_valid_src(a.index)})",
    sim=lambda a, dst: f"_pto.scatter_update({a.input}, {a.index}, {a.src}, {_valid_src(a.index)}, out={dst})",
    dsl="scatter_update", operand_kinds=("tile", "tile", "tile"),
    traits=(VEC_SPACES,),
    doc="input with row index.flat[k] replaced by src[k, :]",
))
register(OpDef(
    name="tensor.scatter_update",
    params=(Param("input", "tensor"), Param("dim", "str"), Param("index", "tensor"), Param("src", "tensor")),
    infer=_scatter_update_rule("tensor.scatter_update", "tensor"),
    ref=lambda a: f"_pto.scatter_update({a.input}, {a.index}, {a.src})",
    dsl="scatter_update", operand_kinds=("tensor",),
    lowers_to="tile.scatter_update",
    lower=_lower_to("tile.scatter_update", lambda c, tile: (tile(c.args[0]), tile(c.args[2]), tile(c.args[3]), -2)),
    doc="input with row index.flat[k] replaced by src[k, :] (dim -2)",
))


# ------------------------------------------------------------------ mgather
def _mgather_rule(a: OpArgs, span: Span) -> TileType:
    op = "tile.mgather"
    mem, idx = a.mem.type, a.idx.type
    expect(a.coalesce in _COALESCE, op, f"coalesce must be 'row' or 'elem' (0 / 1), got {a.coalesce!r}", span)
    expect(a.gather_oob in _OOB, op, "gather_oob must be 'undefined', 'clamp', 'wrap' or 'zero' (0..3), got "
           f"{a.gather_oob!r}", span)
    expect(idx.dtype in (INT32, UINT32), op, f"idx must be INT32, got {idx.dtype.name}", span,
           "cast the indices with pl.cast(idx, pl.INT32)")
    _rank2(op, "idx", idx, span)
    if _COALESCE[a.coalesce] == "elem":
        return TileType(idx.shape, mem.dtype, None, idx.valid_shape)
    _rank2(op, "mem (row gather)", mem, span)
    expect(idx.shape[0] == 1 or idx.shape[1] == 1, op,
           f"a row gather takes an [R, 1] or [1, R] index tile, got {list(idx.shape)}", span)
    rows = idx.shape[0] * idx.shape[1]
    valid = None
    if idx.valid_shape is not None:
        valid = (idx.valid_shape[0] * idx.valid_shape[1], mem.shape[1])
    return TileType((rows, mem.shape[1]), mem.dtype, None, valid)


def _mg_src(a: OpArgs, dst: str | None = None) -> str:
    import ast

    # attribute values reach ref / sim as their Python source (py_literal): read them back
    coalesce, oob = ast.literal_eval(a.coalesce), ast.literal_eval(a.gather_oob)
    tail = "" if dst is None else f", out={dst}"
    return (f"_pto.mgather({a.mem}, {a.idx}, {_COALESCE[coalesce]!r}, {_OOB[oob]!r}, "
            f"{_valid_src(a.idx)}{tail})")


register(OpDef(
    name="tile.mgather",
    params=(Param("mem", "tensor"), Param("idx", "tile"), Param("coalesce", "str", "row"),
            Param("gather_oob", "str", "undefined")),
    infer=_mgather_rule,
    ref=lambda a: _mg_src(a),
    sim=lambda a, dst: _mg_src(a, dst),
    dsl="mgather", operand_kinds=("tensor", "tile"),
    traits=(MemorySpaces((), MemorySpace.Vec), GlobalMemoryAccess("read")),
    doc="gather rows / elements of a global tensor by an index tile (Vec form)",
))


# ------------------------------------------------------------------ mscatter
_MSCATTER_DTYPES = ("FP16", "FP32", "INT16", "INT32")


def _mscatter_rule(a: OpArgs, span: Span) -> TensorType:
    op = "tile.mscatter"
    s, idx, t = a.src.type, a.idx.type, a.output_tensor.type
    expect(s.dtype.name in _MSCATTER_DTYPES, op, f"src dtype must be FP16, FP32, INT16 or INT32, got {s.dtype.name}",
           span)
    expect(idx.dtype == INT32, op, f"idx must be INT32, got {idx.dtype.name}", span,
           "cast the indices with pl.cast(idx, pl.INT32)")
    expect(tuple(idx.shape) == tuple(s.shape), op, f"idx must have src's shape {list(s.shape)}, got "
           f"{list(idx.shape)}", span)
    expect(isinstance(t, TensorType) and len(t.shape) >= 1, op,
           f"output_tensor must be a tensor of rank >= 1, got {describe(t)}", span)
    expect(t.dtype == s.dtype, op, f"output_tensor dtype {t.dtype.name} differs from src dtype {s.dtype.name}", span)
    return t


register(OpDef(
    name="tile.mscatter",
    params=(Param("src", "tile"), Param("idx", "tile"), Param("output_tensor", "tensor")),
    infer=_mscatter_rule,
    ref=lambda a: f"_pto.mscatter({a.src}, {a.idx}, {a.output_tensor}, {_valid_src(a.idx)})",
    sim=lambda a, dst: f"_pto.mscatter({a.src}, {a.idx}, {a.output_tensor}, {_valid_src(a.idx)})",
    dsl="mscatter", operand_kinds=("tile", "tile", "tensor"), writes="output_tensor",
    traits=(MemorySpaces(_VEC, None), GlobalMemoryAccess("write")),
    doc="output_tensor.flat[idx[i, j]] = src[i, j] (a scatter-store into global memory); returns the tensor",
))


# ------------------------------------------------------------------ gather_compare
# ``dst, cdst = pl.tile.gather_compare(src, kvalue, tmp, cmp_mode="eq", offset=0, out_cols=K,
# count_dtype=INT32)`` (and the tensor form ``pl.tensor.gather(src, kvalue=..., cmp_mode=...,
# out_cols=K)``): per row r of src's valid region, the column indices j (+ offset) where
# ``src[r, j] <cmp> kvalue`` (compared exactly in src's dtype, IEEE: NaN matches only "ne"), in
# increasing order, into dst[r, :] ([rows, out_cols] INT32; 0 after the matches), and the match
# count into cdst[0, r] ([1, rows] count_dtype). More matches than out_cols: the device writes past
# the row (undefined): a run-time error here. Deviation, documented: the reference's own tests of
# this form are skipped (its PTOAS lowering is broken) and the A5 kernel converts float scores to
# int32 before comparing; we implement the ISA's documented meaning (TGATHER compare form).
#
# Two results: the call is one op with a ``part`` attribute. ``a, b = pl.tile.gather_compare(...)``
# is parsed into two calls of it, ``part="index"`` (dst) and ``part="count"`` (cdst), which is also
# the printed form; without ``part`` the call denotes the (dst, cdst) tuple, which must be unpacked.
_CMP = {"eq": 0, "ne": 1, "lt": 2, "le": 3, "gt": 4, "ge": 5}
_CMP_NAMES = {v: k for k, v in _CMP.items()}
_GC_DTYPES = ("FP16", "FP32", "INT16", "INT32")
PARTS = ("index", "count")


def _cmp_mode(op: str, mode, span: Span) -> str:
    m = _CMP_NAMES.get(mode, mode) if isinstance(mode, int) and not isinstance(mode, bool) else mode
    expect(m in _CMP, op, f"cmp_mode must be one of {', '.join(_CMP)} (or 0..5), got {mode!r}", span)
    return m


def _gc_types(op: str, level: str, src, kvalue, a: OpArgs, span: Span):
    from pypto.ir.types import TupleType
    from pypto.language.dtypes import DataType

    expect(src.dtype.name in _GC_DTYPES, op, f"src dtype must be FP16, FP32, INT16 or INT32, got {src.dtype.name}",
           span)
    _rank2(op, "src", src, span)
    from pypto.ops.rules import scalar_dtype

    kd = scalar_dtype(kvalue.type)
    expect(kd == src.dtype or (src.dtype.is_int() and kd.is_int()) or (src.dtype.is_float() and kd.is_float()), op,
           f"kvalue dtype {kd.name} must match src dtype {src.dtype.name}", span)
    _cmp_mode(op, a.cmp_mode, span)
    oc, off = a.out_cols, a.offset
    expect(isinstance(oc, int) and not isinstance(oc, bool) and oc > 0, op,
           f"out_cols must be a positive int, got {oc!r}", span)
    expect(isinstance(off, int) and not isinstance(off, bool), op, f"offset must be an int, got {off!r}", span)
    cd = a.count_dtype if a.count_dtype is not None else INT32
    expect(isinstance(cd, DataType) and cd in (INT32, UINT32), op, f"count_dtype must be INT32 or UINT32, got {cd!r}",
           span)
    expect(a.part in (None,) + PARTS, op, f"part must be 'index' or 'count', got {a.part!r}", span)
    rows = src.shape[0]
    make = TensorType if level == "tensor" else TileType
    dst, cnt = make((rows, oc), INT32), make((1, rows), cd)
    return {None: TupleType((dst, cnt)), "index": dst, "count": cnt}[a.part]


def _gc_src(a: OpArgs, x, dst: str | None = None) -> str:
    import ast

    mode = ast.literal_eval(a.cmp_mode)
    mode = _CMP_NAMES.get(mode, mode)
    cd = a.count_dtype if a.count_dtype != "None" else "torch.int32"
    tail = "" if dst is None else f", out={dst}"
    return (f"_pto.gather_compare({x}, {a.kvalue}, {mode!r}, {a.offset}, {a.out_cols}, {cd}, {_valid_src(x)}, "
            f"{a.part}{tail})")


register(OpDef(
    name="tile.gather_compare",
    params=(Param("src", "tile"), Param("kvalue", "scalar"), Param("tmp", "tile", None),
            Param("cmp_mode", "str", "eq"), Param("offset", "str", 0), Param("out_cols", "str", None),
            Param("count_dtype", "dtype", None), Param("part", "str", None)),
    infer=lambda a, span: _gc_types("tile.gather_compare", "tile", a.src.type, a.kvalue, a, span),
    ref=lambda a: _gc_src(a, a.src),
    sim=lambda a, dst: _gc_src(a, a.src, dst),
    dsl="gather_compare", operand_kinds=("tile",),
    traits=(VEC_SPACES,),
    doc="per row: the indices where src <cmp> kvalue (part 'index') and their count (part 'count')",
))


# ------------------------------------------------------------------ gatherb
# ``pl.tile.gatherb(src, offset, *, output_dtype=None)`` (TGATHERB): offset[r, c] (UINT32) is a BYTE
# offset into src's row-major bytes; the 32 bytes there become dst[r, c*B : (c+1)*B], B = 32 /
# sizeof(output_dtype) (output_dtype defaults to src's and only changes how the bytes are read). dst
# is [offset rows, offset cols * B]; its valid shape the offset tile's, scaled the same way. A block
# that does not lie wholly inside src ("implementation-defined" in the ISA; the CPU model skips it)
# is a run-time error here. Offsets need not be 32-byte aligned (the CPU model allows any).
_GATHERB_DTYPES = ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "FP16", "BF16", "FP32")


def _gatherb_rule(a: OpArgs, span: Span) -> TileType:
    op = "tile.gatherb"
    s, o = a.src.type, a.offset.type
    out = a.output_dtype if a.output_dtype is not None else s.dtype
    for what, d in (("src", s.dtype), ("output_dtype", out)):
        expect(d.name in _GATHERB_DTYPES, op, f"{what} must be an 8/16/32-bit int/uint or FP16/BF16/FP32, got "
               f"{d.name}", span)
    expect(o.dtype == UINT32, op, f"offset must be UINT32 (byte offsets), got {o.dtype.name}", span,
           "cast the offsets with pl.cast(off, pl.UINT32)")
    _rank2(op, "src", s, span)
    _rank2(op, "offset", o, span)
    expect(isinstance(o.shape[1], int) and o.shape[1] % 8 == 0, op,
           f"offset columns must be a positive multiple of 8 (one 32-byte UINT32 row), got {o.shape[1]}", span)
    b = 32 // out.itemsize
    valid = None
    if o.valid_shape is not None:
        valid = (o.valid_shape[0], o.valid_shape[1] * b)
    return TileType((o.shape[0], o.shape[1] * b), out, None, valid)


register(OpDef(
    name="tile.gatherb",
    params=(Param("src", "tile"), Param("offset", "tile"), Param("output_dtype", "dtype", None)),
    infer=_gatherb_rule,
    ref=lambda a: f"_pto.gatherb({a.src}, {a.offset}, {a.output_dtype}, {_valid_src(a.offset)})",
    sim=lambda a, dst: f"_pto.gatherb({a.src}, {a.offset}, {a.output_dtype}, {_valid_src(a.offset)}, out={dst})",
    dsl="gatherb", operand_kinds=("tile", "tile"),
    traits=(VEC_SPACES,),
    doc="32-byte blocks of src at UINT32 byte offsets (one offset -> 32 / sizeof(output_dtype) elements)",
))
