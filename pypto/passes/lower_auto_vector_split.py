"""LowerAutoVectorSplit: the ``pl.split_aiv`` regions of an InCore function become its explicit
per-lane form, ready for ExpandMixedKernel (the reference's pass of the same name, before the
expansion).

Requires: TileMemoryInferred. Produces: AivRegionsLowered.

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

The automatic ``pl.split`` path (an InCore kernel with a ``split`` attr and no regions) is not
rewritten here: SplitVectorKernel halves the vector member after the expansion (see its module),
which gives the per-lane form the reference builds here.
"""
from __future__ import annotations

from pypto.errors import PassError
from pypto.ir.nodes import AssignStmt, Call, Function
from pypto.ir.visit import Mutator, iter_stmts
from pypto.language.enums import FunctionType, SplitMode
from pypto.passes.context import PassContext
from pypto.passes.expand_mixed_kernel import BOUNDARY_OPS, cross_core_move

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
    attrs = [(k, v) for k, v in f.attrs if k not in ("split_aiv", "split")]
    attrs.append(("split_aiv", True))
    if len(modes) == 1 and next(iter(modes)) != 0:
        attrs.append(("split", _MODE[next(iter(modes))]))
    return _Heads().function(f).replace(attrs=tuple(attrs))


def run(program, ctx: PassContext):
    arch = ctx.platform.arch
    return program.replace(functions=tuple(_lower(f, arch) for f in program.functions))
