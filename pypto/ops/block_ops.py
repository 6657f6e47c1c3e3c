"""Block identity of a multi-block task, and the device geometry a launch is sized on.

A task submitted with ``pl.spmd_submit(..., core_num=n)`` / ``with pl.spmd(n)`` / ``for i in
pl.spmd(n)`` runs as ``n`` blocks, block ``i`` on its own core; every block runs the same kernel and
tells itself apart by:

* ``tile.get_block_idx()``: ``i`` (``0 <= i < n``), an ``INDEX`` scalar;
* ``tile.get_block_num()``: ``n``;
* ``tile.get_subblock_idx()``: the vector core's lane (0 or 1) within its cluster when an AIV
  function runs as a member of a mixed-kernel group on both lanes (:mod:`pypto.codegen.group`; the
  group passes ``_block = (i, n, lane)``); 0 everywhere else.

In generated kernels they read ``_block`` (``(i, n)``), a keyword argument of ``kernel`` and
``GANG_PLAN`` that the scheduler passes per block (``(0, 1)`` for a one-block task). Their
lockstep form is ``Lockstep.PLAN``: a per-task scalar computed in each member's plan.

``system.available_cluster_count()`` / ``system.available_aiv_count()`` (orchestration): the
platform's cube-core (cluster) and vector-core counts (``pypto/backend/platforms.py``), the
reference's way of sizing a launch to the whole device.
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.types import ScalarType
from pypto.language.dtypes import INDEX, INT32
from pypto.ops.registry import OpArgs, OpDef, register
from pypto.ops.traits import Lockstep, ReadsBlock


def _scalar(dtype):
    def infer(a: OpArgs, span: Span):
        return ScalarType(dtype)
    return infer


for _name, _src, _doc in (
        ("get_block_idx", "_block[0]", "the index of this block within its task (0 <= i < block_num)"),
        ("get_block_num", "_block[1]", "the number of blocks of this task"),
        ("get_subblock_idx", "(_block[2] if len(_block) > 2 else 0)",
         "the vector core's lane within its cluster (0 or 1; 0 outside a mixed-kernel group)")):
    register(OpDef(
        name=f"tile.{_name}", params=(), infer=_scalar(INDEX),
        ref=lambda a, s=_src: s, sim=lambda a, dst, s=_src: s, traits=(Lockstep.PLAN, ReadsBlock()), doc=_doc,
    ))

register(OpDef(
    name="system.available_cluster_count", params=(), infer=_scalar(INT32),
    ref=lambda a: "_pto.available_cores('aic')", orch=lambda a: "_rt.available_cores('aic')",
    doc="the platform's cluster (cube core) count: a mixed or cube-only launch's full width",
))
register(OpDef(
    name="system.available_aiv_count", params=(), infer=_scalar(INT32),
    ref=lambda a: "_pto.available_cores('aiv')", orch=lambda a: "_rt.available_cores('aiv')",
    doc="the platform's vector core count: a vector-only launch's full width",
))
