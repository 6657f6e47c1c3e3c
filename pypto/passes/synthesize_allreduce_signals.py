"""SynthesizeAllReduceSignals (HOST pass 1, the reference's name): a host collective called without
a signal window gets an explicit one.

Requires: nothing. Produces: nothing.

``data = pld.tensor.allreduce(data, op=pld.ReduceOp.Sum)`` becomes::

    __allreduce_signal_world_size_0 = pld.world_size()
    __allreduce_signal_buf_0 = pld.alloc_window_buffer(__allreduce_signal_world_size_0 * 1 * 4)
    __allreduce_signal_0 = pld.window(__allreduce_signal_buf_0, [__allreduce_signal_world_size_0, 1], dtype=pl.INT32)
    data = pld.tensor.allreduce(data, __allreduce_signal_0, op=pld.ReduceOp.Sum)

an INT32 ``[world_size, core_num]`` window (``core_num`` the call's constant ``core_num=``, default
1), the reference's generated form, so MaterializeCommDomainScopes sees an ordinary window
allocation and puts it in the collective's domain.

Differences from the reference, and why:

* Every host collective may omit its signal here (``broadcast``, ``barrier``, ...), not only
  ``allreduce``: this implementation always accepted that (an internal signal served), and the
  builtin programs leave their signal cells zeroed, so one generated window per call is the same.
* A signal-less collective inside a host loop is not an error: its allocation is placed before
  the outermost enclosing loop (one window reused by every iteration, which the self-clearing
  builtins allow). The reference refuses it because its codegen cannot allocate a symmetric
  window per iteration; hoisting gives the same window every iteration would have used.
"""
from __future__ import annotations

import ast
import copy

from pypto.passes.host_ir import (
    COLLECTIVE_PARAMS, HostIR, HostPassContext, attr_chain, collective_kind, located, name, names_in,
)

NAME = "SynthesizeAllReduceSignals"
REQUIRES: frozenset = frozenset()
PRODUCES: frozenset = frozenset()


def run(ir: HostIR, ctx: HostPassContext) -> HostIR:
    used = names_in(ir.node)
    body, hoisted = _block(ir.node.body, ctx, used, in_loop=False)
    assert not hoisted
    return ir.with_body(body)


def _direct_call(s: ast.stmt):
    if isinstance(s, (ast.Assign, ast.Expr, ast.Return)) and isinstance(s.value, ast.Call):
        return s.value
    return None


def _missing_signal(call: ast.Call, kind: str) -> bool:
    pos = COLLECTIVE_PARAMS[kind].index("signal")
    return len(call.args) <= pos and not any(k.arg == "signal" for k in call.keywords)


def _block(stmts, ctx, used, in_loop: bool):
    """(the rewritten statements, statements to place before the outermost enclosing loop)."""
    out, hoist = [], []
    for s in stmts:
        if isinstance(s, (ast.For, ast.While)):
            body, h1 = _block(s.body, ctx, used, True)
            orelse, h2 = _block(s.orelse, ctx, used, True)
            s = _copy(s, body=body, orelse=orelse)
            (hoist if in_loop else out).extend(h1 + h2)
            out.append(s)
            continue
        if isinstance(s, ast.If):
            body, h1 = _block(s.body, ctx, used, in_loop)
            orelse, h2 = _block(s.orelse, ctx, used, in_loop)
            hoist.extend(h1 + h2)
            out.append(_copy(s, body=body, orelse=orelse))
            continue
        call = _direct_call(s)
        kind = collective_kind(call, ctx) if call is not None else None
        if kind is None or not _missing_signal(call, kind):
            out.append(s)
            continue
        gen, sig = _signal_stmts(call, kind, used)
        for g in gen:
            located(g, s)
        new_call = copy.copy(call)
        pos = COLLECTIVE_PARAMS[kind].index("signal")
        args = list(call.args)
        # positional up to the signal: params before it given as keywords move into place
        kws = list(call.keywords)
        for p in COLLECTIVE_PARAMS[kind][len(args):pos]:
            k = next((k for k in kws if k.arg == p), None)
            if k is None:
                break
            args.append(k.value)
            kws.remove(k)
        if len(args) == pos:
            args.append(located(name(sig), call))
        else:
            kws.append(ast.keyword("signal", located(name(sig), call)))
        new_call.args, new_call.keywords = args, kws
        s = _copy(s, value=new_call)
        (hoist if in_loop else out).extend(gen)
        out.append(s)
    return out, hoist


def _copy(s, **fields):
    c = copy.copy(s)
    for k, v in fields.items():
        setattr(c, k, v)
    return c


def _signal_stmts(call: ast.Call, kind: str, used: set):
    core = next((k.value for k in call.keywords if k.arg == "core_num"), None)
    lanes = core.value if isinstance(core, ast.Constant) and isinstance(core.value, int) and core.value > 0 else 1
    k = 0   # the reference's names: __<kind>_signal_world_size_<k>, __<kind>_signal_buf_<k>, __<kind>_signal_<k>
    while any(f"__{kind}_signal{p}_{k}" in used for p in ("_world_size", "_buf", "")):
        k += 1
    ws, buf, sig = (f"__{kind}_signal{p}_{k}" for p in ("_world_size", "_buf", ""))
    used.update((ws, buf, sig))
    t = lambda n: ast.Name(n, ast.Store())   # noqa: E731
    gen = [
        ast.Assign([t(ws)], ast.Call(attr_chain("pld", "world_size"), [], [])),
        ast.Assign([t(buf)], ast.Call(attr_chain("pld", "alloc_window_buffer"), [
            ast.BinOp(ast.BinOp(name(ws), ast.Mult(), ast.Constant(lanes)), ast.Mult(), ast.Constant(4))], [])),
        ast.Assign([t(sig)], ast.Call(attr_chain("pld", "window"), [
            name(buf), ast.List([name(ws), ast.Constant(lanes)], ast.Load())],
            [ast.keyword("dtype", attr_chain("pl", "INT32"))])),
    ]
    return gen, sig

