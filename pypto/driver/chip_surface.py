"""The reference's manual-dispatch surface of a ``CompiledProgram`` (its ``simpler`` runtime
worker API): ``compiled.chip_callable``, ``runtime_name``, ``runtime_config``,
``build_call_config(...)`` and ``build_orch_args(*args, worker=w)``, consumed by
``simpler.worker.Worker`` (:mod:`simpler.worker`)::

    w = simpler.worker.Worker(level=2, device_id=0, platform=compiled.platform, runtime=compiled.runtime_name)
    w.init()
    orch_args, coerced, return_style = compiled.build_orch_args(a, b, worker=w)
    cid = w.register(compiled.chip_callable)
    w.run(cid, orch_args, compiled.build_call_config(cfg))
    w.unregister(cid); w.close()
    c = coerced[compiled.output_indices[0]]

Here the chip is the simulator, so the pieces are thin: the callable is the compiled program, the
call config wraps a :class:`RunConfig`, and the orchestration arguments are the full positional
list (outputs allocated for an inputs-only call), which the run writes in place. Scalars stay
Python numbers (the reference wraps them in ``ctypes`` values for its C ABI).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

import torch

from pypto.language.dtypes import dtype_from_name

# the runtime ABI the simulator models (task rings, tensormap dependency tracking)
RUNTIME_NAME = "tensormap_and_ringbuffer"


@dataclass(frozen=True)
class ChipCallable:
    """A compiled program as handed to ``Worker.register``."""

    compiled: Any

    @property
    def platform(self) -> str:
        """The platform the program was compiled for."""
        return self.compiled.platform


@dataclass(frozen=True)
class CallConfig:
    """Per-call settings (``build_call_config``): the run configuration and the scheduler thread
    count it carries (recorded: the simulated scheduler is not threaded)."""

    run_config: Any
    aicpu_thread_num: Optional[int] = None
    output_prefix: Optional[str] = None


@dataclass
class OrchArgs:
    """The argument pack of one dispatch: the full positional list, owned by ``worker``."""

    values: list
    worker: Any


def runtime_config(compiled) -> dict:
    """The runtime settings baked into the build (the reference's ``RUNTIME_CONFIG``)."""
    return {"runtime": RUNTIME_NAME, "platform": compiled.platform}


def build_call_config(compiled, config=None, *, aicpu_thread_num: Optional[int] = None, dfx_dir=None) -> CallConfig:
    """``aicpu_thread_num``: the keyword, else ``config``'s, else the build's (none here)."""
    from pypto.runtime.config import RunConfig

    cfg = config if config is not None else RunConfig(platform=compiled.platform)
    n = aicpu_thread_num if aicpu_thread_num is not None else getattr(cfg, "aicpu_thread_num", None)
    if n is None:
        n = runtime_config(compiled).get("aicpu_thread_num")
    if n is not None and n != cfg.aicpu_thread_num:
        cfg = dataclasses.replace(cfg, aicpu_thread_num=n)   # RunConfig validates it (an int >= 2)
    return CallConfig(cfg, n, None if dfx_dir is None else str(dfx_dir))


def build_orch_args(compiled, args: tuple, worker) -> tuple[OrchArgs, list, bool]:
    """``(orch_args, coerced, return_style)``: ``coerced`` is the full positional list (an
    inputs-only call gets zero-filled ``Out`` tensors at :attr:`output_indices`, read them after
    the run); ``return_style`` is True for an inputs-only call."""
    if worker is None:
        raise TypeError("build_orch_args needs the worker that will dispatch the arguments: "
                        "build_orch_args(*args, worker=w)")
    params = compiled.meta["params"]
    inputs = [p for p in params if p["direction"] != "Out"]
    if len(args) == len(params):
        return OrchArgs(list(args), worker), list(args), False
    if len(args) != len(inputs):
        raise TypeError(f"{compiled.meta['name']}() takes {len(params)} arguments ({len(inputs)} inputs), "
                        f"got {len(args)}")
    full, it = [], iter(args)
    for p in params:
        if p["direction"] == "Out":
            if None in p["shape"]:
                raise TypeError(f"Out parameter '{p['name']}' has a dynamic shape; pass it")
            full.append(torch.zeros(list(p["shape"]), dtype=dtype_from_name(p["dtype"]).torch))
        else:
            full.append(next(it))
    return OrchArgs(full, worker), full, True
