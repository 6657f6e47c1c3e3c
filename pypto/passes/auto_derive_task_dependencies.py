"""AutoDeriveTaskDependencies: the compiler finds, for the task arguments it can reason about, the
producer tasks the runtime's tensormap lookup would find (docs/compiler.md, "The pipeline"),
records them as edges on the consumer call and rewrites the argument's tag so the runtime skips the
lookup.

Requires: CallDirectionsResolved (which still holds after it: the rewritten tags are allowed
exactly for the arguments that carry compiler edges). Produces: TaskDependenciesDerived (checked by
the verifier: every recorded edge names an earlier, non-manual task call of the same orchestration
function that is always submitted before the consumer).

**Only with ``analyze_auto_scopes_for_deps``** (``ir.compile(..., analyze_auto_scopes_for_deps=True)``
or ``RunConfig(analyze_auto_scopes_for_deps=True)``; ``PassContext.analyze_auto_scopes_for_deps``).
Without it the pass returns the program unchanged, as the reference does: the orchestration's AUTO
scopes keep the runtime's dependency inference. Manual tasks (``pl.manual_scope`` / ``pl.submit``
in a manual scope) are never touched: the runtime neither looks them up nor registers them.

**Sites.** A *site* is the ordinal of an InCore call in its orchestration function (pre-order,
:func:`task_sites`). An edge ``(arg i, site k)`` means "wait for the most recently submitted task of
site ``k``". Orchestration codegen emits ``site=k`` on referenced producers and
``compiler_deps=[(i, k), ...]`` on consumers; the runtime adds those edges (source ``compiler`` in
``deps.json``).

**The model.** The pass replays, in program order, the tensormap the runtime builds *without* the
knob (tags as DeriveCallDirections decided them): per root buffer (an orchestration parameter or a
``tensor.create`` result) the registered ``(site, box)`` entries of ``INOUT`` / ``OUTPUT_EXISTING``
arguments, ``INOUT`` lookups dropping the entries they cover. A *box* is a region given by constant
offsets and shape in the root's index space (the root itself, or a constant ``tensor.slice`` of a
box); for such views of one contiguous buffer the runtime's L1/L2 overlap test (same dtype, rank and
row-major strides) reduces exactly to the per-dimension box test used here. An argument's lookup is
*proven* when its root and box are known and the root's entries are known exactly; then the set of
overlapping entries is exactly what the runtime would find, and

* ``INPUT`` becomes ``NO_DEP``: the edges replace the lookup; nothing else changes (an INPUT never
  registers);
* ``INOUT`` becomes ``OUTPUT_EXISTING``: the edges replace the lookup and OUTPUT_EXISTING keeps the
  registration (the runtime registers both, docs/simulator.md), so later readers still find this task. The
  one thing lost is the lookup's *removal* of covered entries; the runtime's map then keeps entries
  it would have dropped, which can only give later (un-rewritten) lookups more producers, never
  fewer — so the task graph with the knob is at least as ordering as without it.

Conservative everywhere else (no edge, tag unchanged):

* a root written (registered) anywhere in a loop body is unknown inside that loop and after it
  (earlier iterations' entries: loop-carried ambiguity); a root written in an ``if`` branch is
  unknown after the ``if`` (which branch ran is dynamic); reads of roots the loop / branch does not
  write keep exact knowledge (their entries come from tasks submitted once, before it);
* a view with a non-constant offset or shape, a dynamic-shape root, a loop/if value whose versions
  disagree, or any other tensor-producing op gives an unknown view; a lookup through it is never
  rewritten, and a registration through an unknown *root* makes every root unknown from then on;
* ``manual_dep`` buffers and ``NO_DEP`` / ``SCALAR`` arguments take no part (the runtime ignores them).
"""
from __future__ import annotations

from pypto.ir.nodes import (
    AssignStmt, Call, ConstInt, EvalStmt, ForStmt, FuncCall, Function, IfStmt, MakeTuple, Program, Stmt,
    TupleGetItem, Var, WhileStmt, YieldStmt,
)
from pypto.ir.types import DynDim, TensorType
from pypto.ir.visit import Mutator, child_stmts, iter_stmts, task_sites, use_exprs, walk_expr  # noqa: F401  (task_sites re-exported)
from pypto.language.enums import FunctionType
from pypto.passes.context import PassContext
from pypto.ir.boxes import COVERED, NO_OVERLAP, OTHER, box_overlap
from pypto.ir.tags import INOUT, INPUT, LOOKUP_TAGS, NO_DEP, OUTPUT_EXISTING, REGISTER_TAGS
from pypto.passes.param_writes import returned_params
from pypto.ir.types import TupleType

NAME = "AutoDeriveTaskDependencies"
REQUIRES = ("CallDirectionsResolved",)
# CallDirectionsResolved stays established (DeriveCallDirections produced it; the manager keeps
# checking it, and the rewritten tags satisfy it); it is not re-produced here so that a pipeline
# without DeriveCallDirections still fails where codegen names the missing pass
PRODUCES = ("TaskDependenciesDerived",)

REWRITE = {INPUT: NO_DEP, INOUT: OUTPUT_EXISTING}    # a proven lookup's new tag

_TOP = "TOP"  # an unknown root


def run(program: Program, ctx: PassContext) -> Program:
    if not getattr(ctx, "analyze_auto_scopes_for_deps", False):
        return program  # AUTO scopes keep the runtime's inference (the reference's default)
    funcs = {f.name: f for f in program.functions}
    out = []
    for f in program.functions:
        if f.func_type == FunctionType.Orchestration:
            decisions = _Model(f, funcs).run()
            f = _Apply(decisions).function(f) if decisions else f
        out.append(f)
    return program.replace(functions=tuple(out))


def _returned_params(callee: Function) -> list[int]:
    return returned_params(callee)


# ------------------------------------------------------------------------------------------ views
# A view is (root, box) with root a key (id of the defining Var) and box ((offsets), (shape)) or
# None (root known, region not); _TOP is an unknown root; a tuple-valued call gives a _Tup of views.


class _Tup(tuple):
    """The views of the elements of a tuple-valued call result."""


def _join(a, b):
    if a is None:
        return b
    if b is None or a == b:
        return a
    if isinstance(a, _Tup) and isinstance(b, _Tup) and len(a) == len(b):
        return _Tup(_join(x, y) for x, y in zip(a, b))
    if a is _TOP or b is _TOP or isinstance(a, _Tup) or isinstance(b, _Tup):
        return _TOP
    return (a[0], None) if a[0] == b[0] else _TOP


def _whole(var: Var):
    """The box of a whole root tensor, or None for a dynamic / empty shape."""
    t = var.type
    if not isinstance(t, TensorType) or any(isinstance(d, DynDim) or int(d) <= 0 for d in t.shape):
        return None
    shape = tuple(int(d) for d in t.shape)
    return ((0,) * len(shape), shape)


def _const_ints(xs):
    """The constant ints of an ``ints`` operand (a MakeTuple, tuple or list), or None."""
    if isinstance(xs, MakeTuple):
        xs = xs.elements
    if not isinstance(xs, (tuple, list)):
        return None
    out = []
    for x in xs:
        if isinstance(x, ConstInt):
            out.append(int(x.value))
        elif isinstance(x, int) and not isinstance(x, bool):
            out.append(x)
        else:
            return None
    return tuple(out)


class _Views:
    """Root and box of every tensor Var of one orchestration function: a fixed point over the loops
    (a carried value's view is the join of its initial value and every yielded version)."""

    def __init__(self, f: Function, funcs: dict):
        self.funcs = funcs
        self.view: dict[int, object] = {}
        self.manual_dep: set = set()     # roots created with manual_dep=True
        for p in f.params:
            if isinstance(p.type, TensorType):
                self.view[id(p)] = (id(p), _whole(p))
        for _ in range(16):              # the lattice is 4 deep: this converges in a few rounds
            self.changed = False
            self.stmts(f.body, ())
            if not self.changed:
                break
        else:  # pragma: no cover - defensive: give every var up rather than loop
            self.view = {k: _TOP for k in self.view}

    def of(self, e):
        if isinstance(e, Var):
            return self.view.get(id(e), _TOP)
        if isinstance(e, TupleGetItem):
            t = self.of(e.value)
            return t[e.index] if isinstance(t, _Tup) and e.index < len(t) else _TOP
        return _TOP

    def set(self, var: Var, v) -> None:
        old = self.view.get(id(var))
        new = _join(old, v)
        if new != old:
            self.view[id(var)] = new
            self.changed = True

    def stmts(self, stmts, yield_into) -> None:
        for s in stmts:
            if isinstance(s, AssignStmt):
                self.set(s.var, self.value(s.var, s.value))
            elif isinstance(s, YieldStmt):
                for dst, v in zip(yield_into, s.values):
                    self.set(dst, self.of(v))
            elif isinstance(s, (ForStmt, WhileStmt)):
                for it, init in zip(s.iter_args, s.init_values):
                    self.set(it, self.of(init))
                self.stmts(s.body, s.iter_args)   # yields join into the carried values
                for rv, it in zip(s.return_vars, s.iter_args):
                    self.set(rv, self.of(it))
            elif isinstance(s, IfStmt):
                self.stmts(s.then_body, s.return_vars)
                self.stmts(s.else_body, s.return_vars)

    def value(self, var: Var, v):
        if isinstance(v, FuncCall):
            callee = self.funcs.get(v.func)
            if callee is None:
                return _TOP
            # a kernel returns its Out/InOut argument tensors themselves (SubmitResult.value)
            views = [self.of(v.args[i]) if 0 <= i < len(v.args) else _TOP for i in _returned_params(callee)]
            if _is_tuple(var):
                return _Tup(views)
            return views[0] if len(views) == 1 else _TOP
        if isinstance(v, Call):
            if v.op == "tensor.create":
                if v.args[2] is True or getattr(v.args[2], "value", False) is True:
                    self.manual_dep.add(id(var))
                return (id(var), _whole(var))
            if v.op == "tensor.slice":
                return self.slice(self.of(v.args[0]), v.args[1], v.args[2])
            return _TOP if isinstance(var.type, TensorType) else None
        if isinstance(v, (Var, TupleGetItem)):
            return self.of(v)
        return None

    @staticmethod
    def slice(src, shape_arg, offset_arg):
        if src is _TOP or isinstance(src, _Tup) or src is None:
            return _TOP
        root, box = src
        shape, offs = _const_ints(shape_arg), _const_ints(offset_arg)
        if box is None or shape is None or offs is None or not (len(shape) == len(offs) == len(box[1])):
            return (root, None)
        if any(o < 0 or n <= 0 or o + n > bs for o, n, bs in zip(offs, shape, box[1])):
            return (root, None)  # out of range or empty: the runtime rejects / ignores it anyway
        return (root, (tuple(o + b for o, b in zip(offs, box[0])), shape))


def _is_tuple(var: Var) -> bool:
    return isinstance(var.type, TupleType)


def _overlap(c, p) -> int:
    """The runtime's overlap of consumer box ``c`` with producer box ``p`` (None: unknown, which
    the runtime may see as anything but NO_OVERLAP is assumed)."""
    if c is None or p is None:
        return OTHER
    return box_overlap(c[0], c[1], p[0], p[1])


# ------------------------------------------------------------------------------------------ model


class _State:
    """The modelled tensormap: registered ``(site, box)`` entries per root; roots whose entries are
    not known exactly; whether a registration went to an unknown root (then nothing is known)."""

    def __init__(self):
        self.entries: dict[object, list] = {}
        self.unknown: set = set()
        self.lost = False

    def copy(self) -> _State:
        s = _State()
        s.entries = {r: list(es) for r, es in self.entries.items()}
        s.unknown = set(self.unknown)
        s.lost = self.lost
        return s


class _Model:
    """Replays one orchestration function; ``run()`` returns ``id(FuncCall) -> (tags, edges)`` for
    the calls it rewrites."""

    def __init__(self, f: Function, funcs: dict):
        self.f = f
        self.funcs = funcs
        self.sites = task_sites(f, funcs)
        self.views = _Views(f, funcs)
        self.decisions: dict[int, tuple] = {}

    def run(self) -> dict:
        self.stmts(self.f.body, _State())
        return self.decisions

    def task_calls(self, stmts):
        """The non-manual task calls in ``stmts`` (nested statements included)."""
        for s in iter_stmts(stmts):
            for e in use_exprs(s):
                for c in walk_expr(e):
                    if id(c) in self.sites and not c.manual:
                        yield c

    def written_roots(self, stmts, st: _State) -> set:
        """Roots registered by some task of ``stmts``; an unknown root loses everything."""
        roots = set()
        for c in self.task_calls(stmts):
            for a, t in zip(c.args, c.arg_directions):
                if t in REGISTER_TAGS:
                    v = self.views.of(a)
                    if v is _TOP or isinstance(v, _Tup):
                        st.lost = True
                    elif v[0] not in self.views.manual_dep:
                        roots.add(v[0])
        return roots

    def stmts(self, stmts, st: _State) -> None:
        for s in stmts:
            self.stmt(s, st)

    def stmt(self, s: Stmt, st: _State) -> None:
        if isinstance(s, (ForStmt, WhileStmt)):
            # earlier iterations' registrations are in the map too: the loop's written roots are
            # unknown inside it and after it (pl.parallel included: its tasks are still submitted
            # one after another)
            st.unknown |= self.written_roots(s.body, st)
            self.stmts(s.body, st)
            return
        if isinstance(s, IfStmt):
            # each branch sees the state before the if; after it, what either branch wrote is
            # unknown (which one ran is decided at run time)
            written = self.written_roots(s.then_body, st) | self.written_roots(s.else_body, st)
            for body in (s.then_body, s.else_body):
                inner = st.copy()
                self.stmts(body, inner)
                st.lost |= inner.lost
            st.unknown |= written
            return
        if isinstance(s, (AssignStmt, EvalStmt)):
            for e in use_exprs(s):
                for c in walk_expr(e):
                    if id(c) in self.sites:
                        self.task(c, st)
            return
        for body in child_stmts(s):
            # any other statement with a body (none after OutlineIncoreScopes): treated like a loop
            st.unknown |= self.written_roots(body, st)
            self.stmts(body, st)

    def task(self, c: FuncCall, st: _State) -> None:
        if c.manual:
            return  # the runtime neither looks up nor registers a manual task: nothing to model
        mdep = self.views.manual_dep
        tags = list(c.arg_directions)
        edges = []
        register = []
        for i, (a, t) in enumerate(zip(c.args, c.arg_directions)):
            if t not in LOOKUP_TAGS and t not in REGISTER_TAGS:
                continue
            v = self.views.of(a)
            known = v is not _TOP and not isinstance(v, _Tup)
            if known and v[0] in mdep:
                continue  # manual_dep: no lookup, no registration (runtime), no rewrite (here)
            if t in LOOKUP_TAGS:
                proven = known and v[1] is not None and not st.lost and v[0] not in st.unknown
                if proven:
                    found = [(site, ov) for site, box in st.entries.get(v[0], ())
                             for ov in (_overlap(v[1], box),) if ov != NO_OVERLAP]
                    edges.append((i, tuple(sorted({site for site, _ in found}))))
                    tags[i] = REWRITE[t]
                if t == INOUT and known and v[1] is not None and v[0] in st.entries:
                    # the un-rewritten runtime drops the entries this INOUT covers
                    st.entries[v[0]] = [(site, box) for site, box in st.entries[v[0]]
                                        if _overlap(v[1], box) != COVERED]
            if t in REGISTER_TAGS:
                register.append(v)
        site = self.sites[id(c)]
        for v in register:  # after every lookup of the task, as the runtime does
            if v is _TOP or isinstance(v, _Tup):
                st.lost = True
            else:
                st.entries.setdefault(v[0], []).append((site, v[1]))
        if edges:
            self.decisions[id(c)] = (tuple(tags), tuple(edges))


class _Apply(Mutator):
    """Writes the decided tags and edges into the calls (frozen nodes: rebuilt)."""

    def __init__(self, decisions: dict):
        super().__init__()
        self.decisions = decisions

    def visit_FuncCall(self, c: FuncCall):
        d = self.decisions.get(id(c))
        c2 = self.rebuild(c)
        if d is None:
            return c2
        return c2.replace(arg_directions=d[0], compiler_dep_edges=d[1])
