"""LowerAutoVectorSplit: the ``pl.split_aiv`` regions of an InCore function become its explicit
per-lane form, ready for ExpandMixedKernel (the reference's pass of the same name, before the
expansion).

Requires: TileMemoryInferred. Produces: AivRegionsLowered (regions consumed, split kernels per lane).

A region (``for aiv_id in pl.split_aiv(2, mode=M):``) reaches this pass as its head,
``aiv_id = pl.tile.split_aiv_lane(mode=M)``, followed by its body in place
(:mod:`pypto.ops.aiv_split`). For an InCore function with at least one head this pass:

* replaces each head by ``aiv_id = pl.tile.get_subblock_idx()`` (the lane);
* stamps ``split_aiv=True`` on the function, and ``split=M`` when every region has the same mode
  UP_DOWN / LEFT_RIGHT (the reference's OutlineIncoreScopes rule: NONE or differing modes give no
  ``split``); ExpandMixedKernel then runs the vector member on both lanes
  (``dual_aiv_dispatch``, SplitVectorKernel) and folds each ``tile.aiv_shard`` /
  ``tile.aic_gather`` into a split push / pop;
* refuses, with the span of the offending statement: a region in a function that also has an
  automatic ``pl.split`` (the two are exclusive, as in the reference), a ``tile.aiv_shard`` /
  ``tile.aic_gather`` whose mode differs from its function's regions' (only possible in
  hand-written IR), and a cube <-> vector crossing the author did not name (a ``tile.move``
  between the cores that InferTileMemorySpace inserted: in a function whose vector work runs on
  both lanes, an unnamed crossing has no single meaning; name it with ``pl.aiv_shard`` /
  ``pl.aic_gather``).

The region bodies are taken as written, per lane: a data-parallel region (UP_DOWN / LEFT_RIGHT)
addresses its lane's part with ``aiv_id`` and crosses with the named ops, which halve / join; the
reference additionally halves a full-width body of a data-parallel region that names no crossing,
which is not done here (such a body would run whole on both lanes: the same values, computed
twice).

The automatic path: an InCore kernel with a ``split`` attr (``pl.at(...,
optimizations=[pl.split(mode)])``) whose cube and vector work cross (a2a3) is rewritten into the
same per-lane form: ``subblock_idx = tile.get_subblock_idx()`` first; the vector side halved on
the split axis (loads / stores at ``+ subblock_idx * half``, generators and results halved, a
ragged valid extent shared out per lane: the halving of :mod:`pypto.passes.split_axis`); the cube
side whole; each cross-core ``tile.move`` named (``tile.aiv_shard`` with the lane's valid region,
or ``tile.aic_gather`` of a halved tile); ``split_aiv`` stamped next to ``split``. Where the
halving refuses (a reduction over the split axis, a reshape of a halved tile, an odd extent, a
position-dependent generator) the kernel is left as it is and runs on one vector lane, which
computes the same values. On a5 a kernel with no cross-core move stays one kernel (nothing to do).
"""
from __future__ import annotations

from pypto.errors import InvalidOperationError, PassError, SplitBoundaryError, TypeCheckError
from pypto.ir.nodes import AssignStmt, Call, Function, MakeTuple, Var
from pypto.ir.visit import Mutator, iter_stmts
from pypto.language.enums import FunctionType, MemorySpace, SplitMode
from pypto.ops.builder import build
from pypto.passes.context import PassContext
from pypto.passes import lane_balance
from pypto.passes.expand_mixed_kernel import BOUNDARY_OPS, cross_core_move, stmt_side
from pypto.passes.split_axis import CODE, Halver, as_index, mode_of

NAME = "LowerAutoVectorSplit"
REQUIRES = ("TileMemoryInferred",)
PRODUCES = ("AivRegionsLowered",)

_MODE = {0: SplitMode.NONE, 1: SplitMode.UP_DOWN, 2: SplitMode.LEFT_RIGHT}
_HEAD = "tile.split_aiv_lane"


def _calls(f: Function):
    for s in iter_stmts(f.body):
        c = s.value if isinstance(s, AssignStmt) else getattr(s, "expr", None)
        if isinstance(c, Call):
            yield s, c


class _Heads(Mutator):
    """Each region head becomes ``tile.get_subblock_idx()`` (same Var)."""

    def visit_AssignStmt(self, s):
        if isinstance(s.value, Call) and s.value.op == _HEAD:
            return s.replace(value=Call("tile.get_subblock_idx", (), s.value.type, s.value.span))
        return s


def _lower(f: Function, arch: str) -> Function:
    heads = [(s, c) for s, c in _calls(f) if c.op == _HEAD]
    if not heads:
        return f
    if f.func_type != FunctionType.InCore:
        raise PassError(f"{NAME}: a pl.split_aiv region in '{f.name}', a {f.func_type.name} function", heads[0][0].span,
                        "write the region in a pl.at(level=pl.Level.CORE_GROUP) scope or a plain @pl.function / "
                        "@pl.jit body, which is outlined into an InCore kernel")
    if f.attr("split") is not None:
        raise PassError(f"{NAME}: '{f.name}' has both pl.split(...) and pl.split_aiv regions; the automatic split "
                        "and explicit regions are exclusive", heads[0][0].span,
                        "drop optimizations=[pl.split(...)] (size the pipe with pl.cross_core_slot(slot_num=N))")
    modes = {c.args[0] for _, c in heads}
    for s, c in _calls(f):
        if c.op in BOUNDARY_OPS and c.args[1] not in modes:
            raise PassError(f"{NAME}: {c.op} in '{f.name}' has split={c.args[1]} but the function's pl.split_aiv "
                            f"regions have mode(s) {sorted(modes)}", s.span,
                            "write pl.aiv_shard(x) / pl.aic_gather(x) inside the region: they take its mode")
        if cross_core_move(s, arch):
            what = "pl.aiv_shard" if s.value.args[0].type.memory_space.name in ("Acc", "Mat") else "pl.aic_gather"
            raise PassError(f"{NAME}: '{f.name}' has pl.split_aiv regions, so its vector work runs on both lanes, "
                            f"but this statement moves a tile between the cube and the vector cores without "
                            f"naming the crossing", s.span,
                            f"name it: {what}(x) inside a region (it says how the lanes share the tile)")
    # a ragged shard the box partition cannot place is refused (pypto.passes.lane_balance)
    lane_balance.check_regions(f, {1: 0, 2: 1}.get)
    attrs = [(k, v) for k, v in f.attrs if k not in ("split_aiv", "split")]
    attrs.append(("split_aiv", True))
    if len(modes) == 1 and next(iter(modes)) != 0:
        attrs.append(("split", _MODE[next(iter(modes))]))
    return _Heads().function(f).replace(attrs=tuple(attrs))


class _MixedHalver(Halver):
    """The per-lane form of a mixed InCore body (the automatic ``pl.split`` path): statements of
    the vector side go through the halving of :class:`~pypto.passes.split_axis.Halver`,
    the cube side's stay whole, and each crossing becomes a named one: ``y = tile.move(acc, Vec)``
    -> ``y = tile.aiv_shard(acc, split=m)`` (the lane's half, with its share of a ragged valid
    extent), ``y = tile.move(v, Mat)`` of a halved ``v`` -> ``y = tile.aic_gather(v, split=m)``."""

    def __init__(self, f: Function, mode: SplitMode, arch: str):
        super().__init__(f, mode, NAME)
        self.arch = arch

    def visit_AssignStmt(self, s):
        if cross_core_move(s, self.arch):
            return self._crossing(s)
        if stmt_side(s) == "aic":
            return self.default_stmt(s)
        return super().visit_AssignStmt(s)

    def visit_EvalStmt(self, s):
        if stmt_side(s) == "aic":
            return self.default_stmt(s)
        return super().visit_EvalStmt(s)

    def _crossing(self, s):
        src, span = self.expr(s.value.args[0]), s.span
        if s.var.type.memory_space == MemorySpace.Vec:   # cube -> vector
            if not self._splits(s.var.type):
                raise PassError(f"{NAME}: '{s.var.name}' crosses to the vector lanes with extent 1 on the split axis",
                                span)
            full = tuple(s.var.type.shape)
            self._half(full[self.dim], "the crossing tile", span)   # (an odd extent: refused, kept whole)
            valid = s.var.type.valid_shape
            lane_valid = None
            if valid is not None and valid[self.dim] != full[self.dim]:
                lane_valid = self._valid_tuple(MakeTuple(tuple(as_index(v, span) for v in valid), span), full, span)
            c = build("tile.aiv_shard", span, tile=src, split=self.code, valid_shape=lane_valid)
            v = Var(s.var.name, c.type, s.var.span)
            self.halved.add(id(v))
            self.redefine(s.var, v)
            return s.replace(var=v, value=c)
        if not self._is_halved(src):   # vector -> cube of a value the lanes do not share out
            raise PassError(f"{NAME}: '{getattr(src, 'name', src)}' crosses to the cube whole; the lanes hold "
                            "halves only of split tiles", span)
        c = build("tile.aic_gather", span, tile=src, split=self.code)
        if c.type.shape != s.var.type.shape:
            raise PassError(f"{NAME}: the gathered tile {list(c.type.shape)} differs from the crossing "
                            f"{list(s.var.type.shape)}", span)
        v = Var(s.var.name, c.type, s.var.span) if c.type != s.var.type else s.var
        self.redefine(s.var, v)
        return s.replace(var=v, value=c)


def _auto(f: Function, arch: str) -> Function:
    """An InCore kernel with a ``split`` attr (``pl.split(mode)`` on its scope) whose cube and vector
    work cross: its per-lane form (the vector side halved, the crossings named), stamped
    ``split_aiv``. Where the halving refuses (a reduction over the split axis, a reshape of a
    halved tile, an odd extent...) the kernel stays as it is: ExpandMixedKernel then gives one
    vector lane every element, the same values (the split is a placement choice)."""
    mode = mode_of(f.attr("split"))
    if f.func_type != FunctionType.InCore or mode not in CODE or f.attr("split_aiv") \
            or not any(cross_core_move(s, arch) for s in iter_stmts(f.body)):
        return f
    # what the reference refuses at the boundary is refused here too, before the halving (which
    # keeps a kernel it cannot halve whole: a placement choice, not a refusal)
    lane_balance.check_auto(
        f, CODE[mode] - 1,
        is_c2v=lambda s: cross_core_move(s, arch) and s.var.type.memory_space == MemorySpace.Vec,
        is_v2c=lambda s: cross_core_move(s, arch) and s.var.type.memory_space != MemorySpace.Vec,
        cube_side=lambda s: stmt_side(s) == "aic")
    try:
        lane = _MixedHalver(f, mode, arch).function(f)
    except SplitBoundaryError:
        raise
    except (PassError, TypeCheckError, InvalidOperationError):
        return f
    return lane.replace(attrs=tuple((k, v) for k, v in f.attrs if k != "split_aiv") + (("split_aiv", True),))


def run(program, ctx: PassContext):
    arch = ctx.platform.arch
    return program.replace(functions=tuple(_auto(_lower(f, arch), arch) for f in program.functions))
