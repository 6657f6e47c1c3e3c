"""The named AIC <-> AIV boundary of a ``pl.split_aiv`` region (the reference's ``aiv_shard`` /
``aic_gather``), and the region's lane marker.

``for aiv_id in pl.split_aiv(2, mode=M):`` opens a region whose body runs on both vector lanes of
the cluster (``aiv_id`` is the lane, 0 or 1). Inside it:

* ``pl.aiv_shard(x)`` (cube -> vector): ``x`` is a cube tile (the matmul's Acc result); each lane
  receives its half of it along the split axis of ``M`` (UP_DOWN: rows, LEFT_RIGHT: columns; NONE:
  the whole tile, on both lanes). The result lives in Vec.
* ``pl.aic_gather(v)`` (vector -> cube): each lane hands its half; the cube receives the two halves
  joined along the split axis (NONE: the tile as it is; both lanes push it, so it must be the same
  on both). The result lives in Mat (the cube's L1).

The mode is inherited from the enclosing region (the parser fills ``split=int(mode)``); the
explicit tile form ``pl.tile.aiv_shard(t, split=n)`` is what the printer writes. A Tensor operand
(``pl.matmul`` at tensor level inside ``pl.at``) takes the tensor form, which
ConvertTensorToTileOps lowers 1:1 to the tile form.

These ops never execute: ExpandMixedKernel folds each into a push on the producing core and a pop
(plus its free) on the consuming one, with the mode's split code, so their values are the pipes'
(:mod:`pypto.ops.cross_core`, :mod:`pypto.runtime.cross_core`). Their ``sim`` / ``ref`` entries
report the op as unlowered instead of computing something else.

The region's head, ``aiv_id = pl.tile.split_aiv_lane(mode=M)``, is the parsed form of the ``for``:
the lane index (``tile.get_subblock_idx``) plus the region's mode. LowerAutoVectorSplit consumes
it: it stamps ``split_aiv`` (and the common ``split`` mode) on the outlined kernel and replaces it
by ``tile.get_subblock_idx()``.

A cube tile valid to part of its split axis is shared out by valid extent: the tensor form's
lowering (and LowerAutoVectorSplit) states each lane's share on the shard's ``valid_shape``
(:func:`lane_share`); the tile form without ``valid_shape`` refuses such an operand. An odd
extent ``n`` gives both lanes the ceil half as their box, lane 1 valid to one less (ExpandMixedKernel
then uses pto-isa's odd split codes 3 / 4). Limits (located errors, not wrong values): a gather of
a tile partly valid on the split axis (the lanes' bands would not abut); ``lane_stride`` (the
reference's balanced partition of a ragged boundary) is not modelled. What the device's transport
cannot carry (:func:`check_shard_carries_valid`, :func:`_refuse_partial_gather`) is refused with
the reference's rule as a :class:`~pypto.errors.SplitBoundaryError`, a ``ValueError`` as there.
"""
from __future__ import annotations

from pypto.errors import Span, SplitBoundaryError
from pypto.ir.nodes import ConstInt
from pypto.ir.types import ScalarType, TensorType, TileType
from pypto.language.dtypes import INDEX
from pypto.language.enums import MemorySpace
from pypto.ops.cross_core import valid_extents
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.rules import expect
from pypto.ops.traits import MemorySpaces, ReadsBlock

MODES = (0, 1, 2)   # the region's SplitMode as an int: 0 NONE, 1 UP_DOWN, 2 LEFT_RIGHT
_UNLOWERED = "_pto.unlowered({!r})"


def _boundary_infer(op: str, grow: bool, space: MemorySpace):
    """``aiv_shard`` halves (``grow=False``) / ``aic_gather`` doubles the split axis."""
    def infer(a: OpArgs, span: Span):
        t = a.tile.type
        level = op.split(".")[0]
        want = TileType if level == "tile" else TensorType
        expect(isinstance(t, want), op, f"takes a {'Tile' if level == 'tile' else 'Tensor'} operand", span)
        expect(a.split in MODES, op, f"split must be 0 (NONE), 1 (UP_DOWN) or 2 (LEFT_RIGHT), got {a.split!r}",
               span)
        if not grow and level == "tile":
            check_shard_carries_valid(op, t, a.split, span)
        if a.split == 0:
            shape, valid = tuple(t.shape), getattr(t, "valid_shape", None)
        else:
            expect(len(t.shape) == 2, op, f"splits a 2-D operand, got rank {len(t.shape)}", span)
            d = a.split - 1
            n = t.shape[d]
            expect(isinstance(n, int), op, f"the split axis {d} needs a static extent", span)
            valid = getattr(t, "valid_shape", None)
            if grow and valid is not None and isinstance(valid[d], int) and valid[d] < n:
                _refuse_partial_gather(op, valid[d], n, d, span)
            if valid is not None and getattr(a, "valid_shape", None) is None:
                v = valid[d]
                v = v.value if isinstance(v, ConstInt) else v
                expect(v == n, op, f"the split axis {d} is only partly valid ({v} of {n}): each lane's share of "
                       "a ragged extent is not modelled", span,
                       "pad the tile to a full extent (pl.fillpad), or use mode=pl.SplitMode.NONE and address "
                       "each lane's rows with aiv_id")
            if grow:
                n2 = 2 * n
            else:
                # an odd extent: both lanes get the ceil half as their box (pto-isa's odd split codes
                # 3 / 4), lane 1 valid to one row / column less; the lanes' extents must be stated
                expect(n % 2 == 0 or level == "tensor" or getattr(a, "valid_shape", None) is not None, op,
                       f"the split axis {d} has an odd extent {n}: the lanes hold {(n + 1) // 2} and {n // 2}, "
                       "which the tile form cannot tell apart", span,
                       "write pl.aiv_shard on the Tensor (its lowering states each lane's extent), pass "
                       "valid_shape=[...] per lane, or pad the axis to an even extent")
                n2 = (n + 1) // 2
            shape = tuple(n2 if i == d else s for i, s in enumerate(t.shape))
            valid = None if valid is None else tuple(n2 if i == d else s for i, s in enumerate(valid))
        if level == "tensor":
            return TensorType(shape, t.dtype)
        lane_valid = getattr(a, "valid_shape", None)
        if lane_valid is not None:
            # the lane's valid region, stated (LowerAutoVectorSplit writes the share of a ragged
            # extent each lane gets, an expression of the lane index)
            valid = valid_extents(op, lane_valid.elements, shape, span)
        return TileType(shape, t.dtype, space, valid)
    return infer


def _extent(v, n) -> str:
    """``"v of n"``, a run-time extent as the DSL prints it."""
    if not isinstance(v, int):
        from pypto.ir.printer import _Printer

        v = _Printer().expr(v)
    return f"{v} of {n}"


def check_shard_carries_valid(op: str, t: TileType, split: int, span: Span) -> None:
    """The reference's rule for a partly valid cube tile crossing to the vector lanes
    (``aiv_shard``), a :class:`SplitBoundaryError` (a ``ValueError``) where it refuses one.

    The cube -> vector transport carries each lane's ROW extent on the pop but pins the COLUMN
    extent to the tile's physical width; a narrower column extent can only be restored after the
    pop by a static re-typing of both axes. So a tile whose valid columns cover the whole width
    crosses in every mode; otherwise the columns must be a constant narrower extent, the split must
    not be LEFT_RIGHT (the lanes' column extents would differ), and the row extent must be a
    constant the same on both lanes (not a ragged UP_DOWN split axis). The simulators could move
    all of these; they are refused because the device cannot, as in the reference."""
    valid = t.valid_shape
    if len(t.shape) != 2 or valid is None:
        return
    (rows, cols), (vr, vc) = t.shape, valid
    if isinstance(vc, int) and vc == cols:
        return
    fix = f"pl.set_validshape(acc, <valid_rows>, {cols})"
    if split == 2:
        raise SplitBoundaryError(
            f"{op}: LEFT_RIGHT splits the column axis, but this tile's valid column extent ({_extent(vc, cols)}) "
            "does not cover its width, so the two vector lanes would hold different amounts of data; the "
            "cube -> vector transport carries the full column width only, so a per-lane column extent cannot "
            "cross", span,
            "split the rows instead (mode=pl.SplitMode.UP_DOWN: a per-lane row extent is carried), or make the "
            f"columns fully valid before the crossing ({fix}; the padding columns are then don't-care data, "
            "store the lane's full column box), or compute the ragged column tail in its own matmul outside "
            "the split region")
    if not isinstance(vc, int):
        raise SplitBoundaryError(
            f"{op}: this tile's valid column extent ({_extent(vc, cols)}) is a run-time value narrower than its "
            "width; a narrowed column extent is restored after the full-width transport by a compile-time "
            "re-typing only", span,
            f"make the columns fully valid before the crossing ({fix}) and store the full column box")
    if split == 1 and not (isinstance(vr, int) and vr == rows):
        raise SplitBoundaryError(
            f"{op}: an UP_DOWN split with both a per-lane row extent ({_extent(vr, rows)}: the lanes hold "
            f"different row counts) and a narrowed column extent ({_extent(vc, cols)}) is not supported: the "
            "per-lane row extent rides on the pop, but restoring the narrowed columns re-types both axes "
            "statically and would overwrite it", span,
            f"widen the columns before the crossing, pl.set_validshape(acc, {_extent(vr, rows).rsplit(' of ', 1)[0]}, "
            f"{cols}), and store the full column box")
    if not isinstance(vr, int):
        raise SplitBoundaryError(
            f"{op}: this tile's valid row extent ({_extent(vr, rows)}) is a run-time value and its valid column "
            f"extent ({_extent(vc, cols)}) is narrower than its width; the static re-typing that restores the "
            "columns cannot state a run-time row extent", span,
            f"make the columns fully valid before the crossing ({fix}) and store the full column box")


def _refuse_partial_gather(op: str, v: int, half: int, d: int, span: Span) -> None:
    """The reference's rule for ``aic_gather`` of a lane tile valid to a constant part of its half
    on the split axis: the lanes' bands ``[0, v)`` and ``[half, half + v)`` do not abut, and no
    valid shape describes their union."""
    axis = "row" if d == 0 else "column"
    raise SplitBoundaryError(
        f"{op}: tile.aic_gather re-joins the two lanes positionally, but each lane's valid {axis} extent "
        f"({v} of {half}) covers only part of its half, so the lanes contribute the disjoint bands [0, {v}) and "
        f"[{half}, {half + v}) of the joined tile, which no valid_shape describes", span,
        "make each lane's half fully valid before the gather (pl.fillpad(v) fills the padding with data, "
        "pl.set_validshape(v, ...) declares it data) so that the bands abut, or gather a shard's own "
        "per-lane extent (a shard-then-gather round trip re-joins the pre-shard extent)")


def lane_share(v, lane, h: int, span):
    """Lane ``lane``'s share of a valid extent ``v`` of a split axis whose halves are ``h`` long:
    ``min(max(v, lane * h) - lane * h, h)`` (lane 0 ``min(v, h)``, lane 1 the rest, at least 0)."""
    from pypto.ir.nodes import BinOp

    def b(op, x, y):
        return BinOp(op, x, y, ScalarType(INDEX), span)

    v = ConstInt(v, INDEX, span) if isinstance(v, int) else v
    start = b("mul", lane, ConstInt(h, INDEX, span))
    return b("min", b("sub", b("max", v, start), start), ConstInt(h, INDEX, span))


def _lower_shard(call, var, conv):
    """tensor.aiv_shard in a kernel: tile.aiv_shard of the operand's tile. A cube tile valid to
    ``V`` of its ``n`` rows / columns on the split axis (a ragged tail) gives each lane its share
    of ``V`` (:func:`lane_share`), stated on the shard's ``valid_shape`` (the lane is
    ``tile.get_subblock_idx()``): a store of the shard then writes the lane's valid rows only."""
    from pypto.ir.nodes import AssignStmt, Call, MakeTuple, Var
    from pypto.ops.builder import build

    span = call.span
    x, split = conv.as_tile(call.args[0], span), call.args[1]
    t, stmts, valid = x.type, [], None
    if isinstance(t, TileType) and split in (1, 2) and len(t.shape) == 2 and \
            (t.valid_shape is not None or t.shape[split - 1] % 2):
        d = split - 1
        v = t.effective_valid_shape[d]
        v = v.value if isinstance(v, ConstInt) else v
        if (v != t.shape[d] or t.shape[d] % 2) and isinstance(t.shape[d], int):
            lane = Var(f"{var.name}_lane", ScalarType(INDEX), span)
            stmts.append(AssignStmt(lane, Call("tile.get_subblock_idx", (), ScalarType(INDEX), span), span))
            h = (t.shape[d] + 1) // 2   # (an odd extent: the ceil half, lane 1 one less)
            el = [ConstInt(e, INDEX, span) if isinstance(e, int) else e for e in t.effective_valid_shape]
            el[d] = lane_share(t.effective_valid_shape[d], lane, h, span)
            valid = MakeTuple(tuple(el), span)
    c = build("tile.aiv_shard", span, tile=x, split=split, valid_shape=valid)
    nv = Var(var.name, c.type, var.span)
    stmts.append(AssignStmt(nv, c, span))
    return stmts, nv


for _level in ("tensor", "tile"):
    for _op, _grow, _space, _doc in (
            ("aiv_shard", False, MemorySpace.Vec,
             "cube -> vector crossing of a pl.split_aiv region: each lane gets its half of the cube tile "
             "along the region's split axis (mode NONE: the whole tile)"),
            ("aic_gather", True, MemorySpace.Mat,
             "vector -> cube crossing of a pl.split_aiv region: the cube gets the lanes' halves joined "
             "along the region's split axis (mode NONE: the tile as it is)")):
        _name = f"{_level}.{_op}"
        register(OpDef(
            name=_name,
            params=(Param("tile", _level, aliases=("x",)), Param("split", "str", None),
                    # (ours, the shard's tile form: each lane's valid region of a ragged boundary)
                    *((Param("valid_shape", "ints", None, optional=True),)
                      if (_level, _op) == ("tile", "aiv_shard") else ())),
            infer=_boundary_infer(_name, _grow, _space),
            ref=lambda a, n=_name: _UNLOWERED.format(n),
            sim=None if _level == "tensor" else (lambda a, dst, n=_name: _UNLOWERED.format(n)),
            dsl=_op, operand_kinds=(_level,),
            lowers_to=f"tile.{_op}" if _level == "tensor" else None,
            lower=_lower_shard if (_level, _op) == ("tensor", "aiv_shard") else None,
            traits=() if _level == "tensor" else (MemorySpaces((), _space),),
            doc=_doc,
        ))


def _lane_infer(a: OpArgs, span: Span):
    expect(a.mode in MODES, "tile.split_aiv_lane", f"mode must be 0 (NONE), 1 (UP_DOWN) or 2 (LEFT_RIGHT), "
           f"got {a.mode!r}", span)
    return ScalarType(INDEX)


register(OpDef(
    name="tile.split_aiv_lane",
    params=(Param("mode", "str"),),
    infer=_lane_infer,
    # (the lane, as tile.get_subblock_idx: LowerAutoVectorSplit replaces the op by that one)
    ref=lambda a: "(_block[2] if len(_block) > 2 else 0)",
    sim=lambda a, dst: "(_block[2] if len(_block) > 2 else 0)",
    traits=(ReadsBlock(),),
    doc="the head of a 'for aiv_id in pl.split_aiv(2, mode=...)' region: the vector lane (0 or 1)",
))
