"""InsertCommFence (the reference's name; the last pass): the data-before-signal markers of
window traffic in kernels.

Requires: nothing. Produces: nothing (it only adds marker statements after existing ones).

A write another rank may read must be visible before the signal that tells it to read, and a read
after a wait must not see a stale cache line. The reference's compiler owns that contract (its
assembler requires the markers but does not check them), with two local rules this pass applies to
every kernel (InCore / AIC / AIV) statement list, nested bodies included:

* after a **local publishing write** — ``tile.store`` / ``tensor.write`` into a window view (a
  ``pld.DistributedTensor`` parameter or a version of one), ``pld.tensor.get`` into a window — a
  region ``system.cacheinvalid(target, shape, [0, ...])`` of the whole target, then ``system.fence()``
  (a target with a dynamic extent gets the whole-GM ``system.cacheinvalid()``);
* after a **remote publishing write** — ``remote_store`` / ``put`` — ``system.fence()`` (the
  peer-region invalidate is the op's own, as in the reference's codegen);
* after a **wait** — ``pld.system.wait`` / ``defer_wait`` — the whole-GM ``system.cacheinvalid()``;
* after a **call of another function** from a kernel (an opaque write: its body is not analysed
  here, it may write any window) — the whole-GM ``system.cacheinvalid()`` and ``system.fence()``;
* a notify needs nothing (the write it publishes carries its fence).

Markers already in place (a region invalidate of the target then a fence; a whole-GM invalidate
after a wait; a fence after a remote write) are not repeated, so the pass is idempotent.

On the simulator the markers change no value and no time: its global memory has no data cache and
every access completes in program order (``pypto/ops/sync.py``). They are inserted so the lowered
kernels are the reference's — in a pass dump, in printed IR — and a kernel ported to the device
keeps its contract.
"""
from __future__ import annotations

from pypto.ir.nodes import (
    AssignStmt, Call, ConstInt, EvalStmt, ForStmt, FuncCall, IfStmt, MakeTuple, Program, ScopeStmt, WhileStmt,
)
from pypto.ir.types import TensorType, TupleType
from pypto.language.enums import KERNEL_TYPES
from pypto.passes.context import PassContext

NAME = "InsertCommFence"
REQUIRES = ()
PRODUCES = ()

_LOCAL_WRITES = {"tile.store": 2, "tensor.write": 0, "dist.get": 0}   # op -> index of the written tensor
_REMOTE_WRITES = {"dist.remote_store", "dist.put"}
_WAITS = {"dist.wait", "dist.defer_wait"}


def run(program: Program, ctx: PassContext) -> Program:
    funcs = []
    for f in program.functions:
        if f.func_type in KERNEL_TYPES:
            body = _block(f.body)
            if body != f.body:
                f = f.replace(body=body)
        funcs.append(f)
    return program.replace(functions=tuple(funcs))


def _call_of(s):
    if isinstance(s, AssignStmt) and isinstance(s.value, Call):
        return s.value
    if isinstance(s, EvalStmt) and isinstance(s.expr, Call):
        return s.expr
    return None


def _is_func_call(s) -> bool:
    v = s.value if isinstance(s, AssignStmt) else s.expr if isinstance(s, EvalStmt) else None
    return isinstance(v, FuncCall)


def _is(s, op: str, nargs_none: bool | None = None) -> bool:
    c = _call_of(s)
    if c is None or c.op != op:
        return False
    if nargs_none is None:
        return True
    whole = all(a is None for a in c.args)
    return whole == nargs_none


def _marker(op: str, args: tuple, span) -> EvalStmt:
    return EvalStmt(Call(op, args, TupleType(()), span), span)


def _block(stmts: tuple) -> tuple:
    out: list = []
    stmts = tuple(stmts)
    i = 0
    while i < len(stmts):
        s = stmts[i]
        if isinstance(s, ForStmt) or isinstance(s, WhileStmt) or isinstance(s, ScopeStmt):
            s = s.replace(body=_block(s.body))
        elif isinstance(s, IfStmt):
            s = s.replace(then_body=_block(s.then_body), else_body=_block(s.else_body))
        out.append(s)
        after = stmts[i + 1:i + 3]
        c = _call_of(s)
        if c is not None:
            out.extend(_markers_for(s, c, after))
        elif _is_func_call(s) and not (len(after) == 2 and _is(after[0], "system.cacheinvalid", nargs_none=True)
                                       and _is(after[1], "system.fence")):
            out.extend([_marker("system.cacheinvalid", (), s.span), _marker("system.fence", (), s.span)])
        i += 1
    return tuple(out)


def _markers_for(s, c: Call, after: tuple) -> list:
    span = s.span
    if c.op in _LOCAL_WRITES:
        dst = c.args[_LOCAL_WRITES[c.op]]
        t = getattr(dst, "type", None)
        if not (isinstance(t, TensorType) and t.window):
            return []
        target = s.var if isinstance(s, AssignStmt) and isinstance(s.var.type, TensorType) else dst
        if len(after) == 2 and _is(after[0], "system.cacheinvalid") and _is(after[1], "system.fence"):
            return []   # already marked
        if all(isinstance(d, int) for d in t.shape):
            region = (target, MakeTuple(tuple(ConstInt(d) for d in t.shape), span),
                      MakeTuple(tuple(ConstInt(0) for _ in t.shape), span))
        else:   # a dynamic extent: the whole-GM form covers it
            region = ()
        return [_marker("system.cacheinvalid", region, span), _marker("system.fence", (), span)]
    if c.op in _REMOTE_WRITES:
        if after and _is(after[0], "system.fence"):
            return []
        return [_marker("system.fence", (), span)]
    if c.op in _WAITS:
        if after and _is(after[0], "system.cacheinvalid", nargs_none=True):
            return []
        return [_marker("system.cacheinvalid", (), span)]
    return []
