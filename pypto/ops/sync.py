"""Synchronisation ops (``pl.system.*``): flags between the pipes of one core, events between the
cores of a cluster, barriers, the global-memory fence, the cross-core ``syncall``.

The device runs each core's instructions on several pipes at once (MTE2: global memory -> core,
MTE3: core -> global memory, FIX: the cube's accumulator write-back, V, M, S) and orders them only
where the code says so. The simulator runs a core's instructions one after another, so these ops
change no value on a correct kernel; what they do is *order* — and the simulator checks the order a
kernel states against what it does (:mod:`pypto.runtime.cross_core`):

* ``sync_src(set_pipe=, wait_pipe=, event_id=)`` / ``sync_dst(...)`` (the device's ``set_flag`` /
  ``wait_flag``): a per-core counter per ``(set_pipe, wait_pipe, event_id)``; a ``sync_dst`` with
  no ``sync_src`` before it on the same core waits for ever on the device (nothing else can set a
  core's own flag) and is a located :class:`~pypto.errors.SimulationError` here.
* ``sync_set(event_id, pipe=, ffts_mode=, core_type=)`` / ``sync_wait(event_id, pipe=, core_type=)``:
  a cross-core event of the cluster (FFTS mode 2; modes 1 and 0 are barriers of the event among the
  vector lanes / the cores of one kind, :meth:`pypto.runtime.cross_core.CoreLink.event_set`). A vector lane's set is for the cube; the cube's
  wait takes one set of *every* vector lane (the reference's V->C reduction); the cube's set wakes
  each lane; a lane's wait takes one set of the cube. The set releases what the setting core did on
  ``pipe`` (a store is on MTE3, FIX from the cube's accumulator; a load on MTE2), plus everything
  before a ``fence`` / ``bar_all``; the wait orders what the waiting core does on ``pipe`` after it.
  A wait nothing can satisfy ends the run with a deadlock report (kernel, core, event, line,
  partner).
* ``syncall(core_type=, mode=, gm_workspace=, used_cores=)``: every participant (``mix``: the cube
  and the vector lanes; ``aiv_only``, ``aic_only``) arrives before any proceeds. It is an arrival
  barrier only, as on the device: it publishes the global-memory writes of a ``fence`` before it,
  not the others (a missing fence is a race the race detector reports).
* ``fence()``: every global-memory access before it completes before any after it (the device's
  ``pto.fence.barrier_all gm``); ``bar_all()``: every pipe drains (a fence too); ``bar_v()`` /
  ``bar_m()``: the vector / cube pipe drains (no global-memory effect).
* ``set_ffts(workspace)``: declares the FFTS unit's workspace (an INT64 ``[>= 256]`` tensor); the
  simulated FFTS needs none, the type rule checks it as the device does.
* ``cacheinvalid()`` / ``cacheinvalid(tensor, shapes, offsets)``: the simulator has no data cache (a
  load sees the last store), so it changes nothing; the arguments are checked.

Simulator form: a call on ``_cc`` (the kernel's sync link: its cluster's
:class:`~pypto.runtime.cross_core.CoreLink` in an AIC / AIV function, a core-local
:class:`~pypto.ops.support.sync.CoreFlags` in an InCore kernel). Reference form (``torch_codegen``):
the flag / barrier / fence ops have no effect on values; ``sync_set`` / ``sync_wait`` are events
between the member threads and ``syncall`` a barrier of them (:mod:`pypto.ops.support.cross_core`);
a ``syncall`` across the blocks of a task is refused there (it runs blocks one after another, so the
barrier could not hold: a silently different result otherwise).
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.types import ScalarType, TensorType, TupleType
from pypto.language.dtypes import INDEX, INT32, INT64
from pypto.language.enums import PipeType
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.rules import expect
from pypto.ops.traits import CoreSync, ReadsBlock

MAX_USER_EVENT_ID = 13        # the reference's user range of cross-core event ids (14, 15 reserved)
MIN_FFTS_WORKSPACE = 256      # INT64 elements of the FFTS workspace (the reference's minimum)
SYNCALL_CORE_TYPES = ("aiv_only", "aic_only", "mix")
_SYNC = (CoreSync(),)


def _pipe_name(src: str) -> str:
    """``'MTE2'`` from the generated literal of a PipeType (``pl.PipeType.MTE2``)."""
    return repr(str(src).rsplit(".", 1)[-1])


def _check_pipe(op: str, name: str, v, span: Span) -> None:
    expect(isinstance(v, PipeType), op, f"{name} must be a pl.PipeType (pl.PipeType.MTE2, ...), got {v!r}", span)


def _flag_infer(op: str):
    def infer(a: OpArgs, span: Span):
        _check_pipe(op, "set_pipe", a.set_pipe, span)
        _check_pipe(op, "wait_pipe", a.wait_pipe, span)
        expect(isinstance(a.event_id, int) and not isinstance(a.event_id, bool) and 0 <= a.event_id <= 15, op,
               f"event_id must be an integer in [0, 15], got {a.event_id!r}", span)
        return TupleType(())
    return infer


for _name, _meth in (("system.sync_src", "flag_set"), ("system.sync_dst", "flag_wait")):
    register(OpDef(
        name=_name,
        params=(Param("set_pipe", "str"), Param("wait_pipe", "str"), Param("event_id", "str")),
        infer=_flag_infer(_name), ref=lambda a: "None",
        sim=lambda a, dst, where="", m=_meth: (f"_cc.{m}("
                                               f"{_pipe_name(a.set_pipe)}, {_pipe_name(a.wait_pipe)}, "
                                               f"{a.event_id}, {where!r})"),
        traits=_SYNC,
        doc=("set flag event_id from set_pipe to wait_pipe on this core (the device's set_flag)"
             if _meth == "flag_set" else
             "wait until set_pipe has set flag event_id for wait_pipe on this core (the device's wait_flag)"),
    ))


def _event_infer(op: str, setter: bool):
    def infer(a: OpArgs, span: Span):
        _check_pipe(op, "pipe", a.pipe, span)
        t = getattr(a.event_id, "type", None)
        expect(isinstance(t, ScalarType) and (t.dtype == INDEX or t.dtype.is_int()), op,
               "event_id must be an integer (a literal or a pl.Scalar[pl.INDEX])", span)
        v = getattr(a.event_id, "value", None)
        if isinstance(v, int):
            expect(0 <= v <= MAX_USER_EVENT_ID, op, f"event_id must be in the user range [0, {MAX_USER_EVENT_ID}] "
                   f"(14 and 15 are reserved), got {v}", span)
        if setter:
            expect(a.ffts_mode in (None, 0, 1, 2), op, f"ffts_mode must be 0, 1 or 2, got {a.ffts_mode!r}", span)
        expect(a.core_type in (None, "aic", "aiv"), op, f"core_type must be 'aic' or 'aiv', got {a.core_type!r}", span)
        return TupleType(())
    return infer


register(OpDef(
    name="system.sync_set",
    params=(Param("event_id", "scalar"), Param("pipe", "str"), Param("ffts_mode", "str", None),
            Param("core_type", "str", None)),
    infer=_event_infer("system.sync_set", True),
    ref=lambda a: f"_pto.cc_event_set({a.event_id}, {a.core_type})",
    sim=lambda a, dst, where="": (f"_cc.event_set({a.event_id}, {_pipe_name(a.pipe)}, {a.ffts_mode}, "
                                  f"{a.core_type}, {where!r})"),
    waits=True,
    doc="raise cross-core event event_id of the cluster once pipe has finished what came before",
))
register(OpDef(
    name="system.sync_wait",
    params=(Param("event_id", "scalar"), Param("pipe", "str"), Param("core_type", "str", None)),
    infer=_event_infer("system.sync_wait", False),
    ref=lambda a: f"_pto.cc_event_wait({a.event_id}, {a.core_type})",
    sim=lambda a, dst, where="": (f"yield from _cc.event_wait({a.event_id}, {_pipe_name(a.pipe)}, "
                                  f"{a.core_type}, {where!r})"),
    waits=True,
    doc="wait (on pipe) for cross-core event event_id of the cluster, raised by the partner core(s)",
))


def _no_args(a: OpArgs, span: Span):
    return TupleType(())


for _name, _call, _doc in (
        ("system.bar_v", "_cc.barrier('V', {w})", "drain the vector pipe of this core"),
        ("system.bar_m", "_cc.barrier('M', {w})", "drain the cube pipe of this core"),
        ("system.bar_all", "_cc.barrier('ALL', {w})", "drain every pipe of this core (a fence too)"),
        ("system.fence", "_cc.fence({w})", "complete every global-memory access before any after it")):
    register(OpDef(
        name=_name, params=(), infer=_no_args, ref=lambda a: "None",
        sim=lambda a, dst, where="", c=_call: c.format(w=repr(where)),
        traits=_SYNC, doc=_doc,
    ))


def _ffts_infer(a: OpArgs, span: Span):
    t = a.workspace.type
    op = "system.set_ffts"
    expect(isinstance(t, TensorType), op, "the workspace must be a tensor", span)
    expect(t.dtype == INT64, op, f"the workspace must be INT64, got {t.dtype!r}", span)
    expect(len(t.shape) == 1, op, f"the workspace must be 1-D, got rank {len(t.shape)}", span)
    expect(isinstance(t.shape[0], int) and t.shape[0] >= MIN_FFTS_WORKSPACE, op,
           f"the workspace must have a static length of at least {MIN_FFTS_WORKSPACE} INT64 elements, "
           f"got {t.shape[0]}", span)
    return TupleType(())


register(OpDef(
    name="system.set_ffts", params=(Param("workspace", "tensor"),), infer=_ffts_infer, ref=lambda a: "None",
    sim=lambda a, dst, where="": f"_cc.set_ffts({where!r})",
    traits=_SYNC, doc="declare the FFTS workspace of explicit cross-core synchronisation (INT64, >= 256 elements)",
))


def _cacheinvalid_infer(a: OpArgs, span: Span):
    op = "system.cacheinvalid"
    if a.tensor is None:
        expect(a.shapes is None and a.offsets is None, op, "the whole-GM form takes no shapes / offsets", span,
               "pass (tensor, shapes, offsets) for the region form")
        return TupleType(())
    t = a.tensor.type
    expect(isinstance(t, TensorType), op, "the region form's first argument must be a tensor", span)
    expect(a.shapes is not None and a.offsets is not None, op, "the region form needs both shapes and offsets",
           span, "or call it with no arguments for the whole-GM form")
    for k in ("shapes", "offsets"):
        v = getattr(a, k)
        n = len(getattr(v, "elements", v))
        expect(n == len(t.shape), op, f"{k} must match the tensor's rank {len(t.shape)}, got {n}", span)
    return TupleType(())


register(OpDef(
    name="system.cacheinvalid",
    params=(Param("tensor", "tensor", None), Param("shapes", "ints", None, optional=True),
            Param("offsets", "ints", None, optional=True)),
    infer=_cacheinvalid_infer, ref=lambda a: "None",
    # no data cache in the simulator: a load always sees the last store (docs/simulator.md)
    sim=lambda a, dst, where="": "pass",
    traits=_SYNC, doc="invalidate the data cache (whole GM, or the line of a tensor view's base); no-op in the simulator",
))


def _syncall_infer(a: OpArgs, span: Span):
    op = "system.syncall"
    expect(a.core_type in SYNCALL_CORE_TYPES, op, f"core_type must be one of {SYNCALL_CORE_TYPES}, "
           f"got {a.core_type!r}", span)
    expect(a.mode in ("hard", "soft"), op, f"mode must be 'hard' or 'soft', got {a.mode!r}", span)
    if a.mode == "hard":
        expect(a.gm_workspace is None and a.used_cores is None, op,
               "the hard form takes no gm_workspace / used_cores", span, "pass mode='soft' for the GM-polling barrier")
        return TupleType(())
    t = getattr(a.gm_workspace, "type", None)
    expect(isinstance(t, TensorType) and t.dtype == INT32 and len(t.shape) == 1
           and isinstance(t.shape[0], int) and t.shape[0] >= 16, op,
           "the soft form needs gm_workspace: a shared, zero-initialised INT32 tensor of at least 16 elements", span)
    u = getattr(a.used_cores, "type", None)
    expect(isinstance(u, ScalarType) and u.dtype.is_int(), op,
           "the soft form needs used_cores: the participant count (an integer; 0 = the launch's)", span)
    return TupleType(())


register(OpDef(
    name="system.syncall",
    params=(Param("core_type", "str", "mix"), Param("mode", "str", "hard"), Param("gm_workspace", "tensor", None),
            Param("used_cores", "scalar", None)),
    infer=_syncall_infer, ref=lambda a: f"_pto.cc_syncall({a.core_type}, _block)",
    sim=lambda a, dst, where="": (f"yield from _cc.syncall({a.core_type}, {a.mode}, "
                                  f"{a.used_cores if a.used_cores not in (None, 'None') else None}, {where!r})"),
    # ReadsBlock: the reference form refuses a barrier across blocks it runs one after another
    traits=_SYNC + (ReadsBlock(),),
    doc="cross-core barrier: every participant arrives before any proceeds (publishes only fenced writes)",
))
