"""MaterializeCommDomainScopes (HOST pass 2, the reference's name): which ranks use each window
buffer, and the comm domains those sets form.

Requires: nothing. Produces: CommDomainScopesMaterialized.

A window buffer's device set is the set of ranks whose dispatches (``f(..., device=r)`` of a
per-rank program, ``self.f(..., device=r)`` in a ``@pl.program``, a lowered ``builtin.tensor.*``)
receive a view of it. The set is found without running anything: the body is walked with every
value the host knows before the run — the rank count, module constants, the host arguments'
shapes and the ``pl.dynamic`` extents bound from them — so a loop ``for r in pl.range(NR)`` over a
dynamic extent is enumerated with the run's own ``NR``; ``if`` conditions that evaluate choose
their branch, others count both. A host collective's windows (its signal, ``recv_counts``) have no
``device=`` of their own and share the device set of its data window, as in the reference.

Buffers with equal device sets form one domain (source order, ``comm_d<n>``); a set of every rank
is the world (``devices=None``). The domains go into :class:`HostIR.domains`; the host interpreter
gives each window buffer its domain's group, so ``pld.rank`` / ``pld.nranks`` / ``peer=`` count in
it (group rank 0 is the domain's first device).

A ``device=`` that depends on what only the run computes (a tensor's values) cannot give a device
set: a located :class:`PassError` (the reference's ValueError for a device expression it does not
recognise). Taking the world group instead would silently renumber ranks in a kernel that uses
``pld.rank`` / ``pld.nranks`` on a subset's window.
"""
from __future__ import annotations

import ast
import operator

import torch

from pypto.errors import PassError
from pypto.passes.host_ir import (
    COLLECTIVE_PARAMS, CommDomain, HostIR, HostPassContext, _DEFAULT_NAMES, builtin_kind, collective_kind,
)

NAME = "MaterializeCommDomainScopes"
REQUIRES: frozenset = frozenset()
PRODUCES = frozenset({"CommDomainScopesMaterialized"})

_STEP_BUDGET = 200_000   # statement visits; past it, further loops are walked once with an unknown variable


def walk(ir: HostIR, ctx: HostPassContext) -> "_Walk":
    """The body walked with the values known before the run (the analysis behind the domains;
    LowerHostTensorCollectives reads which buffers each collective's operands view from it)."""
    w = _Walk(ctx)
    w.block(ir.node.body)
    return w


def run(ir: HostIR, ctx: HostPassContext) -> HostIR:
    w = walk(ir, ctx)
    for _ in range(len(w.pairs) + 1):   # a collective's windows share one device set (to a fixed point)
        changed = False
        for group in w.pairs:
            union = set().union(*(w.uses.get(a, set()) for a in group))
            for a in group:
                if w.uses.setdefault(a, set()) != union:
                    w.uses[a] = set(union)
                    changed = True
        if not changed:
            break
    domains: list[tuple] = []   # (devices, [slots])
    for a in w.allocs:
        devs = w.uses.get(a, set())
        bad = [d for d in devs if not isinstance(d, int)]
        if bad:
            node = bad[0].node
            raise PassError(
                f"the ranks using window buffer '{a}' cannot be known before the run: this launch's "
                f"device={ast.unparse(node)} depends on values the host computes while running",
                ctx.src.span(node) if ctx.src is not None else None,
                "give device= a constant, a pl.range(...) loop variable or arithmetic of them (bounds may be "
                "pld.world_size(), constants or host argument shapes)")
        key = None if not devs or devs == set(range(ctx.nranks)) else tuple(sorted(devs))
        for d in domains:
            if d[0] == key:
                d[1].append(a)
                break
        else:
            domains.append((key, [a]))
    out = tuple(CommDomain(f"comm_d{i}", k, tuple(s)) for i, (k, s) in enumerate(domains))
    return HostIR(ir.node, out)


class _Unknown(Exception):
    """A value the host only knows while running."""


class _UnknownDevice:
    def __init__(self, node):
        self.node = node


_UNKNOWN = object()
_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod, ast.Pow: operator.pow, ast.Div: operator.truediv, ast.BitAnd: operator.and_,
        ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
        ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


class _Walk:
    def __init__(self, ctx: HostPassContext):
        import pypto.language as pl
        import pypto.language.distributed as pld

        self.ctx, self.pl, self.pld = ctx, pl, pld
        self.env: dict = {}
        self.views: dict = {}      # name -> allocation (slot) it views
        self.allocs: list = []     # slot names, source order
        self.uses: dict = {}       # slot -> set of ranks (or _UnknownDevice)
        self.pairs: list = []      # the slots of one host collective
        self.collective_slots: dict = {}   # id(collective call node) -> the slots of its operands
        self.steps = 0

    # -- static values --------------------------------------------------------------------
    def value(self, e: ast.expr):
        v = self._value(e)
        if isinstance(v, torch.Tensor):
            raise _Unknown
        return v

    def _value(self, e: ast.expr):
        from pypto.ir.types import DynDim

        if isinstance(e, ast.Constant):
            return e.value
        if isinstance(e, ast.Name):
            if e.id in self.env:
                v = self.env[e.id]
                if v is _UNKNOWN:
                    raise _Unknown
                return v
            for src in (self.ctx.env, self.ctx.scope, _DEFAULT_NAMES(), _SAFE):
                if e.id in src:
                    v = src[e.id]
                    if isinstance(v, DynDim):
                        v = self.ctx.dyn.get(v.name)
                        if not isinstance(v, int):
                            raise _Unknown
                    return v
            raise _Unknown
        if isinstance(e, ast.Attribute):
            base = self._value(e.value)
            if isinstance(base, torch.Tensor) and e.attr not in ("shape", "dtype"):
                raise _Unknown
            try:
                return getattr(base, e.attr)
            except Exception:  # noqa: BLE001
                raise _Unknown from None
        if isinstance(e, ast.Subscript):
            base = self._value(e.value)
            if isinstance(base, torch.Tensor) or type(base).__name__ == "StackedDeviceTensor":
                raise _Unknown   # a host tensor's values: known once the run computed them
            try:
                return base[self.value(e.slice)]
            except _Unknown:
                raise
            except Exception:  # noqa: BLE001
                raise _Unknown from None
        if isinstance(e, (ast.Tuple, ast.List)):
            vals = [self.value(x) for x in e.elts]
            return tuple(vals) if isinstance(e, ast.Tuple) else vals
        try:
            if isinstance(e, ast.BinOp) and type(e.op) in _BIN:
                return _BIN[type(e.op)](self.value(e.left), self.value(e.right))
            if isinstance(e, ast.UnaryOp):
                v = self.value(e.operand)
                return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                        ast.Invert: operator.invert}[type(e.op)](v)
            if isinstance(e, ast.Compare) and all(type(o) in _CMP for o in e.ops):
                left = self.value(e.left)
                for op, c in zip(e.ops, e.comparators):
                    right = self.value(c)
                    if not _CMP[type(op)](left, right):
                        return False
                    left = right
                return True
            if isinstance(e, ast.BoolOp):
                v = None
                for x in e.values:
                    v = self.value(x)
                    if bool(v) != isinstance(e.op, ast.And):
                        return v
                return v
            if isinstance(e, ast.IfExp):
                return self.value(e.body) if self.value(e.test) else self.value(e.orelse)
            if isinstance(e, ast.Call) and not e.keywords:
                fn = self._value(e.func)
                if fn is self.pld.world_size or fn is getattr(self.pld.system, "world_size", None):
                    return self.ctx.nranks
                if fn is self.pl.range or fn is range:
                    return range(*[self.value(a) for a in e.args])
                if fn is len:
                    a = self._value(e.args[0])
                    return int(a.shape[0]) if isinstance(a, torch.Tensor) else len(a)
                if fn in (min, max, int, abs):
                    return fn(*[self.value(a) for a in e.args])
        except _Unknown:
            raise
        except Exception:  # noqa: BLE001 - Python would raise at run time: the run reports it
            raise _Unknown from None
        raise _Unknown

    def known(self, e: ast.expr):
        try:
            return self.value(e)
        except _Unknown:
            return _UNKNOWN

    # -- statements -----------------------------------------------------------------------
    def block(self, stmts) -> None:
        for s in stmts:
            self.steps += 1
            self.stmt(s)

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            self.calls(s.value)
            for t in s.targets:
                self.assign(t, s.value)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.calls(s.value)
            self.assign(s.target, s.value)
        elif isinstance(s, ast.AugAssign):
            self.calls(s.value)
            if isinstance(s.target, ast.Name):
                self.env[s.target.id] = self.known(ast.BinOp(ast.Name(s.target.id, ast.Load()), s.op, s.value))
        elif isinstance(s, (ast.Expr, ast.Return)):
            if s.value is not None:
                self.calls(s.value)
        elif isinstance(s, ast.For):
            self.calls(s.iter)
            it = self.known(s.iter)
            if isinstance(it, range) and isinstance(s.target, ast.Name) and self.steps < _STEP_BUDGET:
                for i in it:
                    self.env[s.target.id] = i
                    self.block(s.body)
                    if self.steps >= _STEP_BUDGET:
                        break
            else:
                for n in ast.walk(s.target):
                    if isinstance(n, ast.Name):
                        self.env[n.id] = _UNKNOWN
                self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, ast.While):
            self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, ast.If):
            self.calls(s.test)
            c = self.known(s.test)
            if c is _UNKNOWN:
                self.block(s.body)
                self.block(s.orelse)
            else:
                self.block(s.body if c else s.orelse)
        elif isinstance(s, ast.With):
            self.block(s.body)

    def assign(self, t: ast.expr, v: ast.expr) -> None:
        if not isinstance(t, ast.Name):
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    self.env[n.id] = _UNKNOWN
                    self.views.pop(n.id, None)
            return
        name = t.id
        self.views.pop(name, None)
        self.env[name] = _UNKNOWN
        if isinstance(v, ast.Call) and self.callee(v) is self.pld.alloc_window_buffer:
            if name not in self.allocs:
                self.allocs.append(name)
            return
        slot = self.slot_of(v)
        if slot is not None:
            self.views[name] = slot
            return
        if isinstance(v, ast.Call):
            kind = collective_kind(v, self.ctx)
            if kind is not None:   # x = pld.tensor.<kind>(...): the target (barrier: signal) view
                arg = self.param(v, kind, "signal" if kind == "barrier" else "target")
                s = self.slot_of(arg) if arg is not None else None
                if s is not None:
                    self.views[name] = s
                return
        self.env[name] = self.known(v)

    # -- calls ----------------------------------------------------------------------------
    def callee(self, call: ast.Call):
        try:
            return self._value(call.func)
        except _Unknown:
            return None

    def slot_of(self, e) -> str | None:
        if isinstance(e, ast.Name):
            return self.views.get(e.id)
        if isinstance(e, ast.Call) and self.callee(e) is self.pld.window and e.args \
                and isinstance(e.args[0], ast.Name) and e.args[0].id in self.allocs:
            return e.args[0].id
        return None

    def param(self, call: ast.Call, kind: str, pname: str):
        i = COLLECTIVE_PARAMS[kind].index(pname)
        if i < len(call.args):
            return call.args[i]
        return next((k.value for k in call.keywords if k.arg == pname), None)

    def calls(self, e: ast.expr) -> None:
        for c in [n for n in ast.walk(e) if isinstance(n, ast.Call)]:
            kind = collective_kind(c, self.ctx)
            if kind is not None:
                slots = {self.slot_of(self.param(c, kind, p)) for p in COLLECTIVE_PARAMS[kind]} - {None}
                if slots:
                    self.pairs.append(slots)
                    self.collective_slots.setdefault(id(c), set()).update(slots)
                continue
            if builtin_kind(c) is None and not self.ctx.is_dispatch(self.callee(c)):
                continue
            slots = {self.slot_of(a) for a in [*c.args, *(k.value for k in c.keywords)]} - {None}
            if not slots:
                continue
            dev = self.device(c)
            for s in slots:
                self.uses.setdefault(s, set())
                if dev is not None:
                    self.uses[s].add(dev)

    def device(self, c: ast.Call):
        kw = {k.arg: k.value for k in c.keywords}
        if "device" in kw:
            v = self.known(kw["device"])
            if isinstance(v, bool) or not isinstance(v, int):
                return _UnknownDevice(kw["device"])
            return v if 0 <= v < self.ctx.nranks else None   # out of range: the launch reports it
        if self.ctx.inline_kw in kw:   # an inline pl.at(level=CHIP) block k runs on chip k % ranks
            return self.value(kw[self.ctx.inline_kw]) % self.ctx.nranks
        return 0


_SAFE = {"range": range, "len": len, "min": min, "max": max, "int": int, "abs": abs}
