"""TaskId arrays (orchestration only): ``pl.array.create(n, pl.TASK_ID)`` and ``tids[i] = tid``;
``pl.system.task_dummy(deps=[...])``, a join task (docs/language.md, "Task dependencies").

An array of TaskIds is typed as a 1-D ``TASK_ID`` tensor of the orchestration; it never reaches a
kernel. ``deps=[tids]`` waits for every slot (an unset slot is ``None`` and is dropped). At runtime it
is a Python list (``Runtime.task_id_array``); ``tensor.task_id_set`` stores into it in place and
returns it, so each SSA version of the array names the same list.
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.types import ScalarType, TensorType
from pypto.language.dtypes import TASK_ID
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.rules import expect, static_ints


def _create_infer(a: OpArgs, span: Span) -> TensorType:
    shape = static_ints("tensor.task_id_array", "shape", a.shape, span)
    expect(len(shape) == 1 and shape[0] > 0, "tensor.task_id_array", "an array has one positive extent", span)
    expect(a.dtype == TASK_ID, "tensor.task_id_array", f"only pl.TASK_ID arrays exist, got {a.dtype!r}", span)
    return TensorType(shape, TASK_ID)


def _set_infer(a: OpArgs, span: Span) -> TensorType:
    t = a.array.type
    expect(isinstance(t, TensorType) and t.dtype == TASK_ID, "tensor.task_id_set", "the target must be a TaskId array",
           span)
    v = a.task_id.type
    expect(isinstance(v, ScalarType) and v.dtype == TASK_ID, "tensor.task_id_set",
           "the stored value must be a TaskId ('with pl.at(...) as tid')", span)
    return t


register(OpDef(
    name="tensor.task_id_array",
    params=(Param("shape", "ints"), Param("dtype", "dtype")),
    infer=_create_infer,
    ref=lambda a: f"[None] * {a.shape}[0]",
    orch=lambda a: f"_rt.task_id_array({a.shape}[0])",
    doc="pl.array.create(n, pl.TASK_ID): n TaskId slots, all unset",
))

def _dummy_infer(a: OpArgs, span: Span) -> ScalarType:
    return ScalarType(TASK_ID)


register(OpDef(
    name="tensor.task_dummy",
    params=(Param("deps", "task_ids"),),
    infer=_dummy_infer,
    ref=lambda a: "None",
    orch=lambda a: f"_rt.dummy({a.deps})",
    doc="pl.system.task_dummy(deps=[...]): a task with no kernel that waits for deps; its TaskId joins them",
))

def _get_infer(a: OpArgs, span: Span) -> ScalarType:
    t = a.array.type
    expect(isinstance(t, TensorType) and t.dtype == TASK_ID, "tensor.task_id_get", "the source must be a TaskId array",
           span)
    expect(isinstance(a.index.type, ScalarType) and a.index.type.dtype.is_int(), "tensor.task_id_get",
           "the index must be an integer scalar", span)
    return ScalarType(TASK_ID)


register(OpDef(
    name="tensor.task_id_get",
    params=(Param("array", "tensor"), Param("index", "scalar")),
    infer=_get_infer,
    ref=lambda a: f"_pto.array_get({a.array}, {a.index})",
    orch=lambda a: f"_pto.array_get({a.array}, {a.index})",
    doc="tids[i] / pl.array.get_element(tids, i): the TaskId in a slot of a TaskId array (None if unset)",
))

register(OpDef(
    name="tensor.task_id_set",
    params=(Param("array", "tensor"), Param("index", "scalar"), Param("task_id", "scalar")),
    infer=_set_infer,
    ref=lambda a: f"{a.array}",
    orch=lambda a: f"({a.array}.__setitem__({a.index}, {a.task_id}) or {a.array})",
    doc="tids[i] = tid: store a TaskId into a slot of a TaskId array",
))


register(OpDef(
    name="system.task_invalid",
    params=(),
    infer=_dummy_infer,
    ref=lambda a: "None",
    orch=lambda a: "None",
    doc="pl.system.task_invalid(): the TaskId of no task (as None in deps=[...]: no edge)",
))
