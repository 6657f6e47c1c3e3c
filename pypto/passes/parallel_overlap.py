"""Overlapping stores of the tasks of one ``pl.parallel`` loop (diagnostic PTO-W003).

The runtime orders tasks by the buffers they share, but a task that only writes a buffer (its
argument tagged ``OUTPUT_EXISTING``) looks nothing up: inside a ``pl.parallel`` loop that writes
an ``Out`` tensor, the tasks of different iterations are not ordered among themselves
(docs/language.md, "Task dependencies"). When their regions overlap, which write lands last depends
on the schedule — a race. This check finds such pairs at compile time from the frontend's SSA form:

* the loop is a ``pl.parallel`` loop with constant bounds, not inside a sequential loop (there
  DeriveCallDirections promotes every ``Out`` to ``INOUT`` and the tasks chain);
* a task (a ``pl.at`` scope directly in the loop body) writes a tensor with ``x[...] = e``,
  ``pl.assemble`` or ``pl.store``, and would be submitted ``OUTPUT_EXISTING``: it is the first
  writer of that tensor in the body, nothing before the loop wrote it, the tensor is not rooted at
  an ``InOut`` parameter, and the task does not also read it (mirrors R-prior / R-enclosing);
* some write of the same tensor in another iteration (by any task of the body) overlaps it. Offsets
  must be computable from the loop variable and constants (others are skipped: no false alarm);
  the first :data:`MAX_TRIPS` iterations are compared.

Both stores are reported (each names the other), or one when a store overlaps itself across
iterations. A warning, not an error: the user may know the overlapping values are equal.
"""
from __future__ import annotations

from pypto.ir.nodes import (
    AssignStmt, BinOp, Call, ConstInt, ForStmt, Function, IfStmt, MakeTuple, Program, ScopeStmt, UnaryOp, Var,
    WhileStmt,
)
from pypto.ir.types import ScalarType
from pypto.ir.visit import iter_stmts, use_exprs, walk_expr
from pypto.language.enums import ForKind, ParamDirection

MAX_TRIPS = 256
_TARGET = {"tensor.assemble": (0, 1), "tile.store": (2, 0)}   # op -> (written arg, arg whose shape is written)
_INT_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
            "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b, "min": min, "max": max}


class _Unknown(Exception):
    pass


def find(program: Program) -> list:
    """``[(span, message)]`` for every racing store (see the module docstring)."""
    found = []
    for f in program.functions:
        found.extend(_Function(f).run())
    return found


class _Function:
    def __init__(self, f: Function):
        self.f = f
        self.defs: dict[int, object] = {}   # id(scalar Var) -> its defining expression (SSA)
        for s in iter_stmts(f.body):
            if isinstance(s, AssignStmt) and isinstance(s.var.type, ScalarType):
                self.defs[id(s.var)] = s.value
        self.inout = {id(p) for p, d in zip(f.params, f.directions) if d == ParamDirection.InOut}
        self.root: dict[int, int] = {id(p): id(p) for p in f.params}

    # ------------------------------------------------------------------ scalar evaluation
    def value(self, e, env: dict) -> int:
        if isinstance(e, ConstInt):
            return e.value
        if isinstance(e, Var):
            if id(e) in env:
                return env[id(e)]
            if id(e) in self.defs:
                return self.value(self.defs[id(e)], env)
            raise _Unknown
        if isinstance(e, BinOp) and e.op in _INT_OPS:
            a, b = self.value(e.lhs, env), self.value(e.rhs, env)
            if e.op in ("floordiv", "mod") and b == 0:
                raise _Unknown
            return _INT_OPS[e.op](a, b)
        if isinstance(e, UnaryOp) and e.op == "neg":
            return -self.value(e.operand, env)
        raise _Unknown

    # ------------------------------------------------------------------ walk
    def run(self) -> list:
        self.found: list = []
        self.walk(self.f.body, seq=0, written=[set()])
        return self.found

    def root_of(self, v):
        return self.root.get(id(v)) if isinstance(v, Var) else None

    def track(self, s) -> list[int]:
        """Update roots for ``s``; the roots it writes."""
        out = []
        if isinstance(s, AssignStmt) and isinstance(s.value, Call):
            c = s.value
            if c.op in _TARGET:
                r = self.root_of(c.args[_TARGET[c.op][0]])
                if r is not None:
                    self.root[id(s.var)] = r
                    out.append(r)
            elif c.op == "tensor.create":
                self.root[id(s.var)] = id(s.var)
            elif c.op == "tensor.slice" and self.root_of(c.args[0]) is not None:
                self.root[id(s.var)] = self.root_of(c.args[0])
        elif isinstance(s, AssignStmt) and isinstance(s.value, Var) and self.root_of(s.value) is not None:
            self.root[id(s.var)] = self.root_of(s.value)
        elif isinstance(s, (ForStmt, WhileStmt)):
            for it, init, rv in zip(s.iter_args, s.init_values, s.return_vars):
                if self.root_of(init) is not None:
                    self.root[id(it)] = self.root[id(rv)] = self.root_of(init)
        return out

    def walk(self, stmts, seq: int, written: list) -> None:
        for s in stmts:
            if isinstance(s, ForStmt):
                self.track(s)
                inner = set()
                if s.kind == ForKind.Parallel and seq == 0:
                    self.parallel(s, written)
                self.walk(s.body, seq + (s.kind != ForKind.Parallel), written + [inner])
                written[-1] |= inner
            elif isinstance(s, WhileStmt):   # a sequential loop
                self.track(s)
                inner = set()
                self.walk(s.body, seq + 1, written + [inner])
                written[-1] |= inner
            elif isinstance(s, IfStmt):
                for body in (s.then_body, s.else_body):
                    inner = set()
                    self.walk(body, seq, written + [inner])
                    written[-1] |= inner
            elif isinstance(s, ScopeStmt):
                for t in iter_stmts(s.body):
                    written[-1].update(self.track(t))
            else:
                written[-1].update(self.track(s))

    # ------------------------------------------------------------------ one parallel loop
    def parallel(self, loop: ForStmt, written_before: list) -> None:
        try:
            start, stop, step = (self.value(x, {}) for x in (loop.start, loop.stop, loop.step))
        except _Unknown:
            return
        if step == 0:
            return
        trips = list(range(start, stop, step))[:MAX_TRIPS]
        if len(trips) < 2:
            return
        before = set().union(*written_before)
        saved = dict(self.root)
        # per task scope directly in the body: its stores [(root, stmt, call)], whether it reads each root
        tasks = []
        for s in loop.body:
            if isinstance(s, (ForStmt, WhileStmt)):
                self.track(s)
            elif not isinstance(s, ScopeStmt):
                self.track(s)
                continue
            if not isinstance(s, ScopeStmt):
                continue
            stores, targets = [], set()
            for t in iter_stmts(s.body):
                if isinstance(t, AssignStmt) and isinstance(t.value, Call) and t.value.op in _TARGET:
                    r = self.root_of(t.value.args[_TARGET[t.value.op][0]])
                    if r is not None:
                        stores.append((r, t, t.value))
                        targets.add(id(t.value.args[_TARGET[t.value.op][0]]))
                self.track(t)
            roots = {r for r, _, _ in stores}
            reads = set()
            for t in iter_stmts(s.body):
                for e in use_exprs(t):
                    for x in walk_expr(e):
                        if isinstance(x, Var) and id(x) not in targets and self.root_of(x) in roots:
                            reads.add(self.root_of(x))
            tasks.append((stores, reads))
        self.root = saved
        first: dict[int, int] = {}    # root -> index of the first task of the body writing it
        for k, (stores, _) in enumerate(tasks):
            for r, _, _ in stores:
                first.setdefault(r, k)
        reported = set()
        for k, (stores, reads) in enumerate(tasks):
            for r, st, c in stores:
                # only a task submitted OUTPUT_EXISTING fails to wait (see the module docstring)
                if first[r] != k or r in reads or r in before or r in self.inout:
                    continue
                for k2, (stores2, _) in enumerate(tasks):
                    for r2, st2, c2 in stores2:
                        if r2 != r or (id(st), id(st2)) in reported or (id(st2), id(st)) in reported:
                            continue
                        hit = self.overlap(loop, trips, c, c2)
                        if hit is None:
                            continue
                        reported.add((id(st), id(st2)))
                        self.report(loop, st, st2, hit)

    def box(self, loop: ForStmt, c: Call, i: int):
        """Per dimension (lo, hi) of the region the write ``c`` covers in iteration ``i``."""
        wi, si = _TARGET[c.op]
        offs = c.args[1] if c.op == "tile.store" else c.args[2]
        t = c.args[si].type
        # a store writes the tile's valid region only (a gemv result: [1, N] of a [16, N] tile)
        shape = getattr(t, "effective_valid_shape", None) if c.op == "tile.store" else None
        shape = shape if shape is not None else getattr(t, "shape", None)
        if not isinstance(offs, MakeTuple) or shape is None or len(offs.elements) != len(shape):
            raise _Unknown
        env = {id(loop.loop_var): i}
        out = []
        for e, n in zip(offs.elements, shape):
            if not isinstance(n, int):
                raise _Unknown
            lo = self.value(e, env)
            out.append((lo, lo + n))
        return out

    def overlap(self, loop: ForStmt, trips, c1: Call, c2: Call):
        """``(i, j)``, two iterations i != j where write ``c1`` of i overlaps ``c2`` of j, or None."""
        try:
            b1 = [self.box(loop, c1, i) for i in trips]
            b2 = b1 if c2 is c1 else [self.box(loop, c2, i) for i in trips]
        except _Unknown:
            return None
        for a, x in enumerate(b1):
            for b, y in enumerate(b2):
                if a != b and all(lo1 < hi2 and lo2 < hi1 for (lo1, hi1), (lo2, hi2) in zip(x, y)):
                    return trips[a], trips[b]
        return None

    def report(self, loop, st, st2, hit) -> None:
        i, j = hit
        var = loop.loop_var.name
        tail = ("the tasks of a pl.parallel loop that only write a tensor are not ordered among themselves, so "
                "the result depends on the schedule. Give each iteration a disjoint region, make the loop "
                "sequential (pl.range), or declare the tensor pl.InOut")
        if st is st2:
            self.found.append((st.span, f"this store overlaps itself across iterations of the pl.parallel loop "
                                        f"(e.g. {var}={i} and {var}={j}): {tail}"))
            return
        where2, where1 = _where(st2.span), _where(st.span)
        self.found.append((st.span, f"this store (iteration {var}={i}) overlaps the store at {where2} "
                                    f"(iteration {var}={j}) of the same pl.parallel loop: {tail}"))
        self.found.append((st2.span, f"this store (iteration {var}={j}) overlaps the store at {where1} "
                                     f"(iteration {var}={i}) of the same pl.parallel loop: {tail}"))


def _where(span) -> str:
    return str(span) if span.line > 0 else "another line"
