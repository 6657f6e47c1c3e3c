"""InferTileMemorySpace: every tile gets a memory space, and a ``tile.move`` is inserted where an op
needs its operand in another space.

Requires: IncoreTileOps. Produces: TileMemoryInferred.

* A result's space is the op's explicit ``target_memory`` if given, else the op's registered
  ``result_space``, else the space of its first tile operand, else Vec.
* An operand whose space is not among the op's registered ``input_spaces`` is moved into the first
  of them first (``<v>_<Space> = tile.move(v, target_memory=Space)``, cached per value).
* Loop-carried tiles take the space of their initial value.
* ``input_spaces`` may be per operand (``(("lhs", (Left,)), ("rhs", (Right,)))``, the cube ops).
* Backward demand: a ``tile.load`` without ``target_memory`` whose result feeds an operand that
  must be in Mat, Left or Right (a cube op) lands in Mat (a DDR load lands in Vec or Mat only).
* Inserted moves that touch a cube space (Left, Right, Acc) follow the platform's legal edges
  (docs/simulator.md, "The two platforms"): a2a3 Mat->{Left,Right,Bias}, Acc->Mat; a5 adds Vec->Mat and Acc->Vec. A
  route of several hops inserts each (e.g. Acc->Mat->Left for a matmul result fed to a matmul).
  No route is a compile error: on a2a3 an Acc tile (a matmul result) cannot feed a vector op --
  store it to GM with ``pl.store`` and continue in another scope, or target a5.
"""
from __future__ import annotations

from pypto.errors import PassError
from pypto.ir.nodes import AssignStmt, Call, ForStmt, IfStmt, Program, Var, WhileStmt
from pypto.ir.types import TileType
from pypto.ir.visit import Mutator, iter_stmts
from pypto.language.enums import KERNEL_TYPES, FunctionType, MemorySpace
from pypto.ops.builder import build
from pypto.ops.registry import VALUE_KINDS, get_op
from pypto.ops.traits import MemorySpaces
from pypto.passes.context import PassContext
from pypto.ops.registry import VALUE_KINDS as _VK

NAME = "InferTileMemorySpace"
REQUIRES = ("IncoreTileOps",)
PRODUCES = ("TileMemoryInferred",)


def run(program: Program, ctx: PassContext) -> Program:
    arch = ctx.platform.arch
    return program.replace(functions=tuple(
        _Infer(arch, _mat_demand(f), f.func_type == FunctionType.InCore).function(f)
        if f.func_type in KERNEL_TYPES else f
        for f in program.functions))


_CUBE = (MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc)
# legal direct on-chip moves per architecture (docs/simulator.md, "The two platforms")
_EDGES = {
    "a2a3": {MemorySpace.Mat: (MemorySpace.Left, MemorySpace.Right, MemorySpace.Bias),
             MemorySpace.Acc: (MemorySpace.Mat,)},
    "a5": {MemorySpace.Mat: (MemorySpace.Left, MemorySpace.Right, MemorySpace.Bias,
                             MemorySpace.LeftScale, MemorySpace.RightScale),
           MemorySpace.Acc: (MemorySpace.Mat, MemorySpace.Vec), MemorySpace.Vec: (MemorySpace.Mat,)},
}


def allowed_spaces(op, param: str, call=None) -> tuple:
    """The spaces operand ``param`` of ``op`` may live in (empty: any); with ``call``, for its
    ``target_memory`` (:attr:`MemorySpaces.by_target`)."""
    spaces = op.trait(MemorySpaces)
    if spaces is None:
        return ()
    target = None
    if call is not None:
        target = next((a for p, a in zip(op.params, call.args) if p.name == "target_memory"), None)
    return spaces.allowed(param, target)


# the moves between the cores of a cluster (a2a3: through the GM pipe buffers): legal in an InCore
# function only as a mixed kernel, which ExpandMixedKernel splits into AIC + AIV functions joined by
# a cross-core pipe at each such move (pypto/passes/expand_mixed_kernel.py)
CROSS_CORE_EDGES = {MemorySpace.Vec: (MemorySpace.Mat,), MemorySpace.Acc: (MemorySpace.Vec,)}


def _route(src: MemorySpace, dst: MemorySpace, arch: str, cross_core: bool = False):
    """Hops (excluding ``src``) of the shortest legal move chain, or None (``cross_core``: the
    cluster's cross-core moves count as edges too)."""
    edges = _EDGES.get(arch, _EDGES["a2a3"])
    if cross_core:
        edges = {k: tuple(dict.fromkeys(edges.get(k, ()) + CROSS_CORE_EDGES.get(k, ())))
                 for k in set(edges) | set(CROSS_CORE_EDGES)}
    prev = {src: None}
    queue = [src]
    while queue:
        cur = queue.pop(0)
        if cur == dst:
            hops = []
            while cur != src:
                hops.append(cur)
                cur = prev[cur]
            return hops[::-1]
        for nxt in edges.get(cur, ()):
            if nxt not in prev:
                prev[nxt] = cur
                queue.append(nxt)
    return None


def _mat_demand(f) -> set:
    """ids of Vars read by an operand that must be in Mat/Left/Right (backward demand)."""
    need = set()
    for s in iter_stmts(f.body):
        if isinstance(s, AssignStmt) and isinstance(s.value, Call):
            op = get_op(s.value.op, s.value.span)
            for p, a in zip(op.params, s.value.args):
                want = allowed_spaces(op, p.name, s.value)
                if p.kind in _VK and isinstance(a, Var) and want and want[0] in (
                        MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right):
                    need.add(id(a))
    return need


def _placed(v: Var, space: MemorySpace) -> Var:
    t = v.type
    return Var(v.name, TileType(t.shape, t.dtype, space, t.valid_shape, t.memref), v.span)


class _Infer(Mutator):
    def __init__(self, arch: str = "a2a3", mat_demand: set = frozenset(), mixed_ok: bool = False):
        super().__init__()
        self.arch = arch
        self.mixed_ok = mixed_ok   # an InCore function: a cube <-> vector move makes it a mixed kernel
        self.mat_demand = mat_demand
        self.moves: dict[tuple[int, MemorySpace], Var] = {}

    def _move(self, a: Var, want: MemorySpace, op_name: str, param: str, span, pre: list) -> Var:
        """``a`` moved into ``want`` (cached per value), along legal edges when a cube space is involved."""
        src = a.type.memory_space
        hops = [want]
        if src in _CUBE or want in _CUBE:
            hops = _route(src, want, self.arch)
            if hops is None and self.mixed_ok:
                hops = _route(src, want, self.arch, cross_core=True)
            if hops is None:
                hint = ("store the tile to a global tensor with pl.store and load it in another pl.at scope "
                        "(or use the a5 platform, which has Acc->Vec)") if src == MemorySpace.Acc else \
                    "load the operand into pl.Mem.Mat (pl.load(..., target_memory=pl.Mem.Mat))"
                raise PassError(
                    f"{op_name}: operand '{param}' ('{a.name}') is in {src.name} but must be in {want.name}; "
                    f"{self.arch} has no on-chip path {src.name} -> {want.name}", span, hint)
        cur = a
        for space in hops:
            key = (id(a), space)
            if key not in self.moves:
                move = build("tile.move", span, x=cur, target_memory=space)
                mv = Var(f"{a.name}_{space.name}", move.type, a.span)
                pre.append(AssignStmt(mv, move, span))
                self.moves[key] = mv
            cur = self.moves[key]
        return cur

    def visit_AssignStmt(self, s: AssignStmt):
        v = s.value
        if not isinstance(v, Call):
            return self.default_stmt(s)
        op = get_op(v.op, v.span)
        pre = []
        args = []
        for p, a in zip(op.params, v.args):
            a = self.expr(a)
            allowed = allowed_spaces(op, p.name, v)
            if p.kind in VALUE_KINDS and isinstance(a, Var) and isinstance(a.type, TileType) and allowed \
                    and a.type.memory_space not in allowed:
                # the first allowed space reachable on chip (an Acc operand of tile.assemble goes to Mat,
                # not across to the vector core), else the first one
                src = a.type.memory_space
                want = next((sp for sp in allowed if not (src in _CUBE or sp in _CUBE)
                             or _route(src, sp, self.arch) is not None), allowed[0])
                a = self._move(a, want, op.name, p.name, v.span, pre)
            args.append(a)
        call = v.replace(args=tuple(args))
        var = s.var
        if isinstance(var.type, TileType) and var.type.memory_space is None:
            space = self._space(op, call)
            if op.name == "tile.load" and id(s.var) in self.mat_demand and call.args[-1] is None:
                space = MemorySpace.Mat  # backward demand of a cube consumer
            var = self.redefine(s.var, _placed(s.var, space))
            call = call.replace(type=var.type)
        elif isinstance(var.type, TileType):
            call = call.replace(type=var.type)
        return pre + [s.replace(var=var, value=call)]

    def _space(self, op, call: Call) -> MemorySpace:
        for p, a in zip(op.params, call.args):
            if p.name == "target_memory" and a is not None:
                return a
        spaces = op.trait(MemorySpaces)
        if spaces is not None and spaces.result is not None:
            return spaces.result
        for p, a in zip(op.params, call.args):
            if p.kind in VALUE_KINDS and isinstance(a, Var) and isinstance(a.type, TileType) and a.type.memory_space:
                return a.type.memory_space
        return MemorySpace.Vec

    def visit_ForStmt(self, s: ForStmt):
        inits = tuple(self.expr(v) for v in s.init_values)
        its = []
        for it, init in zip(s.iter_args, inits):
            if isinstance(it.type, TileType) and it.type.memory_space is None:
                it = self.redefine(it, _placed(it, init.type.memory_space or MemorySpace.Vec))
            its.append(it)
        body = self.scoped(s.body)
        rvs = []
        for rv, it in zip(s.return_vars, its):
            if isinstance(rv.type, TileType) and rv.type.memory_space is None:
                rv = self.redefine(rv, _placed(rv, it.type.memory_space))
            rvs.append(rv)
        return s.replace(start=self.expr(s.start), stop=self.expr(s.stop), step=self.expr(s.step),
                         init_values=inits, iter_args=tuple(its), body=body, return_vars=tuple(rvs))

    def visit_WhileStmt(self, s: WhileStmt):
        """As a ForStmt (the condition is a scalar: nothing to place)."""
        inits = tuple(self.expr(v) for v in s.init_values)
        its = []
        for it, init in zip(s.iter_args, inits):
            if isinstance(it.type, TileType) and it.type.memory_space is None:
                it = self.redefine(it, _placed(it, init.type.memory_space or MemorySpace.Vec))
            its.append(it)
        cond = self.expr(s.cond)
        body = self.scoped(s.body)
        rvs = []
        for rv, it in zip(s.return_vars, its):
            if isinstance(rv.type, TileType) and rv.type.memory_space is None:
                rv = self.redefine(rv, _placed(rv, it.type.memory_space))
            rvs.append(rv)
        return s.replace(cond=cond, init_values=inits, iter_args=tuple(its), body=body, return_vars=tuple(rvs))

    def scoped(self, body):
        """``body`` converted with the move cache scoped to it: a move made in a branch or loop body
        is defined there only, so a later statement outside (or the other branch) moves again
        rather than reading a Var that was never assigned on its path (stale data at run time)."""
        saved = dict(self.moves)
        try:
            return self.stmts(body)
        finally:
            self.moves = saved

    def visit_IfStmt(self, s: IfStmt):
        tb, eb = self.scoped(s.then_body), self.scoped(s.else_body)
        rvs = []
        yields = tb[-1].values if tb and hasattr(tb[-1], "values") else ()
        for i, rv in enumerate(s.return_vars):
            if isinstance(rv.type, TileType) and rv.type.memory_space is None:
                space = yields[i].type.memory_space if i < len(yields) else MemorySpace.Vec
                rv = self.redefine(rv, _placed(rv, space))
            rvs.append(rv)
        return s.replace(cond=self.expr(s.cond), then_body=tb, else_body=eb, return_vars=tuple(rvs))
