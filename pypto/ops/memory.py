"""Data movement and allocation: ``tile.load`` / ``tile.store`` / ``tile.create`` / ``tile.move``,
and at tensor level ``tensor.create`` (orchestration) and ``tensor.assemble`` (``out[...] = e``).

Global-memory ops have the ``GlobalMemoryAccess`` trait so the simulator yields to its scheduler there. Bytes of a
loaded tile outside its ``valid_shape`` are zero (what the DMA leaves by default).
"""
from __future__ import annotations

from pypto.errors import InvalidOperationError, Span
from pypto.ir.types import TensorType, TileType
from pypto.language.enums import AtomicType, MemorySpace
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.traits import GlobalMemoryAccess, Lockstep, MemorySpaces
from pypto.ops.rules import check_region, expect, static_ints, tensor_extents
from pypto.errors import UnsupportedFeatureError
from pypto.ir.nodes import ConstInt, MakeTuple
from pypto.ir.types import DynDim
from pypto.language.enums import TensorLayout, TileLayout
from pypto.ops.rules import const_ints

_LOADABLE = (MemorySpace.Vec, MemorySpace.Mat)


def _flat_region(offsets, extent, tshape):
    """A 2-D access of a rank != 2 tensor (what FlattenTileNdTo2D emits: offsets keep the tensor's rank,
    the extent is the 2-D tile's): the tensor is read as its row-major 2-D view
    ``[prod(leading dims), last]`` and the access starts at row ``linear(offsets[:-1])``, column
    ``offsets[-1]``. Returns ``(offsets, tensor shape)`` of that 2-D view (``None`` for a dynamic
    offset), or the arguments unchanged when the access is not of this form."""
    offs = const_ints(offsets)
    if offsets is None or len(extent) != 2 or len(offs) != len(tshape) or len(tshape) == 2:
        return offsets, tshape
    lead = tshape[:-1]
    dyn = next((d for d in lead if isinstance(d, DynDim)), None)
    if dyn is not None:
        # a run-time leading extent: the row count and start are known at run time only (the
        # executors check the rows against the tensor there); the column axis is still checked
        return MakeTuple((offsets.elements[0], offsets.elements[-1])), (dyn, tshape[-1])
    rows = 1
    for d in lead:
        rows *= d
    row = 0
    for o, d in zip(offs[:-1], lead):
        row = None if row is None or o is None else row * d + o
    elems = (ConstInt(row) if row is not None else offsets.elements[0], offsets.elements[-1])
    return MakeTuple(elems), (rows, tshape[-1])


def _valid_src(a: OpArgs, tile_type: TileType) -> str:
    # a runtime valid shape: the generators attach its source to the operand (Src.valid)
    runtime = getattr(a.tile, "valid", None)
    if runtime is not None:
        return runtime
    return "None" if tile_type.valid_shape is None else repr(list(tile_type.valid_shape))


def _valid_extents(a: OpArgs, span: Span):
    """``valid_shape`` of a load: positive ints, or scalar expressions known at run time (each must
    lie in ``[0, shape]`` then: the simulator checks it where it loads)."""
    from pypto.ir.nodes import ConstInt, Expr
    from pypto.ir.types import ScalarType

    out = []
    for e in a.valid_shape.elements:
        if isinstance(e, ConstInt):
            expect(e.value > 0, "tile.load", f"valid_shape must be positive, got {e.value}", span)
            out.append(e.value)
        else:
            expect(isinstance(e, Expr) and isinstance(e.type, ScalarType) and not e.type.dtype.is_float(),
                   "tile.load", "a valid_shape extent must be an int or an integer scalar", span)
            out.append(e)
    return tuple(out)


def _load_infer(a: OpArgs, span: Span) -> TileType:
    shape = static_ints("tile.load", "shapes", a.shapes, span)
    valid = _valid_extents(a, span) if a.valid_shape is not None else None
    t = a.tensor.type
    expect(valid is None or (len(valid) == len(shape) and all(not isinstance(v, int) or v <= s
                                                              for v, s in zip(valid, shape))),
           "tile.load", f"valid_shape {list(valid or ())} may only narrow shapes {list(shape)}", span)
    region = [v if isinstance(v, int) else None for v in valid] if valid is not None else shape
    offsets, tshape = _flat_region(a.offsets, region, t.shape)
    check_region("tile.load", offsets, region, tshape, span)
    expect(a.target_memory in (None, *_LOADABLE), "tile.load",
           f"a load from DDR can only land in Vec or Mat, not {a.target_memory!r}", span,
           "load into pl.Mem.Mat and pl.move(...) the tile onward")
    return TileType(shape, t.dtype, a.target_memory, valid)


def _mx(a: OpArgs):
    """The packed MX scale layout (``"MX_A_ZZ"`` / ``"MX_B_NN"``) of a load's source tensor, or None:
    such a load unpacks the layout, so the tile holds logical scales (pypto.numerics.mx)."""
    layout = getattr(getattr(a.tensor, "type", None), "layout", None)
    # (a DN tensor is an ordinary strided view: its load reads logical elements like any other)
    return layout.name if layout is not None and layout.name in ("MX_A_ZZ", "MX_B_NN") else None


def _static_list(v):
    """A parser value that is a list of Python ints, as a list; else None."""
    if isinstance(v, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return list(v)
    return None


def _load_args(args: list, kwargs: dict, span: Span):
    """The reference's ``pl.load(tensor, offsets, shapes, valid_shape=None, target_memory=Vec,
    clamp=False)``. ``clamp=True`` cuts the valid region back to the source's edge (a read that
    would run off the end is sanctioned, the tile's padding stays zero); it is resolved here into
    an explicit ``valid_shape`` and needs constant offsets and a static tensor shape."""
    clamp = kwargs.pop("clamp", False)
    if len(args) > 5:
        clamp = args.pop(5)
    if not isinstance(clamp, bool):
        raise InvalidOperationError(f"pl.load: clamp must be True or False, got {clamp!r}", span)
    if not clamp:
        return args, kwargs
    names = ("tensor", "offsets", "shapes", "valid_shape", "target_memory")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    valid = clamped_valid("load", bound.get("tensor"), bound.get("offsets"), bound.get("shapes"),
                          bound.get("valid_shape"), span)
    kwargs = {k: v for k, v in bound.items() if k not in names[:3]}
    kwargs["valid_shape"] = valid
    return [bound["tensor"], bound["offsets"], bound["shapes"]], kwargs


def clamped_valid(what: str, t, offsets, shape, valid_shape, span: Span) -> list:
    """``clamp=True`` of ``pl.<what>`` (a load, a slice): the valid shape (``valid_shape``, else
    ``shape``) cut back to the edge of tensor ``t`` at ``offsets``. Needs constant offsets and
    extents and a tensor of static shape; a window entirely outside the tensor is an error."""
    offs = _static_list(offsets)
    base = _static_list(valid_shape) if valid_shape is not None else _static_list(shape)
    tshape = getattr(getattr(t, "type", None), "shape", None)
    if offs is None or base is None or tshape is None or any(isinstance(d, DynDim) for d in tshape) \
            or len(offs) != len(tshape) or len(base) != len(tshape):
        raise UnsupportedFeatureError(
            f"pl.{what}(..., clamp=True) needs constant offsets and shapes and a tensor of static shape "
            "here (a valid region cut at run time is not supported)", span,
            "pass valid_shape=[...] explicitly, or make the offsets constants")
    valid = [max(0, min(b, d - o)) for b, d, o in zip(base, tshape, offs)]
    if 0 in valid:
        raise InvalidOperationError(f"pl.{what}(..., clamp=True): the region at offsets {offs} lies outside "
                                    f"the tensor of shape {list(tshape)}", span)
    return valid


register(OpDef(
    name="tile.load",
    params=(Param("tensor", "tensor"), Param("offsets", "ints"), Param("shapes", "ints"),
            Param("valid_shape", "ints", None, optional=True), Param("target_memory", "mem", None)),
    infer=_load_infer,
    ref=lambda a: (f"_pto.load({a.tensor}, {a.offsets}, {a.shapes}, {a.valid_shape})" if _mx(a) is None else
                   f"_pto.load_mx({a.tensor}, {_mx(a)!r}, {a.offsets}, {a.shapes}, {a.valid_shape})"),
    sim=lambda a, dst: (f"_pto.load_into({dst}, {a.tensor}, {a.offsets}, {a.valid_shape})" if _mx(a) is None else
                        f"_pto.load_mx_into({dst}, {a.tensor}, {_mx(a)!r}, {a.offsets}, {a.valid_shape})"),
    dsl="load", operand_kinds=("tensor",), dsl_args=_load_args,
    traits=(MemorySpaces((), MemorySpace.Vec), GlobalMemoryAccess("read")),
    doc="copy a region of a global tensor into a new tile",
))


def fixpipe_narrowing(src, dst) -> bool:
    """True for the one converting store: an FP32 cube accumulator written into a BF16/FP16 global
    tensor, narrowed round-half-to-even by the FIXPIPE on its way out (the reference's
    ``SupportsAccToGmDtype``: INT32/FP32/FP16/BF16 destinations on both a2a3 and a5). An atomic
    store narrows first and then adds in the destination dtype (the GM atomic unit works on it)."""
    return src.name == "FP32" and dst.name in ("BF16", "FP16")


def _check_store_dtypes(op: str, src_t, dst_dtype, span: Span) -> None:
    """Same dtype, or the FIXPIPE narrowing from an Acc tile. Before InferTileMemorySpace a tile's
    space is unknown and the dtype pair alone admits it; once placed (the verifier re-applies the
    type rules) a source outside Acc is refused."""
    what = "tile" if op == "tile.store" else "source"
    if src_t.dtype == dst_dtype:
        return
    space = getattr(src_t, "memory_space", None)
    expect(fixpipe_narrowing(src_t.dtype, dst_dtype) and space in (None, MemorySpace.Acc), op,
           f"{what} dtype {src_t.dtype.name} differs from {'tensor' if op == 'tile.store' else 'target'} dtype "
           f"{dst_dtype.name} (only a matmul's FP32 accumulator may be stored narrowed into BF16/FP16)", span,
           "cast the value first with pl.cast(x, ...)")


def _store_platform_rule(arch: str, args: tuple):
    """A BF16 atomic add exists on a2a3's store pipe only (the reference's SupportsBf16AtomicAdd:
    pto-isa set_atomic_bf16; the A5 store path has none)."""
    if args[3] == AtomicType.Add and args[2].type.dtype.name == "BF16" and arch != "a2a3":
        return ("an atomic add into a BF16 tensor exists only on a2a3 (no BF16 atomic on the "
                f"{arch} store path); accumulate into an FP32 tensor and cast afterwards")
    return None


def _store_infer(a: OpArgs, span: Span) -> TensorType:
    tile, t = a.tile.type, a.tensor.type
    _check_store_dtypes("tile.store", tile, t.dtype, span)
    offsets, tshape = _flat_region(a.offsets, tile.effective_valid_shape, t.shape)
    check_region("tile.store", offsets, tile.effective_valid_shape, tshape, span)
    return t


def _store_args(args: list, kwargs: dict, span: Span):
    """The reference's ``pl.store(tile, offsets, output_tensor, shapes=None, *, atomic=...)``:
    ``shapes`` (the N-D region a 2-D tile covers, which the reference's FlattenTileNdTo2D injects)
    is checked against the tile and dropped: our store writes the tile's (valid) region, and a 2-D
    tile into an N-D tensor is already the flattened access."""
    shapes = kwargs.pop("shapes", None)
    if len(args) > 3 and isinstance(args[3], (list, tuple)):
        shapes = args.pop(3)
    if shapes is None:
        return args, kwargs
    tile = args[0] if args else kwargs.get("tile")
    tshape = list(getattr(getattr(tile, "type", None), "shape", ()) or ())
    dims = _static_list(shapes)
    ok = dims is not None and bool(tshape)
    if ok and dims != tshape:
        lead = 1
        for d in dims[:-1]:
            lead *= d
        ok = len(tshape) == 2 and [lead, dims[-1]] == tshape
    if not ok:
        raise InvalidOperationError(
            f"pl.store: shapes={list(shapes) if isinstance(shapes, (list, tuple)) else shapes!r} does not describe "
            f"the tile's shape {tshape}", span, "omit shapes=: the store writes the tile's region")
    return args, kwargs


register(OpDef(
    name="tile.store",
    params=(Param("tile", "tile"), Param("offsets", "ints"), Param("tensor", "tensor", aliases=("output_tensor",)),
            Param("atomic", "atomic", AtomicType.None_)),
    infer=_store_infer,
    ref=lambda a: (f"_pto.store({a.tile}, {a.offsets}, {a.tensor}, {_valid_src(a, a.tile.type)}, "
                   f"atomic={a.atomic == repr(AtomicType.Add)})"),
    sim=lambda a, dst: (f"_pto.store({a.tile}, {a.offsets}, {a.tensor}, {_valid_src(a, a.tile.type)}, "
                        f"atomic={a.atomic == repr(AtomicType.Add)})"),
    dsl="store", operand_kinds=("tile",), writes="tensor", dsl_args=_store_args,
    platform_rule=_store_platform_rule,
    traits=(MemorySpaces((MemorySpace.Vec, MemorySpace.Acc), None), GlobalMemoryAccess("write")),
    doc="write a tile's valid region into a global tensor; returns the tensor",
))


# -- tile layouts ----------------------------------------------------------------------------------
# A tile's layout (the reference's TileView blayout / slayout: the NZ fractal of Mat / Left / Acc,
# ZN of Right and of a transposed Mat operand, flat row-major of Vec) is where the device puts a
# logical element in its buffer. Every op reads and writes logical elements (a move between NZ and
# ND converts, tile.transpose_view is the transpose), so the simulators hold each tile as its
# logical matrix and a layout can not change a value; the layout attributes are accepted and
# checked (the combinations the reference refuses are errors), not stored.

# the spaces whose layout the hardware fixes (the MX scale buffers): (blayout, slayout)
FIXED_TILE_LAYOUTS = {MemorySpace.LeftScale: (TileLayout.row_major, TileLayout.row_major),
                      MemorySpace.RightScale: (TileLayout.col_major, TileLayout.col_major)}


def check_tile_layout(op: str, space, blayout, slayout, span: Span) -> None:
    """``blayout`` / ``slayout`` (None: the space's own) of a tile in ``space``: TileLayout values,
    and the fixed layout of a scale buffer."""
    for name, v in (("blayout", blayout), ("slayout", slayout)):
        expect(v is None or isinstance(v, TileLayout), op, f"{name} must be a pl.TileLayout, got {v!r}", span,
               "pass pl.TileLayout.row_major, col_major or none_box")
    fixed = FIXED_TILE_LAYOUTS.get(space)
    if fixed is not None:
        got = (blayout or fixed[0], slayout or fixed[1])
        expect(got == fixed, op, f"{space!r} has the hardware-fixed layout blayout={fixed[0]!r}, "
               f"slayout={fixed[1]!r}; got blayout={got[0]!r}, slayout={got[1]!r}", span,
               "omit blayout= / slayout= for a scale buffer")


def _create_infer(a: OpArgs, span: Span) -> TileType:
    # (a call a pass built with the three leading arguments has the defaults)
    transpose, flat = getattr(a, "transpose", False), getattr(a, "flat_layout", False)
    if transpose or flat:
        which = "transpose=True (the ZN layout of a transposed matmul operand)" if transpose else \
            "flat_layout=True (a flat, non-fractal staging buffer)"
        expect(a.target_memory == MemorySpace.Mat, "tile.create", f"{which} is a layout of an L1 tile: it needs "
               f"target_memory=pl.Mem.Mat, got {a.target_memory!r}", span)
        expect(not (transpose and flat), "tile.create", "transpose=True and flat_layout=True exclude "
               "each other (a ZN fractal tile or a flat one)", span, "pass one of them")
    return TileType(static_ints("tile.create", "shape", a.shape, span), a.dtype, a.target_memory)


register(OpDef(
    name="tile.create",
    params=(Param("shape", "ints"), Param("dtype", "dtype"), Param("target_memory", "mem", None),
            # layouts of a Mat tile (see check_tile_layout: checked, values unaffected)
            Param("transpose", "bool", False), Param("flat_layout", "bool", False)),
    infer=_create_infer,
    ref=lambda a: f"torch.zeros({a.shape}, dtype={a.dtype})",
    # On the device a fresh tile holds whatever its bytes held; the simulator does not clear it.
    sim=lambda a, dst: "pass",
    dsl="create_tile", operand_kinds=(),
    traits=(MemorySpaces((), MemorySpace.Vec), Lockstep.COPY),
    doc="a tile with unspecified contents (scratch or explicit destination)",
))


def _move_infer(a: OpArgs, span: Span) -> TileType:
    t = a.x.type
    expect(a.target_memory is not None, "tile.move", "needs target_memory", span)
    check_tile_layout("tile.move", a.target_memory, getattr(a, "blayout", None), getattr(a, "slayout", None), span)
    return TileType(t.shape, t.dtype, a.target_memory, t.valid_shape)


register(OpDef(
    name="tile.move",
    params=(Param("x", "tile"), Param("target_memory", "mem"),
            # the destination's layout (see check_tile_layout: checked, values unaffected)
            Param("blayout", "str", None), Param("slayout", "str", None)),
    infer=_move_infer,
    ref=lambda a: f"{a.x}.clone()",
    sim=lambda a, dst: f"{dst}.copy_({a.x})",
    dsl="move", operand_kinds=("tile",), traits=(Lockstep.COPY,),
    doc="copy a tile to another on-chip memory space",
))


def _tensor_create_infer(a: OpArgs, span: Span) -> TensorType:
    shape = tensor_extents("tensor.create", "shape", a.shape, span)
    dn = getattr(a, "layout", None) == TensorLayout.DN
    expect(not dn or len(shape) >= 2, "tensor.create", f"a DN tensor needs rank >= 2, got shape {list(shape)}",
           span)
    return TensorType(shape, a.dtype, TensorLayout.DN if dn else None)


def _dn_alloc(a: OpArgs, alloc) -> str:
    """Allocation source for ``alloc(shape source)``: a DN tensor is the transpose of a row-major
    buffer of the swapped shape (its bytes column-major)."""
    if not str(getattr(a, "layout", None)).endswith("DN"):
        return alloc(str(a.shape))
    return f"{alloc(f'_pto.swap_last2({a.shape})')}.mT"


def _create_tensor_args(args: list, kwargs: dict, span: Span):
    """The reference's ``pl.create_tensor(shape, dtype, layout=ND, manual_dep=False,
    init_value=None)``: the layout (positional third or ``layout=``) must be ``ND``, the only one the
    simulators hold (row-major); it is dropped."""
    layout = kwargs.pop("layout", TensorLayout.ND)
    if len(args) > 2 and isinstance(args[2], TensorLayout):
        layout = args.pop(2)
    if layout not in (TensorLayout.ND, TensorLayout.DN, None):
        raise UnsupportedFeatureError(
            f"pl.create_tensor(..., layout={layout!r}): a global tensor is ND (row-major) or DN (its trailing "
            "pair column-major)", span, "NZ is a tile layout; MX scale tensors come from the host")
    if layout == TensorLayout.DN:
        kwargs["layout"] = layout
    iv = kwargs.get("init_value")
    if iv is not None and not (isinstance(iv, (int, float)) and not isinstance(iv, bool)):
        raise InvalidOperationError(f"pl.create_tensor: init_value must be a Python number, got {iv!r}", span)
    return args, kwargs


def _init_src(a: OpArgs) -> str:
    return "" if str(a.init_value) == "None" else f", init_value={a.init_value}"


register(OpDef(
    name="tensor.create",
    params=(Param("shape", "ints"), Param("dtype", "dtype"), Param("manual_dep", "bool", False),
            Param("init_value", "scalar", None), Param("layout", "str", None)),
    infer=_tensor_create_infer,
    ref=lambda a: _dn_alloc(a, lambda shape: f"torch.zeros({shape}, dtype={a.dtype})" if str(a.init_value) == "None"
                            else f"torch.full({shape}, {a.init_value}, dtype={a.dtype})"),
    # manual_dep=True: the buffer never enters the tensormap (no RAW/WAW edges for its lifetime);
    # init_value: the runtime fills the new buffer before any task writes it
    orch=lambda a: _dn_alloc(a, lambda shape: f"_rt.create_tensor({shape}, {a.dtype}"
                             + (", manual_dep=True" if str(a.manual_dep) == "True" else "") + _init_src(a) + ")"),
    dsl_args=_create_tensor_args,
    dsl="create_tensor", operand_kinds=(),
    doc="allocate a global tensor in orchestration code",
))


def _assemble_infer(a: OpArgs, span: Span) -> TensorType:
    target, src = a.target.type, a.src.type
    _check_store_dtypes("tensor.assemble", src, target.dtype, span)
    # a value of lower rank than the target is padded with leading 1s (the reference's rule: a
    # [4, 16] chunk assembled at [b, 0, 0] of a [2, 4, 16] tensor is its [1, 4, 16] block b)
    extent = tuple(src.shape)
    if len(extent) < len(target.shape):
        extent = (1,) * (len(target.shape) - len(extent)) + extent
    check_region("tensor.assemble", a.offsets, extent, target.shape, span)
    return target


register(OpDef(
    name="tensor.assemble",
    params=(Param("target", "tensor"), Param("src", "tensor", aliases=("source",)),
            Param("offsets", "ints", aliases=("offset",)),  # the reference spells them source= / offset=
            Param("atomic", "atomic", AtomicType.None_)),
    infer=_assemble_infer,
    ref=lambda a: f"_pto.assemble({a.target}, {a.src}, {a.offsets}, atomic={a.atomic == repr(AtomicType.Add)})",
    dsl="assemble", operand_kinds=("tensor", "tensor"),
    lowers_to="tile.store", writes="target",
    doc="write src into target at offsets (what `out[...] = e` means); atomic=pl.AtomicType.Add adds "
        "into the target (lowered to tile.store(..., atomic=))",
))
