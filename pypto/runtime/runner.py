"""``pypto.runtime.runner``: the reference's run entry points (``RunConfig``, ``RunResult``, ``run``,
``compile_program``, ``execute_compiled``) over our compiler and simulator.

The work-directory contract: :func:`compile_program` (or ``ir.compile(program, output_dir=...)``)
writes a self-contained directory (``compiled_meta.json``, ``kernels/``, ``orchestration/``);
:func:`execute_compiled` runs it later, in the same process or another one, with the arguments in
the orchestration function's parameter order — ``torch.Tensor`` for tensors (outputs written in
place), Python numbers or ``ctypes`` scalars (``ctypes.c_int64(n)``, ``ctypes.c_float(x)``) for scalars.
"""
from __future__ import annotations

from pathlib import Path

from pypto.runtime.config import RunConfig
from pypto.runtime.harness import RunResult, run


def compile_program(program, work_dir, *, strategy=None, backend_type=None, dump_passes=False,
                    dump_ptoas_passes: bool = False, diagnostic_phase=None, disabled_diagnostics=None,
                    profiling: bool = False, analyze_auto_scopes_for_deps: bool = False, memory_planner=None,
                    enable_pypto_l0c_double_buffer=None, platform=None):
    """Compile ``program`` (an ``ir.Program`` / ``@pl.program``) into ``work_dir``; the keywords are
    :func:`pypto.ir.compile`'s. Returns the :class:`~pypto.ir.CompiledProgram` (the reference returns
    ``None``; the directory is the contract either way). ``platform`` (ours) overrides the simulator
    ``backend_type`` selects."""
    from pypto.driver.build import compile as ir_compile

    return ir_compile(program, output_dir=str(work_dir), strategy=strategy, dump_passes=dump_passes,
                      backend_type=backend_type, dump_ptoas_passes=dump_ptoas_passes,
                      diagnostic_phase=diagnostic_phase, disabled_diagnostics=disabled_diagnostics,
                      profiling=profiling, analyze_auto_scopes_for_deps=analyze_auto_scopes_for_deps,
                      memory_planner=memory_planner, enable_pypto_l0c_double_buffer=enable_pypto_l0c_double_buffer,
                      platform=platform)


_DFX_FIELDS = ("enable_chip_swimlane", "enable_dump_args", "enable_pmu", "enable_dep_gen", "enable_scope_stats")


def execute_compiled(work_dir, args, *, platform: str | None = None, device_id: int = 0, dfx=None, level: int = 2,
                     aicpu_thread_num=None, analyze_auto_scopes_for_deps: bool = False, config: RunConfig | None = None,
                     **run_kwargs) -> None:
    """Run the program compiled into ``work_dir`` with ``args`` (parameter order; see the module doc).

    Outputs are written into the caller's tensors; returns ``None`` as the reference. ``platform``
    defaults to the one compiled for (a real device name runs on its simulator; another architecture
    than the compiled one is an error). ``device_id`` and ``aicpu_thread_num`` are validated and have
    no effect on the simulator. ``dfx`` is an object or dict with the reference's DFX switches
    (``enable_dep_gen``, ``enable_dump_args``, ...): its outputs go to ``<work_dir>/dfx_outputs/``.
    ``level`` must be 2 (one chip), as in the reference. ``analyze_auto_scopes_for_deps`` is a compile
    option and has no effect here (accepted, as in the reference). Further keywords are
    :class:`RunConfig` fields (``sim_seed=...``); ``config`` gives them all at once.
    """
    from pypto.driver.compiled import CompiledProgram

    del analyze_auto_scopes_for_deps  # compile-side option: the program is already compiled
    if level != 2:
        raise ValueError(f"execute_compiled(level={level}): only level 2 (one chip) is supported")
    if not isinstance(args, (list, tuple)):
        raise TypeError(f"execute_compiled(work_dir, args): args must be a list in parameter order, "
                        f"got {type(args).__name__}")
    compiled = CompiledProgram.from_dir(work_dir)
    fields = dict(run_kwargs)
    if dfx is not None:
        for name in _DFX_FIELDS:
            value = dfx.get(name) if isinstance(dfx, dict) else getattr(dfx, name, None)
            if value is not None:
                fields[name] = value
    if config is None:
        config = RunConfig(platform=platform or compiled.platform, device_id=device_id,
                           aicpu_thread_num=aicpu_thread_num, **fields)
    elif platform is not None or fields:
        raise TypeError("execute_compiled: give either config= or platform/dfx/RunConfig keywords, not both")
    compiled(*args, config=config)
    return None


__all__ = ["RunConfig", "RunResult", "run", "compile_program", "execute_compiled"]
