"""FlattenTileNdTo2D: every tile of an InCore function becomes 2-D.

Requires: IncoreTileOps. Produces: TileOps2D — every tile (assignment, iter_arg, return var) of an
InCore function has rank 2.

* A tile of rank > 2 ``[d0, ..., dn-2, dn-1]`` becomes ``[d0 * ... * dn-2, dn-1]``; a rank-1 tile
  ``[n]`` becomes ``[1, n]``. ``valid_shape`` merges the same way; one leading dimension may have a
  partial (static or run-time) extent when the leading dimensions before it have extent 1 and the
  ones after it are whole (then the valid rows are a prefix of the flattened rows), anything else
  is a compile error.
* ``tile.load`` / ``tile.store`` of a tensor of rank != 2 keep the tensor's rank in ``offsets`` and
  get the 2-D tile extent: they address the tensor's row-major 2-D view
  ``[prod(leading dims), last]`` from row ``linear(offsets[:-1])``. That view is faithful only when
  the region is contiguous in the leading dims (after the first leading dim whose extent is not 1,
  every leading extent spans its whole tensor dim); otherwise it is a compile error.
* ``tile.create`` / ``tile.full`` / ``tile.reshape`` get 2-D shapes.
* ``tile.transpose`` / ``tile.transpose_view`` of a rank > 2 tile keep their axes and get the N-D
  operand shape in ``nd_shape``: they transpose the N-D view of the flattened operand.
* ``tile.batch_matmul`` stays one op on the flattened operands (its batch shapes recorded in
  ``lhs_batch`` / ``rhs_batch``), except when its two whole operands exceed Mat together (the
  reference's capacity gate) or the one op cannot run for L0 / Acc: then each operand is loaded per
  batch and the op becomes one 2-D ``tile.matmul`` + ``tile.store`` per batch
  (:mod:`pypto.passes.batch_matmul_pages`).
* Every other op keeps its operands; its type rule is re-applied to the 2-D operands and must give
  the flattened result (elementwise ops, last-axis reductions, ...). An op whose result would differ
  (e.g. a reduction over a leading axis) or that takes index-list attributes is a compile error
  naming the op.
"""
from __future__ import annotations

from pypto.errors import UnsupportedFeatureError
from pypto.ir.nodes import BinOp, Call, ConstInt, Function, MakeTuple, Program, Var
from pypto.ir.types import DynDim, TensorType, TileType, describe
from pypto.ir.visit import Mutator
from pypto.language.enums import KERNEL_TYPES
from pypto.ops.registry import get_op
from pypto.ops import rules as _rules   # a module reference: pypto.ops.rules imports pypto.ir (a cycle)
from pypto.passes import batch_matmul_pages
from pypto.passes.context import PassContext

NAME = "FlattenTileNdTo2D"
REQUIRES = ("IncoreTileOps",)
PRODUCES = ("TileOps2D",)

_SHAPE_PARAM = {"tile.create": "shape", "tile.full": "shape", "tile.reshape": "shape"}


def run(program: Program, ctx: PassContext) -> Program:
    return program.replace(functions=tuple(
        _Flatten(ctx.platform).function(f) if f.func_type in KERNEL_TYPES else f for f in program.functions))


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def flat_shape(shape, what: str = "tile", span=None) -> tuple:
    """``shape`` as 2-D: leading dims multiplied, rank 1 -> ``[1, n]``."""
    shape = tuple(shape)
    if len(shape) == 2:
        return shape
    if len(shape) == 1:
        return (1, shape[0])
    if len(shape) == 0 or any(isinstance(d, DynDim) for d in shape):
        raise UnsupportedFeatureError(f"FlattenTileNdTo2D: {what} of shape {list(shape)} cannot be made 2-D "
                                      "(static shape of rank >= 1 required)", span)
    return (_prod(shape[:-1]), shape[-1])


def flat_type(t: TileType, span=None) -> TileType:
    """The 2-D form of a tile type (see the module docstring for the valid_shape rule)."""
    if len(t.shape) == 2:
        return t
    shape = flat_shape(t.shape, f"tile {describe(t)}", span)
    valid = None
    if t.valid_shape is not None:
        v, s = tuple(t.valid_shape), tuple(t.shape)
        if len(s) == 1:
            valid = (1, v[0])
        else:
            valid = (_merged_valid_rows(v, s, t, span), v[-1])
    return t.with_(shape=shape, valid_shape=valid)


def _merged_valid_rows(v, s, t, span):
    """The valid row count of the flattened tile: the valid rows must be a prefix of the merged
    rows, i.e. one leading dim ``k`` may be partial when every leading dim before it has extent 1
    and every one after it is whole (``[1, CHUNK, 512]`` valid ``[1, n, 512]`` -> ``n`` rows of
    ``CHUNK``; ``[4, 8, 64]`` valid ``[3, 8, 64]`` -> 24 of 32). The partial extent may be a run-time
    value (a Var): the rows are then ``v_k * prod(whole dims after k)`` as a scalar expression."""
    lead_v, lead_s = v[:-1], s[:-1]
    k = next((i for i, d in enumerate(lead_s) if d != 1), len(lead_s) - 1)
    ok = all(isinstance(x, int) and x == 1 for x in lead_v[:k]) and \
        all(isinstance(x, int) and x == d for x, d in zip(lead_v[k + 1:], lead_s[k + 1:]))
    if not ok or isinstance(lead_v[k], DynDim):
        raise UnsupportedFeatureError(
            f"FlattenTileNdTo2D: tile {describe(t)} with valid_shape {list(v)} cannot be flattened: its valid "
            "rows are not a prefix of the flattened rows (one leading dimension may be partial, after leading "
            "dimensions of extent 1 and before whole ones)", span)
    rest = _prod(lead_s[k + 1:])
    if isinstance(lead_v[k], int):
        return lead_v[k] * rest
    if rest == 1:
        return lead_v[k]
    return BinOp("mul", lead_v[k], ConstInt(rest, lead_v[k].type.dtype), lead_v[k].type, span or lead_v[k].span)


def _check_contiguous(op: str, extent, tshape, span) -> None:
    lead, dims = list(extent[:-1]), list(tshape[:-1])
    k = next((i for i, e in enumerate(lead) if e != 1), len(lead))
    for i in range(k + 1, len(lead)):
        if isinstance(dims[i], DynDim) or lead[i] != dims[i]:
            raise UnsupportedFeatureError(
                f"FlattenTileNdTo2D: {op} of region {list(extent)} in a tensor of shape {list(tshape)} is not "
                f"contiguous in the leading dimensions (dim {i} spans {lead[i]} of {dims[i]}), so it has no 2-D "
                "form; load whole trailing dimensions or use 2-D tiles", span)
    # a dynamic leading dim up to k is fine: the executors linearise the offsets with the tensor's
    # run-time extents and check that the rows stay within their block (support.core.region)


def _ints(values) -> MakeTuple:
    return MakeTuple(tuple(ConstInt(int(v)) for v in values))


# element ops (one index per tile dimension): the index list is flattened with the tile
_ELEMENT_OPS = ("tile.read", "tile.write")


def _flat_index(indices, shape, span) -> MakeTuple:
    """``indices`` of a rank-N tile of ``shape`` as ``[row, col]`` of its 2-D form
    ``[prod(shape[:-1]), shape[-1]]`` (rank 1: ``[0, i]``); constant where the indices are."""
    from pypto.ir.nodes import BinOp
    from pypto.ir.types import ScalarType
    from pypto.language.dtypes import INDEX

    elems = indices.elements if isinstance(indices, MakeTuple) else ()
    if len(elems) != len(shape):
        raise UnsupportedFeatureError(f"FlattenTileNdTo2D: {len(elems)} indices for a rank-{len(shape)} tile", span)
    row = ConstInt(0)
    for e, d in zip(elems[:-1], shape[:-1]):
        if isinstance(row, ConstInt) and isinstance(e, ConstInt):
            row = ConstInt(row.value * int(d) + e.value)
            continue
        t = ScalarType(INDEX)
        scaled = row if isinstance(row, ConstInt) and row.value == 0 else BinOp("mul", row, ConstInt(int(d)), t, span)
        row = e if isinstance(scaled, ConstInt) else BinOp("add", scaled, e, t, span)
    return MakeTuple((row, elems[-1]))


class _Flatten(Mutator):
    def __init__(self, platform):
        super().__init__()
        self.platform = platform

    def stmts(self, stmts) -> tuple:
        stmts = tuple(stmts)
        pages = batch_matmul_pages.plan(stmts, self.platform)
        if not pages:
            return super().stmts(stmts)
        # the per-batch form replaces the batch matmul and its store, and drops the whole loads
        skip = {id(x) for ll, rl, st in pages.values() for x in (ll, rl, st)}
        out: list = []
        for s in stmts:
            if id(s) in pages:
                out.extend(batch_matmul_pages.unroll(self, s, pages[id(s)]))
            elif id(s) not in skip:
                out.extend(super().stmts((s,)))
        return tuple(out)

    def function(self, f: Function) -> Function:
        self.subst = {}
        self.span = f.span
        return f.replace(body=self.stmts(f.body))

    def var(self, v: Var) -> Var:
        got = self.subst.get(id(v))
        if got is not None:
            return got
        if isinstance(v.type, TileType) and len(v.type.shape) != 2:
            return self.redefine(v, Var(v.name, flat_type(v.type, v.span), v.span))
        return v

    def visit_Call(self, c: Call):
        op = get_op(c.op)
        old_types = [getattr(a, "type", None) for a in c.args]
        args = list(self.expr(a) for a in c.args)
        touched = any(isinstance(t, TileType) and len(t.shape) != 2 for t in old_types) or \
            (isinstance(c.type, TileType) and len(c.type.shape) != 2)
        if c.op in ("tile.load", "tile.store"):
            tensor = args[0] if c.op == "tile.load" else args[2]
            touched = touched or len(tensor.type.shape) != 2
        if not touched:
            return c.replace(args=tuple(args)) if any(a is not b for a, b in zip(args, c.args)) else c
        names = [p.name for p in op.params]
        if c.op == "tile.load":
            tshape = args[0].type.shape
            shape = _rules.const_ints(args[names.index("shapes")])
            _check_contiguous("tile.load", shape, tshape, c.span)
            new_t = flat_type(c.type, c.span)
            args[names.index("shapes")] = _ints(new_t.shape)
            vs = args[names.index("valid_shape")]
            if vs is not None:
                # from the argument (already visited), not the old type: a run-time extent is the
                # Var the body defines
                v = [e.value if isinstance(e, ConstInt) else e for e in vs.elements]
                flat_v = (1, v[0]) if len(v) == 1 else (_merged_valid_rows(v, shape, c.type, c.span), v[-1])
                args[names.index("valid_shape")] = MakeTuple(tuple(
                    ConstInt(x) if isinstance(x, int) else x for x in flat_v))
        elif c.op == "tile.store":
            tile_t = old_types[0]
            _check_contiguous("tile.store", tile_t.shape, args[2].type.shape, c.span)
        elif c.op in ("tile.batch_matmul", "tile.batch_matmul_acc"):
            # the 2-D operands are [prod(batch) * rows, cols]: record the batch shapes they had
            for operand, attr in (("lhs", "lhs_batch"), ("rhs", "rhs_batch")):
                if args[names.index(attr)] is None:
                    args[names.index(attr)] = _ints(old_types[names.index(operand)].shape[:-2])
        elif c.op in ("tile.transpose", "tile.transpose_view") and len(old_types[0].shape) > 2:
            # the 2-D operand is the flattened N-D tile: record its N-D shape (the op transposes that view)
            src = old_types[0]
            if src.valid_shape is not None and tuple(src.valid_shape) != tuple(src.shape):
                raise UnsupportedFeatureError(
                    f"FlattenTileNdTo2D: {c.op} of the partial tile {describe(src)} (valid_shape "
                    f"{list(src.valid_shape)}) cannot be flattened; fill the padding first with pl.fillpad(x)", c.span)
            args[names.index("nd_shape")] = _ints(src.shape)
        elif c.op in _SHAPE_PARAM:
            i = names.index(_SHAPE_PARAM[c.op])
            args[i] = _ints(flat_shape(_rules.const_ints(args[i]), c.op, c.span))
        elif c.op in _ELEMENT_OPS and isinstance(old_types[0], TileType):
            # an element index of a rank-N tile -> [row of the flattened tile, column] (issue 15)
            i = names.index("indices")
            args[i] = _flat_index(args[i], old_types[0].shape, c.span)
        elif any(p.kind == "ints" for p in op.params):
            raise UnsupportedFeatureError(
                f"FlattenTileNdTo2D: {c.op} on tiles of rank != 2 ({', '.join(describe(t) for t in old_types if t)}) "
                "is not supported; use 2-D tiles", c.span)
        want = flat_type(c.type, c.span) if isinstance(c.type, TileType) else c.type
        got = op.infer_type(tuple(args), c.span)
        if getattr(got, "shape", None) != getattr(want, "shape", None) or \
                getattr(got, "dtype", None) != getattr(want, "dtype", None):
            raise UnsupportedFeatureError(
                f"FlattenTileNdTo2D: {c.op} gives {describe(c.type)} on its {len(old_types)}-operand form but "
                f"{describe(got)} on 2-D operands (it does not act on the last axis only); use 2-D tiles", c.span)
        if isinstance(want, TensorType):
            want = got
        return c.replace(args=tuple(args), type=want)
