"""A build opened for running by hand: the tools that drive a :class:`~pypto.runtime.simulator.Runtime`
themselves (the race detector and poison check, :mod:`pypto.debug.races`; the doctor's task-by-task
comparison and timeline, :mod:`pypto.debug.doctor.tasks`; the fuzzer's worker processes,
:mod:`pypto.debug.fuzz`) open a build through :func:`open_artifacts`, so that each of them runs the
module text the build recorded (checked against the hashes in ``compiled_meta.json``, as
:func:`pypto.runtime.simulator.execute` does), never whatever the files hold later, and numbers the
kernels as a real run does (the order of ``meta["kernels"]``: the ids of deps.json and the swimlane).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from pypto.backend.platforms import Platform, get_platform
from pypto.runtime.simulator import Runtime


@dataclass(frozen=True)
class Artifacts:
    """The pieces of one build a hand-driven run needs."""

    compiled: object            # the CompiledProgram
    platform: Platform
    kernels: dict               # kernel name -> its generated module
    orchestration: object       # the orchestration module (None for a build without one)
    kernel_ids: dict            # kernel name -> its id (the build's order)

    def runtime(self, seed, **options) -> Runtime:
        """A fresh :class:`Runtime` for this build under simulator seed ``seed`` (``options``: the
        runtime's keyword arguments, e.g. ``dump_level``)."""
        return Runtime(self.platform, self.kernels, seed, kernel_ids=self.kernel_ids, **options)

    def submit(self, args, seed=0, **options) -> tuple[Runtime, list]:
        """Run the orchestration on copies of ``args`` (in parameter order): every task submitted,
        none run yet. Returns the runtime and the global-memory copies the tasks will write."""
        rt = self.runtime(seed, **options)
        gm = [a.detach().clone().contiguous() if isinstance(a, torch.Tensor) else a for a in args]
        self.orchestration.orchestrate(rt, *gm)
        return rt, gm


def open_artifacts(source) -> Artifacts:
    """Open a build: ``source`` is a :class:`~pypto.driver.compiled.CompiledProgram` or the directory
    of one (``CompiledProgram.from_dir``, which refuses modules that do not match the meta)."""
    if isinstance(source, (str, Path)):
        from pypto.driver.compiled import CompiledProgram

        source = CompiledProgram.from_dir(source)
    kernels, orch = source.load_modules()
    ids = {name: i for i, name in enumerate(source.meta["kernels"])}
    return Artifacts(source, get_platform(source.platform), kernels, orch, ids)
