"""Debugging ops: ``tensor.dump_tag`` (``pl.dump_tag(t)``).

``pl.dump_tag(t)`` is a statement in orchestration code: the runtime records a snapshot of ``t``
as it is at that point of the program (after every task that writes it and was submitted before).
The simulator keeps the snapshots in ``Runtime.dumps`` (``pypto.runtime.simulator.last_dumps()``
returns those of the latest run); the reference executor treats it as a no-op.
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.types import TensorType
from pypto.ops.registry import OpArgs, OpDef, Param, register


def _dump_tag_infer(a: OpArgs, span: Span) -> TensorType:
    return a.tensor.type


register(OpDef(
    name="tensor.dump_tag",
    params=(Param("tensor", "tensor"), Param("tag", "str", None)),
    infer=_dump_tag_infer,
    ref=lambda a: f"{a.tensor}",
    orch=lambda a: f"_rt.dump_tag({a.tensor}, {(a.tag if a.tag is not None else str(a.tensor))!r})",
    dsl="dump_tag", operand_kinds=("tensor",),
    doc="record a snapshot of a tensor at this point of the orchestration (debugging)",
))
