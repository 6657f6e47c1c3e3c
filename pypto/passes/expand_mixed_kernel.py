"""ExpandMixedKernel: an InCore function whose tiles cross between the cube and the vector cores is
split into an AIC function, an AIV function and a Group function calling both (the reference's pass
of the same name).

Requires: TileMemoryInferred. Produces: MixedKernelExpanded.

A tile crosses where InferTileMemorySpace had to use a cross-core move (``CROSS_CORE_EDGES``: on
a2a3 the cube and the vector cores share no on-chip buffer; Vec -> Mat and Acc -> Vec go through
the cluster's GM pipe buffers). Each statement belongs to a side by the memory spaces it touches:

* cube (AIC): results or operands in Mat / Left / Right / Acc / Bias (a load into Mat, a matmul,
  a store of an Acc tile); vector (AIV): Vec tiles; shared: scalar arithmetic, which both sides
  compute (the loop counters and offsets their control flow needs);
* a cross-core move ``y = tile.move(x, target_memory=S)`` becomes ``tpush`` on the producer's side
  and ``y = tpop`` on the consumer's, followed by ``tfree`` after ``y``'s last use in that block;
* a loop is kept on each side that has work in it (both sides then run the same iterations, so
  every push meets its pop in order); a loop-carried value the other side computes is carried
  unchanged (its yield becomes the carried variable itself).

Each member starts with ``<side>_initialize_pipe`` of the directions it uses (pipe id 0, slots as
large as the largest crossing tile); the Group takes the InCore function's name (orchestration
calls it unchanged), calls ``<name>_aic`` then ``<name>_aiv`` with all its parameters and returns
the parameters the original returned versions of. A scalar computed from a tile on one side and
used on the other cannot cross (pipes carry tiles): that is a located PassError.

The named crossings of a kernel LowerAutoVectorSplit put in per-lane form (``pl.split_aiv``
regions, or an automatic ``pl.split``), ``y = tile.aiv_shard(x, split=m)`` /
``y = tile.aic_gather(x, split=m)``, become a push with split code ``m`` on the producer and a pop
of ``y``'s type (each lane's half / the joined tile) with code ``m`` on the consumer; such a kernel
(attr ``split_aiv``) keeps its attrs on both members, its vector member runs on both lanes
(SplitVectorKernel stamps ``dual_aiv_dispatch``), and without cube work it has no AIC member. The
lane index (``tile.get_subblock_idx``) and the scalars computed from it belong to the vector side.
The GM workspace of the pipes on a2a3 is InjectGMPipeBuffer's (the next pass). On a5 (direct
Acc -> Vec / Vec -> Mat paths) InferTileMemorySpace needs no cross-core move and a kernel without
named crossings stays one kernel.
"""
from __future__ import annotations

from pypto.errors import PassError
from pypto.ir.nodes import (
    AssignStmt, Call, ConstInt, EvalStmt, ForStmt, FuncCall, Function, IfStmt, ReturnStmt, ScopeStmt, Var,
    YieldStmt,
)
from pypto.ir.types import TensorType, TileType, TupleType
from pypto.ir.visit import Renewer, iter_stmts, use_exprs, walk_expr
from pypto.language.enums import FunctionType, MemorySpace
from pypto.passes.context import PassContext
from pypto.passes.infer_tile_memory_space import _EDGES, CROSS_CORE_EDGES

NAME = "ExpandMixedKernel"
REQUIRES = ("TileMemoryInferred",)
PRODUCES = ("MixedKernelExpanded",)

# the named crossings of a pl.split_aiv region (pypto.ops.aiv_split): cube -> vector / vector -> cube
BOUNDARY_OPS = ("tile.aiv_shard", "tile.aic_gather")
_CUBE_SPACES = frozenset({MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc,
                          MemorySpace.Bias})
AIC, AIV, SHARED = "aic", "aiv", "shared"


def _space(e):
    t = getattr(e, "type", None)
    return t.memory_space if isinstance(t, TileType) else None


def cross_core_move(s, arch: str) -> bool:
    """Whether ``s`` is ``y = tile.move(x, S)`` along a cross-core edge that is not an on-chip
    path of ``arch`` (a5 moves Acc -> Vec and Vec -> Mat on chip: no pipe needed)."""
    if not (isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tile.move"):
        return False
    src, dst = _space(s.value.args[0]), _space(s.var)
    on_chip = _EDGES.get(arch, _EDGES["a2a3"]).get(src, ())
    return dst in CROSS_CORE_EDGES.get(src, ()) and dst not in on_chip


def boundary(s) -> bool:
    """Whether ``s`` is ``y = tile.aiv_shard(x, split=m)`` / ``y = tile.aic_gather(x, split=m)``."""
    return isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op in BOUNDARY_OPS


def _side_of_spaces(spaces) -> str:
    spaces = {sp for sp in spaces if sp is not None}
    if not spaces:
        return SHARED
    cube = bool(spaces & _CUBE_SPACES)
    vec = MemorySpace.Vec in spaces
    if cube and vec:
        return "both"
    return AIC if cube else AIV


def stmt_side(s) -> str:
    """The side of a plain statement (not a loop, not a cross-core move)."""
    v = s.value if isinstance(s, AssignStmt) else None
    if isinstance(v, Call) and v.op == "tile.get_subblock_idx":
        return AIV   # the vector lane's index: the cube has none
    exprs = use_exprs(s)
    spaces = [_space(x) for e in exprs for x in walk_expr(e)]
    if isinstance(s, AssignStmt):
        spaces.append(_space(s.var))
    return _side_of_spaces(spaces)


def _uses(stmts) -> set:
    return {id(x) for s in iter_stmts(stmts) for e in use_exprs(s) for x in walk_expr(e) if isinstance(x, Var)}


class _Splitter:
    """Builds one side's body from the mixed body."""

    def __init__(self, side: str, fname: str, arch: str):
        self.side = side
        self.arch = arch
        self.fname = fname
        self.dirs: set = set()       # "v2c" / "c2v" used
        self.slot = 0                # largest crossing tile, bytes
        self.defined_other: dict = {}   # id(Var) -> Var: values only the other side computes

    def has_work(self, stmts) -> bool:
        for s in stmts:
            if isinstance(s, (ForStmt, IfStmt, ScopeStmt)):
                if any(self.has_work(b) for b in _children(s)):
                    return True
            elif cross_core_move(s, self.arch) or boundary(s):
                return True
            elif not isinstance(s, (YieldStmt, ReturnStmt)) and stmt_side(s) == self.side:
                return True
        return False

    def block(self, stmts, carried=(), drop=frozenset()) -> list:
        out: list = []
        popped: list = []   # (Var, free op) popped in this block, freed after the last use
        for s in stmts:
            if isinstance(s, ForStmt):
                if not self.has_work(s.body):
                    self._skip(s)
                    continue
                # a carried value whose initial value the other side computes (a vector accumulator
                # of a loop that also has cube work) is that side's alone: this side's copy of the
                # loop does not carry it
                drop = {i for i, v in enumerate(s.init_values) if isinstance(v, Var) and id(v) in self.defined_other}
                for i in drop:
                    for v in (s.iter_args[i], s.return_vars[i]):
                        self.defined_other[id(v)] = v
                keep = [i for i in range(len(s.iter_args)) if i not in drop]
                body = self.block(s.body, s.iter_args, drop)
                out.append(_replace(s, body=tuple(body), iter_args=tuple(s.iter_args[i] for i in keep),
                                    init_values=tuple(s.init_values[i] for i in keep),
                                    return_vars=tuple(s.return_vars[i] for i in keep)))
            elif isinstance(s, IfStmt):
                if not (self.has_work(s.then_body) or self.has_work(s.else_body)):
                    self._skip(s)
                    continue
                out.append(_replace(s, then_body=tuple(self.block(s.then_body)),
                                    else_body=tuple(self.block(s.else_body))))
            elif isinstance(s, ScopeStmt):
                out.append(_replace(s, body=tuple(self.block(s.body))))
            elif boundary(s):
                out.extend(self._named_cross(s, popped))
            elif cross_core_move(s, self.arch):
                out.extend(self._cross(s, popped))
            elif isinstance(s, YieldStmt):
                if not carried and any(id(v) in self.defined_other for v in s.values):
                    raise PassError(f"{NAME}: a branch result of '{self.fname}' is computed on the "
                                    f"{_other(self.side).upper()} core but the {self.side.upper()} core needs "
                                    f"the branch too", s.span, "compute the branch's values on one core kind")
                vals = tuple(c if id(v) in self.defined_other else v
                             for i, (v, c) in enumerate(zip(s.values, carried)) if i not in drop) \
                    if carried else s.values
                if carried and not vals:
                    continue   # every carried value is the other side's: this copy carries none
                out.append(_replace(s, values=vals))
            elif isinstance(s, ReturnStmt):
                continue   # members write their Out params in place; the Group returns them
            else:
                side = stmt_side(s)
                if side == "both":
                    raise PassError(f"{NAME}: a statement of '{self.fname}' reads tiles of both the cube and the "
                                    f"vector cores", s.span,
                                    "move one operand first (pl.move(x, target_memory=...)); pipes carry tiles "
                                    "between the cores")
                if side == SHARED and isinstance(s, AssignStmt) and not isinstance(s.var.type, TensorType) \
                        and any(isinstance(x, Var) and id(x) in self.defined_other
                                for e in use_exprs(s) for x in walk_expr(e)):
                    self._skip(s)   # a scalar of the other side's values (aiv_id * 8): that side's alone
                elif side in (self.side, SHARED):
                    self._check_reads(s)
                    out.append(s)
                else:
                    self._skip(s)
        return self._place_frees(out, popped)

    def _skip(self, s) -> None:
        """``s`` runs on the other side: the Vars it defines do not exist on this one."""
        for x in iter_stmts([s]):
            for v in _defs(x):
                self.defined_other[id(v)] = v

    def _check_reads(self, s) -> None:
        for e in use_exprs(s):
            for x in walk_expr(e):
                if isinstance(x, Var) and id(x) in self.defined_other:
                    what = ("a tensor version written" if isinstance(x.type, TensorType) else "computed")
                    raise PassError(f"{NAME}: '{x.name}' is {what} on the {_other(self.side).upper()} core of "
                                    f"the mixed kernel '{self.fname}' but read on the {self.side.upper()} core; "
                                    f"only tiles cross between the cores (through a tile.move)", s.span,
                                    "compute the value on the side that uses it, or split the kernel into two "
                                    "pl.at scopes")

    def _cross(self, s: AssignStmt, popped: list) -> list:
        src, dst = s.value.args[0], s.var
        direction = "v2c" if _space(src) == MemorySpace.Vec else "c2v"
        producer = AIV if direction == "v2c" else AIC
        self.dirs.add(direction)
        self.slot = max(self.slot, dst.type.nbytes)
        if self.side == producer:
            if id(src) in self.defined_other:
                raise PassError(f"{NAME}: internal: the pushed tile '{src.name}' is not computed on the "
                                f"{self.side.upper()} core", s.span)
            op = "tile.tpush_to_aic" if direction == "v2c" else "tile.tpush_to_aiv"
            self.defined_other[id(dst)] = dst
            return [EvalStmt(Call(op, (src, 0, None, 0), TupleType(()), s.span), s.span)]
        op = "tile.tpop_from_aiv" if direction == "v2c" else "tile.tpop_from_aic"
        t = dst.type
        from pypto.ir.nodes import MakeTuple

        shape = MakeTuple(tuple(ConstInt(d) for d in t.shape), s.span)
        pop = AssignStmt(dst, Call(op, (shape, t.dtype, 0, None, 0, t.memory_space), t, s.span), s.span)
        free = "tile.tfree_to_aiv" if direction == "v2c" else "tile.tfree_to_aic"
        popped.append((dst, free, s.span))
        self.defined_other[id(src)] = src
        return [pop]

    def _named_cross(self, s: AssignStmt, popped: list) -> list:
        """``y = tile.aiv_shard(x, split=m)`` (cube -> vector: each lane pops its half of ``x``) /
        ``y = tile.aic_gather(x, split=m)`` (vector -> cube: the cube pops the lanes' halves
        joined): a push with split code ``m`` on the producer, a pop of ``y``'s type with code
        ``m`` (then a free after its last use) on the consumer. Code 0 (a NONE region): the cube's
        push reaches both lanes whole; both lanes push to the cube's pop, which the cluster
        executor refuses when their tiles differ (the reference delivers an unspecified one)."""
        c = s.value
        src, mode, dst = c.args[0], c.args[1], s.var
        shard = c.op == "tile.aiv_shard"
        want = _CUBE_SPACES if shard else frozenset({MemorySpace.Vec})
        if _space(src) not in want:
            side = "cube tile (a matmul result, in Acc / Mat)" if shard else "vector tile (in Vec)"
            raise PassError(f"{NAME}: {c.op} in '{self.fname}' crosses from the {'cube' if shard else 'vector'} "
                            f"core and takes a {side}; '{getattr(src, 'name', src)}' is in "
                            f"{getattr(_space(src), 'name', None)}", s.span,
                            "pl.aiv_shard brings a cube result to the lanes, pl.aic_gather a lane result to "
                            "the cube; a value already on the right core needs no crossing")
        if shard and mode in (1, 2) and src.type.shape[mode - 1] % 2:
            mode += 2   # an odd extent: pto-isa's odd code (lane 0 the ceil half, lane 1 the rest)
        direction = "c2v" if shard else "v2c"
        self.dirs.add(direction)
        self.slot = max(self.slot, (src if shard else dst).type.nbytes)   # the whole tile rides one slot
        if self.side == (AIC if shard else AIV):
            if id(src) in self.defined_other:
                raise PassError(f"{NAME}: internal: the crossing tile '{src.name}' is not computed on the "
                                f"{self.side.upper()} core", s.span)
            op = "tile.tpush_to_aiv" if shard else "tile.tpush_to_aic"
            self.defined_other[id(dst)] = dst
            return [EvalStmt(Call(op, (src, mode, None, 0), TupleType(()), s.span), s.span)]
        from pypto.ir.nodes import MakeTuple

        t = dst.type
        shape = MakeTuple(tuple(ConstInt(d) for d in t.shape), s.span)
        op = "tile.tpop_from_aic" if shard else "tile.tpop_from_aiv"
        valid = None if t.valid_shape is None else MakeTuple(
            tuple(ConstInt(v) if isinstance(v, int) else v for v in t.valid_shape), s.span)
        pop = AssignStmt(dst, Call(op, (shape, t.dtype, mode, None, 0, t.memory_space, valid), t, s.span), s.span)
        popped.append((dst, "tile.tfree_to_aic" if shard else "tile.tfree_to_aiv", s.span))
        self.defined_other[id(src)] = src
        return [pop]

    def _place_frees(self, out: list, popped: list) -> list:
        for v, op, span in popped:
            last = max((i for i, s in enumerate(out) if id(v) in _uses([s])), default=None)
            if last is None:
                last = next(i for i, s in enumerate(out) if isinstance(s, AssignStmt) and s.var is v)
            free = EvalStmt(Call(op, (v, None, 0), TupleType(()), span), span)
            # before a block-ending yield: the free belongs to this iteration
            pos = last + 1
            out.insert(pos, free)
        return out


def _other(side: str) -> str:
    return AIV if side == AIC else AIC


def _children(s):
    if isinstance(s, ForStmt):
        return [s.body]
    if isinstance(s, IfStmt):
        return [s.then_body, s.else_body]
    return [s.body]


def _defs(s) -> list:
    if isinstance(s, AssignStmt):
        return [s.var]
    if isinstance(s, ForStmt):
        return [s.loop_var, *s.iter_args, *s.return_vars]
    if isinstance(s, IfStmt):
        return list(s.return_vars)
    return []


def _replace(node, **kw):
    import dataclasses

    return dataclasses.replace(node, **kw)


def _is_mixed(f: Function, arch: str) -> bool:
    """Cube and vector work joined by crossings (or a function of pl.split_aiv regions, whose
    vector work runs on both lanes even without cube work: LowerAutoVectorSplit marks it)."""
    return bool(f.attr("split_aiv")) or any(cross_core_move(s, arch) or boundary(s) for s in iter_stmts(f.body))


def _init_call(side: str, dirs: set, slot: int, span, slot_num=None):
    """``<side>_initialize_pipe`` of pipe 0: the directions used, slots as large as the largest
    crossing tile, ``slot_num`` the kernel's ``pl.cross_core_slot(slot_num=n)`` (None: the
    default ring depth)."""
    mask = (1 if "c2v" in dirs else 0) | (2 if "v2c" in dirs else 0)
    return EvalStmt(Call(f"tile.{side}_initialize_pipe", (None, None, mask, slot, slot_num, None, 0), TupleType(()),
                         span), span)


def _expand(f: Function, split, arch: str) -> list[Function]:
    members = []
    regions = bool(f.attr("split_aiv"))
    for side, ftype in ((AIC, FunctionType.AIC), (AIV, FunctionType.AIV)):
        sp = _Splitter(side, f.name, arch)
        if regions and side == AIC and not sp.has_work(f.body):
            continue   # pl.split_aiv regions without cube work: the lanes alone (no AIC member)
        body = sp.block(f.body)
        if sp.dirs:
            body.insert(0, _init_call(side, sp.dirs, sp.slot, f.span, f.attr("slot_num")))
        # the split mode stays on the Group only: the AIV member runs on one lane (see the module doc)
        # each member gets Vars of its own (the Group keeps the original's): no Var is shared
        # between functions, so the printed program parses back to an equal one
        fresh = Renewer()
        params = tuple(fresh.fresh(p) for p in f.params)
        members.append(_replace(f, name=f"{f.name}_{side}", func_type=ftype, params=params,
                                body=fresh.renew(body), return_types=(),
                                attrs=f.attrs if regions else tuple((k, v) for k, v in f.attrs if k != "split")))
    # the Group: the original name and signature; calls both members, returns the original's params
    from pypto.passes.param_writes import returned_params

    rets = returned_params(f)
    if any(r < 0 for r in rets):
        raise PassError(f"{NAME}: '{f.name}' returns a value that is not a version of one of its Out / InOut "
                        f"parameters; a mixed kernel hands results back through its parameters", f.span)
    calls = tuple(EvalStmt(FuncCall(m.name, tuple(f.params), TupleType(()), f.span), f.span) for m in members)
    ret = ReturnStmt(tuple(f.params[r] for r in rets), f.span)
    attrs = f.attrs + ((("split", split),) if split is not None and f.attr("split") is None else ())
    group = _replace(f, func_type=FunctionType.Group, body=calls + (ret,), attrs=attrs)
    return members + [group]


def run(program, ctx: PassContext):
    arch = ctx.platform.arch
    funcs = []
    for f in program.functions:
        if f.func_type == FunctionType.InCore and _is_mixed(f, arch):
            funcs.extend(_expand(f, None, arch))
        else:
            if f.func_type in (FunctionType.AIC, FunctionType.AIV) and \
                    any(cross_core_move(s, arch) or boundary(s) for s in iter_stmts(f.body)):
                s = next(s for s in iter_stmts(f.body) if cross_core_move(s, arch) or boundary(s))
                raise PassError(f"{NAME}: '{f.name}' is an {f.func_type.name} function but moves a tile between the "
                                f"cube and the vector cores", s.span,
                                "use tpush / tpop in an AIC / AIV pair, or an InCore function (split for you)")
            funcs.append(f)
    return program.replace(functions=tuple(funcs))
