"""LowerHostTensorCollectives (HOST pass 3, the reference's name): each host collective becomes the
per-rank dispatches of its builtin program.

Requires: CommDomainScopesMaterialized. Produces: CommDomainScopesMaterialized.

``data = pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Sum)`` over a world-domain window becomes::

    for __r_0 in pl.range(pld.world_size()):
        builtin.tensor.allreduce(data, sig, op=pld.ReduceOp.Sum, device=__r_0)
    data = data

and over a domain of devices ``[1, 2]`` one dispatch per device (``device=1``, ``device=2``), as the
reference emits a sequence for an explicit device list. ``builtin.tensor.<kind>`` names the builtin
next-level program (:mod:`pypto.runtime.distributed.builtins` builds it per reduce op, root, mode,
dtype and shapes, in ``next_levels/builtin.tensor.<kind>[__<op>|__root<k>]__<dtype>/``). The window
operands are passed in the reference's positional order; one that is not a name is bound to a
``__<kind>_arg_<k>`` name first. The assignment keeps the rebind idiom (``data = data``), as the
reference appends ``<result> = <original expr>``.

How the interpreter runs builtin dispatches: the launches queued before the first of them run
first, the dispatches of one collective run together (every rank of the domain concurrently), and
the next launch that is not part of it runs after — the collective is a phase of its own, as a host
collective synchronises the host with every card.

A host collective that is not a statement of its own (``f(pld.tensor.allreduce(...))``) is a
located error: the reference requires an assignment, expression statement or return.
"""
from __future__ import annotations

import ast
import copy

from pypto.errors import PassError
from pypto.passes.host_ir import (
    COLLECTIVE_PARAMS, HostIR, HostPassContext, attr_chain, collective_kind, fresh, located, name, names_in,
)

NAME = "LowerHostTensorCollectives"
REQUIRES = frozenset({"CommDomainScopesMaterialized"})
PRODUCES = frozenset({"CommDomainScopesMaterialized"})


def run(ir: HostIR, ctx: HostPassContext) -> HostIR:
    from pypto.passes.materialize_comm_domain_scopes import walk

    used = names_in(ir.node)
    slots = walk(ir, ctx).collective_slots
    return ir.with_body(_block(ir.node.body, ir, ctx, used, slots))


def _block(stmts, ir: HostIR, ctx: HostPassContext, used: set, slots: dict) -> list:
    out = []
    for s in stmts:
        if isinstance(s, (ast.For, ast.While, ast.If, ast.With)):
            c = copy.copy(s)
            c.body = _block(s.body, ir, ctx, used, slots)
            if hasattr(s, "orelse"):
                c.orelse = _block(s.orelse, ir, ctx, used, slots)
            out.append(c)
            continue
        call = s.value if isinstance(s, (ast.Assign, ast.Expr, ast.Return)) else None
        kind = collective_kind(call, ctx) if isinstance(call, ast.Call) else None
        if kind is not None and (not isinstance(s, ast.Assign) or len(s.targets) == 1):
            out.extend(_lower(s, call, kind, ir, ctx, used, slots))
            continue
        for n in ast.walk(s):
            if isinstance(n, ast.Call) and collective_kind(n, ctx) is not None:
                raise PassError(f"pld.tensor.{collective_kind(n, ctx)} on the host must be a statement of its own",
                                ctx.src.span(n) if ctx.src is not None else None,
                                "assign it (x = pld.tensor.allreduce(x, sig, ...)), call it as a statement or "
                                "return it")
        out.append(s)
    return out


def _lower(s: ast.stmt, call: ast.Call, kind: str, ir: HostIR, ctx: HostPassContext, used: set, slots: dict) -> list:
    params = COLLECTIVE_PARAMS[kind]
    kws = {k.arg: k.value for k in call.keywords}
    if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        raise PassError(f"pld.tensor.{kind} on the host: *args / **kwargs cannot be lowered",
                        ctx.src.span(call) if ctx.src is not None else None)
    if len(call.args) > len(params):
        raise PassError(f"pld.tensor.{kind} on the host takes {len(params)} window views ({', '.join(params)}), "
                        f"got {len(call.args)} positional arguments", ctx.src.span(call) if ctx.src else None)
    pre, views = [], []
    for i, p in enumerate(params):
        v = call.args[i] if i < len(call.args) else kws.pop(p, None)
        if v is None:
            raise PassError(f"pld.tensor.{kind} on the host: missing window view '{p}'",
                            ctx.src.span(call) if ctx.src else None)
        if not isinstance(v, ast.Name):
            tmp = fresh(used, f"__{kind}_arg")
            pre.append(located(ast.Assign([ast.Name(tmp, ast.Store())], v), s))
            v = located(name(tmp), v)
        views.append(v)
    result = views[params.index("signal" if kind == "barrier" else "target")]
    devices = _devices(call, ir, slots)
    extra = [ast.keyword(k, v) for k, v in kws.items()]

    def dispatch(dev: ast.expr) -> ast.stmt:
        c = ast.Call(attr_chain("builtin", "tensor", kind), [name(v.id) for v in views],
                     [*copy.deepcopy(extra), ast.keyword("device", dev)])
        return located(ast.Expr(c), s)

    if devices is None:
        r = fresh(used, "__r")
        loop = ast.For(ast.Name(r, ast.Store()),
                       ast.Call(attr_chain("pl", "range"), [ast.Call(attr_chain("pld", "world_size"), [], [])], []),
                       [dispatch(name(r))], [])
        body = [located(loop, s)]
    else:
        body = [dispatch(ast.Constant(d)) for d in devices]
    if isinstance(s, ast.Assign):
        body.append(located(ast.Assign(s.targets, name(result.id)), s))
    elif isinstance(s, ast.Return):
        body.append(located(ast.Return(name(result.id)), s))
    return pre + body


def _devices(call: ast.Call, ir: HostIR, slots: dict):
    """The devices of the collective's domain: a tuple, or None for the world. Its operands share
    one device set (MaterializeCommDomainScopes merges a collective's windows), so the first buffer
    with a domain decides; which buffers they view comes from the same flow-sensitive walk."""
    for slot in sorted(slots.get(id(call), ())):
        d = ir.devices_of(slot)
        if d is not False:
            return d
    return None
