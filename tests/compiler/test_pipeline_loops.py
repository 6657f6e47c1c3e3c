"""``pl.pipeline(..., stage=F)`` (docs/language.md, "Loops") and ``for i in pl.spmd(n)`` (examples/canonical/t3_spmd_add.py).

LowerPipelineLoops (after AutoTileMatmulL0) replicates a pipelined body F times per iteration of
stride F * step and runs the leftover iterations in a tail loop; results equal the ``pl.range`` loop's, every stage prints and
parses back, and the frontend checks its arguments. An SPMD loop's body is one block's kernel."""
import re

import pytest
import torch

import pypto.language as pl
from pypto.errors import PyptoError
from pypto.frontend.specialize import specialize
from pypto.ir import assert_structural_equal, run_pipeline
from pypto.ir.nodes import ForStmt
from pypto.ir.visit import iter_stmts
from pypto.language import parse
from pypto.language.enums import ForKind
from pypto.runtime import RunConfig

import kernels_pipeline as K


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 9, 16])
def test_pipelined_orchestration_loop_runs_every_iteration_once(n):
    a = torch.randn(256, 64)
    got, want = torch.zeros(256, 64), torch.zeros(256, 64)
    K.piped_tasks(a, n, got, config=RunConfig(sim_seed=0))
    K.ranged_tasks(a, n, want, config=RunConfig(sim_seed=0))
    assert torch.equal(got, want)
    assert torch.equal(got[n * 16:], torch.zeros(256 - n * 16, 64))


def test_a_runtime_trip_count():
    compiled = K.piped_tasks.compile(n=pl.RUNTIME)
    a = torch.randn(256, 64)
    for n in (0, 4, 5, 13):
        out = torch.zeros(256, 64)
        compiled(a, n, out)
        want = torch.zeros(256, 64)
        want[:n * 16] = a[:n * 16] * 2 + 1
        assert torch.equal(out, want), n


def _ref_carry(a, ks, f):
    acc = a[:, :64].clone()
    for k in ks:
        acc = f(acc, a[:, k * 64:(k + 1) * 64])
    return acc


def test_carried_values_thread_through_the_copies_and_the_tail():
    a = torch.randn(16, 512)
    out = torch.zeros(16, 64)
    K.piped_carry(a, out)
    assert torch.equal(out, _ref_carry(a, range(1, 8), lambda acc, x: acc * 0.5 + x))
    out = torch.zeros(16, 64)
    K.piped_yield(a, out)
    assert torch.equal(out, _ref_carry(a, range(1, 8, 2), lambda acc, x: acc * 0.5 - x))


@pytest.mark.parametrize("kernel, args", [
    (K.piped_tasks, (torch.zeros(256, 64), 7, torch.zeros(256, 64))),
    (K.piped_carry, (torch.zeros(16, 512), torch.zeros(16, 64))),
    (K.piped_yield, (torch.zeros(16, 512), torch.zeros(16, 64))),
])
def test_every_stage_prints_and_parses_back(kernel, args):
    stages = run_pipeline(specialize(kernel, args, {}).program, {"platform": "a2a3sim"}).stages
    frontend = stages[0][1].as_python()
    assert re.search(r"pl\.pipeline\(.*stage=\d", frontend)
    lowered = False
    for name, program in stages:
        text = program.as_python()
        assert_structural_equal(parse(text), program)
        # the loop stays a pl.pipeline until LowerPipelineLoops, and is gone from then on
        lowered = lowered or name == "LowerPipelineLoops"
        assert ("pl.pipeline" in text) != lowered, name
    assert lowered
    after = dict(stages)["LowerPipelineLoops"]
    loops = [s for f in after.functions for s in iter_stmts(f.body) if isinstance(s, ForStmt)]
    assert loops and all(s.kind != ForKind.Pipeline for s in loops)


def test_the_lowered_form():
    stages = dict(run_pipeline(specialize(K.piped_tasks, (torch.zeros(256, 64), 7, torch.zeros(256, 64)),
                                          {}).program, {"platform": "a2a3sim"}).stages)
    assert "pl.pipeline(7, stage=3)" in stages["UnrollLoops"].as_python()
    text = stages["LowerPipelineLoops"].as_python()
    # 7 trips at stage 3: a main loop over 0, 3 with three copies, then the tail for 6
    assert "in pl.range(0, 6, 3, init_values=" in text and "in pl.range(6, 7, init_values=" in text
    # the scope was outlined once, before the copies: one kernel, dispatched by each of the 4 copies
    assert text.count("pl.tile.load(a") == 1 and text.count("self.piped_tasks_incore_0(") == 4


_SRC = '''
import pypto.language as pl

@pl.jit
def k(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    for i in LOOP:
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * 16, 0], [16, 64])
            out = pl.store(x, [i * 16, 0], out)
    return out
'''


@pytest.mark.parametrize("loop, message", [
    ("pl.pipeline(4)", "pl.pipeline needs stage=F"),
    ("pl.pipeline(4, stage=0)", "stage must be a literal int >= 1"),
    ("pl.pipeline(4, stage=1.5)", "stage must be a literal int >= 1"),
    ("pl.pipeline(4, 0, -1, stage=2)", "step must be a literal int > 0"),
    ("pl.range(4, stage=2)", "keyword(s) not supported: stage"),
])
def test_pipeline_argument_errors(tmp_path, loop, message):
    path = tmp_path / "bad_pipeline.py"
    path.write_text(_SRC.replace("LOOP", loop))
    import importlib.util

    spec = importlib.util.spec_from_file_location("bad_pipeline", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(PyptoError, match=re.escape(message)) as e:
        mod.k(torch.zeros(64, 64), torch.zeros(64, 64))
    assert "^" in str(e.value) and "bad_pipeline.py" in str(e.value)


# ------------------------------------------------------------------ for i in pl.spmd(n)
def test_spmd_blocks_run_on_their_own_cores():
    """One task of n blocks (one TaskId), block i on its own core reading its index."""
    from pypto.runtime import simulator as S

    a = torch.randn(256, 64)
    for n in (1, 3, 16):
        out = torch.zeros(256, 64)
        K.spmd_rows(a, n, out, config=RunConfig(sim_seed=1))
        want = torch.zeros(256, 64)
        want[:n * 16] = a[:n * 16] * 2 + 1
        assert torch.equal(out, want)
        tasks = S._LAST_RUNTIME[0].tasks
        assert len(tasks) == 1 and tasks[0].kind == "kernel" and tasks[0].blocks == n
        if n > 1:
            assert len({r[0] for r in tasks[0].runs}) == n   # every block on its own core
    lowered = K.spmd_rows.lower(a, 4, torch.zeros(256, 64)).as_python()
    assert "pl.spmd_submit(self.spmd_rows_incore_0" in lowered and "core_num=4" in lowered


@pytest.mark.parametrize("loop, message", [
    ("pl.spmd(2, predicate=True)", "predicate= must be `tensor[index] OP int_literal`"),
    ("pl.spmd(2, sync_start=1)", "sync_start must be True or False"),
    ("pl.spmd()", "pl.spmd takes one block count: pl.spmd(n) or pl.spmd(core_num=n)"),
    ("pl.spmd(a)", "pl.spmd block count must be an integer"),
    ("pl.spmd(0)", "pl.spmd block count must be >= 1"),
])
def test_spmd_argument_errors(tmp_path, loop, message):
    test_pipeline_argument_errors(tmp_path, loop, message)


def test_spmd_inside_pl_at_is_refused(tmp_path):
    src = _SRC.replace("    for i in LOOP:\n        with pl.at(level=pl.Level.CORE_GROUP):\n",
                       "    with pl.at(level=pl.Level.CORE_GROUP):\n        for i in pl.spmd(4):\n")
    path = tmp_path / "bad_spmd.py"
    path.write_text(src)
    import importlib.util

    spec = importlib.util.spec_from_file_location("bad_spmd", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(PyptoError, match="only allowed in an orchestration function, outside pl.at"):
        mod.k(torch.zeros(64, 64), torch.zeros(64, 64))
