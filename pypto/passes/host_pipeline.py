"""The HOST orchestrator's pass pipeline (see :mod:`pypto.passes.host_ir`): the reference's
distributed passes, in its order, over the host body's DSL tree. Each runs once per compile and
once per run (the run binds the host arguments' shapes, so dynamic extents are known)."""
from __future__ import annotations

from pypto.passes import lower_host_tensor_collectives, materialize_comm_domain_scopes, synthesize_allreduce_signals

HOST_PIPELINE = (
    synthesize_allreduce_signals,
    materialize_comm_domain_scopes,
    lower_host_tensor_collectives,
)
