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


class HostPass:
    """What the reference's factory call ``passes.<host pass>()`` gives here: ``p(ir, ctx)`` runs
    the pass over a :class:`~pypto.passes.host_ir.HostIR` (the reference's Pass takes its IR
    Program; a host body is not a ``pypto.ir`` Program here, so one is refused with the reason)."""

    def __init__(self, module):
        self.module = module
        self.name = module.NAME

    def __call__(self, ir, ctx):
        from pypto.passes.host_ir import HostIR

        if not isinstance(ir, HostIR):
            raise TypeError(f"{self.name} runs over a host orchestrator's HostIR (pypto.passes.host_ir), not "
                            f"{type(ir).__name__}: host bodies are interpreted, not pypto.ir programs; "
                            "pypto.passes.host_ir.run_host_pipeline runs the whole host pipeline")
        return self.module.run(ir, ctx)

    def __repr__(self) -> str:
        return f"<host pass {self.name}>"


def _make_callable() -> None:
    import types

    class _HostPassModule(types.ModuleType):
        def __call__(self):
            return HostPass(self)

    for m in HOST_PIPELINE:
        m.__class__ = _HostPassModule


_make_callable()
