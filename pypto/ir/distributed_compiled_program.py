"""The reference's ``pypto.ir.distributed_compiled_program``: :class:`DistributedConfig` (defined
here, a plain record) and :class:`DistributedCompiledProgram` (defined with the engine in
:mod:`pypto.runtime.distributed.program`, loaded on first access so that importing the IR loads no
runtime)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class DistributedConfig:
    """Which cards a multi-rank program runs on: ``device_ids`` (one rank per id, distinct,
    non-negative; rank r runs on ``device_ids[r]``). ``num_sub_workers``, ``runtime`` and
    ``aicpu_thread_num`` are validated as in the reference and change nothing on the simulator."""

    device_ids: list = field(default_factory=lambda: [0])
    num_sub_workers: int = 0
    runtime: str = "tensormap_and_ringbuffer"
    aicpu_thread_num: int = 0

    def __post_init__(self) -> None:
        ids = list(self.device_ids)
        if not ids:
            raise ValueError("DistributedConfig.device_ids must not be empty")
        if any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in ids):
            raise ValueError(f"DistributedConfig.device_ids must be non-negative device indices, got {ids}")
        if len(set(ids)) != len(ids):
            raise ValueError(f"DistributedConfig.device_ids must be distinct, got {ids}")
        if self.num_sub_workers < 0:
            raise ValueError(f"DistributedConfig.num_sub_workers must be non-negative, got {self.num_sub_workers}")
        if self.aicpu_thread_num < 0 or self.aicpu_thread_num == 1:
            raise ValueError("DistributedConfig.aicpu_thread_num must be 0 (architecture default) or at least 2, "
                             f"got {self.aicpu_thread_num}")
        self.device_ids = ids


_LAZY = ("DistributedCompiledProgram", "DistributedWorker", "DistributedRunHandle", "execute_distributed_compiled")


def __getattr__(name: str):
    if name in _LAZY:
        from pypto.runtime.distributed import program

        return getattr(program, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
