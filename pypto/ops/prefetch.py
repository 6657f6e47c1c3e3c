"""Asynchronous GM -> L2 prefetch (``pl.prefetch.*``, the reference's ``prefetch`` op family).

A latency-hiding cache hint: ``async_prefetch`` starts an SDMA pull of a global-memory region into
L2 while the kernel goes on, ``wait`` blocks until it has landed. No tensor value changes, so a
kernel computes the same with or without it (the reference's definition)::

    ctx = pl.prefetch.make_context()            # pl.PrefetchAsyncContext
    evt = pl.prefetch.async_prefetch(x, ctx)    # pl.AsyncEvent
    session = pl.prefetch.session(ctx)          # pl.AsyncSession
    ...                                         # unrelated work overlaps the transfer
    done = pl.prefetch.wait(evt, session)       # BOOL scalar (True)

Type rules (as the reference's): ``src`` a tensor *Var* (a parameter or a value) of a fully static
shape that is logically 1-D — every extent but the last 1 (``[N]``, ``[1, N]``): one contiguous run;
``ctx`` / ``event`` / ``session`` the handles of the ops that make them. The handles are kernel-local
values (:class:`~pypto.ir.types.HandleType`), and the ops are kernel ops (no ``orch`` form: the
reference places them on the vector core).

Simulator: there is no L2, so a later load costs what it costs without the prefetch; what is
modelled is the time. ``async_prefetch`` issues in one cycle and its transfer takes the cycles of a
GM read of ``src`` (latency + bytes / bandwidth, as a load of that size) from then on; ``wait`` stalls
the core only for what is left of it (nothing when enough work came between). The transfer reads
memory but writes nothing any instruction sees, so it is no access for the race detector (the
reference defines no hazard for it: a load of ``src`` before the wait reads the same values).
``wait`` checks that the session is the event's context's (a located SimulationError otherwise).
Reference executor (``torch_codegen``): the handles and a ``True`` done flag, no time.
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.nodes import Var
from pypto.ir.types import DynDim, HandleType, ScalarType, TensorType, describe
from pypto.language.dtypes import BOOL
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.rules import expect
from pypto.ops.traits import Clocked

CTX, EVENT, SESSION = (HandleType(k) for k in ("PrefetchAsyncContext", "AsyncEvent", "AsyncSession"))
_PRODUCER = {CTX: "pl.prefetch.make_context()", EVENT: "pl.prefetch.async_prefetch(src, ctx)",
             SESSION: "pl.prefetch.session(ctx)"}


def _handle(op: str, name: str, v, want: HandleType, span: Span) -> None:
    t = getattr(v, "type", None)
    expect(t == want, op, f"expects {name} to be a {want.kind} (the result of {_PRODUCER[want]}), got "
           f"{describe(t) if t is not None else repr(v)}", span)


def _src(op: str, src, span: Span) -> None:
    """The reference's constraint on the prefetched region: one flat contiguous run of a GM tensor."""
    expect(isinstance(src, Var), op, "expects src to be a tensor variable (a parameter or a value)", span)
    t = src.type
    expect(isinstance(t, TensorType), op, f"expects src to be a GM tensor (prefetch reads global memory), got "
           f"{describe(t)}", span)
    expect(len(t.shape) >= 1, op, "expects src to have rank >= 1, got a rank-0 tensor", span)
    for i, d in enumerate(t.shape):
        expect(not isinstance(d, DynDim), op, f"expects src to have a fully static shape, but dimension {i} is "
               "dynamic; async prefetch needs a compile-time byte extent", span)
    for i, d in enumerate(t.shape[:-1]):
        expect(d == 1, op, f"expects src to be a flat contiguous logical 1-D region (every dimension but the last "
               f"1), but dimension {i} is {d}", span, "reshape the tensor to [N] or [1, ..., N] before prefetching")


def _transfer_cycles(src_type: TensorType, platform) -> int:
    """What a GM read of the region takes (the kernel generator's cost of a load of that size)."""
    return platform.gm_latency_cycles + src_type.nbytes // platform.gm_bytes_per_cycle


def _infer_make(a: OpArgs, span: Span):
    return CTX


def _infer_async(a: OpArgs, span: Span):
    _src("prefetch.async_prefetch", a.src, span)
    _handle("prefetch.async_prefetch", "ctx", a.ctx, CTX, span)
    return EVENT


def _infer_session(a: OpArgs, span: Span):
    _handle("prefetch.session", "ctx", a.ctx, CTX, span)
    return SESSION


def _infer_wait(a: OpArgs, span: Span):
    _handle("prefetch.wait", "event", a.event, EVENT, span)
    _handle("prefetch.wait", "session", a.session, SESSION, span)
    return ScalarType(BOOL)


_CLOCKED = (Clocked(),)

register(OpDef(
    name="prefetch.make_context", params=(), infer=_infer_make,
    ref=lambda a: "_pto.PrefetchContext()",
    sim=lambda a, dst: "_pto.PrefetchContext()",
    doc="an async-prefetch context (its workspace is the runtime's)",
))
register(OpDef(
    name="prefetch.async_prefetch", params=(Param("src", "tensor"), Param("ctx", "handle")), infer=_infer_async,
    ref=lambda a: f"_pto.prefetch_start({a.src}, {a.ctx}, None, 0)",
    sim=lambda a, dst, platform=None: (f"_pto.prefetch_start({a.src}, {a.ctx}, _clk, "
                                       f"{_transfer_cycles(a.src.type, platform)})"),
    traits=_CLOCKED,
    doc="start one asynchronous prefetch of a flat GM region into L2 (no value changes); returns its event",
))
register(OpDef(
    name="prefetch.session", params=(Param("ctx", "handle"),), infer=_infer_session,
    ref=lambda a: f"{a.ctx}.session",
    sim=lambda a, dst: f"{a.ctx}.session",
    doc="the async session of a prefetch context (for pl.prefetch.wait)",
))
register(OpDef(
    name="prefetch.wait", params=(Param("event", "handle"), Param("session", "handle")), infer=_infer_wait,
    ref=lambda a: f"_pto.prefetch_wait({a.event}, {a.session}, 0)",
    # the stall (what is left of the transfer) is yielded to the scheduler inside the expression
    sim=lambda a, dst, platform=None: (f"_pto.prefetch_wait({a.event}, {a.session}, "
                                       f"(yield _pto.prefetch_stall({a.event}, {a.session}, _clk)))"),
    traits=_CLOCKED,
    doc="wait until a prefetch event of the session has completed; a BOOL done flag (True)",
))
