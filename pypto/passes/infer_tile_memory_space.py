"""InferTileMemorySpace: every tile gets a memory space, and a ``tile.move`` is inserted where an op
needs its operand in another space.

Requires: IncoreTileOps. Produces: TileMemoryInferred.

* A result's space is the op's explicit ``target_memory`` if given, else the op's registered
  ``result_space``, else the space of its first tile operand, else Vec.
* An operand whose space is not among the op's registered ``input_spaces`` is moved into the first
  of them first (``<v>_<Space> = tile.move(v, target_memory=Space)``, cached per value).
* Loop-carried tiles take the space of their initial value.
"""
from __future__ import annotations

from pypto.ir.nodes import AssignStmt, Call, ForStmt, IfStmt, Program, Var
from pypto.ir.types import TileType
from pypto.ir.visit import Mutator
from pypto.language.enums import FunctionType, MemorySpace
from pypto.ops.registry import VALUE_KINDS, get_op
from pypto.passes.context import PassContext

NAME = "InferTileMemorySpace"
REQUIRES = ("IncoreTileOps",)
PRODUCES = ("TileMemoryInferred",)


def run(program: Program, ctx: PassContext) -> Program:
    return program.replace(functions=tuple(
        _Infer().function(f) if f.func_type == FunctionType.InCore else f for f in program.functions))


def _placed(v: Var, space: MemorySpace) -> Var:
    t = v.type
    return Var(v.name, TileType(t.shape, t.dtype, space, t.valid_shape, t.memref), v.span)


class _Infer(Mutator):
    def __init__(self):
        super().__init__()
        self.moves: dict[tuple[int, MemorySpace], Var] = {}

    def visit_AssignStmt(self, s: AssignStmt):
        v = s.value
        if not isinstance(v, Call):
            return self.default_stmt(s)
        op = get_op(v.op, v.span)
        pre = []
        args = []
        for p, a in zip(op.params, v.args):
            a = self.expr(a)
            if p.kind in VALUE_KINDS and isinstance(a, Var) and isinstance(a.type, TileType) and op.input_spaces \
                    and a.type.memory_space not in op.input_spaces:
                want = op.input_spaces[0]
                key = (id(a), want)
                if key not in self.moves:
                    mt = TileType(a.type.shape, a.type.dtype, want, a.type.valid_shape)
                    mv = Var(f"{a.name}_{want.name}", mt, a.span)
                    pre.append(AssignStmt(mv, Call("tile.move", (a, want), mt, v.span), s.span))
                    self.moves[key] = mv
                a = self.moves[key]
            args.append(a)
        call = v.replace(args=tuple(args))
        var = s.var
        if isinstance(var.type, TileType) and var.type.memory_space is None:
            space = self._space(op, call)
            var = self.redefine(s.var, _placed(s.var, space))
            call = call.replace(type=var.type)
        elif isinstance(var.type, TileType):
            call = call.replace(type=var.type)
        return pre + [s.replace(var=var, value=call)]

    def _space(self, op, call: Call) -> MemorySpace:
        for p, a in zip(op.params, call.args):
            if p.name == "target_memory" and a is not None:
                return a
        if op.result_space is not None:
            return op.result_space
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
        body = self.stmts(s.body)
        rvs = []
        for rv, it in zip(s.return_vars, its):
            if isinstance(rv.type, TileType) and rv.type.memory_space is None:
                rv = self.redefine(rv, _placed(rv, it.type.memory_space))
            rvs.append(rv)
        return s.replace(start=self.expr(s.start), stop=self.expr(s.stop), step=self.expr(s.step),
                         init_values=inits, iter_args=tuple(its), body=body, return_vars=tuple(rvs))

    def visit_IfStmt(self, s: IfStmt):
        tb, eb = self.stmts(s.then_body), self.stmts(s.else_body)
        rvs = []
        yields = tb[-1].values if tb and hasattr(tb[-1], "values") else ()
        for i, rv in enumerate(s.return_vars):
            if isinstance(rv.type, TileType) and rv.type.memory_space is None:
                space = yields[i].type.memory_space if i < len(yields) else MemorySpace.Vec
                rv = self.redefine(rv, _placed(rv, space))
            rvs.append(rv)
        return s.replace(cond=self.expr(s.cond), then_body=tb, else_body=eb, return_vars=tuple(rvs))
