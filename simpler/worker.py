"""``simpler.worker.Worker``: register a ``compiled.chip_callable`` and run it with the argument
pack ``compiled.build_orch_args(..., worker=w)`` made, under ``compiled.build_call_config(...)``.

One simulated chip (``level=2``); the run writes every output into the tensors of the pack."""
from __future__ import annotations

from pypto.driver.chip_surface import CallConfig, ChipCallable, OrchArgs
from pypto.runtime.config import RunConfig
from pypto.runtime.worker import ChipWorker


class Worker:
    """A chip worker: ``init()``, ``register(callable) -> id``, ``run(id, orch_args, call_config)``,
    ``unregister(id)``, ``close()``."""

    def __init__(self, level: int = 2, device_id: int = 0, platform: str = "a2a3sim",
                 runtime: str = "tensormap_and_ringbuffer"):
        self._chip = ChipWorker(RunConfig(platform=platform, device_id=device_id), level=level, runtime=runtime,
                                auto_init=False)
        self._callables: dict[int, ChipCallable] = {}
        self._next = 0

    def init(self) -> None:
        """Bring the chip up (idempotent)."""
        self._chip.init()

    def close(self) -> None:
        """Release the chip and its registrations."""
        self._callables.clear()
        self._chip.close()

    def register(self, callable_: ChipCallable) -> int:
        """Register a compiled program; returns its id for :meth:`run`."""
        if not isinstance(callable_, ChipCallable):
            raise TypeError(f"Worker.register takes compiled.chip_callable, got {type(callable_).__name__}")
        self._chip.register(callable_.compiled)   # checks the platform now
        cid = self._next
        self._next += 1
        self._callables[cid] = callable_
        return cid

    def unregister(self, cid: int) -> None:
        """Release a registration."""
        if self._callables.pop(cid, None) is None:
            raise ValueError(f"Worker.unregister: {cid} is not a registered callable")

    def run(self, cid: int, orch_args: OrchArgs, config: CallConfig | None = None) -> None:
        """Run registered program ``cid`` once; its outputs land in ``orch_args``' tensors."""
        c = self._callables.get(cid)
        if c is None:
            raise ValueError(f"Worker.run: {cid} is not a registered callable")
        if not isinstance(orch_args, OrchArgs) or orch_args.worker is not self:
            raise ValueError("Worker.run: the arguments were not built for this worker "
                             "(compiled.build_orch_args(..., worker=this_worker))")
        cfg = config.run_config if config is not None else None
        self._chip.run(c.compiled, *orch_args.values, config=cfg)
