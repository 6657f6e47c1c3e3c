"""The lockstep form of a kernel: several tasks of it at once, one torch call per instruction.

Tasks of one kernel run the same instruction stream on their cores. When the stream cannot depend
on the task — no control flow, and no instruction reading a per-task scalar except the offsets and
valid extents of its global-memory accesses — the simulator may run a *gang* of such tasks on
adjacent cores in lockstep: every tile view gains a leading axis over those cores (``[n, *shape]``:
the same bytes of each core's memory, see :mod:`pypto.runtime.cores`), every vector instruction is
the same torch call on those views, and the global-memory accesses of the gang are one strided copy
per run of evenly spaced regions (``_pto.gang_load_into`` / ``_pto.gang_store``). One call over
``n`` tiles costs a fraction of ``n`` calls (dispatch is paid once, and torch spreads a large call
over the host's threads).

Bits do not change: only ops with ``OpDef.batch`` set are allowed: elementwise, broadcast and
reduction ops (``"rows"``) loop over each tile's trailing dimensions exactly as for one tile (the
runtime picks gang sizes that keep torch's thread split on tile boundaries,
:func:`pypto.runtime.gangs.gang_size`); data movement (``"copy"``) is exact however it is split;
matmul (``"gang"``) makes each task's own BLAS call. tests/runtime/test_lockstep_bits.py runs every
such op both ways (special values, odd shapes, one and two threads) and compares bits.

The generated module then also defines (next to ``TILES`` and ``kernel``):

* ``GANG_PLAN(params...)``: for one task, the arguments of each global-memory access in program
  order (load: ``(tensor, offsets, valid)``; store: ``(offsets, tensor, valid)``);
* ``GANG_NUMEL``: elements of the largest tile an op of kind ``"rows"`` touches (the runtime sizes
  gangs by it, :func:`pypto.runtime.gangs.gang_size`);
* ``GANG_GM``: per global-memory access ``("r" | "w", tile shape)``; with a plan, the task's
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
    AssignStmt, BinOp, Call, ConstBool, ConstFloat, ConstInt, EvalStmt, ReturnStmt, Stmt, UnaryOp, Var,
)
from pypto.ir.types import ScalarType, TensorType, TileType
from pypto.ir.visit import walk_expr
from pypto.language.enums import AtomicType
from pypto.ops.registry import VALUE_KINDS, Src, get_op


class NoGang(Exception):
    """The kernel has no lockstep form; the message says why."""


def _static(dims) -> bool:
    return dims is None or all(type(d) is int for d in dims)


class GangGen:
    """Generates ``GANG_PLAN``, ``GANG_GM`` and ``kernel_gang`` for a kernel :class:`KernelGen` has
    generated (it shares that generator's tile table, so ``v[i]`` means the same tile)."""

    def __init__(self, kgen):
        self.k = kgen
        self.names = type(kgen.names)()
        self.body: list[str] = []
        self.plan: list[str] = []
        self.gm: list[tuple[str, tuple]] = []
        self.entries: list[str] = []
        self.pending = 0
        self.numel = 0   # elements of the largest tile a "rows" op touches

    # -- eligibility and emission -------------------------------------------------------------
    def generate(self) -> str:
        f = self.k.f
        params = [self.names.define(p) for p in f.params]
        for p in f.params:
            if not isinstance(p.type, (ScalarType, TensorType)):
                raise NoGang(f"parameter '{p.name}' is a {type(p.type).__name__}")
        for s in f.body:
            self.stmt(s)
        self.flush()
        plist = ", ".join(params)
        lines = [
            "GANG = True",
            f"GANG_NUMEL = {self.numel}  # elements of the largest tile a per-row op touches (gang sizing)",
            "GANG_GM = [", *[f"    ({k!r}, {shape!r})," for k, shape in self.gm], "]", "", "",
            f"def GANG_PLAN({plist}):",
            "    \"\"\"Arguments of each global-memory access of one task, in program order.\"\"\"",
            *["    " + ln for ln in self.plan],
            "    return (" + "".join(e + ", " for e in self.entries) + ")", "", "",
            "def kernel_gang(v, P):",
            "    \"\"\"The kernel for a gang of tasks in lockstep (v: gang views, P: their GANG_PLANs).\"\"\"",
            *self.body,
            "    return None",
            "    if False:",
            "        yield 0",
        ]
        return "\n".join(lines) + "\n"

    def emit(self, text: str) -> None:
        self.body.append("    " + text)

    def flush(self) -> None:
        if self.pending:
            self.emit(f"yield {self.pending}")
            self.pending = 0

    def stmt(self, s: Stmt) -> None:
        if isinstance(s, AssignStmt):
            v = s.value
            if isinstance(v, Call):
                self.call(v, s.var)
            elif isinstance(s.var.type, TileType):
                self.tile_ref(s.var)
                self.emit(f"{self.k.view(s.var)}.copy_({self.k.view(v)})" if self.k.view(s.var) != self.k.view(v)
                          else "pass")
            elif isinstance(s.var.type, ScalarType) and isinstance(v, (Var, ConstInt, ConstFloat, ConstBool,
                                                                            BinOp, UnaryOp)):
                self.plan.append(f"{self.names.define(s.var)} = {py_expr(v, self.names)}")
            else:
                raise NoGang(f"line {s.span.line}: assignment of a {type(s.var.type).__name__}")
        elif isinstance(s, EvalStmt):
            if isinstance(s.expr, Call):
                self.call(s.expr, None)
        elif isinstance(s, ReturnStmt):
            self.flush()
        else:
            raise NoGang(f"line {s.span.line}: {type(s).__name__} (the instruction stream depends on the task)")

    def tile_ref(self, v: Var) -> None:
        t = v.type
        if not (_static(t.shape) and _static(t.valid_shape)):
            raise NoGang(f"tile '{v.name}' has a dynamic shape")

    def call(self, c: Call, result: Var | None) -> None:
        op = get_op(c.op, c.span)
        k = self.k
        if op.gm is None and op.batch is None:
            raise NoGang(f"line {c.span.line}: {op.name} has no lockstep form")
        args = []
        for p, a in zip(op.params, c.args):
            if p.kind in VALUE_KINDS:
                if isinstance(a, Var) and isinstance(a.type, TileType):
                    self.tile_ref(a)
                    args.append(Src(k.view(a), a.type))
                elif op.gm is not None:
                    args.append(Src(py_expr(a, self.names), getattr(a, "type", None)))
                elif a is None or not any(isinstance(x, Var) for x in walk_expr(a)):
                    args.append(Src(py_expr(a, self.names) if a is not None else "None", getattr(a, "type", None)))
                else:
                    raise NoGang(f"line {c.span.line}: {op.name} reads a per-task value")
            elif p.kind == "ints":
                if op.gm is None and a is not None and any(isinstance(x, Var) for x in walk_expr(a)):
                    raise NoGang(f"line {c.span.line}: {op.name} takes a per-task index")
                args.append(Src(py_expr(a, self.names), None))
            else:
                args.append(Src(py_literal(a), None))
        a = op.args(tuple(args))
        if op.gm is not None:
            self.gm_access(op, a, c, result)
            return
        if result is not None and not isinstance(result.type, TileType):
            raise NoGang(f"line {c.span.line}: {op.name} produces a scalar")
        kw = {} if op.scratch is None or id(c) not in k.dead_scratch else {"keep_scratch": False}
        dst = None
        if result is not None:
            self.tile_ref(result)
            dst = Src(k.view(result), result.type)
        if op.batch == "gang":
            self.emit(op.sim(a, dst, gang=True, **kw))
        else:
            self.emit(op.sim(a, dst, **kw))
            if op.batch == "rows":
                for x in (*c.args, result):
                    if isinstance(x, Var) and isinstance(x.type, TileType):
                        self.numel = max(self.numel, math.prod(x.type.shape))
        self.pending += k.cost(c)

    def gm_access(self, op, a, c: Call, result: Var | None) -> None:
        """A load or store: its per-task arguments go into the plan, the gang call into the body."""
        k = self.k
        i = len(self.entries)
        self.pending += k.cost(c)
        self.flush()
        if op.name == "tile.load":
            self.tile_ref(result)
            self.entries.append(f"({a.tensor}, {a.offsets}, {a.valid_shape})")
            self.gm.append(("r", tuple(result.type.shape)))
            self.emit(f"_pto.gang_load_into({k.view(result)}, [p[{i}] for p in P])")
        elif op.name == "tile.store" and a.atomic != repr(AtomicType.Add):
            tile = c.args[0]
            self.tile_ref(tile)
            valid = "None" if tile.type.valid_shape is None else repr(list(tile.type.valid_shape))
            self.entries.append(f"({a.offsets}, {a.tensor}, {valid})")
            self.gm.append(("w", tuple(tile.type.shape)))
            self.emit(f"_pto.gang_store({a.tile}, [p[{i}] for p in P])")
            if result is not None:   # the stored-into tensor, for later accesses of this task
                self.plan.append(f"{self.names.define(result)} = {a.tensor}")
        else:
            raise NoGang(f"line {c.span.line}: {op.name}{' (atomic)' if op.name == 'tile.store' else ''} "
                         "has no lockstep form")


def generate_gang(kgen) -> str:
    """Module source that follows the kernel's own: the lockstep form, or ``GANG = False`` with the
    reason."""
    try:
        return GangGen(kgen).generate()
    except NoGang as e:
        return f"GANG = False\nGANG_WHY = {str(e)!r}\n"
