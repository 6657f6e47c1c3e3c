"""pypto.runtime: runner, the work-directory contract, RunConfig's reference fields, workers."""
import ctypes
import dataclasses
import json
import subprocess
import sys
import textwrap

import pytest
import torch

from kernels_compat import AddOne, ScaleRows
from pypto import ir
from pypto.backend import BackendType
from pypto.runtime import ChipWorker, DeviceTensor, RunConfig, StackedDeviceTensor, execute_compiled
from pypto.runtime.runner import RunConfig as RunnerRunConfig
from pypto.runtime.runner import compile_program


def test_runner_module_is_the_one_runconfig():
    assert RunnerRunConfig is RunConfig


def test_runconfig_fields_in_the_references_order():
    names = [f.name for f in dataclasses.fields(RunConfig)]
    ref = ["platform", "device_id", "rtol", "atol", "strategy", "backend_type", "dump_passes", "save_kernels",
           "save_kernels_dir", "codegen_only", "enable_chip_swimlane", "enable_dump_args", "enable_pmu",
           "enable_dep_gen", "enable_scope_stats", "compile_profiling", "diagnostic_phase", "disabled_diagnostics",
           "golden_data_dir", "aicpu_thread_num", "ring_task_window", "ring_heap", "ring_dep_pool",
           "distributed_config", "analyze_auto_scopes_for_deps", "memory_planner", "dump_ptoas_passes"]
    assert names[:len(ref)] == ref


def test_fields_without_effect_on_the_simulator_are_marked():
    # each is a field, commented so at its definition, named in the class docstring's "No effect"
    # sentence and in docs/compatibility.md's RunConfig table
    import inspect
    from pathlib import Path

    import pypto.runtime.config as config

    fields = {f.name for f in dataclasses.fields(RunConfig)}
    assert RunConfig.SIM_NO_EFFECT <= fields and "SIM_NO_EFFECT" not in fields
    src = inspect.getsource(config)
    no_effect = RunConfig.__doc__.split("No effect on the simulator")[1]
    compat = (Path(__file__).parents[2] / "docs" / "compatibility.md").read_text().split("### `RunConfig` fields")[1]
    for name in RunConfig.SIM_NO_EFFECT:
        line = next(ln for ln in src.splitlines() if ln.startswith(f"    {name}: "))
        assert "# no effect on a simulator" in line, line
        assert f"``{name}``" in no_effect and f"`{name}`" in compat, name


def test_backend_type_follows_the_platform():
    assert RunConfig(platform="a5sim").backend_type is BackendType.Ascend950
    # as in the reference the platform decides; the field is overwritten, never mixed
    assert RunConfig(backend_type=BackendType.Ascend950).backend_type is BackendType.Ascend910B
    assert dataclasses.replace(RunConfig(platform="a5sim"), platform="a2a3sim").backend_type is BackendType.Ascend910B
    with pytest.raises(ValueError, match="unknown backend type"):
        RunConfig(backend_type="Ascend310")
    with pytest.raises(ValueError, match="must be a pypto.ir.distributed_compiled_program.DistributedConfig"):
        RunConfig(distributed_config=object())


HARNESS = textwrap.dedent("""
    import ctypes, sys, torch
    from pypto.runtime import execute_compiled
    torch.manual_seed(0)
    a = torch.randn(256, 64)
    out = torch.zeros(256, 64)
    execute_compiled(sys.argv[1], [a, ctypes.c_int64(3), out], platform="a2a3sim", device_id=0)
    assert torch.equal(out[:192], a[:192] * 2) and torch.equal(out[192:], torch.zeros(64, 64)), "wrong result"
    print("ok")
""")


@pytest.mark.slow  # a fresh interpreter imports torch
def test_work_directory_contract_across_processes(tmp_path):
    work = tmp_path / "work"
    compile_program(ScaleRows, work, strategy=None, backend_type=BackendType.Ascend910B)
    meta = json.loads((work / "compiled_meta.json").read_text())
    assert [p["name"] for p in meta["params"]] == ["a", "n", "out"]
    script = tmp_path / "harness.py"
    script.write_text(HARNESS)
    p = subprocess.run([sys.executable, str(script), str(work)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


def test_execute_compiled_scalars_and_errors(tmp_path):
    c = ir.compile(ScaleRows, tmp_path, dump_passes=False, platform="a5sim")
    a, out = torch.randn(256, 64), torch.zeros(256, 64)
    assert execute_compiled(tmp_path, [a, ctypes.c_int32(4), out], platform="a5sim", device_id=0) is None
    assert torch.equal(out, a * 2)
    c(a, ctypes.c_int64(1), torch.zeros(256, 64))  # ctypes scalars through the CompiledProgram call too
    with pytest.raises(TypeError, match="floating-point"):
        execute_compiled(tmp_path, [a, ctypes.c_double(2.0), out], platform="a5sim", device_id=0)
    with pytest.raises(Exception, match="compiled for a5sim"):
        execute_compiled(tmp_path, [a, 2, out], platform="a2a3sim", device_id=0)
    with pytest.raises(ValueError, match="level 2"):
        execute_compiled(tmp_path, [a, 2, out], platform="a5sim", device_id=0, level=3)
    with pytest.raises(TypeError, match="list"):
        execute_compiled(tmp_path, a, platform="a5sim", device_id=0)


def test_execute_compiled_dfx(tmp_path):
    ir.compile(AddOne, tmp_path, dump_passes=False)
    a, b, out = torch.randn(64, 128), torch.randn(64, 128), torch.zeros(64, 128)
    execute_compiled(tmp_path, [a, b, out], platform="a2a3sim", device_id=0, dfx={"enable_dep_gen": True})
    assert torch.equal(out, a + b)
    assert (tmp_path / "dfx_outputs" / "deps.json").is_file()


def test_chip_worker_resident_tensors(tmp_path):
    compiled = ir.compile(AddOne, tmp_path, dump_passes=False)
    a, b = torch.randn(64, 128), torch.randn(64, 128)
    with ChipWorker(config=RunConfig(platform="a2a3sim")) as w:
        resident = w.alloc_tensor((64, 128), torch.float32, init=b)
        out = torch.zeros(64, 128)
        w.run(compiled, a, resident, out)
        assert torch.equal(out, a + b)
        out2 = torch.zeros(64, 128)
        compiled(a, resident, out2)  # implicit: the active worker runs it
        assert torch.equal(out2, a + b)
        # an output that is a DeviceTensor stays on the device until copied back
        dev_out = w.alloc_tensor((64, 128), torch.float32)
        w.run(compiled, a, b, dev_out)
        host = torch.zeros(64, 128)
        w.copy_from(host.data_ptr(), dev_out.data_ptr, dev_out.nbytes)
        assert torch.equal(host, a + b)
        handle = w.register(compiled)
        out3 = torch.zeros(64, 128)
        handle(a, b, out3)
        assert torch.equal(out3, a + b)
        w.free_tensor(resident)
        w.free_tensor(resident)  # a second free is a no-op
        with pytest.raises(RuntimeError, match="freed"):
            w.run(compiled, a, resident, out)
    with pytest.raises(RuntimeError, match="unregistered"):
        handle(a, b, out3)
    with pytest.raises(RuntimeError, match="closed"):
        w.alloc_tensor((4, 4), torch.float32)


def test_device_tensors_belong_to_their_worker(tmp_path):
    compiled = ir.compile(AddOne, tmp_path, dump_passes=False)
    w1, w2 = ChipWorker(RunConfig()), ChipWorker(RunConfig())
    try:
        t = w1.alloc_tensor((64, 128), torch.float32)
        with pytest.raises(ValueError, match="does not belong"):
            w2.run(compiled, t, t, torch.zeros(64, 128))
        with pytest.raises(ValueError, match="compiled for"):
            ChipWorker(RunConfig(platform="a5sim")).run(compiled, t, t, torch.zeros(64, 128))
        with pytest.raises(ValueError, match="not inside an allocation"):
            w2.copy_from(torch.zeros(1).data_ptr(), t.data_ptr, 4)
        with pytest.raises(TypeError, match="built by hand"):
            compiled(DeviceTensor(t.data_ptr, (64, 128), torch.float32), torch.zeros(64, 128), torch.zeros(64, 128))
        with pytest.raises(ValueError, match="init is"):
            w1.alloc_tensor((2, 2), torch.float32, init=torch.zeros(3, 3))
        stacked = StackedDeviceTensor([w1.alloc_tensor((64, 128), torch.float32)], (1, 64, 128), [0])
        assert stacked[0].shape == (64, 128)
        with pytest.raises(TypeError, match="multi-rank"):
            compiled(stacked, torch.zeros(64, 128), torch.zeros(64, 128))
    finally:
        w1.close()
        w2.close()


def test_benchmark_reports_simulated_device_time(tmp_path):
    from pypto.runtime import benchmark

    compiled = ir.compile(AddOne, tmp_path, dump_passes=False)
    a, b, out = torch.randn(64, 128), torch.randn(64, 128), torch.zeros(64, 128)
    stats = benchmark(compiled, [a, b, out], rounds=3, warmup=1, config=RunConfig(sim_seed=7))
    assert torch.equal(out, a + b)
    assert stats.rounds == 3 and len(stats.device_wall_us) == 3 and len(stats.host_wall_us) == 3
    assert stats.device_us_min > 0 and not stats.all_zero_device
    assert len(set(stats.device_wall_us)) == 1  # a fixed seed: identical simulated timelines
    inv = stats.invocations[0]
    assert inv.root().name == "chip.run" and inv.root().is_device
    tasks = [s for s in inv.spans if s.depth == 1]
    assert tasks and max(s.ts + s.dur for s in tasks) <= inv.root().dur
    with pytest.raises(ValueError, match="rounds"):
        benchmark(compiled, [a, b, out], rounds=0)


def test_configure_log():
    import pypto
    from pypto.runtime import configure_log

    old = pypto.get_log_level()
    try:
        assert configure_log("debug") is pypto.LogLevel.DEBUG and pypto.get_log_level() is pypto.LogLevel.DEBUG
    finally:
        pypto.set_log_level(old)
