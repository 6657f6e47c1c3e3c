"""Lowered InCore function -> a Python kernel module the simulator runs.

The module defines ``TILES`` — ``(space, addr, shape, dtype)`` of every tile the kernel uses, so the
simulator can build each core's views once — and ``kernel(v, *params)``, a generator: ``v`` is the
list of tile views (slices of that core's memory at the allocated addresses), bound to named locals
at the top of the function; tensor parameters are global-memory tensors. Every instruction is one
vectorised torch call from the op registry's ``sim`` entry, followed by a ``# file:line`` comment
naming the kernel source line it implements; before each global-memory access the kernel yields the
simulated cycles spent since its previous yield plus the transfer's, which is where the scheduler
may switch cores: the access itself then happens at the simulated time the transfer completes.

One walker, :class:`KernelGen`, generates both forms of a kernel: ``mode="task"`` the ``kernel``
function above (one task on one core), ``mode="gang"`` its lockstep form (``GANG_PLAN`` and
``kernel_gang``, :mod:`pypto.codegen.gang`), which walks the same statements with the same tile
table and the same yields. Both inherit the structured statements from
:class:`~pypto.codegen.common.StmtEmitter`, the walker of the host-side generators too.
"""
from __future__ import annotations

import math
import os

from pypto.codegen.common import StmtEmitter, operand_src, py_expr, py_literal
from pypto.codegen.first_use import zero_first
from pypto.codegen.gang import NoGang, as_generator, generate_gang, static_dims
from pypto.codegen.scratch import dead_scratch_calls, fused_transposes
from pypto.errors import CodegenError
from pypto.ir.nodes import (
    AssignStmt, BinOp, Call, ConstBool, ConstFloat, ConstInt, EvalStmt, ForStmt, Function, IfStmt, Stmt, UnaryOp,
    Var, WhileStmt,
)
from pypto.ir.pysource import sanitize
from pypto.ir.types import ScalarType, TensorType, TileType
from pypto.ir.visit import iter_calls, walk_expr
from pypto.language.dtypes import dtype_from_name
from pypto.language.enums import AtomicType, FunctionType
from pypto.ops.registry import VALUE_KINDS, Src, get_op
from pypto.ops.traits import Clocked, CoreSync, GlobalMemoryAccess, Lockstep, Scratch

# Names the generated kernel functions use themselves: the gang plan's list ``E``, the gang views'
# plans ``P`` and access counter ``_c``, the keyword parameters ``_block`` / ``_cc``. A Var named so
# would shadow them (a scalar called ``E`` overwrote the plan list).
KERNEL_RESERVED = frozenset({"E", "P", "_c", "_block", "_cc", "_clk"})

# the bit of a cube operand handed a left-out load's global-memory view in the gang matmul's
# ``direct`` (pypto.ops.support.core.gang_matmul_into: such an operand is not compared item by item)
_DIRECT_BIT = {"lhs": 1, "rhs": 2}


class KernelGen(StmtEmitter):
    """Generates the source of one kernel module (``mode="task"``) or the statements of its
    lockstep form (``mode="gang"``, made by :func:`pypto.codegen.gang.generate_gang` with the task
    generator as ``share``: the same tile table, so ``v[i]`` and the tile names mean the same).

    In task mode one stream of lines is written: the kernel's body. In gang mode two: the gang
    kernel's body (``self.lines``: tile work and yields) and the per-task plan (``self.plan``: the
    scalar work and the arguments of each global-memory access). Control lines go to both; a
    scalar assignment to the plan, and to the body too when it is *uniform* (the same for every
    task). A statement the gang form cannot run raises :class:`~pypto.codegen.gang.NoGang`."""

    def __init__(self, f: Function, platform, mode: str = "task", share: "KernelGen | None" = None):
        if mode not in ("task", "gang"):
            raise ValueError(f"KernelGen mode must be 'task' or 'gang', not {mode!r}")
        super().__init__()
        self.f = f
        self.platform = platform
        self.mode = mode
        self.gang = mode == "gang"
        self.names.used |= KERNEL_RESERVED
        if share is None:
            self.tiles: list[tuple] = []          # (space, physical addr, shape, dtype name) per view
            self.slot: dict[tuple, int] = {}      # that key -> index into v
            self.tile_names: list[str] = []       # the local name of each view
            self.tile_vars: list[list[str]] = []  # the IR names of the tiles sharing each view
            self.dead_scratch = dead_scratch_calls(f)
            self.fused_transposes = fused_transposes(f)
            self.namers = [self.names]
        else:
            self.tiles, self.slot, self.tile_names, self.tile_vars = (
                share.tiles, share.slot, share.tile_names, share.tile_vars)
            self.dead_scratch = share.dead_scratch
            self.fused_transposes = share.fused_transposes
            self.names.used |= set(self.tile_names)
            self.namers = share.namers + [self.names]
        # id of a tile whose load is left out (fused_transposes' "gmload") -> the local name bound
        # to the global-memory view its matmul reads instead
        self.gm_views: dict[int, str] = {}
        self.one_views: set[int] = set()   # those of them bound to a "oneload" (gang mode)
        # gang mode: the plan's lines; task mode: the same list as the body (one stream)
        self.plan: list[str] = [] if self.gang else self.lines
        self.pending = 0
        # the kernel keeps a count of its yielded cycles, ``_clk``, for its Clocked ops (pl.prefetch)
        self.clocked = any(get_op(c.op).has(Clocked) for _, c in iter_calls(f.body))
        # (index into self.lines, Span) of each emitted instruction: the module's SPANS table, which
        # lets the runtime name the kernel source line of a fault (an out-of-bounds access)
        self.spans: list[tuple[int, object]] = []
        # the kernel talks to its cluster's other cores (a cross-core pipe op): it takes ``_cc``
        self.cross_core = f.func_type in (FunctionType.AIC, FunctionType.AIV)
        # a synchronisation op of the core (pl.system.sync_src / fence / syncall, pypto.ops.sync) calls
        # ``_cc`` too; an InCore kernel makes itself a core-local one (set when such an op is emitted)
        self.core_sync = False
        # gang mode: scalar parameters the gang kernel may read directly (a tile op's scalar operand,
        # an ``if`` on a flag), id -> position; those it does read join ``same`` (``GANG_SAME``): the
        # runtime gangs only members whose values of them are identical and passes the first
        # member's arguments to ``kernel_gang``
        self.params: dict[int, int] = {}
        self.same: set[int] = set()
        # gang mode only
        self.gm: list[tuple[str, tuple]] = []   # per access site: ("r" | "w", tile shape)
        self.numel = 0                          # elements of the largest tile a "rows" op touches
        self.uniform: set[int] = set()          # ids of the scalar Vars that are the same for every task
        # ids of the tensor Vars that ARE a parameter (the parameter itself, or a store's result
        # naming the stored-into parameter) -> its position: a gang access of one hands the gang
        # access its position, so that runs of a batched task's members are found from the task's
        # argument (gang_access.gang_load_at) instead of from each member's tensor
        self.param_of: dict[int, int] = {}

    # -- output --------------------------------------------------------------------------------
    def emit(self, depth: int, text: str, span=None) -> None:
        """A line of the body; a known ``span`` is appended as a ``# file:line`` comment."""
        self.lines.append("    " * depth + text + _where(span))

    def emit_plan(self, depth: int, text: str, span=None) -> None:
        """A line of the scalar stream (the plan in gang mode; the body in task mode)."""
        self.plan.append("    " * depth + text + _where(span))

    def head(self, depth: int, text: str, span=None) -> None:
        """A control line (``for`` / ``while`` / ``if`` / ``else``): in the body and the plan."""
        self._mark(span)
        self.emit(depth, text, span)
        if self.gang:
            self.emit_plan(depth, text, span)

    def streams(self) -> list[list[str]]:
        return [self.lines, self.plan] if self.gang else [self.lines]

    def _mark(self, span) -> None:
        """The next line of the body implements the statement at ``span`` (an entry of SPANS)."""
        if span is not None and not span.is_unknown():
            self.spans.append((len(self.lines), span))

    def flush(self, depth: int) -> None:
        """Yield the cycles spent since the previous yield (where the scheduler may switch cores)."""
        if self.pending:
            if self.clocked:   # (a Clocked op reads the kernel's cycle count: pl.prefetch)
                self.emit(depth, f"_clk.t += {self.pending}")
            self.emit(depth, f"yield {self.pending}")
            self.pending = 0

    # -- tiles ---------------------------------------------------------------------------------
    def view(self, v: Var) -> str:
        """The local name of the tile's view (tiles sharing a buffer and type share a view)."""
        t = v.type
        if t.memref is None or t.memref.addr is None:
            raise CodegenError(f"tile '{v.name}' has no address; run AllocateMemoryAddr first", v.span)
        # the buffer's address plus the tile's offset inside it: where the tile's bytes start
        key = (t.memory_space.name, t.memref.physical_addr, tuple(t.shape), t.dtype.name)
        i = self.slot.get(key)
        if i is None:
            i = self.slot[key] = len(self.tiles)
            self.tiles.append(key)
            self.tile_names.append(self._tile_name(v))
            self.tile_vars.append([])
        if v.name not in self.tile_vars[i]:
            self.tile_vars[i].append(v.name)
        return self.tile_names[i]

    def _tile_name(self, v: Var) -> str:
        """A fresh local name for a new view, after the first tile placed there (taken in every
        namer of the module's functions, so no Var is ever given it)."""
        base = sanitize(v.name)
        name, k = base, 0
        while any(name in n.used for n in self.namers):
            k += 1
            name = f"{base}_{k}"
        for n in self.namers:
            n.used.add(name)
        return name

    def tile_bindings(self) -> list[str]:
        """The body's first lines: each view of ``v`` bound to its tile name."""
        return [f"    {n} = v[{i}]" for i, n in enumerate(self.tile_names)]

    def static_tile(self, v: Var) -> None:
        """Gang mode: a tile of the gang kernel must have a static shape and valid shape."""
        t = v.type
        if not (static_dims(t.shape) and static_dims(t.valid_shape)):
            raise NoGang(f"tile '{v.name}' has a dynamic shape")

    def expr(self, e) -> str:
        """An operand: a tile's view name, or a scalar expression."""
        if isinstance(e, Var) and isinstance(e.type, TileType):
            return self.view(e)
        return py_expr(e, self.names)

    ref = expr

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

    # -- statements ----------------------------------------------------------------------------
    def stmt(self, s: Stmt, depth: int, yield_into=()) -> None:
        self.stmt_span = s.span   # where a call without its own span is (a cross-core op's wait)
        if isinstance(s, AssignStmt):
            self.assign(s, depth)
        elif isinstance(s, EvalStmt):
            if isinstance(s.expr, Call):
                self.call(s.expr, None, depth)
        elif self.gang and isinstance(s, ForStmt) and not all(self.is_shared(x) for x in (s.start, s.stop, s.step)):
            raise NoGang(f"line {s.span.line}: ForStmt whose bounds depend on the task")
        elif self.gang and isinstance(s, IfStmt) and not self.is_shared(s.cond):
            raise NoGang(f"line {s.span.line}: IfStmt whose condition depends on the task")
        elif self.gang and isinstance(s, WhileStmt):
            raise NoGang(f"line {s.span.line}: {type(s).__name__} (the instruction stream depends on the task)")
        elif not self.control(s, depth, yield_into):
            if self.gang:
                raise NoGang(f"line {s.span.line}: {type(s).__name__} (the instruction stream depends on the task)")
            raise CodegenError(f"cannot generate kernel code for {type(s).__name__}", s.span)

    def ret(self, s, depth: int) -> None:
        self.flush(depth)
        if not self.gang:   # (the gang kernel returns nothing: its tasks' outputs are in place)
            super().ret(s, depth)

    def carry(self, depth: int, dst: Var, val, span=None) -> None:
        """Move a loop-carried / phi value into its destination (tiles: copy into the buffer). In
        gang mode a carried scalar is a task-dependent value, kept in the plan only (addresses may
        use it; the gang kernel never reads it)."""
        if isinstance(dst.type, TileType):
            if self.gang:
                self.static_tile(dst)
            d, s = self.view(dst), self.ref(val)
            if d != s:
                self.emit(depth, f"{d}.copy_({s})", span)
        else:
            self.emit_plan(depth, f"{self.names.define(dst)} = {self.ref(val)}", span)

    def loop_head(self, s, depth: int, text: str) -> None:
        self.flush(depth)
        if self.gang:   # a loop with uniform bounds: the same iterations in the plan and the gang kernel
            self.uniform.add(id(s.loop_var))
        self.head(depth, text, s.span)   # (a zero step at run time faults on this line: the pl.range)

    def loop_body(self, s, depth: int) -> None:
        self.block(s.body, depth + 1, s.iter_args)
        self.flush(depth + 1)

    def loop_exit(self, s, depth: int) -> None:
        for rv, it in zip(s.return_vars, s.iter_args):
            if not isinstance(rv.type, TileType):
                self.emit_plan(depth, f"{self.names.define(rv)} = {self.names.use(it)}")

    def assign(self, s: AssignStmt, depth: int) -> None:
        v = s.value
        if isinstance(v, Call):
            self.call(v, s.var, depth)
        elif isinstance(s.var.type, TileType):
            self.carry(depth, s.var, v, s.span)
        elif not self.gang:
            self.emit(depth, f"{self.names.define(s.var)} = {py_expr(v, self.names)}", s.span)
        elif isinstance(s.var.type, ScalarType) and isinstance(v, (Var, ConstInt, ConstFloat, ConstBool,
                                                                        BinOp, UnaryOp)):
            # in the plan; in the gang kernel too when it is uniform
            text = f"{self.names.define(s.var)} = {py_expr(v, self.names)}"
            self.emit_plan(depth, text, s.span)
            if self.is_uniform(v):
                self.uniform.add(id(s.var))
                self.emit(depth, text, s.span)
        else:
            raise NoGang(f"line {s.span.line}: assignment of a {type(s.var.type).__name__}")

    # -- instructions --------------------------------------------------------------------------
    def call(self, c: Call, result: Var | None, depth: int) -> None:
        op = get_op(c.op, c.span)
        if op.sim is None:
            raise CodegenError(f"op '{c.op}' has no simulator implementation; it must be lowered first", c.span)
        if self.platform.arch not in op.platforms:
            # OpDef.platforms: where the op exists natively (tile.random: A5's TRANDOM only)
            raise CodegenError(f"op '{c.op}' does not exist on {self.platform.name} (only on "
                               f"{', '.join(sorted(op.platforms))})", c.span,
                               hint=f"run with RunConfig(platform='{sorted(op.platforms)[0]}sim')")
        missing = op.platform_rule(self.platform.arch, c.args) if op.platform_rule is not None else None
        if missing:
            raise CodegenError(f"op '{c.op}' on {self.platform.name}: {missing}", c.span)
        fused = self.fused_transposes.get(id(c))
        if fused is not None and fused[0] not in ("operand", "gmload", "oneload"):
            self.fused_transpose(c, result, fused, depth)
            return
        gm = op.trait(GlobalMemoryAccess)
        form = None
        if self.gang:
            lockstep = op.trait(Lockstep)
            form = lockstep.form if lockstep is not None else None
            if gm is None and lockstep is None:
                raise NoGang(f"line {c.span.line}: {op.name} has no lockstep form")
            if form == "plan":
                self.plan_scalar(op, c, result, depth)
                return
        args = []
        direct = 0   # (gang form: bit i set when operand i is a left-out load's global-memory view)
        for p, a in zip(op.params, c.args):
            if p.kind in VALUE_KINDS:   # (type None: an omitted optional operand)
                if self.gang:
                    if isinstance(a, Var) and isinstance(a.type, TileType):
                        self.static_tile(a)
                    elif gm is None and not self.is_shared(a):
                        raise NoGang(f"line {c.span.line}: {op.name} reads a per-task value")
                staged = fused[1].get(id(a)) if fused is not None and fused[0] == "operand" else None
                if staged is not None:
                    # the operand's staging move was left out: its source (fused_transposes), or the
                    # global-memory view its left-out load bound
                    if self.gang:
                        self.static_tile(staged[0])
                    gm_view = self.gm_views.get(id(staged[0]))
                    if gm_view is not None and id(staged[0]) not in self.one_views:
                        direct |= _DIRECT_BIT.get(p.name, 0)
                    text = (gm_view or self.view(staged[0])) + (".transpose(-2, -1)" if staged[1] else "")
                else:
                    text = self.ref(a)
                args.append(operand_src(text, a, lambda d: py_expr(d, self.names)))
            else:
                if self.gang and p.kind_def.exprs and gm is None and not self.is_shared(a):
                    raise NoGang(f"line {c.span.line}: {op.name} takes a per-task index")
                args.append(p.kind_def.source(a, lambda e: py_expr(e, self.names)))
        a = op.args(tuple(args))
        if gm is not None:
            # the transfer's cycles elapse first: the GM read / write (atomic add included) happens at
            # the simulated moment it completes, so accesses of different cores race in time order
            self.pending += self.cost(c)
            self.flush(depth)
            view = None
            if fused is not None and fused[0] == "gmload":
                # a load only the cube matmul after it reads (pypto.codegen.scratch.fused_transposes):
                # a local bound to the region it would copy, which that matmul reads instead
                view = self.gm_views[id(result)] = self._fresh(f"{self.view(result)}_gm")
            elif fused is not None and fused[0] == "oneload" and self.gang:
                # a load only the cube matmul after it reads, yields in between: where every member
                # loads one region, the first member's tile alone, repeated for that matmul
                view = self.gm_views[id(result)] = self._fresh(f"{self.view(result)}_one")
                self.one_views.add(id(result))
            if self.gang:
                self.gang_access(op, a, c, result, depth, view, id(result) in self.one_views)
                return
            if view is not None:
                self._mark(c.span)
                self.emit(depth, f"{view} = _pto.load_view({self.view(result)}, {a.tensor}, {a.offsets}, "
                                 f"{a.valid_shape})", c.span)
                return
        kw = {} if not op.has(Scratch) or id(c) not in self.dead_scratch else {"keep_scratch": False}
        sync = op.has(CoreSync)
        clock = op.has(Clocked)
        if clock:   # the clock must hold every cycle before the op
            self.flush(depth)
        if op.waits or sync:
            # a cross-core op: its cycles so far elapse first (it may wait on a peer core from then on)
            if op.waits and not self.cross_core:
                raise CodegenError(f"op '{c.op}' talks to the other cores of a cluster: it belongs in an AIC or "
                                   f"AIV function of a Group, not in a {self.f.func_type.name} function", c.span,
                                   "write @pl.function(type=pl.FunctionType.AIV) / AIC functions and a "
                                   "Group function calling both")
            self.flush(depth)
            sp = c.span if c.span is not None and not c.span.is_unknown() else getattr(self, "stmt_span", None)
            kw["where"] = "" if sp is None or sp.is_unknown() else f"{sp.file}:{sp.line}"
        if direct and self.gang:
            kw["direct"] = direct
        if self.gang:
            # (a cross-core op with a lockstep form: the same ``_cc`` call, on the gang's cluster)
            self.gang_instruction(op, a, c, result, form, kw, depth)
            return
        self.core_sync = self.core_sync or sync
        if op.yields:
            # the record carries the cycles not yet yielded; they stay pending (the schedule is the
            # one without the print)
            kw["cycles"] = self.pending
        self._mark(c.span)
        wkw = {"where": kw["where"]} if op.waits or sync else {}   # (the other ops' statement forms take no kw)
        if clock:
            wkw = {"platform": self.platform}
        if result is not None and isinstance(result.type, TileType):
            self.emit(depth, op.sim(a, Src(self.view(result), result.type), **kw), c.span)
        elif result is not None:  # a tensor (tile.store) or a scalar (tile.read)
            self.emit(depth, f"{self.names.define(result)} = {op.sim(a, None, **wkw)}", c.span)
        else:
            self.emit(depth, op.sim(a, None, **wkw), c.span)
        if gm is None:
            self.pending += self.cost(c)

    def fused_transpose(self, c: Call, result: Var, fused: tuple, depth: int) -> None:
        """A ``tile.transpose_view`` read only by the ``tile.move`` right after it, or that move
        (:func:`pypto.codegen.scratch.fused_transposes`): the view emits nothing, the move one
        transposed copy from the view's source (the same elements; a gang view's leading axis is
        kept), or nothing where the matmul after it reads the source itself. All keep their
        simulated cycles, so the schedule is the one of the unfused statements."""
        kind, src = fused
        if self.gang:
            self.static_tile(src)
            self.static_tile(result)
        if kind == "move":
            self._mark(c.span)
            self.emit(depth, f"{self.view(result)}.copy_({self.view(src)}.transpose(-2, -1))", c.span)
        self.pending += self.cost(c)

    def plan_scalar(self, op, c: Call, result: Var | None, depth: int) -> None:
        """Gang mode, an op of lockstep form ``"plan"``: a per-task scalar (the block index, a
        tensor's extent) computed in each member's plan, so only addresses and extents of
        global-memory accesses may use it."""
        if result is None or isinstance(result.type, TileType):
            raise NoGang(f"line {c.span.line}: {op.name} must produce a scalar")
        plan_args = [Src(py_expr(a, self.names), getattr(a, "type", None)) if p.kind in VALUE_KINDS
                     else Src(py_literal(a), None) for p, a in zip(op.params, c.args)]
        self.emit_plan(depth, f"{self.names.define(result)} = {op.sim(op.args(tuple(plan_args)), None)}", c.span)
        self.pending += self.cost(c)   # the instruction's cycles, as the task kernel counts them

    def gang_instruction(self, op, a, c: Call, result: Var | None, form, kw, depth: int) -> None:
        """Gang mode, a tile instruction: the same torch call on the gang views (``"gang"`` form:
        each member's own call, e.g. matmul's BLAS call per task)."""
        if result is not None and not isinstance(result.type, TileType):
            raise NoGang(f"line {c.span.line}: {op.name} produces a scalar")
        dst = None
        if result is not None:
            self.static_tile(result)
            dst = Src(self.view(result), result.type)
        self._mark(c.span)
        if form == "gang":
            self.emit(depth, op.sim(a, dst, gang=True, **kw), c.span)
        else:
            self.emit(depth, op.sim(a, dst, **kw), c.span)
            if form == "rows":
                for x in (*c.args, result):
                    if isinstance(x, Var) and isinstance(x.type, TileType):
                        self.numel = max(self.numel, math.prod(x.type.shape))
        self.pending += self.cost(c)

    def _fresh(self, base: str) -> str:
        """A local name no Var and no tile view of the module is given."""
        name, k = base, 0
        while any(name in n.used for n in self.namers):
            k += 1
            name = f"{base}_{k}"
        self.names.used.add(name)
        return name

    def gang_access(self, op, a, c: Call, result: Var | None, depth: int, view: str | None = None,
                    one: bool = False) -> None:
        """Gang mode, a load or store: the plan records its per-task arguments, the gang kernel
        makes it for every member with the members' entries of this access. ``view``: a load left
        out (``fused_transposes``' "gmload"): that local is bound to the members' global-memory view
        instead (``_pto.gang_load_view_at``, which makes the load where they form no one view);
        ``one``: a "oneload", bound to the first member's tile repeated where the members load one
        region (``_pto.gang_load_one_at``), else to the loaded tile."""
        site = len(self.gm)
        if op.name == "tile.load" and getattr(getattr(c.args[0].type, "layout", None), "name", "ND") in (
                "MX_A_ZZ", "MX_B_NN"):
            # a packed MX scale tensor: its load unpacks the layout (_pto.load_mx_into), which the
            # gang's plain per-member copy would not
            raise NoGang(f"line {c.span.line}: a load from a packed {c.args[0].type.layout.name} tensor has no "
                         "lockstep form")
        names = [p.name for p in op.params]
        pi = self.param_of.get(id(c.args[names.index("tensor")]), -1) if "tensor" in names else -1
        at = "" if pi < 0 else f", {pi}"   # (the tensor is parameter pi of every member's task)
        if op.name == "tile.load":
            self.static_tile(result)
            self.emit_plan(depth, f"E.append(({site}, ({a.tensor}, {a.offsets}, {a.valid_shape})))", c.span)
            # the footprint is the valid region: a load reads, a store writes nothing else
            self.gm.append(("r", tuple(result.type.effective_valid_shape)))
            self._mark(c.span)
            bind = "" if view is None else f"{view} = "
            kind = "" if view is None else ("one" if one else "view")
            fn = "gang_load_at" if view is None else f"gang_load_{kind}_at"
            if a.valid_shape == "None" and self.is_uniform(c.args[1]):
                # the same offsets for every member (constants, uniform loop variables): the gang
                # kernel computes them once and hands over the members' tensors alone
                self.emit(depth, f"{bind}_pto.{fn}({self.view(result)}, P, _c, {a.offsets}{at})", c.span)
            else:
                fn = "gang_load_fast" if view is None else f"gang_load_{kind}"
                self.emit(depth, f"{bind}_pto.{fn}({self.view(result)}, [p[_c][1] for p in P])", c.span)
        elif op.name == "tile.store" and a.atomic != repr(AtomicType.Add):
            tile = c.args[0]
            self.static_tile(tile)
            valid = "None" if tile.type.valid_shape is None else repr(list(tile.type.valid_shape))
            self.emit_plan(depth, f"E.append(({site}, ({a.offsets}, {a.tensor}, {valid})))", c.span)
            self.gm.append(("w", tuple(tile.type.effective_valid_shape)))
            self._mark(c.span)
            if valid == "None" and self.is_uniform(c.args[1]):   # (as for a load)
                self.emit(depth, f"_pto.gang_store_at({a.tile}, P, _c, {a.offsets}{at})", c.span)
            else:
                self.emit(depth, f"_pto.gang_store_fast({a.tile}, [p[_c][1] for p in P])", c.span)
            if result is not None:   # the stored-into tensor, for later accesses of this task
                self.emit_plan(depth, f"{self.names.define(result)} = {a.tensor}")
                if pi >= 0:
                    self.param_of[id(result)] = pi
        else:
            raise NoGang(f"line {c.span.line}: {op.name}{' (atomic)' if op.name == 'tile.store' else ''} "
                         "has no lockstep form")
        self.emit(depth, "_c += 1")

    def cost(self, c: Call) -> int:
        """Simulated cycles of one instruction: GM transfers by bandwidth plus latency, vector ops
        by bytes processed."""
        op = get_op(c.op)
        if op.yields:
            return 0   # a debug print takes no simulated time
        t = c.type
        nbytes = t.nbytes if isinstance(t, TileType) else 0
        gm = op.trait(GlobalMemoryAccess)
        if gm is not None:
            tile = c.args[0] if gm.mode == "write" else None
            if tile is not None and isinstance(tile.type, TileType):
                nbytes = tile.type.nbytes
            return self.platform.gm_latency_cycles + nbytes // self.platform.gm_bytes_per_cycle
        return 1 + nbytes // self.platform.vector_bytes_per_cycle

    # -- the module ----------------------------------------------------------------------------
    def walk(self) -> list[str]:
        """Walk the function's body (depth 1); returns its parameters' names. A return yields what
        is pending; a body that ends without one (an AIC / AIV member function) yields it at its
        end, so the task's simulated end includes every instruction's cycles. Both forms do it: the
        gang kernel must yield exactly what the task kernel does (a trailing yield in the gang form
        alone made a gang's cores finish later than alone)."""
        params = [self.names.define(p) for p in self.f.params]
        self.param_of.update((id(p), i) for i, p in enumerate(self.f.params) if isinstance(p.type, TensorType))
        if self.clocked:
            self.emit(1, "_clk = _pto.Clock()")
        self.block(self.f.body, 1, ())
        self.flush(1)   # (nothing pending after a final return)
        return params

    def generate(self) -> str:
        """The kernel module's source (task mode)."""
        params = self.walk()
        body = as_generator(self.lines)
        head = [
            f'"""Generated by pypto: kernel {self.f.name!r} for {self.platform.name}. Do not edit."""',
            "import torch", "",
            "from pypto.ops import support as _pto", "",
            "# (memory space, byte address, shape, dtype) of each tile view; v[i] in kernel() is TILES[i]",
            "TILES = [",
            *[f"    ({s!r}, {a}, {tuple(sh)!r}, {py_literal(_dt(d))}),  # v[{i}]: {', '.join(names)}"
              for i, ((s, a, sh, d), names) in enumerate(zip(self.tiles, self.tile_vars))],
            "]",
            *_zero_first_lines(self.f, self.fused_transposes), "", "",
            # _block: (block index, block count) of the task's block this core runs (pl.spmd)
            f"def kernel(v, {''.join(p + ', ' for p in params)}_block=(0, 1)"
            + (", _cc=None):" if self.cross_core or self.core_sync else "):"),
            "    " + f'"""{self.f.name}({", ".join(params)})"""',
            *(["    _cc = _pto.core_flags(_cc, _block)"] if self.core_sync and not self.cross_core else []),
            *self.tile_bindings(),
        ]
        text = "\n".join(head + body + ["", ""])
        gang, gang_spans = generate_gang(self)
        # module line number (1-based) of body line i is i + first; of the gang text's line j, j + gang_first
        first = len(head) + 1
        gang_first = text.count("\n") + 1
        spans = {i + first: sp for i, sp in self.spans}
        spans.update({j + gang_first: sp for j, sp in gang_spans.items()})
        spans = {n: (sp.file, sp.line, sp.col, sp.end_line, sp.end_col) for n, sp in sorted(spans.items())}
        table = ["", "# line -> source span (file, line, col, end_line, end_col) of the instruction it implements",
                 f"SPANS = {spans!r}", f"KERNEL_NAME = {'kernel ' + repr(self.f.name)!r}", ""]
        return text + gang + "\n".join(table)


def _zero_first_lines(f: Function, fused: dict) -> list[str]:
    """``ZERO_FIRST``: the core memory the kernel may read before writing it
    (:mod:`pypto.codegen.first_use`; the runtime zeroes only that at a call's start). None where
    unknown: no table, and the runtime zeroes all of ``TILES``."""
    ranges = zero_first(f, fused)
    if ranges is None:
        return []
    return ["# (memory space, first byte, end byte) the kernel may read before writing (the rest of TILES is",
            "# written first: its start value is unobservable, pypto.codegen.first_use)",
            f"ZERO_FIRST = {[tuple(r) for r in ranges]!r}"]


def _where(span) -> str:
    """`` # file:line`` of ``span`` (empty when unknown), as torch_codegen writes it."""
    if span is None or span.is_unknown():
        return ""
    return f"  # {os.path.basename(span.file)}:{span.line}"


def _dt(name: str):
    return dtype_from_name(name)


def generate_kernel(f: Function, platform) -> str:
    """Source of the kernel module for the lowered InCore function ``f``."""
    return KernelGen(f, platform).generate()
