"""Batched orchestration: which loops may run batched, and their batched form (the runtime side and
the argument for bit-identical results: :mod:`pypto.runtime.batch`; docs/simulator.md).

:func:`plan` proves that the iterations of an orchestration ``for`` loop are independent, so that
running them step by step for all iterations at once (each call site submitting one task for all of
them) computes what running them one after another does:

* the loop carries no values, except outer tensors written through the kernels (``out = k(..., out)``:
  every version of such a tensor is the tensor itself, so the batched form keeps it one value);
* its body holds only assignments, evaluated kernel calls, inner ``for`` loops (any trip count, also
  one differing per iteration) and yields; the only ops are ``tensor.create`` (static shape),
  ``tensor.slice`` (of a tensor defined outside the loop, or of one created inside) and
  ``tensor.read`` (of a tensor defined outside); no ``if``, ``while``, scopes, task ids, explicit
  deps, manual or predicated or multi-block submissions, dumps, ``NO_DEP`` arguments, or compiler
  edges (their "latest task of a site" has no per-iteration meaning);
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
``tensor.create`` ``_rt.create_batch``. The generated code runs it under
``if _rt.batching(...)`` and the unchanged loop otherwise.
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

_OPS = frozenset({"tensor.create", "tensor.slice", "tensor.read"})
_WRITE = frozenset({"INOUT", "OUTPUT_EXISTING", "OUTPUT"})
_READ = frozenset({"INPUT"})
_WRITE_WHOLE = frozenset({"INOUT", "OUTPUT_EXISTING"})


class BatchPlan:
    """A batchable loop: the outer tensor variables it writes (slices of) and reads; ``same``: ids of
    the loop-carried Vars (iter_args, return_vars of the loop and its inner loops) that always hold
    an outer tensor itself (the batched form keeps them one value, not a list over the members)."""

    def __init__(self, writes: list, reads: list, same: frozenset = frozenset()):
        self.writes = writes
        self.reads = reads
        self.same = same


class _Refuse(Exception):
    pass


def plan(loop: ForStmt, program, named_sites: set, sites: dict) -> BatchPlan | None:
    """The :class:`BatchPlan` of ``loop`` when its iterations are provably independent, else None."""
    if loop.stage != 1 or not all(is_tensor(getattr(it, "type", None)) for it in loop.iter_args):
        return None
    try:
        return _Analysis(loop, program, named_sites, sites).run()
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
        self.emit(depth, f"if _rt.batching({n}, [{w}], [{r}]):")
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
            self.emit(depth + 1, f"{sub} = [_i for _i, _r in zip({act}, {rs}) if {k} < len(_r)]")
            self.emit(depth + 1, f"{self.names.define(s.loop_var)} = _rt.bspread({self.n}, {sub}, "
                                 f"[_r[{k}] for _r in {rs} if {k} < len(_r)])")
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
