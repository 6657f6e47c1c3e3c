"""AllocateMemoryAddr: every tile of an InCore function gets an address in its memory space.

Requires: TileMemoryInferred. Produces: AllocatedMemoryAddr — each tile type carries a
``MemRef(addr, size)``; the simulator places the tile's view of core memory there.

Allocation is sequential per space, each buffer aligned to the platform's per-space alignment;
loop results share the buffer of their loop-carried value. A function whose tiles exceed a space's
capacity is a compile error naming the space, the limit and the largest tiles.
"""
from __future__ import annotations

from pypto.errors import CapacityError
from pypto.ir.nodes import AssignStmt, ForStmt, Function, IfStmt, Program, Var
from pypto.ir.types import MemRef, TileType
from pypto.ir.visit import Mutator
from pypto.language.enums import FunctionType
from pypto.passes.context import PassContext

NAME = "AllocateMemoryAddr"
REQUIRES = ("TileMemoryInferred",)
PRODUCES = ("AllocatedMemoryAddr",)


def run(program: Program, ctx: PassContext) -> Program:
    return program.replace(functions=tuple(
        _allocate(f, ctx) if f.func_type == FunctionType.InCore else f for f in program.functions))


def _allocate(f: Function, ctx: PassContext) -> Function:
    a = _Alloc(ctx.platform)
    out = a.function(f)
    for space, used in a.used.items():
        cap = ctx.platform.capacity(space)
        if used > cap:
            tiles = sorted(a.tiles[space], key=lambda t: -t[1])
            listing = ", ".join(f"'{n}' {sh} ({size} B)" for n, size, sh in tiles[:6])
            raise CapacityError(
                f"{space.name} buffer usage ({used} bytes) exceeds platform limit ({cap} bytes) on "
                f"{ctx.platform.name} in kernel '{f.name}'; live tiles: {listing}",
                f.span, "split the work into smaller tiles (a loop over row blocks) or reuse buffers")
    return out


class _Alloc(Mutator):
    def __init__(self, platform):
        super().__init__()
        self.platform = platform
        self.used: dict = {}
        self.tiles: dict = {}

    def place(self, v: Var, memref: MemRef | None = None) -> Var:
        t = v.type
        if not isinstance(t, TileType) or t.memref is not None:
            return v
        if memref is None:
            space = t.memory_space
            align = self.platform.align(space)
            addr = self.used.get(space, 0)
            size = -(-t.nbytes // align) * align
            self.used[space] = addr + size
            self.tiles.setdefault(space, []).append((v.name, t.nbytes, f"{list(t.shape)} {t.dtype.name}"))
            memref = MemRef(addr, t.nbytes)
        return self.redefine(v, Var(v.name, t.with_(memref=memref), v.span))

    def visit_AssignStmt(self, s: AssignStmt):
        value = self.expr(s.value)
        var = self.place(s.var)
        if var is not s.var and hasattr(value, "type") and isinstance(value.type, TileType):
            value = value.replace(type=var.type)
        return s.replace(var=var, value=value)

    def visit_ForStmt(self, s: ForStmt):
        inits = tuple(self.expr(v) for v in s.init_values)
        its = tuple(self.place(v) for v in s.iter_args)
        body = self.stmts(s.body)
        rvs = tuple(self.place(rv, it.type.memref if isinstance(it.type, TileType) else None)
                    for rv, it in zip(s.return_vars, its))
        return s.replace(start=self.expr(s.start), stop=self.expr(s.stop), step=self.expr(s.step),
                         init_values=inits, iter_args=its, body=body, return_vars=rvs)

    def visit_IfStmt(self, s: IfStmt):
        tb, eb = self.stmts(s.then_body), self.stmts(s.else_body)
        rvs = tuple(self.place(v) for v in s.return_vars)
        return s.replace(cond=self.expr(s.cond), then_body=tb, else_body=eb, return_vars=rvs)
