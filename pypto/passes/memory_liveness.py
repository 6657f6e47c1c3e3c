"""Tile lifetimes and MemRef rewriting shared by the memory passes (InitMemRef, MemoryReuse,
AllocateMemoryAddr) and the memory-map tool. Not a pass: it has no ``NAME``.

Lifetimes are intervals of statement positions. Statements of an InCore function are numbered in
program order (a loop or if occupies one position at its head, then its body; a loop also one
position after its body, where its results are defined). A tile is live from its definition to its
last use, closed at both ends, so two tiles overlap when their intervals share any position; a tile
read inside a loop but defined before it stays live to the loop's end (the next iteration reads it
again); a loop's iter_args are live over the whole loop and an if's results over the whole if. The verifier's NoLiveOverlap check derives
liveness again, independently, from the same rules (:mod:`pypto.ir.verifier`).

Two tiles may touch at one position, i.e. share bytes although their intervals meet, only as a
*hand-off*: the first dies at the statement that defines the second, and that statement is

* an ``inplace_safe`` elementwise op with the first as a same-shape, same-dtype operand (the op
  writes its result over the operand it has just read), or
* a loop whose iter_arg is initialised from the first (same shape and dtype: the initial value is
  already in the carried buffer, so the copy into it disappears).
"""
from __future__ import annotations

from pypto.ir.nodes import AssignStmt, Call, ForStmt, Function, IfStmt, ScopeStmt, Var, WhileStmt
from pypto.ir.types import MemRef, TileType
from pypto.ir.visit import Mutator, use_exprs, walk_expr
from pypto.ops.registry import get_op
from pypto.ops.traits import InPlaceSafe


class Liveness:
    """Definition positions, last uses and hand-off partners of the tile Vars of one function.

    ``start[id]`` / ``end[id]``: the closed live interval of each tile Var (keys are ``id(var)``);
    ``var[id]``: the Var; ``order``: tile ids in definition order; ``partners[id]``: ids of the tiles
    that may hand their bytes over to this one (see the module docstring); ``carried``: pairs
    ``(iter_arg, return_var)`` of loops, which always share one buffer (the generated kernel reads
    a loop's result from the carried buffer); ``sites[pos]``: what position ``pos`` is, ``("stmt",
    s)`` for a statement or ``("end", loop)`` for the position after a loop's body (the memory map
    labels its axis with these).
    """

    def __init__(self, f: Function):
        self.pos = 0
        self.start: dict[int, int] = {}
        self.end: dict[int, int] = {}
        self.var: dict[int, Var] = {}
        self.order: list[int] = []
        self.partners: dict[int, tuple[int, ...]] = {}
        self.carried: list[tuple[Var, Var]] = []
        self.sites: dict[int, tuple[str, object]] = {}  # position -> ("stmt" | "end", statement)
        self._loops: list[tuple[int, int, set]] = []   # (start, end, ids used in the body)
        self._block(f.body)
        for lo, hi, used in self._loops:
            for i in used:
                if i in self.start and self.start[i] < lo:
                    self.end[i] = max(self.end[i], hi)

    def interval(self, v: Var) -> tuple[int, int]:
        """The closed live interval of the tile ``v``."""
        return self.start[id(v)], self.end[id(v)]

    def _define(self, v: Var) -> None:
        if isinstance(v.type, TileType) and id(v) not in self.start:
            self.start[id(v)] = self.end[id(v)] = self.pos
            self.var[id(v)] = v
            self.order.append(id(v))

    def _use(self, exprs) -> set:
        ids = set()
        for e in exprs:
            for x in walk_expr(e):
                if isinstance(x, Var) and id(x) in self.start:
                    ids.add(id(x))
                    self.end[id(x)] = max(self.end[id(x)], self.pos)
        return ids

    def _block(self, stmts) -> set:
        used: set = set()
        for s in stmts:
            self.pos += 1
            self.sites[self.pos] = ("stmt", s)
            used |= self._use(use_exprs(s))
            if isinstance(s, AssignStmt):
                self._define(s.var)
                t = s.var.type
                op = get_op(s.value.op) if isinstance(s.value, Call) else None
                if op is not None and isinstance(t, TileType) and op.has(InPlaceSafe):
                    # an op that updates one operand (tile.assemble's target) may write over that
                    # one only: its other operands are read after the result's first bytes land
                    args = s.value.args if op.updates is None else \
                        (s.value.args[[p.name for p in op.params].index(op.updates)],)
                    self.partners[id(s.var)] = tuple(
                        id(a) for a in args if isinstance(a, Var) and _same_storage(a.type, t))
            elif isinstance(s, (ForStmt, WhileStmt)):   # (a while's condition reads scalars only)
                lo = self.pos
                for it, init, rv in zip(s.iter_args, s.init_values, s.return_vars):
                    self._define(it)
                    if isinstance(it.type, TileType):
                        self.carried.append((it, rv))
                        if isinstance(init, Var) and _same_storage(init.type, it.type):
                            self.partners[id(it)] = (id(init),)
                body_used = self._block(s.body)
                self.pos += 1
                self.sites[self.pos] = ("end", s)      # the loop's results are defined here
                for it in s.iter_args:
                    if id(it) in self.end:
                        self.end[id(it)] = max(self.end[id(it)], self.pos)
                for rv in s.return_vars:
                    self._define(rv)
                self._loops.append((lo, self.pos, body_used))
                used |= body_used
            elif isinstance(s, IfStmt):
                for rv in s.return_vars:
                    self._define(rv)
                used |= self._block(s.then_body)
                used |= self._block(s.else_body)
                # each branch writes the results at its yield, wherever in the if that is: keep
                # them live over the whole if even when nothing reads them afterwards
                for rv in s.return_vars:
                    if id(rv) in self.end:
                        self.end[id(rv)] = max(self.end[id(rv)], self.pos)
            elif isinstance(s, ScopeStmt):
                used |= self._block(s.body)
        return used

    def hands_over(self, a: int, b: int) -> bool:
        """True when tile ``a`` may give its bytes to tile ``b``: a hand-off at ``b``'s definition."""
        return a in self.partners.get(b, ()) and self.end[a] == self.start[b]

    def clash(self, a: int, b: int) -> bool:
        """True when tiles ``a`` and ``b`` are live at the same time (a hand-off is not a clash)."""
        if self.start[a] > self.end[b] or self.start[b] > self.end[a]:
            return False
        return not (self.hands_over(a, b) or self.hands_over(b, a))


def _same_storage(a, b) -> bool:
    """Tiles of the same shape and dtype: one can take the other's bytes and view."""
    return isinstance(a, TileType) and isinstance(b, TileType) and a.shape == b.shape and a.dtype == b.dtype


def aligned(nbytes: int, align: int) -> int:
    """``nbytes`` rounded up to a multiple of ``align``."""
    return -(-nbytes // align) * align


class MemRefRewriter(Mutator):
    """Rebuilds a function giving each tile Var the MemRef ``memref_of(var)`` returns (``None``: keep).

    Every definition site of a tile is covered (assignment, loop iter_arg / return var, if return
    var); an assignment's call result type follows its Var, as the verifier's type check expects.
    """

    def __init__(self, memref_of):
        super().__init__()
        self.memref_of = memref_of

    def place(self, v: Var) -> Var:
        if not isinstance(v.type, TileType):
            return v
        m = self.memref_of(v)
        if m is None or m == v.type.memref:
            return v
        return self.redefine(v, Var(v.name, v.type.with_(memref=m), v.span))

    def visit_AssignStmt(self, s: AssignStmt):
        value = self.expr(s.value)
        var = self.place(s.var)
        if var is not s.var and isinstance(getattr(value, "type", None), TileType):
            value = value.replace(type=var.type)
        return s.replace(var=var, value=value)

    def visit_ForStmt(self, s: ForStmt):
        inits = tuple(self.expr(v) for v in s.init_values)
        its = tuple(self.place(v) for v in s.iter_args)
        body = self.stmts(s.body)
        rvs = tuple(self.place(v) for v in s.return_vars)
        return s.replace(start=self.expr(s.start), stop=self.expr(s.stop), step=self.expr(s.step),
                         init_values=inits, iter_args=its, body=body, return_vars=rvs)

    def visit_WhileStmt(self, s: WhileStmt):
        inits = tuple(self.expr(v) for v in s.init_values)
        its = tuple(self.place(v) for v in s.iter_args)
        cond = self.expr(s.cond)
        body = self.stmts(s.body)
        rvs = tuple(self.place(v) for v in s.return_vars)
        return s.replace(cond=cond, init_values=inits, iter_args=its, body=body, return_vars=rvs)

    def visit_IfStmt(self, s: IfStmt):
        tb, eb = self.stmts(s.then_body), self.stmts(s.else_body)
        rvs = tuple(self.place(v) for v in s.return_vars)
        return s.replace(cond=self.expr(s.cond), then_body=tb, else_body=eb, return_vars=rvs)


def with_memref(m: MemRef, **changes) -> MemRef:
    """A copy of ``m`` with some fields replaced (MemRefs are immutable)."""
    from dataclasses import replace

    return replace(m, **changes)
