"""Kernel-driven gathers of global-memory rows into an on-chip tile: ``create_l1``, ``gather_row``
(tensor and tile) and ``paged_gather`` (tensor; ``tile.paged_gather`` is what it lowers to). Helpers:
:mod:`pypto.ops.support.paged`.

* ``pl.create_l1(shape, dtype, transpose=False)``: an on-chip accumulator in L1 (Mat): at tensor
  level a tensor-typed value that lowers to ``tile.create(shape, dtype, target_memory=Mat)``. Its
  contents are unspecified until written. ``transpose`` names the reference's ZN fractal layout for
  a ``b_trans`` operand; our tiles are row-major, so it changes nothing but is accepted.
* ``gather_row(acc, src, dst_offset, src_offset, shapes, transpose=False, *, valid_shape=None)``:
  ``acc`` with the window ``src[src_offset : src_offset + shapes]`` of the global tensor copied to
  ``acc[dst_offset : dst_offset + shapes]`` (``transpose``: the ``[r, c]`` window lands as a
  ``[c, r]`` block). ``shapes`` is static; ``valid_shape`` (runtime values allowed) narrows how much
  of the window moves (not with ``transpose``, as in the reference). A new version of ``acc``: a
  statement call rebinds it. A window outside ``src`` or ``acc`` is a compile error when the offsets
  are constant and a :class:`SimulationError` at run time otherwise.
* ``pl.paged_gather(src, indices, block_table, block_size, size, max_indices, *, space=Mat,
  col_off=0, is_trans=False, is_b_matrix=False)``: row ``i`` of the result is
  ``src[block_table[idx // block_size] * block_size + idx % block_size, col_off : col_off + size]``
  for ``idx = indices[i]`` (INT32, read from global memory); ``[max_indices, size]`` (``is_trans``:
  ``[size, max_indices]``, Mat only) in ``space`` (Mat or Vec). ``indices`` may hold fewer than
  ``max_indices`` entries: the rest of the tile is zero (unwritten on the device), and the tile is
  fully valid. A negative or
  too large logical index, block number or physical row is a :class:`SimulationError` (the device
  reads outside the tensors). ``is_b_matrix`` is a layout hint of the reference (accepted).
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.nodes import AssignStmt, Call, Var
from pypto.ir.types import TensorType, TileType, describe
from pypto.language.dtypes import BF16, FP16, FP32, INT8, INT32
from pypto.language.enums import MemorySpace
from pypto.ops.builder import build
from pypto.ops.registry import OpArgs, OpDef, Param, get_op, register
from pypto.ops.traits import GlobalMemoryAccess, MemorySpaces
from pypto.ops.rules import const_ints, expect, static_ints

_ONCHIP = (MemorySpace.Mat, MemorySpace.Vec)


# ------------------------------------------------------------------ create_l1
def _create_l1_rule(a: OpArgs, span: Span) -> TensorType:
    shape = static_ints("tensor.create_l1", "shape", a.shape, span)
    expect(len(shape) == 2, "tensor.create_l1", f"needs a 2-D shape, got {list(shape)}", span)
    return TensorType(shape, a.dtype)


def _lower_create_l1(call: Call, result: Var, conv):
    shape, dtype, _transpose = call.args
    create = build("tile.create", call.span, shape=shape, dtype=dtype, target_memory=MemorySpace.Mat)
    nv = Var(result.name, create.type, result.span)
    return [AssignStmt(nv, create, call.span)], nv


register(OpDef(
    name="tensor.create_l1",
    params=(Param("shape", "ints"), Param("dtype", "dtype"), Param("transpose", "bool", False)),
    infer=_create_l1_rule,
    ref=lambda a: f"torch.zeros({a.shape}, dtype={a.dtype})",
    dsl="create_l1", operand_kinds=(), lowers_to="tile.create", lower=_lower_create_l1,
    doc="an L1 (Mat) accumulator of unspecified contents",
))


# ------------------------------------------------------------------ gather_row
def _gather_row_rule(level: str):
    op = f"{level}.gather_row"

    def infer(a: OpArgs, span: Span):
        acc, src = a.acc.type, a.src.type
        expect(isinstance(src, TensorType), op, f"src must be a global tensor, got {describe(src)}", span)
        expect(acc.dtype == src.dtype, op, f"acc dtype {acc.dtype.name} differs from src dtype {src.dtype.name}", span)
        for what, t in (("acc", acc), ("src", src)):
            expect(len(t.shape) == 2, op, f"{what} must be rank 2, got {describe(t)}", span)
        shapes = static_ints(op, "shapes", a.shapes, span)
        expect(len(shapes) == 2 and all(d > 0 for d in shapes), op, f"shapes must be 2 positive ints, got "
               f"{list(shapes)}", span)
        block = tuple(reversed(shapes)) if a.transpose else shapes
        expect(not (a.transpose and a.valid_shape is not None), op, "valid_shape is not supported with "
               "transpose=True", span)
        for what, offs, ext, bound in (("dst_offset", a.dst_offset, block, acc.shape),
                                       ("src_offset", a.src_offset, shapes, src.shape)):
            o = const_ints(offs)
            expect(len(o) == 2, op, f"{what} must have 2 entries, got {len(o)}", span)
            for i, (x, e, n) in enumerate(zip(o, ext, bound)):
                expect(x is None or not isinstance(n, int) or 0 <= x <= n - e, op,
                       f"the window at {what} {o} of extent {list(ext)} leaves the {list(bound)} operand on axis {i}",
                       span)
        if a.valid_shape is not None:
            v = const_ints(a.valid_shape)
            expect(len(v) == 2, op, f"valid_shape must have 2 entries, got {len(v)}", span)
            for x, n in zip(v, shapes):
                expect(x is None or 0 <= x <= n, op, f"valid_shape {v} must lie within shapes {list(shapes)}", span)
        if level == "tensor":
            return TensorType(acc.shape, acc.dtype)
        return TileType(acc.shape, acc.dtype, None, acc.valid_shape)
    return infer


def _gr_src(a: OpArgs, dst: str | None = None) -> str:
    tail = "" if dst is None else f", out={dst}"
    return (f"_pto.gather_row({a.acc}, {a.src}, {a.dst_offset}, {a.src_offset}, {a.shapes}, {a.transpose}, "
            f"{a.valid_shape}{tail})")


def _lower_gather_row(call: Call, result: Var, conv):
    acc = call.args[0]
    tile = conv.tile_of.get(id(acc)) if isinstance(acc, Var) else None
    if tile is None:
        from pypto.errors import UnsupportedFeatureError

        raise UnsupportedFeatureError("tensor.gather_row: acc must be an on-chip accumulator made in this kernel "
                                      "(pl.create_l1 or an earlier gather_row)", call.span)
    args = (tile, conv.var(call.args[1]), *(conv.expr(x) if x is not None else None for x in call.args[2:5]),
            call.args[5], conv.expr(call.args[6]) if call.args[6] is not None else None)
    t = get_op("tile.gather_row").infer_type(args, call.span)
    nv = Var(result.name, t, result.span)
    return [AssignStmt(nv, Call("tile.gather_row", args, t, call.span), call.span)], nv


_GR_PARAMS = (Param("src", "tensor"), Param("dst_offset", "ints"), Param("src_offset", "ints"),
              Param("shapes", "ints"), Param("transpose", "bool", False),
              Param("valid_shape", "ints", None, optional=True))
register(OpDef(
    name="tile.gather_row",
    params=(Param("acc", "tile", aliases=("dst",)),) + _GR_PARAMS,
    infer=_gather_row_rule("tile"),
    ref=lambda a: _gr_src(a),
    sim=lambda a, dst: _gr_src(a, dst),
    dsl="gather_row", operand_kinds=("tile", "tensor"), updates="acc",
    traits=(MemorySpaces(_ONCHIP, None), GlobalMemoryAccess("read")),
    doc="acc with one window of a global tensor copied in at dst_offset (a new version of acc)",
))
register(OpDef(
    name="tensor.gather_row",
    params=(Param("acc", "tensor"),) + _GR_PARAMS,
    infer=_gather_row_rule("tensor"),
    ref=lambda a: _gr_src(a),
    dsl="gather_row", operand_kinds=("tensor", "tensor"), lowers_to="tile.gather_row", lower=_lower_gather_row,
    updates="acc",
    doc="acc with one window of a global tensor copied in at dst_offset (a new version of acc)",
))


# ------------------------------------------------------------------ paged_gather
_PG_DTYPES = (FP16, BF16, FP32, INT8)


def _paged_rule(level: str):
    op = f"{level}.paged_gather"

    def infer(a: OpArgs, span: Span):
        src, idx, bt = a.src.type, a.indices.type, a.block_table.type
        for what, t in (("src", src), ("indices", idx), ("block_table", bt)):
            expect(isinstance(t, TensorType), op, f"{what} must be a global tensor, got {describe(t)}", span)
        expect(len(src.shape) == 2, op, f"src must be rank 2, got {describe(src)}", span)
        expect(src.dtype in _PG_DTYPES, op, f"src dtype must be FP16, BF16, FP32 or INT8, got {src.dtype.name}", span)
        expect(idx.dtype == INT32 and bt.dtype == INT32, op, f"indices and block_table must be INT32, got "
               f"{idx.dtype.name} and {bt.dtype.name}", span)
        expect(len(idx.shape) == 1 or (len(idx.shape) == 2 and idx.shape[0] == 1), op,
               f"indices must be [n] or [1, n], got {describe(idx)}", span)
        for what in ("block_size", "size", "max_indices"):
            v = getattr(a, what)
            expect(isinstance(v, int) and not isinstance(v, bool) and v > 0, op, f"{what} must be a positive int, "
                   f"got {v!r}", span)
        expect(isinstance(a.col_off, int) and a.col_off >= 0, op, f"col_off must be an int >= 0, got {a.col_off!r}",
               span)
        expect(a.col_off + a.size <= src.shape[1], op, f"columns [{a.col_off}, {a.col_off + a.size}) leave src's "
               f"{src.shape[1]} columns", span)
        n = idx.shape[-1]
        expect(n <= a.max_indices, op, f"indices hold {n} entries, more than max_indices={a.max_indices}", span)
        expect(a.target_memory in _ONCHIP, op, f"space must be pl.Mem.Mat or pl.Mem.Vec, got {a.target_memory!r}", span)
        expect(not a.is_trans or a.target_memory == MemorySpace.Mat, op, "is_trans=True needs space=pl.Mem.Mat", span)
        shape = (a.max_indices, a.size)
        if a.is_trans:
            shape = shape[::-1]
        if level == "tensor":
            return TensorType(shape, src.dtype)
        # fully valid, the rows past the indices 0 (the device leaves them unwritten): a valid shape
        # narrower than the tensor-level value would make the lowered program store less than the
        # tensor-level meaning (torch_codegen before lowering) does
        return TileType(shape, src.dtype, a.target_memory)
    return infer


def _pg_src(a: OpArgs, dst: str | None = None) -> str:
    tail = "" if dst is None else f", out={dst}"
    return (f"_pto.paged_gather({a.src}, {a.indices}, {a.block_table}, {a.block_size}, {a.size}, {a.max_indices}, "
            f"{a.col_off}, {a.is_trans}{tail})")


_PG_PARAMS = (Param("src", "tensor"), Param("indices", "tensor"), Param("block_table", "tensor"),
              Param("block_size", "str"), Param("size", "str"), Param("max_indices", "str"),
              Param("target_memory", "mem", MemorySpace.Mat, aliases=("space",)), Param("col_off", "str", 0), Param("is_trans", "bool", False),
              Param("is_b_matrix", "bool", False))


def _lower_paged(call: Call, result: Var, conv):
    args = tuple(conv.var(x) if i < 3 else x for i, x in enumerate(call.args))
    t = get_op("tile.paged_gather").infer_type(args, call.span)
    nv = Var(result.name, t, result.span)
    return [AssignStmt(nv, Call("tile.paged_gather", args, t, call.span), call.span)], nv


register(OpDef(
    name="tile.paged_gather",
    params=_PG_PARAMS,
    infer=_paged_rule("tile"),
    ref=lambda a: _pg_src(a),
    sim=lambda a, dst: _pg_src(a, dst),
    dsl=None, operand_kinds=(), traits=(GlobalMemoryAccess("read"),),
    doc="the lowered form of tensor.paged_gather (rows through a block table into Mat / Vec)",
))
register(OpDef(
    name="tensor.paged_gather",
    params=_PG_PARAMS,
    infer=_paged_rule("tensor"),
    ref=lambda a: _pg_src(a),
    dsl="paged_gather", operand_kinds=("tensor", "tensor", "tensor"), lowers_to="tile.paged_gather",
    lower=_lower_paged,
    doc="rows of a paged pool through a block table into an on-chip tile",
))


