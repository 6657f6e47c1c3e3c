"""Layout and data ops at tensor and tile level: ``full``, ``reshape``, ``transpose``, ``concat``,
``slice``, ``read`` and tile-level ``assemble``.

* ``full(shape, dtype, value)``: ``tensor.full`` lowers to ``tile.full`` (the value converted to the
  dtype, like ``torch.full``).
* ``reshape(x, shape)``: same element count, row-major order. A partial tile (``valid_shape``
  narrower than its shape) is rejected: its valid region is not a reshape of a region.
* ``transpose(x, axis1, axis2)``: swap two axes of an operand of rank >= 2 (int attributes,
  negative ones count from the end), as the reference; the valid shape is swapped too. On a tile of
  rank > 2 FlattenTileNdTo2D keeps the op on the flattened 2-D tile and records the N-D operand
  shape in ``nd_shape`` (the simulator transposes the N-D view of the 2-D buffer). The reference
  lowers only a last-two-axes swap of a rank > 2 tile (per-page 2-D TTRANS) and rejects the rest;
  we accept any pair, since the simulator has no per-page restriction.
* ``concat(a, b)``: column-wise (last axis), same dtype and row count; ``a`` must be full in its
  columns, the result's valid shape is ``[valid rows, Na + valid cols of b]``.
* ``slice(x, shape, offset, valid_shape=None)`` — **shape before offset**. ``tile.slice`` copies a
  sub-tile (its valid shape is ``valid_shape``, else the part of ``x``'s valid region it covers
  when the offsets are constant). ``tensor.slice`` inside an InCore function lowers (``lower``
  hook) to a ``tile.load`` of that region of the global tensor, or to a ``tile.slice`` when the
  sliced tensor is already on chip; in orchestration it is a view of the global tensor.
* ``read(x, indices)`` -> Scalar of ``x``'s dtype (a Python number in both executors).
* ``tile.assemble(target, src, offset)``: ``target`` with ``src`` written at ``offset`` (TINSERT);
  the result is the updated target (a fresh buffer in the simulator). Tensor-level assemble, with
  its ``atomic=`` attribute, is in :mod:`pypto.ops.memory`.
"""
from __future__ import annotations

import math

from pypto.errors import Span
from pypto.ir.nodes import AssignStmt, Call, ConstInt, Var
from pypto.ir.types import ScalarType, TensorType, TileType, describe
from pypto.language.enums import MemorySpace, TensorLayout
from pypto.ops.builder import build
from pypto.ops.registry import OpArgs, OpDef, Param, get_op, register
from pypto.ops.traits import InPlaceSafe, Lockstep, MemorySpaces, ViewOf
from pypto.ops.rules import VEC_SPACES, check_region, const_ints, expect, static_ints, tensor_extents
from pypto.ir.nodes import ConstFloat

_VEC = (MemorySpace.Vec,)


def _partial(t) -> bool:
    return isinstance(t, TileType) and t.valid_shape is not None and tuple(t.valid_shape) != tuple(t.shape)


def _like(t, shape, valid=None):
    """An array type like ``t`` (tensor or tile) with another shape / valid shape."""
    if isinstance(t, TileType):
        full = valid is None or tuple(valid) == tuple(shape)
        return TileType(tuple(shape), t.dtype, None, None if full else tuple(valid))
    return TensorType(tuple(shape), t.dtype)


def _reg(name: str, level: str, **kw) -> None:
    tile = level == "tile"
    if not tile:
        kw.setdefault("lowers_to", f"tile.{name}")
        kw.pop("sim", None)
    elif not any(isinstance(t, MemorySpaces) for t in kw.get("traits", ())):
        kw["traits"] = tuple(kw.get("traits", ())) + (MemorySpaces(_VEC, MemorySpace.Vec),)
    register(OpDef(name=f"{level}.{name}", dsl=kw.pop("dsl", name), **kw))


# -- full -----------------------------------------------------------------------------------------

def _check_fill_value(op: str, value, dtype, span: Span) -> None:
    """A literal fill value must be representable in the dtype (issue 13: ``value=1e39`` for FP32
    crashed inside torch). Infinities and NaN are fine for float dtypes — say ``float('inf')`` if
    an overflow to infinity is what you mean."""
    import torch

    v = value.value if isinstance(value, (ConstFloat, ConstInt)) else None
    if v is None or dtype.torch is None or dtype.name == "BOOL":
        return
    if dtype.is_float():
        big = torch.finfo(dtype.torch).max
        expect(not math.isfinite(v) or abs(v) <= big, op,
               f"value {v!r} does not fit {dtype.name} (largest finite value {big:.6g})", span,
               "pass float('inf') / -float('inf') if an infinity is meant, or a value in range")
    elif not dtype.is_float():
        info = torch.iinfo(dtype.torch)
        expect(float(v).is_integer() if isinstance(v, float) and math.isfinite(v) else isinstance(v, int), op,
               f"value {v!r} is not an integer, the fill of a {dtype.name} array", span)
        expect(info.min <= v <= info.max, op,
               f"value {v!r} does not fit {dtype.name} (range [{info.min}, {info.max}])", span)


def _full_infer(level):
    def infer(a: OpArgs, span: Span):
        shape = static_ints(f"{level}.full", "shape", a.shape, span)
        _check_fill_value(f"{level}.full", a.value, a.dtype, span)
        return TileType(shape, a.dtype) if level == "tile" else TensorType(shape, a.dtype)
    return infer


for _level in ("tensor", "tile"):
    _reg("full", _level, params=(Param("shape", "ints"), Param("dtype", "dtype"), Param("value", "scalar")),
         infer=_full_infer(_level),
         ref=lambda a: f"_pto.fill(torch.empty({a.shape}, dtype={a.dtype}), {a.value})",
         sim=lambda a, dst: f"_pto.fill({dst}, {a.value})",
         dsl="full" if _level == "tensor" else None, operand_kinds=(),
         traits=(Lockstep.COPY,) if _level == "tile" else (),
         doc="a constant array of shape and dtype")


# -- reshape / transpose / concat ------------------------------------------------------------------

def _reshape_infer(level):
    op = f"{level}.reshape"

    def infer(a: OpArgs, span: Span):
        t = a.x.type
        shape = static_ints(op, "shape", a.shape, span)
        # a source with run-time dimensions ([M]) can only be checked at run time: the reshape there
        # raises a located SimulationError when the counts differ (pypto.ops.support.reshape_view)
        expect(any(not isinstance(d, int) for d in t.shape) or math.prod(shape) == math.prod(t.shape), op,
               f"cannot reshape {describe(t)} to {list(shape)} (element counts differ)", span)
        expect(not _partial(t), op, f"cannot reshape a partial tile (valid_shape {list(getattr(t, 'valid_shape', None) or ())})",
               span, "fill the padding first with pl.fillpad(x)")
        return _like(t, shape)
    return infer


def _norm_axes(op: str, rank: int, a1, a2, span: Span) -> tuple[int, int]:
    """The two axes of a transpose, normalised to ``0..rank-1`` (negative ones count from the end)."""
    for ax in (a1, a2):
        expect(isinstance(ax, int) and not isinstance(ax, bool) and -rank <= ax < rank, op,
               f"axes must be ints in {-rank}..{rank - 1} for a rank-{rank} operand, got {ax!r}", span)
    n1, n2 = a1 % rank, a2 % rank
    expect(n1 != n2, op, f"axes must differ, got {a1} and {a2}", span)
    return n1, n2


def _swapped(xs, i: int, j: int) -> tuple:
    xs = list(xs)
    xs[i], xs[j] = xs[j], xs[i]
    return tuple(xs)


def _transpose_infer(level):
    op = f"{level}.transpose"

    def infer(a: OpArgs, span: Span):
        t = a.x.type
        if getattr(a, "nd_shape", None) is not None:
            # the 2-D form FlattenTileNdTo2D gives a rank-N transpose: the operand is the flattened
            # [prod(nd_shape[:-1]), nd_shape[-1]] tile, the result the flattened transposed one
            nd = static_ints(op, "nd_shape", a.nd_shape, span)
            expect(len(t.shape) == 2 and len(nd) > 2 and math.prod(nd) == math.prod(t.shape)
                   and t.shape[-1] == nd[-1], op,
                   f"nd_shape {list(nd)} is not the N-D form of the 2-D operand {describe(t)}", span)
            expect(not _partial(t), op, "the flattened form of an N-D transpose needs a full tile", span)
            i, j = _norm_axes(op, len(nd), a.axis1, a.axis2, span)
            out = _swapped(nd, i, j)
            return _like(t, (math.prod(out[:-1]), out[-1]))
        expect(len(t.shape) >= 2, op, f"needs an operand of rank >= 2, got {describe(t)}", span)
        i, j = _norm_axes(op, len(t.shape), a.axis1, a.axis2, span)
        valid = None if not _partial(t) else _swapped(t.valid_shape, i, j)
        out = _like(t, _swapped(t.shape, i, j), valid)
        if isinstance(t, TensorType) and (t.layout is not None or {i, j} == {len(t.shape) - 2, len(t.shape) - 1}):
            # a tensor transpose is a view (swapped strides): swapping the trailing pair turns ND into
            # DN and back (as the reference's); another pair keeps the layout
            trailing = {i, j} == {len(t.shape) - 2, len(t.shape) - 1}
            dn = (t.layout is None) if trailing else (t.layout is not None)
            out = TensorType(out.shape, out.dtype, TensorLayout.DN if dn else None)
        return out
    return infer


def _transpose_src(a) -> str:
    """torch source of a transpose: on the operand directly, or (the flattened form, with
    ``nd_shape``) through the N-D view of the 2-D operand and back to the 2-D result."""
    nd = getattr(a, "nd_shape", None)
    if nd is None or str(nd) == "None":         # (generated code passes attributes as source text)
        return f"{a.x}.transpose({a.axis1}, {a.axis2})"
    return f"{a.x}.reshape({nd}).transpose({a.axis1}, {a.axis2}).flatten(0, -2)"


def _concat_infer(level):
    op = f"{level}.concat"

    def infer(a: OpArgs, span: Span):
        x, y = a.lhs.type, a.rhs.type
        expect(len(x.shape) == 2 and len(y.shape) == 2, op, f"needs 2-D operands, got {describe(x)}, {describe(y)}",
               span)
        expect(x.dtype == y.dtype, op, f"operand dtypes differ: {x.dtype.name} vs {y.dtype.name}", span)
        expect(x.shape[0] == y.shape[0], op, f"row counts differ: {describe(x)} vs {describe(y)}", span)
        shape = (x.shape[0], x.shape[1] + y.shape[1])
        vx = tuple(x.valid_shape) if _partial(x) else tuple(x.shape)
        vy = tuple(y.valid_shape) if _partial(y) else tuple(y.shape)
        expect(vx[1] == x.shape[1], op, f"the left operand must be full in its columns, got valid_shape "
               f"{list(vx)} of {list(x.shape)}", span, "fill the padding first with pl.fillpad(x)")
        expect(not (_partial(x) and _partial(y)) or vx[0] == vy[0] or not isinstance(vx[0], int), op,
               f"valid row counts differ: {vx[0]} vs {vy[0]}", span)
        rows = vx[0] if _partial(x) else vy[0]
        return _like(x, shape, (rows, x.shape[1] + vy[1]))
    return infer


for _level in ("tensor", "tile"):
    _reg("reshape", _level, params=(Param("x", _level), Param("shape", "ints")), infer=_reshape_infer(_level),
         # (a tensor reshape is a view for the reference executor too, as in orchestration)
         ref=(lambda a: f"_pto.reshape_view({a.x}, {a.shape}).clone()") if _level == "tile" else
         (lambda a: f"_pto.reshape_view({a.x}, {a.shape})"),
         sim=lambda a, dst: f"_pto.reshape_into({dst}, {a.x})",
         # on gang views ([n, *shape], dst too) the same row-major refill of each member's tile;
         # a tensor reshape is a view: a write through it writes x (for the direction analyses)
         traits=(Lockstep.COPY,) if _level == "tile" else (ViewOf("x"),),
         # in orchestration a view (the reference's zero-copy ChipTensor reshape), count checked
         **({"orch": lambda a: f"_pto.reshape_view({a.x}, {a.shape})"} if _level == "tensor" else {}),
         operand_kinds=(_level,), doc="the same elements in another shape (row-major)")
    _reg("transpose", _level, params=(Param("x", _level), Param("axis1", "str"), Param("axis2", "str"))
         + ((Param("nd_shape", "ints", None, optional=True),) if _level == "tile" else ()),
         infer=_transpose_infer(_level),
         # (a tensor transpose is a view for the reference executor too: a kernel writing through
         # it writes the original tensor, as on the device)
         ref=(lambda a: f"{_transpose_src(a)}.contiguous()") if _level == "tile" else _transpose_src,
         sim=lambda a, dst: f"{dst}.copy_({_transpose_src(a)})",
         # in orchestration: a view with swapped strides, no data moves (the reference's
         # ChipTensor::transpose); InCore loads of it address the original elements
         orch=(lambda a: f"{a.x}.transpose({a.axis1}, {a.axis2})") if _level == "tensor" else None,
         operand_kinds=(_level,), doc="swap two axes (rank >= 2)")
    _reg("concat", _level, params=(Param("lhs", _level), Param("rhs", _level)), infer=_concat_infer(_level),
         ref=lambda a: f"torch.cat([{a.lhs}, {a.rhs}], dim=-1)",
         sim=lambda a, dst: f"torch.cat([{a.lhs}, {a.rhs}], dim=-1, out={dst})",
         operand_kinds=(_level, _level), doc="column-wise concatenation")


# -- slice ----------------------------------------------------------------------------------------

def _slice_infer(level):
    op = f"{level}.slice"

    def infer(a: OpArgs, span: Span):
        t = a.x.type
        # a tensor region may have run-time extents (RtDim; tiles are static); a valid shape may be
        # run-time at either level (a tile's is then a scalar expression, see TileType)
        shape = tensor_extents(op, "shape", a.shape, span) if level == "tensor" else \
            static_ints(op, "shape", a.shape, span)
        valid = None
        if a.valid_shape is not None:
            valid = tuple(e.value if isinstance(e, ConstInt) else e for e in a.valid_shape.elements)
            expect(len(valid) == len(shape) and all(not isinstance(v, int) or not isinstance(s, int) or 0 < v <= s
                                                    for v, s in zip(valid, shape)), op,
                   f"valid_shape {list(valid)} may only narrow shape {list(shape)}", span)
        if level == "tensor" and valid is not None:
            # a kernel's slice with a static valid extent reads only its valid part (the tile's box
            # past it is padding, as the load it lowers to does): that part must lie in the tensor,
            # the box may pass its end (a ragged tail: 13 rows of a 16-row box). An orchestration
            # view of such a slice still may not leave its tensor (checked when the view is made).
            check_region(op, a.offset, [v if isinstance(v, int) else n for v, n in zip(valid, shape)], t.shape,
                         span)
        else:
            check_region(op, a.offset, shape, t.shape, span)
        if level == "tensor":
            return TensorType(shape, t.dtype, t.layout)   # a window of a DN tensor is DN (same strides)
        if valid is None and _partial(t):
            offs = const_ints(a.offset)
            expect(all(o is not None for o in offs), op, "slicing a partial tile at a runtime offset needs an "
                   "explicit valid_shape", span)
            valid = tuple(max(0, min(s, v - o)) for s, v, o in zip(shape, t.valid_shape, offs))
            expect(all(v > 0 for v in valid), op, f"the slice lies outside the tile's valid region "
                   f"{list(t.valid_shape)}", span)
        return _like(t, shape, valid)
    return infer


def _lower_slice(call: Call, result: Var, conv):
    """tensor.slice in an InCore function: a tile.load of the region (or a tile.slice on chip)."""
    x, shape, offset, valid = call.args
    src = conv.expr(x)
    if isinstance(src.type, TileType):
        part = build("tile.slice", call.span, x=src, shape=shape, offset=offset, valid_shape=valid)
    else:
        part = build("tile.load", call.span, tensor=src, offsets=offset, shapes=shape, valid_shape=valid)
    nv = Var(result.name, part.type, result.span)
    return [AssignStmt(nv, part, call.span)], nv


_reg("slice", "tensor", params=(Param("x", "tensor"), Param("shape", "ints"), Param("offset", "ints"),
                                Param("valid_shape", "ints", None, optional=True)),
     infer=_slice_infer("tensor"), lowers_to=None, lower=_lower_slice,
     ref=lambda a: f"_pto.region({a.x}, {a.offset}, {a.shape}, 'tensor.slice')",
     orch=lambda a: f"_pto.view_region({a.x}, {a.offset}, {a.shape}, 'tensor.slice')",
     operand_kinds=("tensor",), traits=(ViewOf("x"),),
     doc="a region of a tensor (a view in orchestration); also takes the reference's drop_dims=[axes] "
         "(scalar-indexed unit axes erased) and clamp=True (see docs/language.md, Subscripts)")
_reg("slice", "tile", params=(Param("x", "tile"), Param("shape", "ints"), Param("offset", "ints"),
                              Param("valid_shape", "ints", None, optional=True)),
     infer=_slice_infer("tile"),
     ref=lambda a: f"_pto.region({a.x}, {a.offset}, {a.shape}, 'tile.slice').clone()",
     sim=lambda a, dst: f"_pto.tile_slice({dst}, {a.x}, {a.offset})",
     operand_kinds=("tile",), doc="copy a sub-tile; also takes the reference's drop_dims=[axes] (the result "
                                  "stays 2-D; see docs/language.md, Subscripts)")


# -- read -----------------------------------------------------------------------------------------

def _read_infer(level):
    op = f"{level}.read"

    def infer(a: OpArgs, span: Span):
        t = a.x.type
        idx = const_ints(a.indices)
        expect(len(idx) == len(t.shape), op, f"needs {len(t.shape)} indices for {describe(t)}, got {len(idx)}", span)
        for i, n in zip(idx, t.shape):
            expect(i is None or 0 <= i < n, op, f"indices {idx} out of bounds for shape {list(t.shape)}", span)
        return ScalarType(t.dtype)
    return infer


def _lower_read(call: Call, result: Var, conv):
    """tensor.read in an InCore function: tile.read of the on-chip tile, or of a [1, ..., 1] tile
    loaded from the element's address when the tensor is in global memory. The scalar result keeps
    its Var (only tensors change type in this pass)."""
    x, indices = call.args
    src = conv.expr(x)
    idx = conv.expr(indices)
    stmts = []
    if not isinstance(src.type, TileType):
        rank = len(src.type.shape)
        load = build("tile.load", call.span, tensor=src, offsets=idx, shapes=[1] * rank)
        elem = Var(f"{result.name}_elem", load.type, call.span)
        stmts.append(AssignStmt(elem, load, call.span))
        src, idx = elem, [0] * rank
    stmts.append(AssignStmt(conv.var(result), build("tile.read", call.span, x=src, indices=idx), call.span))
    return stmts, None


def _read_args(args: list, kwargs: dict, span: Span):
    """``pl.read(t, i)``: a bare index is the one index of a 1-D tensor or tile (the reference's
    flat 1-D form); a tensor of another rank then gets the usual 'needs N indices' error."""
    if len(args) > 1 and not isinstance(args[1], (list, tuple)):
        args[1] = [args[1]]
    elif "indices" in kwargs and not isinstance(kwargs["indices"], (list, tuple)):
        kwargs["indices"] = [kwargs["indices"]]
    return args, kwargs


_reg("read", "tensor", params=(Param("x", "tensor"), Param("indices", "ints")), infer=_read_infer("tensor"),
     dsl_args=_read_args,
     ref=lambda a: f"_pto.read({a.x}, {a.indices})", lowers_to=None, lower=_lower_read,
     orch=lambda a: f"_rt.read({a.x}, {a.indices})",   # waits for the element's producers (Runtime.read)
     operand_kinds=("tensor",), doc="one element as a scalar")
_reg("read", "tile", params=(Param("x", "tile"), Param("indices", "ints")), infer=_read_infer("tile"),
     dsl_args=_read_args,
     ref=lambda a: f"_pto.read({a.x}, {a.indices})",
     sim=lambda a, dst: f"_pto.read({a.x}, {a.indices})",
     operand_kinds=("tile",), doc="one element as a scalar")


# -- tile.assemble --------------------------------------------------------------------------------

def _tile_assemble_infer(a: OpArgs, span: Span):
    t, s = a.target.type, a.src.type
    # The one converting form is the cube's FIXPIPE writeback: an FP32 accumulator (Acc) drained into
    # a BF16/FP16 Mat scratch, narrowed round-half-to-even (AutoTileMatmulL0's Mat-scratch placement
    # and cast fold emit it). Spaces are unknown before InferTileMemorySpace, so the dtype pair gates
    # it there; once placed (the verifier re-applies this rule) Acc source <=> Mat target.
    narrowing = s.dtype.name == "FP32" and t.dtype.name in ("BF16", "FP16")
    expect(t.dtype == s.dtype or narrowing, "tile.assemble", f"source dtype {s.dtype.name} differs from target "
           f"dtype {t.dtype.name} (only an FP32 Acc tile may be written into a BF16/FP16 Mat tile)", span,
           "cast the value first with pl.cast(x, ...)")
    acc_src, mat_dst = s.memory_space == MemorySpace.Acc, t.memory_space == MemorySpace.Mat
    if s.memory_space is not None and t.memory_space is not None:
        expect(acc_src == mat_dst, "tile.assemble", f"a {s.memory_space.name} source cannot be written into a "
               f"{t.memory_space.name} target (legal: Vec into Vec, Acc into Mat)", span)
    expect(t.dtype == s.dtype or (s.memory_space in (None, MemorySpace.Acc) and t.memory_space in (
        None, MemorySpace.Mat)), "tile.assemble", f"a narrowing {s.dtype.name} -> {t.dtype.name} write is the "
           "FIXPIPE Acc -> Mat drain only", span, "cast the value first with pl.cast(x, ...)")
    check_region("tile.assemble", a.offset, s.shape, t.shape, span)
    # the updated target: where the target lives (a loop carrying it keeps one type)
    return _like(t, t.shape, t.valid_shape).with_(memory_space=t.memory_space)


register(OpDef(
    name="tile.assemble",
    params=(Param("target", "tile"), Param("src", "tile"), Param("offset", "ints", aliases=("offsets",))),
    infer=_tile_assemble_infer,
    ref=lambda a: f"_pto.tile_assemble({a.target}, {a.src}, {a.offset})",
    sim=lambda a, dst: f"_pto.tile_assemble({a.target}, {a.src}, {a.offset}, dst={dst})",
    dsl="assemble", operand_kinds=("tile", "tile"),
    # Vec into Vec (TINSERT), or Acc into Mat (the FIXPIPE drain; the type rule pairs them); the
    # result lives where the target does
    # (InPlaceSafe: the result may take the target's buffer, TINSERT in place)
    traits=(InPlaceSafe(), MemorySpaces((("target", (MemorySpace.Vec, MemorySpace.Mat)),
                                         ("src", (MemorySpace.Vec, MemorySpace.Acc))), None)),
    updates="target",
    doc="target with src written at offset (TINSERT; an FP32 Acc src into a BF16/FP16 Mat target narrows "
        "round-half-to-even, the FIXPIPE drain); the result is the updated target",
))
