"""Batched orchestration: which loops may run batched, and their batched form (the runtime side and
the argument for bit-identical results: :mod:`pypto.runtime.batch`; docs/simulator.md).

:func:`plan` proves that the iterations of an orchestration ``for`` loop are independent, so that
running them step by step for all iterations at once (each call site submitting one task for all of
them) computes what running them one after another does:

* the loop carries no values, except outer tensors written through the kernels (``out = k(..., out)``:
  every version of such a tensor is the tensor itself, so the batched form keeps it one value);
* its body holds only assignments, evaluated kernel calls, inner ``for`` loops (any trip count, also
  one differing per iteration) and yields; the only ops are ``tensor.create`` (static shape),
  ``tensor.slice`` (of a tensor defined outside the loop, or of one created inside),
  ``tensor.read`` (of a tensor defined outside) and ``tensor.reshape`` dropping or adding unit
  axes of such a slice or created tensor (:meth:`_Analysis.reshape`: ``x[b]``); no ``if``,
  ``while``, scopes, task ids, explicit deps, manual or predicated or multi-block submissions,
  dumps, ``NO_DEP`` arguments, or compiler edges (their "latest task of a site" has no
  per-iteration meaning);
* a kernel writes only tensors the iteration created (private to it), a slice of an outer tensor,
  or all of an outer tensor (InOut / OutputExisting) into which it only stores
  (:meth:`_Analysis.kernel_sites`: its ``tile.store`` regions, offsets in the caller's terms, extents
  the stored tiles' static shapes); every region written into an outer tensor has an offset in some
  dimension ``c * i + r`` (``i`` the loop variable, ``r`` bounded by constant inner loop ranges, the
  kernels' own included, and the same outer values at every write of that tensor), with every
  iteration's regions of that tensor inside a band narrower than the iteration stride ``c * step``;
  outer tensors written are never read in the loop (the run-time guard
  :meth:`~pypto.runtime.batch.BatchRuntime.batching` checks that no two of these variables share
  storage).

:class:`BatchEmitter` writes the batched form: every variable of the body is a list over the
iterations (``name[_i]`` inside the per-member comprehensions), inner loops run for the active
members (those whose trip count reaches the step), kernel calls become ``_rt.submit_batch``,
``tensor.create`` ``_rt.create_batch``, ``tensor.reshape`` of the members' views ``_rt.breshape``.
The generated code runs it under ``if _rt.batching(...)`` and the unchanged loop otherwise.
"""
from __future__ import annotations

from pypto.codegen.common import py_expr, py_literal, returned_params
from pypto.codegen.group import group_members, group_returned_params
from pypto.errors import CodegenError
from pypto.ir.nodes import (
    AssignStmt, BinOp, Call, ConstInt, EvalStmt, ForStmt, FuncCall, IfStmt, MakeTuple, ReturnStmt,
    TupleGetItem, UnaryOp, Var, WhileStmt, YieldStmt,
)
from pypto.ir.types import is_tensor, is_tile
from pypto.ir.visit import defined_vars, iter_calls, walk_expr
from pypto.language.enums import FunctionType
from pypto.ops.registry import VALUE_KINDS, Src, get_op

_OPS = frozenset({"tensor.create", "tensor.slice", "tensor.read", "tensor.reshape"})
_WRITE = frozenset({"INOUT", "OUTPUT_EXISTING", "OUTPUT"})
_READ = frozenset({"INPUT"})
_WRITE_WHOLE = frozenset({"INOUT", "OUTPUT_EXISTING"})


class BatchPlan:
    """A batchable loop: the outer tensor variables it writes (slices of) and reads; ``same``: ids of
    the loop-carried Vars (iter_args, return_vars of the loop and its inner loops) that always hold
    an outer tensor itself (the batched form keeps them one value, not a list over the members);
    ``guarded``: those among ``writes`` whose disjointness is checked at run time (:func:`guarded_plan`)."""

    def __init__(self, writes: list, reads: list, same: frozenset = frozenset(), guarded: list = ()):
        self.writes = writes
        self.reads = reads
        self.same = same
        self.guarded = list(guarded)


class _Refuse(Exception):
    pass


def plan(loop: ForStmt, program, named_sites: set, sites: dict) -> BatchPlan | None:
    """The :class:`BatchPlan` of ``loop`` when its iterations are provably independent, else None."""
    if loop.stage != 1 or not all(is_tensor(getattr(it, "type", None)) for it in loop.iter_args):
        return None
    try:
        return _Analysis(loop, program, named_sites, sites).run() or guarded_plan(loop, program, named_sites, sites)
    except (_Refuse, CodegenError):
        return None


class _Analysis:
    def __init__(self, loop, program, named_sites, sites):
        self.loop = loop
        self.program = program
        self.named_sites = named_sites
        self.sites = sites
        self.inner: set = {id(loop.loop_var)}
        self.origin: dict = {}        # id(var) -> ("fresh",) | ("slice", X, offsets, shape) | ("outer", X) | ("tuple", [..])
        self.scalar: dict = {}        # id(var) -> its defining scalar expression
        self.ranges: dict = {}        # id(inner loop var) -> (lo, hi) when its bounds are constants
        self.writes: dict = {}        # id(X) -> (X, [(offsets, shape)])
        self.reads: dict = {}         # id(X) -> X
        self.same: set = set()        # ids of carried Vars whose origin is ("outer", X)
        self.alias: set = set()       # (kernel_sites) ids of a kernel's Vars holding the parameter
        self.rank = 0                 # (kernel_sites) its rank
        self.found: list = []         # (kernel_sites) its store regions
        self.calls = 0

    def run(self) -> BatchPlan | None:
        self.carry_in(self.loop)
        self.block(self.loop.body)
        self.carry_out(self.loop)
        if not self.calls or set(self.writes) & set(self.reads):
            return None
        step = self.loop.step
        for x, sites in self.writes.values():
            if not isinstance(step, ConstInt) or step.value == 0 or not self.disjoint(sites, abs(step.value)):
                return None
        return BatchPlan([x for x, _ in self.writes.values()], list(self.reads.values()), frozenset(self.same))

    def carry_in(self, s: ForStmt) -> None:
        """A loop's carried tensors take their initial value's origin (the loop itself, or an inner
        loop). A carried outer tensor ``X`` (``out = kernel(..., out)``) is ``X`` in every iteration:
        the proof admits only kernels returning the argument they were given, so the chain of
        versions is one tensor, written where the kernels store (:meth:`kernel_sites`)."""
        for it, init, rv in zip(s.iter_args, s.init_values, s.return_vars):
            self.inner.add(id(it))
            self.inner.add(id(rv))
            if is_tensor(getattr(it, "type", None)):
                o = self.tensor_origin(init)
                self.origin[id(it)] = self.origin[id(rv)] = o
                if o[0] == "outer":
                    self.same.update((id(it), id(rv)))
            elif s is self.loop:
                raise _Refuse   # a carried scalar: iterations depend on each other

    def carry_out(self, s: ForStmt) -> None:
        # a carried tensor must keep its origin (a yield of another tensor would hide a write)
        for y in (x for x in s.body if isinstance(x, YieldStmt)):
            for it, val in zip(s.iter_args, y.values):
                if is_tensor(getattr(it, "type", None)) and self.tensor_origin(val) != self.origin[id(it)]:
                    raise _Refuse

    # ---------------------------------------------------------------- statements
    def block(self, stmts) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s) -> None:
        if isinstance(s, AssignStmt):
            self.inner.add(id(s.var))
            v = s.value
            if isinstance(v, FuncCall):
                self.origin[id(s.var)] = self.call(v)
            elif isinstance(v, Call):
                self.origin[id(s.var)] = self.op(v)
            else:
                self.pure(v)
                if is_tensor(getattr(s.var, "type", None)):
                    self.origin[id(s.var)] = self.tensor_origin(v)
                else:
                    self.scalar[id(s.var)] = v
        elif isinstance(s, EvalStmt):
            if not isinstance(s.expr, FuncCall):
                raise _Refuse
            self.call(s.expr)
        elif isinstance(s, ForStmt):
            if s.stage != 1:
                raise _Refuse
            for e in (s.start, s.stop, s.step, *s.init_values):
                self.pure(e)
            self.inner.add(id(s.loop_var))
            if all(isinstance(e, ConstInt) for e in (s.start, s.stop, s.step)) and s.step.value > 0:
                n = len(range(s.start.value, s.stop.value, s.step.value))
                if n:
                    self.ranges[id(s.loop_var)] = (s.start.value, s.start.value + (n - 1) * s.step.value)
            self.carry_in(s)
            self.block(s.body)
            self.carry_out(s)
        elif isinstance(s, YieldStmt):
            for e in s.values:
                self.pure(e)
        else:
            raise _Refuse

    def pure(self, e) -> None:
        """``e`` is a scalar / variable expression (no call inside)."""
        for c in walk_expr(e):
            if isinstance(c, (Call, FuncCall)):
                raise _Refuse

    def tensor_origin(self, e):
        if isinstance(e, Var):
            if id(e) in self.inner:
                o = self.origin.get(id(e))
                if o is None:
                    raise _Refuse
                return o
            return ("outer", e)
        if isinstance(e, TupleGetItem):
            o = self.tensor_origin(e.value)
            if o[0] != "tuple" or not 0 <= e.index < len(o[1]):
                raise _Refuse
            return o[1][e.index]
        raise _Refuse

    # ---------------------------------------------------------------- calls
    def call(self, e: FuncCall):
        callee = self.program.get_function(e.func)
        if (getattr(e, "deps", None) or getattr(e, "manual", False) or e.predicate or e.block_num is not None
                or getattr(e, "dump_args", None) or getattr(e, "task_id_var", None) is not None
                or getattr(e, "no_dep_args", None) or e.compiler_dep_edges
                or self.sites.get(id(e)) in self.named_sites):
            raise _Refuse
        if self.prints(callee):
            raise _Refuse   # a print names its task (PrintRecord.task): members of a batch share one
        self.calls += 1
        tags = list(e.arg_directions)
        if len(tags) != len(e.args):
            raise _Refuse
        for k, (a, tag) in enumerate(zip(e.args, tags)):
            self.pure(a)
            if tag == "SCALAR" or not is_tensor(getattr(a, "type", None)):
                if tag != "SCALAR":
                    raise _Refuse
                continue
            o = self.tensor_origin(a)
            if tag in _WRITE:
                if o[0] == "fresh":
                    continue
                if o[0] == "outer" and tag in _WRITE_WHOLE:
                    # all of an outer tensor: the iteration writes where the kernel stores into it
                    self.writes.setdefault(id(o[1]), (o[1], []))[1].extend(self.kernel_sites(e, callee, k))
                    continue
                if o[0] != "slice":
                    raise _Refuse
                self.writes.setdefault(id(o[1]), (o[1], []))[1].append((o[2], o[3]))
            elif tag in _READ:
                if o[0] in ("slice", "outer"):
                    self.reads[id(o[1])] = o[1]
            else:
                raise _Refuse
        rets = group_returned_params(callee, self.program) if callee.func_type == FunctionType.Group \
            else returned_params(callee)
        outs = [self.tensor_origin(e.args[r]) if r >= 0 else ("none",) for r in rets]
        if len(outs) > 1 and any(o[0] == "outer" for o in outs):
            raise _Refuse   # (the batched form's tuples of returns hold lists over the members only)
        if not outs:
            return ("none",)
        return outs[0] if len(outs) == 1 else ("tuple", outs)

    def prints(self, f) -> bool:
        """Whether kernel ``f`` (a Group: its members) calls ``pl.debug_print``."""
        fs = [m for m, _, _ in group_members(f, self.program)] if f.func_type == FunctionType.Group else [f]
        return any(c.op.endswith(".debug_print") for g in fs for _, c in iter_calls(g.body))

    def op(self, e: Call):
        if e.op not in _OPS:
            raise _Refuse
        op = get_op(e.op, e.span)
        a = dict(zip((p.name for p in op.params), e.args))
        for x in e.args:
            self.pure(x)
        if e.op == "tensor.create":
            if any(self.uses_inner(x) for x in e.args):
                raise _Refuse
            return ("fresh",)
        if e.op == "tensor.read":
            o = self.tensor_origin(a["x"])
            if o[0] != "outer":
                raise _Refuse
            self.reads[id(o[1])] = o[1]
            return None
        if e.op == "tensor.reshape":
            return self.reshape(a)
        # tensor.slice
        if a.get("valid_shape") is not None:
            raise _Refuse
        o = self.tensor_origin(a["x"])
        if o[0] == "fresh":
            return o
        if o[0] != "outer":
            raise _Refuse
        shape = a["shape"]
        dims = shape.elements if isinstance(shape, MakeTuple) else shape
        if not all(isinstance(d, ConstInt) for d in dims):
            raise _Refuse
        offs = a["offset"]
        offs = offs.elements if isinstance(offs, MakeTuple) else offs
        return ("slice", o[1], tuple(offs), tuple(d.value for d in dims))

    def reshape(self, a: dict):
        """A ``tensor.reshape`` (the frontend's rank-reducing subscript ``x[b]``: a full-rank slice,
        then this) of a slice of an outer tensor or of a tensor the iteration created, that only
        drops or adds unit axes: the result is a view of exactly the slice's elements (torch
        always makes such a reshape a view, whatever the strides), so it keeps the slice's origin
        and every write through it is the slice's full-rank region, as the disjointness proof
        counts it. Any other reshape is refused: one that regroups elements may be a copy of a
        non-contiguous slice (a write would not reach the tensor), and one of a whole outer tensor
        would put a kernel's store offsets in other coordinates than the tensor's."""
        o = self.tensor_origin(a["x"])
        if o[0] not in ("slice", "fresh"):
            raise _Refuse
        shape = a["shape"]
        dims = shape.elements if isinstance(shape, MakeTuple) else shape
        if not isinstance(dims, (tuple, list)):
            raise _Refuse
        new = [d.value if isinstance(d, ConstInt) else d for d in dims]
        old = getattr(getattr(a["x"], "type", None), "shape", None)
        if old is None or not all(type(d) is int for d in (*new, *old)):
            raise _Refuse
        if [d for d in new if d != 1] != [d for d in old if d != 1]:
            raise _Refuse
        return o

    def uses_inner(self, e) -> bool:
        return any(isinstance(c, Var) and id(c) in self.inner for c in walk_expr(e))

    # ---------------------------------------------------------------- kernels' stores
    def kernel_sites(self, e: FuncCall, callee, k: int) -> list:
        """The regions argument ``k`` of call ``e`` (all of an outer tensor) may be written at, as
        ``(offset forms, tile shape)`` in the caller's terms: each ``tile.store`` into the parameter
        (through the AIC / AIV members of a Group), its offsets affine forms of the caller's values
        (the call's scalar arguments substituted) and of kernel loop variables with constant
        bounds, its extent the stored tile's static shape (a valid shape is checked to lie inside
        it when the store runs). The kernel must do nothing else with the parameter: no load, view,
        atomic store or call (refused otherwise)."""
        args = list(e.args)
        if k >= len(callee.params) or getattr(callee.params[k].type, "shape", None) != args[k].type.shape:
            raise _Refuse   # (the kernel sees the caller's tensor; offsets must mean the same elements)
        if callee.func_type == FunctionType.Group:
            out = []
            for f, call, _ in group_members(callee, self.program):
                for j, ga in enumerate(call.args):
                    if ga is callee.params[k]:
                        if getattr(f.params[j].type, "shape", None) != args[k].type.shape:
                            raise _Refuse
                        out += self.function_sites(f, j, {id(p): a for p, a in zip(f.params, call.args)},
                                                   {id(p): a for p, a in zip(callee.params, args)})
            return out
        return self.function_sites(callee, k, {id(p): a for p, a in zip(callee.params, args)})

    def function_sites(self, f, k: int, *envs) -> list:
        if k >= len(f.params) or not is_tensor(f.params[k].type):
            raise _Refuse
        # the parameters are their arguments (a Group member's: the Group's, then the caller's);
        # kernel-local values are unknown unless a scalar definition or a bounded loop gives them
        for env in envs:
            for pid, a in env.items():
                self.scalar[pid] = a
        for v in defined_vars(f.body):
            self.inner.add(id(v))
        self.alias = {id(f.params[k])}
        self.rank = len(f.params[k].type.shape)
        self.found = []
        self.kbody(f.body)
        return self.found

    def mentions(self, e) -> bool:
        return any(isinstance(c, Var) and id(c) in self.alias for c in walk_expr(e))

    def kbody(self, stmts) -> None:
        for s in stmts:
            if isinstance(s, (AssignStmt, EvalStmt)):
                v = s.value if isinstance(s, AssignStmt) else s.expr
                if isinstance(v, Call) and v.op == "tile.store" and self.mentions(v):
                    self.kstore(v)
                    if isinstance(s, AssignStmt):
                        self.alias.add(id(s.var))
                elif isinstance(v, Var) and id(v) in self.alias and isinstance(s, AssignStmt):
                    self.alias.add(id(s.var))
                elif self.mentions(v):
                    raise _Refuse   # a load, a view, a call: the parameter's use is not a plain store
                elif isinstance(s, AssignStmt) and not is_tensor(s.var.type) and not is_tile(s.var.type) \
                        and not any(isinstance(c, (Call, FuncCall)) for c in walk_expr(v)):
                    self.scalar[id(s.var)] = v
            elif isinstance(s, (ForStmt, WhileStmt)):
                heads = [s.cond] if isinstance(s, WhileStmt) else [s.start, s.stop, s.step]
                if any(self.mentions(x) for x in heads):
                    raise _Refuse
                carried = [isinstance(x, Var) and id(x) in self.alias for x in s.init_values]
                if any(self.mentions(x) and not c for x, c in zip(s.init_values, carried)):
                    raise _Refuse
                for it, rv, c in zip(s.iter_args, s.return_vars, carried):
                    if c:
                        self.alias.update((id(it), id(rv)))
                if isinstance(s, ForStmt) and s.stage == 1 and all(
                        isinstance(x, ConstInt) for x in (s.start, s.stop, s.step)) and s.step.value > 0:
                    n = len(range(s.start.value, s.stop.value, s.step.value))
                    if n:
                        self.ranges[id(s.loop_var)] = (s.start.value, s.start.value + (n - 1) * s.step.value)
                self.kbody(s.body)
                self.kyields(s.body, carried)
            elif isinstance(s, IfStmt):
                if self.mentions(s.cond):
                    raise _Refuse
                self.kbody(s.then_body)
                self.kbody(s.else_body)
                slots = [self.kyields(b, None) for b in (s.then_body, s.else_body)]
                for i, rv in enumerate(s.return_vars):
                    got = {b[i] for b in slots if b is not None and i < len(b)}
                    if True in got:
                        if got != {True} or None in slots:
                            raise _Refuse
                        self.alias.add(id(rv))
            elif isinstance(s, (ReturnStmt, YieldStmt)):
                for x in s.values:
                    if self.mentions(x) and not isinstance(x, Var):
                        raise _Refuse
            else:   # (a scope: its tasks' semantics are not a kernel's; nothing else writes)
                raise _Refuse

    def kyields(self, body, carried):
        """Which yield slots of ``body`` give the parameter (an alias); with ``carried`` (a loop's
        slots that carry it) they must agree. None when the body yields nothing."""
        ys = [x for x in body if isinstance(x, YieldStmt)]
        if not ys:
            return None
        slots = [isinstance(x, Var) and id(x) in self.alias for x in ys[-1].values]
        if carried is not None and any(a != b for a, b in zip(slots, carried)):
            raise _Refuse
        return slots

    def kstore(self, v: Call) -> None:
        op = get_op(v.op, v.span)
        a = dict(zip((p.name for p in op.params), v.args))
        t, tile, offs = a.get("tensor"), a.get("tile"), a.get("offsets")
        atomic = op.param("atomic").default
        if not (isinstance(t, Var) and id(t) in self.alias) or self.mentions(tile) or self.mentions(offs) \
                or a.get("atomic", atomic) != atomic:
            raise _Refuse   # (an atomic store reads what it adds to: not a plain write)
        shape = getattr(getattr(tile, "type", None), "shape", None)
        offs = offs.elements if isinstance(offs, MakeTuple) else offs
        if shape is None or not all(type(d) is int for d in shape) or len(shape) != self.rank \
                or not isinstance(offs, (tuple, list)) or len(offs) != self.rank:
            raise _Refuse
        forms = []
        for x in offs:
            f = self.affine(x)
            if f is None:
                raise _Refuse
            forms.append(f)
        self.found.append((tuple(forms), tuple(shape)))

    # ---------------------------------------------------------------- disjointness
    def affine(self, e, depth=0):
        """``{key: coefficient}`` of ``e`` (key ``1`` for the constant, ``id(var)`` for a symbol), or None."""
        if depth > 64:
            return None
        if isinstance(e, ConstInt):
            return {1: e.value}
        if isinstance(e, Var):
            d = self.scalar.get(id(e))
            if d is not None:
                return self.affine(d, depth + 1)
            return {id(e): 1}
        if isinstance(e, UnaryOp) and e.op == "neg":
            a = self.affine(e.operand, depth + 1)
            return None if a is None else {k: -v for k, v in a.items()}
        if isinstance(e, BinOp) and e.op in ("add", "sub", "mul"):
            a, b = self.affine(e.lhs, depth + 1), self.affine(e.rhs, depth + 1)
            if a is None or b is None:
                return None
            if e.op == "mul":
                if set(a) == {1}:
                    a, b = b, a
                if set(b) != {1}:
                    return None
                return {k: v * b[1] for k, v in a.items()}
            sign = 1 if e.op == "add" else -1
            out = dict(a)
            for k, v in b.items():
                out[k] = out.get(k, 0) + sign * v
            return out
        return None

    def band(self, form: dict, extent: int):
        """``(c, outer part, lo, hi)`` of one write's offset form in one dimension, or None."""
        form = {k: v for k, v in form.items() if v}
        c = form.pop(id(self.loop.loop_var), 0)
        lo = hi = form.pop(1, 0)
        outer = {}
        for k, v in form.items():
            if k in self.ranges:
                a, b = self.ranges[k]
                lo += min(v * a, v * b)
                hi += max(v * a, v * b)
            elif k in self.inner:
                return None   # an iteration-dependent value the proof cannot bound (a read, a loop var)
            else:
                outer[k] = v
        return c, outer, lo, hi + extent

    def disjoint(self, sites, step: int) -> bool:
        ndim = len(sites[0][0])
        if any(len(offs) != ndim or len(shape) != ndim for offs, shape in sites):
            return False
        for d in range(ndim):
            bands = []
            for offs, shape in sites:
                f = offs[d] if isinstance(offs[d], dict) else self.affine(offs[d])
                b = None if f is None else self.band(f, shape[d])
                if b is None:
                    break
                bands.append(b)
            else:
                c, outer = bands[0][0], bands[0][1]
                if c and all(b[0] == c and b[1] == outer for b in bands):
                    width = max(b[3] for b in bands) - min(b[2] for b in bands)
                    if width <= abs(c) * step:
                        return True
        return False


def nest(loop: ForStmt, p: BatchPlan, program, named_sites, sites) -> tuple[list, list]:
    """The loops batched together from ``loop`` (accepted by :func:`plan` as ``p``), outermost first,
    and their plans: while a loop's body is a prelude of scalar assignments and ``tensor.read`` s
    followed by one inner loop whose bounds do not depend on the nest and whose iterations are
    independent too, the inner loop joins. Its members are then all index tuples: two differ in
    some loop's index, and that loop's proof (its iterations' writes in disjoint bands, the band
    covering everything inside) keeps their writes apart; the prelude holds no task (its scope
    holds nothing) and only reads."""
    loops, plans = [loop], [p]
    inner = {id(loop.loop_var)}
    while True:
        body = loops[-1].body
        if not body or not isinstance(body[-1], ForStmt):
            break
        last = body[-1]
        if last.iter_args:
            break   # (a loop carrying a tensor is batched on its own: its carried values need defining)
        for st in body[:-1]:
            if not isinstance(st, AssignStmt) or isinstance(st.value, FuncCall) or (
                    isinstance(st.value, Call) and st.value.op != "tensor.read"):
                return loops, plans
            inner.add(id(st.var))
        if any(isinstance(c, Var) and id(c) in inner for e in (last.start, last.stop, last.step) for c in walk_expr(e)):
            break
        q = plan(last, program, named_sites, sites)
        if q is None:
            break
        loops.append(last)
        plans.append(q)
        inner.add(id(last.loop_var))
    return loops, plans


class _MemberNames:
    """Names inside a per-member comprehension: a batched variable ``x`` reads ``x[_i]``."""

    def __init__(self, names, batched):
        self.names = names
        self.batched = batched

    def use(self, v) -> str:
        n = self.names.use(v)
        return n + "[_i]" if id(v) in self.batched else n

    def define(self, v) -> str:
        return self.names.define(v)


class BatchEmitter:
    """Writes the batched form of a loop :func:`plan` accepted, through the orchestration
    generator ``gen`` (its names, lines and call rendering)."""

    def __init__(self, gen):
        self.gen = gen
        self.names = gen.names
        self.batched: set = set()     # ids of Vars holding a list over the members
        self.tuples: set = set()      # ids of Vars holding a tuple of such lists (a call's returns)
        self.n = ""                   # the member count's name
        self.same: frozenset = frozenset()   # BatchPlan.same of the loops batched

    def fresh(self, prefix: str) -> str:
        k = 0
        while f"{prefix}{k}" in self.names.used:
            k += 1
        self.names.used.add(f"{prefix}{k}")
        return f"{prefix}{k}"

    def emit(self, depth, text, span=None) -> None:
        self.gen.emit(depth, text, span)

    # ---------------------------------------------------------------- the loop
    def loop(self, s: ForStmt, p: BatchPlan, depth: int) -> None:
        """``if _rt.batching(...)``: the batched form; else the loop as it is. A nest whose outer
        bodies are a prelude of scalar statements and one independent inner loop (:func:`nest`) is
        batched over all its iterations at once (members are the index tuples)."""
        gen = self.gen
        loops, plans = nest(s, p, gen.program, gen.named_sites, gen.sites)
        vals, n, act = self.fresh("_bv"), self.fresh("_bn"), self.fresh("_ba")
        fors = " ".join(f"for _x{k} in range({', '.join(py_expr(x, self.names) for x in (l.start, l.stop, l.step))})"
                        for k, l in enumerate(loops))
        self.emit(depth, f"{vals} = [({''.join(f'_x{k}, ' for k in range(len(loops)))}) {fors}]", s.span)
        self.emit(depth, f"{n} = len({vals})")
        w = ", ".join(dict.fromkeys(self.names.use(x) for q in plans for x in q.writes))
        r = ", ".join(dict.fromkeys(self.names.use(x) for q in plans for x in q.reads))
        guard = GuardEmitter(self).emit_guard(loops, plans, vals, n, depth)
        self.emit(depth, f"if _rt.batching({n}, [{w}], [{r}]){guard}:")
        self.n = n
        self.same = frozenset().union(*(q.same for q in plans))
        self.emit(depth + 1, f"{act} = list(range({n}))")
        for it, init in zip(s.iter_args, s.init_values):   # a carried outer tensor: itself throughout
            self.emit(depth + 1, f"{self.names.define(it)} = {py_expr(init, self.names)}", s.span)
        for k, l in enumerate(loops):
            self.emit(depth + 1, f"{self.names.define(l.loop_var)} = [_m[{k}] for _m in {vals}]")
            self.batched.add(id(l.loop_var))
        d = depth + 1
        for k, l in enumerate(loops):
            # one scope per loop level, as the loops have (the ring each level's tasks go on)
            self.emit(d, f"with _rt.batch_scope({act}):")
            d += 1
            body = l.body if k == len(loops) - 1 else l.body[:-1]   # the prelude
            if body or k == len(loops) - 1:
                self.block(body, d, act, ())
        for rv, it in zip(s.return_vars, s.iter_args):
            self.emit(depth + 1, f"{self.names.define(rv)} = {self.names.use(it)}")
        self.emit(depth, "else:")
        gen.control(s, depth + 1, ())

    def block(self, stmts, depth, act, yield_into) -> None:
        n = len(self.gen.lines)
        for s in stmts:
            self.stmt(s, depth, act, yield_into)
        if len(self.gen.lines) == n:
            self.emit(depth, "pass")

    # ---------------------------------------------------------------- expressions
    def is_b(self, e) -> bool:
        return any(isinstance(c, Var) and (id(c) in self.batched or id(c) in self.tuples) for c in walk_expr(e))

    def member(self, e) -> str:
        """Source of ``e`` for member ``_i`` (inside a comprehension)."""
        if isinstance(e, TupleGetItem) and isinstance(e.value, Var) and id(e.value) in self.tuples:
            return f"{self.names.use(e.value)}[{e.index}][_i]"
        return py_expr(e, _MemberNames(self.names, self.batched))

    def listed(self, e, act: str) -> str:
        """Source of ``e`` as a list over the members (for a batched ``e``)."""
        if isinstance(e, Var) and id(e) in self.batched:
            return self.names.use(e)
        if isinstance(e, TupleGetItem) and isinstance(e.value, Var) and id(e.value) in self.tuples:
            return f"{self.names.use(e.value)}[{e.index}]"
        return f"_rt.bspread({self.n}, {act}, [{self.member(e)} for _i in {act}])"

    def as_list(self, e, act: str) -> str:
        """``e`` as a list over the members, batched or not (a shared value repeated)."""
        return self.listed(e, act) if self.is_b(e) else f"[{py_expr(e, self.names)}] * {self.n}"

    # ---------------------------------------------------------------- statements
    def stmt(self, s, depth, act, yield_into) -> None:
        if isinstance(s, AssignStmt):
            v = s.value
            if isinstance(v, FuncCall):
                src, nrets, listed = self.submit(v, act)
                name = self.names.define(s.var)
                self.emit(depth, f"{name} = {src}[0]", s.span)
                if nrets > 1:
                    self.tuples.add(id(s.var))
                elif nrets == 1 and listed:
                    self.batched.add(id(s.var))
                return
            if isinstance(v, Call):
                src, b = self.op(v, act)
                self.emit(depth, f"{self.names.define(s.var)} = {src}", s.span)
            elif self.is_b(v):
                src, b = self.listed(v, act), True
                self.emit(depth, f"{self.names.define(s.var)} = {src}", s.span)
            else:
                self.emit(depth, f"{self.names.define(s.var)} = {py_expr(v, self.names)}", s.span)
                b = False
            if b:
                self.batched.add(id(s.var))
        elif isinstance(s, EvalStmt):
            self.emit(depth, self.submit(s.expr, act)[0], s.span)
        elif isinstance(s, YieldStmt):
            for dst, v in zip(yield_into, s.values):
                if id(dst) in self.same:
                    continue   # the outer tensor itself, as every version of it (plan())
                d = self.names.use(dst)
                self.emit(depth, f"{d} = _rt.bmerge({self.n}, {d}, {act}, {self.as_list(v, act)})", s.span)
        elif isinstance(s, ForStmt):
            self.inner_loop(s, depth, act)
        else:   # plan() admits nothing else
            raise AssertionError(type(s).__name__)

    def inner_loop(self, s: ForStmt, depth, act) -> None:
        # every carried value is a list over the members (members may leave the loop at different steps)
        for it, init in zip(s.iter_args, s.init_values):
            if id(it) in self.same:
                self.emit(depth, f"{self.names.define(it)} = {py_expr(init, self.names)}", s.span)
                continue
            self.emit(depth, f"{self.names.define(it)} = {self.as_list(init, act)}", s.span)
            self.batched.add(id(it))
        if not any(self.is_b(e) for e in (s.start, s.stop, s.step)):
            rng = ", ".join(py_expr(x, self.names) for x in (s.start, s.stop, s.step))
            self.emit(depth, f"for {self.names.define(s.loop_var)} in range({rng}):", s.span)
            self.emit(depth + 1, f"with _rt.batch_scope({act}):")
            self.block(s.body, depth + 2, act, s.iter_args)
        else:
            rs, k, sub = self.fresh("_br"), self.fresh("_bk"), self.fresh("_ba")
            bounds = ", ".join(self.listed(e, act) if self.is_b(e) else py_expr(e, self.names)
                               for e in (s.start, s.stop, s.step))
            self.emit(depth, f"{rs} = _rt.branges({act}, {bounds})", s.span)
            self.emit(depth, f"for {k} in range(max(map(len, {rs}), default=0)):")
            self.emit(depth + 1, f"{sub}, {self.names.define(s.loop_var)} = _rt.bstep({self.n}, {act}, {rs}, {k})")
            self.batched.add(id(s.loop_var))
            self.emit(depth + 1, f"with _rt.batch_scope({sub}):")
            self.block(s.body, depth + 2, sub, s.iter_args)
        for rv, it in zip(s.return_vars, s.iter_args):
            self.emit(depth, f"{self.names.define(rv)} = {self.names.use(it)}")
            if id(it) not in self.same:
                self.batched.add(id(rv))

    def submit(self, e: FuncCall, act) -> tuple[str, int, bool]:
        """``(source of the batched submission, number of returned values, whether a single
        returned value is a list over the members)``: a returned argument all members share (an
        outer tensor written whole, plan()) comes back as that one tensor."""
        prog = self.gen.program
        callee = prog.get_function(e.func)
        rets = group_returned_params(callee, prog) if callee.func_type == FunctionType.Group \
            else returned_params(callee)
        args, flags = [], []
        for a in e.args:
            b = self.is_b(a)
            flags.append(b)
            args.append(self.listed(a, act) if b else py_expr(a, self.names))
        tags = list(e.arg_directions)
        src = (f"_rt.submit_batch({e.func!r}, {act}, [{', '.join(args)}], {tuple(flags)!r}, {tags!r}, "
               f"returns={rets!r})")
        return src, len(rets), len(rets) == 1 and (rets[0] < 0 or flags[rets[0]])

    def op(self, e: Call, act) -> tuple[str, bool]:
        """``(source, batched)`` of an orchestration op call."""
        op = get_op(e.op, e.span)
        b = any(self.is_b(a) for a in e.args)
        if b and (gathered := self.gathered(e, op, act)) is not None:
            return gathered, True
        render = self.member if b else (lambda a: py_expr(a, self.names))
        args = []
        for p, a in zip(op.params, e.args):
            if p.kind in VALUE_KINDS or p.kind in ("ints", "task_ids"):
                args.append(Src(render(a), getattr(a, "type", None)))
            else:
                args.append(Src(py_literal(a), None))
        src = op.orch(op.args(tuple(args)))
        if e.op == "tensor.create":   # plan(): its arguments do not depend on the member
            assert src.startswith("_rt.create_tensor(")
            return f"_rt.create_batch({act}, " + src[len("_rt.create_tensor("):], True
        if not b:
            return src, False
        return f"_rt.bspread({self.n}, {act}, [{src} for _i in {act}])", True

    def gathered(self, e: Call, op, act):
        """A ``tensor.read`` / ``tensor.slice`` of one tensor at per-member indices, or a
        ``tensor.reshape`` of each member's view, as one runtime call for all members
        (:meth:`pypto.runtime.batch.BatchRuntime.bread` / ``bslice`` / ``breshape``: the same
        values and views as the per-member ops, without their per-call overhead), or None."""
        a = dict(zip((p.name for p in op.params), e.args))
        if e.op == "tensor.reshape":   # (plan(): a static shape) of each member's view
            if not isinstance(a["x"], Var) or id(a["x"]) not in self.batched or self.is_b(a["shape"]):
                return None
            return f"_rt.breshape({self.n}, {act}, {self.names.use(a['x'])}, {py_expr(a['shape'], self.names)})"
        if e.op not in ("tensor.read", "tensor.slice"):
            return None
        if self.is_b(a["x"]) or (e.op == "tensor.slice" and (self.is_b(a["shape"]) or a.get("valid_shape") is not None)):
            return None
        x = py_expr(a["x"], self.names)
        if e.op == "tensor.read":
            idx = a["indices"]
            elems = idx.elements if isinstance(idx, MakeTuple) else idx
            if isinstance(elems, (list, tuple)) and len(elems) == 1:   # a 1-D table: one index each
                return f"_rt.bread_flat({self.n}, {act}, {x}, [{self.member(elems[0])} for _i in {act}])"
            return f"_rt.bread({self.n}, {act}, {x}, [{self.member(idx)} for _i in {act}])"
        offs = a["offset"]
        elems = offs.elements if isinstance(offs, MakeTuple) else offs
        if isinstance(elems, (list, tuple)) and len(elems) == 2 and sum(map(self.is_b, elems)) == 1:
            # one offset differs per member (a page's rows, a head's columns): that column as one
            # list, the other offset once (bslice_columns; no pair built per member)
            cols = ", ".join(f"[{self.member(o)} for _i in {act}]" if self.is_b(o) else py_expr(o, self.names)
                             for o in elems)
            return f"_rt.bslice_columns({self.n}, {act}, {x}, [{cols}], {py_expr(a['shape'], self.names)})"
        return (f"_rt.bslice({self.n}, {act}, {x}, [{self.member(offs)} for _i in {act}], "
                f"{py_expr(a['shape'], self.names)})")


# ------------------------------------------------------------------------------------------------
# Writes at data-dependent offsets: proved disjoint at run time
# ------------------------------------------------------------------------------------------------
#
# A loop whose kernels write slices of an outer tensor at offsets computed from values the loop
# reads (a KV-cache row picked through the page table: ``row = table[b] * B + pos``) cannot be
# proved independent by the compiler, but every iteration's write regions are known before the
# loop's first task is submitted: the offsets are scalar expressions of the loop indices, of values
# read with ``tensor.read`` from tensors the loop does not write (the analysis refuses a read of a
# written or created tensor), and of values defined before the loop. So the compiler emits a *guard*
# beside the batched form: a function that replays, for one iteration, only the scalar statements
# and ``tensor.read`` s of the body (no task is submitted, nothing is written) and returns the
# regions that iteration's ``tensor.slice`` s of the guarded tensors cover; the runtime
# (:meth:`pypto.runtime.batch.BatchRuntime.bguard`) evaluates it for every iteration before the
# loop starts and batches only if no two iterations' regions of a guarded tensor intersect.
# Otherwise the loop runs task by task (the code the per-task form always runs), so the result
# is the per-task result either way. A guarded tensor is, like every tensor the loop writes, never
# read in the loop (checked by variable at compile time, by storage at run time), so "disjoint
# writes" is the whole independence condition for it. The guard reads what the loop's iterations
# read, earlier: no task of the loop writes those tensors, so the values are the same (an
# orchestration read of a tensor that a task submitted *before* the loop writes depends on when the
# scheduler runs that task, in the per-task form as much: such a program has no fixed result to
# keep). Writes at offsets the static proof refutes
# (affine in the loop index with overlapping bands: no read involved) get no guard: it would always
# fail.


def guarded_plan(loop: ForStmt, program, named_sites: set, sites: dict) -> BatchPlan | None:
    """The :class:`BatchPlan` of ``loop`` with run-time-checked writes, when the only obstacle to
    :func:`plan` is disjointness of writes at offsets the compiler cannot bound (values read in the
    loop, products of symbols) and the guard can compute every such write's region."""
    if loop.iter_args or loop.stage != 1:
        return None
    try:
        return _Guarded(loop, program, named_sites, sites).run()
    except _Refuse:
        return None


class _Guarded(_Analysis):
    """:class:`_Analysis` whose unproved writes become guarded ones where data-dependent."""

    def run(self) -> BatchPlan | None:
        self.block(self.loop.body)
        step = self.loop.step
        if not self.calls or set(self.writes) & set(self.reads) or not isinstance(step, ConstInt) or step.value == 0:
            return None
        guarded = []
        for x, sites in self.writes.values():
            if self.disjoint(sites, abs(step.value)):
                continue
            if not self.data_dependent(sites):
                return None   # refuted statically (overlapping affine bands): a guard would always fail
            guarded.append(x)
        if not guarded:
            return None
        replay(self.loop.body, {id(x) for x in guarded}, self.inner, {id(self.loop.loop_var)})   # or _Refuse
        return BatchPlan([x for x, _ in self.writes.values()], list(self.reads.values()), guarded=guarded)

    def data_dependent(self, sites) -> bool:
        """Whether some write offset involves a value only known at run time: a non-affine term, or a
        value defined in the loop other than its index and constant-range inner loop indices."""
        me = id(self.loop.loop_var)
        for offs, _ in sites:
            for o in offs:
                f = self.affine(o)
                if f is None or any(k != 1 and k != me and k in self.inner and k not in self.ranges for k in f):
                    return True
        return False


def replay(stmts, guarded: set, inner: set, known: set, alias: dict | None = None) -> list:
    """The guard's replay of ``stmts`` (one iteration): ``("stmt", AssignStmt)`` for the scalar
    assignments and ``tensor.read`` s whose inputs are known, ``("region", k, offsets, shape)`` for a
    ``tensor.slice`` of guarded tensor ``k`` (an outer variable's id), ``("for", ForStmt, items)`` for
    an inner loop holding regions. Kernel calls, creations and other slices are left out (they
    submit or allocate). A variable defined in the loop (``inner``) is usable once ``known``; a
    region or a loop bound needing an unknown one (a kernel's result, a carried value) raises
    :class:`_Refuse`: the guard could not compute it."""
    alias = {} if alias is None else alias
    out: list = []

    def ok(e) -> bool:
        return all(id(c) not in inner or id(c) in known for c in walk_expr(e) if isinstance(c, Var))

    for s in stmts:
        if isinstance(s, AssignStmt):
            v = s.value
            if isinstance(v, Call):
                if v.op == "tensor.read" and all(ok(a) for a in v.args):
                    out.append(("stmt", s))
                    known.add(id(s.var))
                elif v.op == "tensor.slice":
                    a = dict(zip((p.name for p in get_op(v.op, v.span).params), v.args))
                    x = a["x"]
                    while isinstance(x, Var) and id(x) in alias:
                        x = alias[id(x)]
                    if isinstance(x, Var) and id(x) in guarded:
                        offs, shape = a["offset"], a["shape"]
                        offs = list(offs.elements if isinstance(offs, MakeTuple) else offs)
                        dims = shape.elements if isinstance(shape, MakeTuple) else shape
                        if not all(ok(o) for o in offs) or not all(isinstance(d, ConstInt) for d in dims):
                            raise _Refuse
                        out.append(("region", id(x), offs, [d.value for d in dims]))
            elif not isinstance(v, FuncCall):
                if is_tensor(getattr(s.var, "type", None)):
                    if isinstance(v, Var):
                        alias[id(s.var)] = v
                elif ok(v):
                    out.append(("stmt", s))
                    known.add(id(s.var))
        elif isinstance(s, ForStmt):
            body = replay(s.body, guarded, inner, set(known) | {id(s.loop_var)}, alias)
            if any(item[0] != "stmt" for item in body):
                if not all(ok(e) for e in (s.start, s.stop, s.step)):
                    raise _Refuse
                out.append(("for", s, body))
    return out


def _defined(stmts, into: set) -> set:
    """Ids of every variable ``stmts`` define (assignments, loop indices, carried values)."""
    for s in stmts:
        if isinstance(s, AssignStmt):
            into.add(id(s.var))
        elif isinstance(s, ForStmt):
            into.add(id(s.loop_var))
            into.update(id(v) for v in (*s.iter_args, *s.return_vars))
            _defined(s.body, into)
    return into


class GuardEmitter:
    """Writes the guard of a batched nest (``loops`` with ``plans``) whose plans have guarded
    writes: a function of the nest's indices replaying the preludes and the innermost body
    (:func:`replay`), called for every member before the loop: ``" and _rt.bguard(...)"`` for the
    ``if``, or ``""`` when nothing is guarded."""

    def __init__(self, emitter: BatchEmitter):
        self.be = emitter
        self.names = emitter.names

    def emit_guard(self, loops, plans, vals: str, n: str, depth: int) -> str:
        xs = list({id(x): x for q in plans for x in q.guarded}.values())
        if not xs:
            return ""
        stmts = [st for l in loops[:-1] for st in l.body[:-1]] + list(loops[-1].body)
        inner = _defined([loops[0]], set())
        try:
            items = replay(stmts, {id(x) for x in xs}, inner, {id(l.loop_var) for l in loops})
        except _Refuse:   # (each level's replay succeeded, so the nest's does: defensive) never batch
            return " and False"
        fn, acc = self.be.fresh("_bg"), self.be.fresh("_bgr")
        index = {id(x): k for k, x in enumerate(xs)}
        self.be.emit(depth, f"def {fn}({', '.join(self.names.define(l.loop_var) for l in loops)}):")
        self.be.emit(depth + 1, f"{acc} = []")
        self.items(items, depth + 1, acc, index)
        self.be.emit(depth + 1, f"return {acc}")
        each = f"[{fn}(*_m) for _m in {vals}]"
        if all(item[0] != "for" for item in items):
            return (f" and _rt.bguard({n}, [{', '.join(self.names.use(x) for x in xs)}], "
                    f"{self.batched(loops, items, vals, n, depth, index)}, lambda: {each})")
        return f" and _rt.bguard({n}, [{', '.join(self.names.use(x) for x in xs)}], {each})"

    def batched(self, loops, items, vals: str, n: str, depth: int, index: dict) -> str:
        """The guard of a nest whose replay has no inner loop, for all members at once (the name
        of a function returning every member's regions): the replayed reads at per-member indices
        as one ``_rt.bread``, the scalar statements and the regions as comprehensions over the
        members -- the values the per-member guard computes, without a call and single reads per
        member. Where it raises (some member's read or expression fails), ``bguard`` runs the
        per-member guard instead, which raises the first member's error as the per-task form does."""
        be, gen = self.be, self.be.gen
        fn, act = be.fresh("_bgb"), be.fresh("_bga")
        batched: set = set()
        member = _MemberNames(self.names, batched)

        def is_b(e) -> bool:
            return any(isinstance(c, Var) and id(c) in batched for c in walk_expr(e))

        be.emit(depth, f"def {fn}():")
        be.emit(depth + 1, f"{act} = list(range({n}))")
        for k, l in enumerate(loops):
            be.emit(depth + 1, f"{self.names.define(l.loop_var)} = [_m[{k}] for _m in {vals}]")
            batched.add(id(l.loop_var))
        regions = []
        for item in items:
            if item[0] == "region":
                _, x, offs, shape = item
                regions.append(f"({index[x]}, ({', '.join(py_expr(e, member) for e in offs)},), {tuple(shape)!r})")
                continue
            s = item[1]
            v = s.value
            name = self.names.define(s.var)
            if not is_b(v):   # the same for every member
                src = gen.value(v) if isinstance(v, Call) else py_expr(v, self.names)
            elif isinstance(v, Call):   # (replay(): a tensor.read of a tensor defined outside the nest)
                a = dict(zip((p.name for p in get_op(v.op, v.span).params), v.args))
                idx = a["indices"]
                elems = idx.elements if isinstance(idx, MakeTuple) else idx
                if isinstance(elems, (list, tuple)) and len(elems) == 1:
                    src = (f"_rt.bread_flat({n}, {act}, {py_expr(a['x'], self.names)}, "
                           f"[{py_expr(elems[0], member)} for _i in {act}])")
                else:
                    src = (f"_rt.bread({n}, {act}, {py_expr(a['x'], self.names)}, "
                           f"[{py_expr(idx, member)} for _i in {act}])")
                batched.add(id(s.var))
            else:
                src = f"[{py_expr(v, member)} for _i in {act}]"
                batched.add(id(s.var))
            be.emit(depth + 1, f"{name} = {src}", s.span)
        be.emit(depth + 1, f"return [[{', '.join(regions)}] for _i in {act}]")
        return fn

    def items(self, items, depth: int, acc: str, index: dict) -> None:
        gen = self.be.gen
        for item in items:
            if item[0] == "stmt":
                s = item[1]
                src = gen.value(s.value) if isinstance(s.value, Call) else py_expr(s.value, self.names)
                self.be.emit(depth, f"{self.names.define(s.var)} = {src}", s.span)
            elif item[0] == "region":
                _, x, offs, shape = item
                o = ", ".join(py_expr(e, self.names) for e in offs)
                self.be.emit(depth, f"{acc}.append(({index[x]}, ({o},), {tuple(shape)!r}))")
            else:
                s, body = item[1], item[2]
                rng = ", ".join(py_expr(e, self.names) for e in (s.start, s.stop, s.step))
                self.be.emit(depth, f"for {self.names.define(s.loop_var)} in range({rng}):", s.span)
                self.items(body, depth + 1, acc, index)
