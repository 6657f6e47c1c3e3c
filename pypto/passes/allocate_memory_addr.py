"""AllocateMemoryAddr: every tile of an InCore function gets an address in its memory space.

Requires: TileMemoryInferred. Produces: AllocatedMemoryAddr — each tile type carries a
``MemRef(addr, size)``; the simulator places the tile's view of core memory there; and
NoLiveOverlap — no two simultaneously live tiles overlap (checked by an independent liveness
computation in :mod:`pypto.ir.verifier`).

Allocation is first-fit per space over live intervals (a buffer is free again after the last use
of its tile; values used inside a loop stay live to the loop's end), each buffer aligned to the
platform's per-space alignment; an elementwise result may take the exact buffer of a same-shape,
same-dtype operand whose last use is that op (in place). Loop results share the buffer of their
loop-carried value. A function whose tiles exceed a space's
capacity is a compile error naming the space, the limit and the largest tiles.
"""
from __future__ import annotations

from pypto.errors import CapacityError
from pypto.ir.nodes import AssignStmt, Call, ForStmt, Function, IfStmt, Program, ScopeStmt, Var
from pypto.ir.visit import use_exprs, walk_expr
from pypto.ir.types import MemRef, TileType
from pypto.ir.visit import Mutator
from pypto.language.enums import FunctionType
from pypto.ops.registry import get_op
from pypto.passes.context import PassContext

NAME = "AllocateMemoryAddr"
REQUIRES = ("TileMemoryInferred",)
PRODUCES = ("AllocatedMemoryAddr", "NoLiveOverlap")


def run(program: Program, ctx: PassContext) -> Program:
    return program.replace(functions=tuple(
        _allocate(f, ctx) if f.func_type == FunctionType.InCore else f for f in program.functions))


def _allocate(f: Function, ctx: PassContext) -> Function:
    a = _Alloc(ctx.platform, _Liveness(f))
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
    def __init__(self, platform, live: "_Liveness"):
        super().__init__()
        self.platform = platform
        self.live = live
        self.used: dict = {}      # space -> high-water mark (bytes)
        self.tiles: dict = {}
        self.blocks: dict = {}    # space -> [(addr, size, owner id)] of placed buffers
        self.owner_end: dict = {}  # owner id -> position of its buffer's last use

    def _fit(self, v: Var, space, size: int) -> int:
        pos = self.live.defs.get(id(v), 0)
        blocks = self.blocks.setdefault(space, [])
        # In place: an elementwise result takes the exact buffer of a same-typed operand dying here.
        for o in self.live.inplace.get(id(v), ()):
            for addr, bsize, owner in blocks:
                if owner == self.live.owner(o) and bsize == size and self.owner_end[owner] <= pos:
                    return addr
        busy = sorted((addr, bsize) for addr, bsize, owner in blocks if self.owner_end[owner] >= pos)
        addr = 0
        for baddr, bsize in busy:
            if addr + size <= baddr:
                break
            addr = max(addr, baddr + bsize)
        return addr

    def place(self, v: Var, memref: MemRef | None = None) -> Var:
        t = v.type
        if not isinstance(t, TileType) or t.memref is not None:
            return v
        if memref is None:
            space = t.memory_space
            align = self.platform.align(space)
            size = -(-t.nbytes // align) * align
            addr = self._fit(v, space, size)
            owner = self.live.owner(id(v))
            self.owner_end[owner] = max(self.owner_end.get(owner, -1), self.live.end_of(owner))
            self.blocks[space].append((addr, size, owner))
            self.used[space] = max(self.used.get(space, 0), addr + size)
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


class _Liveness:
    """Positions of definitions and last uses of the tile Vars of one function (by ``id``).

    A loop's iter_args and return_vars form one buffer (an "owner"), live from the loop's start to
    the last use of any of them; a value read inside a loop body but defined before it stays live
    until the loop ends; an if's return_vars are live from the start of the if.
    """

    def __init__(self, f: Function):
        self.pos = 0
        self.defs: dict[int, int] = {}
        self.last: dict[int, int] = {}
        self.alias: dict[int, int] = {}          # var id -> owner id
        self.inplace: dict[int, tuple] = {}      # result id -> ids of same-typed operands
        self.loops: list[tuple[int, int, set]] = []  # (start, end, ids used in body)
        self.block(f.body)
        for start, end, used in self.loops:
            for i in used:
                if self.defs.get(i, -1) < start:
                    self.last[i] = max(self.last.get(i, -1), end)

    def owner(self, i: int) -> int:
        return self.alias.get(i, i)

    def end_of(self, owner: int) -> int:
        return max([self.last.get(i, self.defs.get(i, 0)) for i, o in self.alias.items() if o == owner]
                   + [self.last.get(owner, self.defs.get(owner, 0))])

    def define(self, v: Var) -> None:
        self.defs[id(v)] = self.pos

    def use(self, exprs) -> set:
        ids = set()
        for e in exprs:
            for x in walk_expr(e):
                if isinstance(x, Var):
                    ids.add(id(x))
                    self.last[id(x)] = max(self.last.get(id(x), -1), self.pos)
        return ids

    def block(self, stmts) -> set:
        used = set()
        for s in stmts:
            self.pos += 1
            used |= self.use(use_exprs(s))
            if isinstance(s, AssignStmt):
                self.define(s.var)
                t = s.var.type
                if isinstance(s.value, Call) and isinstance(t, TileType) and get_op(s.value.op).inplace_safe:
                    self.inplace[id(s.var)] = tuple(
                        id(a) for a in s.value.args if isinstance(a, Var) and isinstance(a.type, TileType)
                        and a.type.shape == t.shape and a.type.dtype == t.dtype)
            elif isinstance(s, ForStmt):
                start = self.pos
                for it, rv in zip(s.iter_args, s.return_vars):
                    self.define(it)
                    self.alias[id(rv)] = id(it)
                self.define(s.loop_var)
                body_used = self.block(s.body)
                self.pos += 1
                for it in s.iter_args:
                    self.last[id(it)] = max(self.last.get(id(it), -1), self.pos)
                for rv in s.return_vars:
                    self.define(rv)
                self.loops.append((start, self.pos, body_used))
                used |= body_used
            elif isinstance(s, IfStmt):
                for rv in s.return_vars:
                    self.define(rv)
                used |= self.block(s.then_body)
                used |= self.block(s.else_body)
            elif isinstance(s, ScopeStmt):
                used |= self.block(s.body)
        return used
