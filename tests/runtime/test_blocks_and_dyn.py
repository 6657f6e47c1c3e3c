"""Multi-block tasks (``pl.spmd_submit``, ``with pl.spmd``, ``for i in pl.spmd``) and dynamic dims
bound at calls (``pl.dynamic``, composite ``M * 2``, ``pl.tensor.dim``): bits against torch, the
task log / deps.json shape, lockstep on and off, round trips and located errors."""
import json

import kernels_blocks as K
import lockstep_record
import pytest
import torch

import pypto.language as pl
from pypto.errors import PyptoError
from pypto.ir import structural_equal
from pypto.runtime import RunConfig, run
from pypto.runtime import simulator as S

# the gang record and its check run in one process (pytest-xdist: --dist loadgroup, scripts/test.sh);
# the autouse fixture notes each test as run (tests/runtime/lockstep_record.py)
pytestmark = pytest.mark.xdist_group("lockstep_record")
from lockstep_record import lockstep_recorder_ran  # noqa: E402,F401

R, C = K.R, K.C


def _blocks_args(g):
    a = torch.randn(8 * R, C)
    return a, torch.zeros(8 * R, C), torch.zeros(8 * R, C), torch.zeros(R, C), torch.full((1, 8), g, dtype=torch.int32)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("gate", [0, 1])
def test_multi_block_tasks_compute_what_torch_does(tmp_path, platform, gate):
    a, c, d, e, g = _blocks_args(gate)
    run(K.Blocks, a, c, d, e, g, config=RunConfig(platform=platform, enable_dep_gen=True,
                                                  save_kernels_dir=str(tmp_path)))
    want_c = a * 1.5 + 8.0
    assert torch.equal(c, want_c)
    assert torch.equal(d, want_c - a)
    assert torch.equal(e, torch.full((R, C), -9.0) if gate else torch.zeros(R, C))
    tasks = S._LAST_RUNTIME[0].tasks
    kernel_tasks = [t for t in tasks if t.kind == "kernel"]
    assert [t.blocks for t in kernel_tasks] == [8, 8, 1]
    assert len({r[0] for r in kernel_tasks[0].runs}) == 8          # every block on its own core
    doc = json.loads((tmp_path / "dfx_outputs" / "deps.json").read_text())
    assert [t["block_num"] for t in doc["tasks"]] == [8, 8, 1]      # one entry per task, not per block
    assert any(x["pred"] == doc["tasks"][0]["task_id"] and x["succ"] == doc["tasks"][1]["task_id"]
               for x in doc["edges"])                              # RAW on c: the loop's task waits


def test_blocks_gang_in_lockstep_bit_identical_to_one_by_one():
    a, c1, d1, e1, g = _blocks_args(1)
    _, c2, d2, e2, _ = _blocks_args(1)
    built = run(K.Blocks, a, c1, d1, e1, g, config=RunConfig(sim_seed=3))
    rt = S._LAST_RUNTIME[0]
    run(K.Blocks, a, c2, d2, e2, g, config=RunConfig(sim_seed=3, sim_lockstep=False))
    assert S._LAST_RUNTIME[0].gangs == []
    assert rt.gangs, "the blocks of one task are natural gang members"
    for x, y in ((c1, c2), (d1, d2), (e1, e2)):
        assert torch.equal(x.view(torch.int32), y.view(torch.int32))
    # the spmd loop's kernel ran tile.get_block_idx in a gang, bit-compared (test_lockstep_coverage.py);
    # 'scale' does not gang (get_block_num feeds an add: a per-task value), see test_lockstep_bits
    assert "tile.get_block_idx" in lockstep_record.record(rt, {"Blocks": built})


def test_multi_block_programs_print_and_parse_back():
    text = K.Blocks.as_python()
    assert "pl.spmd_submit(self.scale, a, c, core_num=8)" in text and "with pl.spmd(8):" in text
    assert "predicate=(gate[0, 0] > 0)" in text
    assert structural_equal(K.Blocks, pl.parse(text))


def test_torch_codegen_runs_every_block():
    from pypto.debug.torch_codegen import torch_codegen

    a, c, d, e, g = _blocks_args(1)
    ns: dict = {}
    from pypto.ir import compile as ir_compile

    exec(torch_codegen(ir_compile(K.Blocks).lowered), ns)   # the lowered IR: spmd_submit calls
    ns["main"](a, c, d, e, g)
    assert torch.equal(c, a * 1.5 + 8.0) and torch.equal(e, torch.full((R, C), -9.0))


def _bad(tmp_path, body: str, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(f'''import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 64], pl.FP32], c: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        return pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], c: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
{body}
        return c
''')
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    import sys

    sys.modules[name] = mod   # inspect finds a class's source through its module
    spec.loader.exec_module(mod)


@pytest.mark.parametrize("body, message", [
    ("        c, t = pl.spmd_submit(self.k, a, c)", "pl.spmd_submit needs core_num=n"),
    ("        c, t = pl.spmd_submit(self.k, a, c, core_num=0)", "core_num must be >= 1"),
    ("        with pl.spmd(2, predicate=(a[0, 0] > 0)):\n            c = self.k(a, c)", "needs deps="),
])
def test_multi_block_errors_are_located(tmp_path, body, message):
    with pytest.raises(PyptoError, match=message) as e:
        _bad(tmp_path, body, "bad_blocks")
    assert "bad_blocks.py:" in str(e.value) and "^" in str(e.value)


# ------------------------------------------------------------------ dynamic dims
def test_dynamic_params_bind_at_a_static_call():
    a, b = torch.randn(16, C), torch.randn(16, C)
    c = torch.zeros(16, C)
    run(K.DynAdd, a, b, c)
    assert torch.equal(c, a + b)
    main = K.DynAdd.functions["main"]
    assert "pl.Tensor[[16, 64], pl.FP32] = self.add(a, b, c)" in main.as_python()   # bound: static


def test_composite_dynamic_rows_compile_once_and_check_extents():
    from pypto.ir import compile as ir_compile

    assert "pl.tensor.dim(a, 0)" in K.DynRows.as_python() and "pl.tensor.dim(a, 1)" not in K.DynRows.as_python()
    keys = set()
    for rows in (4, 10, 32):
        a, c = torch.randn(rows, C), torch.zeros(rows, C)
        run(K.DynRows, a, c)
        assert torch.equal(c, a + a)
        keys.add(ir_compile(K.DynRows).cache_key)
    assert len(keys) == 1    # one build per shape class, not per extent
    with pytest.raises(TypeError, match="which 'M \\* 2' cannot be"):
        run(K.DynRows, torch.randn(7, C), torch.zeros(7, C))
    with pytest.raises(TypeError, match="'M \\* 2' cannot be with M = 4"):
        run(K.DynRows, torch.randn(8, C), torch.zeros(6, C))


# (a dim given different extents by different arguments: tests/runtime/test_dyn_disagree.py)


# ------------------------------------------------------------------ runtime valid_shape
@pytest.mark.parametrize("m, n", [(20, 47), (64, 64), (1, 1), (0, 5)])
def test_runtime_valid_shape_stores_only_the_valid_region(m, n):
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    c, d = torch.full((64, 64), -1.0), torch.full((64, 64), -1.0)
    run(K.RuntimeValid, a, b, torch.tensor([m, n]), c, d, config=RunConfig(platform="a5sim"))
    want_c, want_d = torch.full((64, 64), -1.0), torch.full((64, 64), -1.0)
    want_c[:m, :n] = a[:m, :n] + b[:m, :n]
    want_d[:m] = a[:m] * 2
    assert torch.equal(c, want_c) and torch.equal(d, want_d)


def test_runtime_valid_shape_prints_and_parses_back():
    from pypto.ir.equality import assert_structural_equal

    assert_structural_equal(K.RuntimeValid, pl.parse(K.RuntimeValid.as_python()))


def test_runtime_valid_shape_larger_than_the_tile_is_an_error():
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    with pytest.raises(PyptoError, match=r"valid_shape \[65, (3|64)\] does not fit the tile's shape \[64, 64\]") as e:
        run(K.RuntimeValid, a, b, torch.tensor([65, 3]), torch.zeros(64, 64), torch.zeros(64, 64))
    assert "kernels_blocks.py" in str(e.value)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_launch_sized_on_the_device_fills_every_vector_core(platform):
    from pypto.backend.platforms import get_platform

    n = get_platform(platform).num_aiv
    a, c = torch.randn(64, 64), torch.zeros(64, 64)
    run(K.WholeDevice, a, c, config=RunConfig(platform=platform))
    want = torch.zeros(64, 64)
    want[:n] = a[:n]
    assert torch.equal(c, want)
    t = S._LAST_RUNTIME[0].tasks[0]
    assert t.blocks == n and len({r[0] for r in t.runs}) == n


def test_bind_dynamic_marks_a_bare_tensor_dim_dynamic():
    for rows in (3, 5, 9):
        a, c = torch.randn(rows, 64), torch.zeros(rows, 64)
        K.bound_rows(a, c)
        assert torch.equal(c, a * 3.0)
    assert K.bound_rows.cache_info() == 1     # one build for every row count
    lowered = K.bound_rows.lower(torch.randn(4, 64), torch.zeros(4, 64)).as_python()
    assert "pl.Tensor[[B, 64], pl.FP32]" in lowered


def test_dynvar_is_dynamic():
    assert pl.DynVar("Q") == pl.dynamic("Q")
    for rows in (2, 7):
        a, c = torch.randn(rows, 64), torch.zeros(rows, 64)
        K.dynvar_rows(a, c)
        assert torch.equal(c, -a)
    assert K.dynvar_rows.cache_info() == 1


def test_the_race_detector_sees_every_block():
    """Only block 3 writes what the unordered reader reads: the detector must run every block."""
    from pypto.debug.races import detect_races
    from pypto.ir import compile as ir_compile

    a = torch.randn(4 * R, C)
    rep = detect_races(ir_compile(K.BlockRace), (a, torch.zeros(4 * R, C), torch.zeros(R, C)))
    assert len(rep.races) >= 1, rep.format()
    clean = detect_races(ir_compile(K.Blocks), _blocks_args(1))
    assert not clean.races, clean.format()


def test_the_runs_of_a_task_carry_every_task_field():
    """The scheduler queues a multi-block task as block runs and a batched task as member runs
    (simulator._run_of: Tasks sharing immutable empty edge containers). Every Task field is set
    on them (a reader of any field, e.g. a tool walking a gang's members, gets a value, not an
    AttributeError), to the task's identity and the run's position."""
    from pypto.runtime import simulator as S
    from pypto.runtime.task_graph import Task

    t = Task(7, 3, "k", "kernel", ["a", 1], ["in", "scalar"], True)
    t.blocks = 3
    ready: dict = {}
    assert S._enqueue(ready, t) == 3 and t.left == 3 and t.runs == []
    b = Task(8, 4, "m", "kernel", ["shared"], ["in"], False)
    b.members = [["x0"], ["x1"]]
    assert S._enqueue(ready, b) == 2 and b.left == 2
    plain = Task(0, 0, "k", "kernel", [], [], False)
    for task, kind, runs in ((t, "block", ready["k"]), (b, "member", ready["m"])):
        for i, r in enumerate(runs):
            assert isinstance(r, Task) and r.kind == kind and r.parent is task and r.block == i
            assert (r.index, r.task_id, r.kernel, r.tags) == (task.index, task.task_id, task.kernel, task.tags)
            for name in Task.__slots__:
                getattr(r, name)   # set on every run
            assert not r.views and not r.fanin and not r.edges and not r.dependents and r.core == -1
    assert [r.args for r in ready["k"]] == [t.args] * 3 and [r.blocks for r in ready["k"]] == [3] * 3
    assert [r.manual for r in ready["k"]] == [True] * 3 and [r.manual for r in ready["m"]] == [False] * 2
    assert [r.args for r in ready["m"]] == [["x0"], ["x1"]] and [r.blocks for r in ready["m"]] == [1, 1]
