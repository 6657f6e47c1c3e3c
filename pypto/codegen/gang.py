"""The lockstep form of a kernel: several tasks of it at once, one torch call per instruction.

Tasks of one kernel run the same instruction stream on their cores. When the stream cannot depend
on the task — loops and ``if`` only on values that are the same for every task, and no tile
instruction reading a per-task scalar (the offsets and valid extents of global-memory accesses may)
— the simulator may run a *gang* of such tasks on adjacent cores in lockstep: every tile view gains
a leading axis over those cores (``[n, *shape]``:
the same bytes of each core's memory, see :mod:`pypto.runtime.cores`), every vector instruction is
the same torch call on those views, and the global-memory accesses of the gang are one strided copy
per run of evenly spaced regions (``_pto.gang_load_into`` / ``_pto.gang_store``). One call over
``n`` tiles costs a fraction of ``n`` calls (dispatch is paid once, and torch spreads a large call
over the host's threads).

Bits do not change: only ops with a ``Lockstep`` trait are allowed: elementwise, broadcast and
reduction ops (``"rows"``) loop over each tile's trailing dimensions exactly as for one tile (the
runtime picks gang sizes that keep torch's thread split on tile boundaries,
:func:`pypto.runtime.gangs.gang_size`); data movement (``"copy"``) is exact however it is split;
matmul (``"gang"``) makes each task's own BLAS call. tests/runtime/test_lockstep_bits.py runs every
such op both ways (special values, odd shapes, one and two threads) and compares bits.

The generated module then also defines (next to ``TILES`` and ``kernel``):

* ``GANG_PLAN(params...)``: for one task, ``(site, arguments)`` of each global-memory access in
  the order the task makes them (load: ``(tensor, offsets, valid)``; store: ``(offsets, tensor,
  valid)``; ``site`` indexes ``GANG_GM``);
* ``GANG_NUMEL``: elements of the largest tile an op of kind ``"rows"`` touches (the runtime sizes
  gangs by it, :func:`pypto.runtime.gangs.gang_size`);
* ``GANG_GM``: per global-memory access site ``("r" | "w", tile shape)``; with a plan, the task's
  global-memory footprint. The scheduler gangs only tasks whose footprints do not conflict (no task
  writes what another reads or writes), so lockstep is indistinguishable from any interleaving of them;
* ``kernel_gang(v, P)``: the gang kernel (``v`` the gang views, ``P`` the members' plans); it yields
  the same cycles at the same points as ``kernel``.

``GANG = True`` when those exist; otherwise ``GANG = False`` and ``GANG_WHY`` says why (e.g. which
op has no lockstep form), so a user wondering why a kernel is slow can read it in the kernel module.
"""
from __future__ import annotations

import math

from pypto.codegen.common import py_expr, py_literal
from pypto.ir.nodes import (
    AssignStmt, BinOp, Call, ConstBool, ConstFloat, ConstInt, EvalStmt, ForStmt, IfStmt, ReturnStmt, Stmt, UnaryOp,
    Var, YieldStmt,
)
from pypto.ir.types import ScalarType, TensorType, TileType
from pypto.ir.visit import walk_expr
from pypto.language.enums import AtomicType
from pypto.ops.registry import VALUE_KINDS, Src, get_op
from pypto.ops.traits import GlobalMemoryAccess, Lockstep, Scratch


class NoGang(Exception):
    """The kernel has no lockstep form; the message says why."""


def _static(dims) -> bool:
    return dims is None or all(type(d) is int for d in dims)


class GangGen:
    """Generates ``GANG_PLAN``, ``GANG_GM`` and ``kernel_gang`` for a kernel :class:`KernelGen` has
    generated (it shares that generator's tile table, so ``v[i]`` means the same tile).

    Both functions follow the kernel's statements: the plan keeps the scalar work and records the
    arguments of each global-memory access, the gang kernel keeps the tile work and the yields.
    Loops whose bounds do not depend on the task (constants, or the variables of enclosing such
    loops: *uniform* values) appear in both, so every member makes the same accesses in the same
    order; the gang kernel takes the ``c``-th access's arguments from every member's ``c``-th plan
    entry."""

    def __init__(self, kgen):
        self.k = kgen
        self.names = type(kgen.names)()
        self.body: list[str] = []
        self.plan: list[str] = []
        self.gm: list[tuple[str, tuple]] = []   # per access site: ("r" | "w", tile shape)
        self.pending = 0
        self.numel = 0        # elements of the largest tile a "rows" op touches
        self.uniform: set[int] = set()   # ids of the scalar Vars that are the same for every task
        # scalar parameters the gang kernel reads directly (a tile op's scalar operand, an ``if`` on a
        # flag): ``GANG_SAME`` lists their positions; the runtime gangs only members whose values of
        # them are identical and passes the first member's arguments to ``kernel_gang``
        self.params: dict[int, int] = {}
        self.same: set[int] = set()
        self.depth = 1
        self.spans: list[tuple[int, object]] = []   # (index into self.body, Span) per instruction

    # -- eligibility and emission -------------------------------------------------------------
    def generate(self) -> str:
        f = self.k.f
        params = [self.names.define(p) for p in f.params]
        for i, p in enumerate(f.params):
            if not isinstance(p.type, (ScalarType, TensorType)):
                raise NoGang(f"parameter '{p.name}' is a {type(p.type).__name__}")
            # float and bool parameters (a scale, an is-first flag: usually the same for the tasks
            # ready together); integer ones are usually the task's index, for which a shared-value
            # gang would almost never form, so they keep refusing the lockstep form
            if isinstance(p.type, ScalarType) and (p.type.dtype.is_float() or p.type.dtype.name == "BOOL"):
                self.params[id(p)] = i
        for s in f.body:
            self.stmt(s)
        self.flush()
        lines = [
            "GANG = True",
            f"GANG_NUMEL = {self.numel}  # elements of the largest tile a per-row op touches (gang sizing)",
            "GANG_GM = [  # per global-memory access site: read / write, tile shape",
            *[f"    ({k!r}, {shape!r})," for k, shape in self.gm], "]", "", "",
            f"def GANG_PLAN({''.join(p + ', ' for p in params)}_block=(0, 1)):",
            "    \"\"\"(access site, its arguments) of each global-memory access of one task, in order.\"\"\"",
            "    E = []",
            *self.plan,
            "    return E", "", "",
            f"GANG_SAME = {tuple(sorted(self.same))!r}  # scalar parameters every member must share (bits)",
            "",
            "",
            *([f"def kernel_gang(v, P, {''.join(p + ', ' for p in params)}_block=(0, 1)):"] if self.same
              else ["def kernel_gang(v, P):"]),
            "    \"\"\"The kernel for a gang of tasks in lockstep (v: gang views, P: their GANG_PLANs).\"\"\"",
            "    _c = 0",
            *self.body,
            "    return None",
            "    if False:",
            "        yield 0",
        ]
        first = lines.index("    _c = 0") + 1     # where self.body starts in ``lines``
        # line (0-based, within this text) -> span of the instruction it implements
        self.line_spans = {first + i: sp for i, sp in self.spans}
        return "\n".join(lines) + "\n"

    def emit(self, text: str) -> None:
        self.body.append("    " * self.depth + text)

    def span(self, c: Call) -> None:
        """The next gang-kernel line implements ``c`` (SPANS, for locating faults)."""
        if not c.span.is_unknown():
            self.spans.append((len(self.body), c.span))

    def emit_plan(self, text: str) -> None:
        self.plan.append("    " * self.depth + text)

    def flush(self) -> None:
        if self.pending:
            self.emit(f"yield {self.pending}")
            self.pending = 0

    def is_uniform(self, e) -> bool:
        """No Var in ``e`` but uniform ones (``e`` is the same for every task)."""
        return e is None or all(id(x) in self.uniform for x in walk_expr(e) if isinstance(x, Var))

    def is_shared(self, e) -> bool:
        """``e`` is uniform but for scalar parameters, which then join ``GANG_SAME`` (asked only
        where the gang kernel reads ``e``: a parameter used in addresses alone stays per task)."""
        if e is None:
            return True
        vs = [x for x in walk_expr(e) if isinstance(x, Var) and id(x) not in self.uniform]
        if not all(id(x) in self.params for x in vs):
            return False
        self.same.update(self.params[id(x)] for x in vs)
        return True

    def scalar(self, var: Var, value) -> None:
        """``var = value`` for a scalar: in the plan; also in the gang kernel when it is uniform."""
        text = f"{self.names.define(var)} = {py_expr(value, self.names)}"
        self.emit_plan(text)
        if self.is_uniform(value):
            self.uniform.add(id(var))
            self.emit(text)

    def tile_copy(self, dst: Var, src) -> None:
        self.tile_ref(dst)
        d, s = self.k.view(dst), self.k.view(src)
        if d != s:
            self.emit(f"{d}.copy_({s})")

    def stmts(self, stmts, yield_into=()) -> None:
        for s in stmts:
            self.stmt(s, yield_into)

    def stmt(self, s: Stmt, yield_into=()) -> None:
        if isinstance(s, AssignStmt):
            v = s.value
            if isinstance(v, Call):
                self.call(v, s.var)
            elif isinstance(s.var.type, TileType):
                self.tile_copy(s.var, v)
            elif isinstance(s.var.type, ScalarType) and isinstance(v, (Var, ConstInt, ConstFloat, ConstBool,
                                                                            BinOp, UnaryOp)):
                self.scalar(s.var, v)
            else:
                raise NoGang(f"line {s.span.line}: assignment of a {type(s.var.type).__name__}")
        elif isinstance(s, EvalStmt):
            if isinstance(s.expr, Call):
                self.call(s.expr, None)
        elif isinstance(s, ReturnStmt):
            self.flush()
        elif isinstance(s, ForStmt):
            self.for_stmt(s)
        elif isinstance(s, IfStmt):
            self.if_stmt(s)
        elif isinstance(s, YieldStmt):
            for dst, val in zip(yield_into, s.values):
                if isinstance(dst.type, TileType):
                    self.tile_copy(dst, val)
                else:
                    self.carry_scalar(dst, val)
        else:
            raise NoGang(f"line {s.span.line}: {type(s).__name__} (the instruction stream depends on the task)")

    def carry_scalar(self, dst: Var, val) -> None:
        """A loop-carried scalar: kept in the plan (addresses may use it); a task-dependent value
        for the gang kernel, which therefore never reads it."""
        self.emit_plan(f"{self.names.define(dst)} = {py_expr(val, self.names)}")

    def for_stmt(self, s: ForStmt) -> None:
        """A loop with uniform bounds: the same iterations in the plan and in the gang kernel, with
        the yields where ``kernel`` has them (before the loop and at the end of its body)."""
        if not all(self.is_shared(x) for x in (s.start, s.stop, s.step)):
            raise NoGang(f"line {s.span.line}: ForStmt whose bounds depend on the task")
        for it, init in zip(s.iter_args, s.init_values):
            if isinstance(it.type, TileType):
                self.tile_copy(it, init)
            else:
                self.carry_scalar(it, init)
        lv = self.names.define(s.loop_var)
        self.uniform.add(id(s.loop_var))
        rng = ", ".join(py_expr(x, self.names) for x in (s.start, s.stop, s.step))
        self.flush()
        self.emit(f"for {lv} in range({rng}):")
        self.emit_plan(f"for {lv} in range({rng}):")
        self.depth += 1
        self.emit("pass")
        self.emit_plan("pass")
        self.stmts(s.body, s.iter_args)
        self.flush()
        self.depth -= 1
        for rv, it in zip(s.return_vars, s.iter_args):
            if not isinstance(rv.type, TileType):
                self.emit_plan(f"{self.names.define(rv)} = {self.names.use(it)}")

    def if_stmt(self, s: IfStmt) -> None:
        """An ``if`` on a uniform condition (e.g. ``k == 0`` on a loop variable): the same branch for
        every task, in the plan and in the gang kernel. Emitted as ``kernel`` emits it (no yield at
        the branches' edges), so the yields stay the same."""
        if not self.is_shared(s.cond):
            raise NoGang(f"line {s.span.line}: IfStmt whose condition depends on the task")
        cond = py_expr(s.cond, self.names)
        for head, body in ((f"if {cond}:", s.then_body), ("else:", s.else_body)):
            self.emit(head)
            self.emit_plan(head)
            self.depth += 1
            self.emit("pass")
            self.emit_plan("pass")
            self.stmts(body, s.return_vars)
            self.depth -= 1

    def tile_ref(self, v: Var) -> None:
        t = v.type
        if not (_static(t.shape) and _static(t.valid_shape)):
            raise NoGang(f"tile '{v.name}' has a dynamic shape")

    def call(self, c: Call, result: Var | None) -> None:
        op = get_op(c.op, c.span)
        k = self.k
        gm, lockstep = op.trait(GlobalMemoryAccess), op.trait(Lockstep)
        form = lockstep.form if lockstep is not None else None
        if gm is None and lockstep is None:
            raise NoGang(f"line {c.span.line}: {op.name} has no lockstep form")
        if form == "plan":
            # a per-task scalar (the block index, a tensor's extent): computed in each member's plan,
            # so only addresses and extents of global-memory accesses may use it
            if result is None or isinstance(result.type, TileType):
                raise NoGang(f"line {c.span.line}: {op.name} must produce a scalar")
            plan_args = [Src(py_expr(a, self.names), getattr(a, "type", None)) if p.kind in VALUE_KINDS
                         else Src(py_literal(a), None) for p, a in zip(op.params, c.args)]
            self.emit_plan(f"{self.names.define(result)} = {op.sim(op.args(tuple(plan_args)), None)}")
            return
        args = []
        for p, a in zip(op.params, c.args):
            if p.kind in VALUE_KINDS:
                if isinstance(a, Var) and isinstance(a.type, TileType):
                    self.tile_ref(a)
                    args.append(Src(k.view(a), a.type))
                elif gm is not None or self.is_shared(a):
                    args.append(Src(py_expr(a, self.names) if a is not None else "None", getattr(a, "type", None)))
                else:
                    raise NoGang(f"line {c.span.line}: {op.name} reads a per-task value")
            else:
                if p.kind_def.exprs and gm is None and not self.is_shared(a):
                    raise NoGang(f"line {c.span.line}: {op.name} takes a per-task index")
                args.append(p.kind_def.source(a, lambda e: py_expr(e, self.names)))
        a = op.args(tuple(args))
        if gm is not None:
            self.gm_access(op, a, c, result)
            return
        if result is not None and not isinstance(result.type, TileType):
            raise NoGang(f"line {c.span.line}: {op.name} produces a scalar")
        kw = {} if not op.has(Scratch) or id(c) not in k.dead_scratch else {"keep_scratch": False}
        dst = None
        if result is not None:
            self.tile_ref(result)
            dst = Src(k.view(result), result.type)
        self.span(c)
        if form == "gang":
            self.emit(op.sim(a, dst, gang=True, **kw))
        else:
            self.emit(op.sim(a, dst, **kw))
            if form == "rows":
                for x in (*c.args, result):
                    if isinstance(x, Var) and isinstance(x.type, TileType):
                        self.numel = max(self.numel, math.prod(x.type.shape))
        self.pending += k.cost(c)

    def gm_access(self, op, a, c: Call, result: Var | None) -> None:
        """A load or store: the plan records its per-task arguments, the gang kernel makes it for
        every member with the members' entries of this access."""
        k = self.k
        site = len(self.gm)
        self.pending += k.cost(c)
        self.flush()
        if op.name == "tile.load" and getattr(c.args[0].type, "layout", None) is not None:
            # a packed MX scale tensor: its load unpacks the layout (_pto.load_mx_into), which the
            # gang's plain per-member copy would not
            raise NoGang(f"line {c.span.line}: a load from a packed {c.args[0].type.layout.name} tensor has no "
                         "lockstep form")
        if op.name == "tile.load":
            self.tile_ref(result)
            self.emit_plan(f"E.append(({site}, ({a.tensor}, {a.offsets}, {a.valid_shape})))")
            # the footprint is the valid region: a load reads, a store writes nothing else
            self.gm.append(("r", tuple(result.type.effective_valid_shape)))
            self.span(c)
            self.emit(f"_pto.gang_load_into({k.view(result)}, [p[_c][1] for p in P])")
        elif op.name == "tile.store" and a.atomic != repr(AtomicType.Add):
            tile = c.args[0]
            self.tile_ref(tile)
            valid = "None" if tile.type.valid_shape is None else repr(list(tile.type.valid_shape))
            self.emit_plan(f"E.append(({site}, ({a.offsets}, {a.tensor}, {valid})))")
            self.gm.append(("w", tuple(tile.type.effective_valid_shape)))
            self.span(c)
            self.emit(f"_pto.gang_store({a.tile}, [p[_c][1] for p in P])")
            if result is not None:   # the stored-into tensor, for later accesses of this task
                self.emit_plan(f"{self.names.define(result)} = {a.tensor}")
        else:
            raise NoGang(f"line {c.span.line}: {op.name}{' (atomic)' if op.name == 'tile.store' else ''} "
                         "has no lockstep form")
        self.emit("_c += 1")


def generate_gang(kgen) -> str:
    """Module source that follows the kernel's own: the lockstep form, or ``GANG = False`` with the
    reason. Sets ``kgen.gang_spans`` (0-based line within the returned text -> Span)."""
    kgen.gang_spans = {}
    try:
        g = GangGen(kgen)
        text = g.generate()
        kgen.gang_spans = g.line_spans
        return text
    except NoGang as e:
        return f"GANG = False\nGANG_WHY = {str(e)!r}\n"
