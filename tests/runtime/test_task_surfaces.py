"""Task surfaces of the DSL (docs/language.md, "Task dependencies"): ``pl.at(...) as tid``,
``deps=``, ``no_dep_args=``, ``dumps=``, ``pl.manual_scope()``, ``pl.create_tensor(manual_dep=True)``,
``pl.submit`` / ``pl.no_dep`` (printed form), and the probe pattern. End to end: IR round trip,
generated orchestration, the runtime's edges, deps.json and the dump files."""
import json
import re
from pathlib import Path

import pytest
import torch

import kernels_tasks as K
from inproc import run_module
from pypto.errors import PyptoError
from pypto.frontend.specialize import specialize
from pypto.ir import assert_structural_equal, run_pipeline
from pypto.language import parse
from pypto.runtime import RunConfig
from pypto.runtime import simulator as S

REPO = Path(__file__).resolve().parents[2]
Z = torch.zeros


def last_rt():
    return S._LAST_RUNTIME[0]


def deps_edges(path):
    """{(pred task index, succ task index, source)} from deps.json (task ids -> submit order)."""
    doc = json.loads(Path(path).read_text())
    index = {t["task_id"]: i for i, t in enumerate(doc["tasks"])}
    return doc, {(index[e["pred"]], index[e["succ"]], e["source"]) for e in doc["edges"]}


ROUNDTRIP = {
    "accum": (K.accum, (Z(64, 64), Z(64, 64))),
    "accum_no_dep": (K.accum_no_dep, (Z(64, 64), Z(64, 64))),
    "war_deps": (K.war_deps, (Z(64, 64), Z(64, 64), Z(64, 64))),
    "war_inout": (K.war_inout, (Z(64, 64),) * 4),
    "manual": (K.manual, (Z(64, 64), Z(64, 64))),
    "manual_dep_tensor": (K.manual_dep_tensor, (Z(64, 64), Z(64, 64))),
    "dumped": (K.dumped, (Z(64, 64),) * 3),
    "probed": (K.probed, (Z(64, 128),) * 3),
    "tid_array": (K.tid_array, (Z(256, 64), Z(256, 64), Z(64, 64))),
    "joined": (K.joined, (Z(64, 64),) * 4),
    "tid_array_elements": (K.tid_array_elements, (Z(256, 64), Z(256, 64), Z(64, 64))),
}


@pytest.mark.parametrize("name", list(ROUNDTRIP))
def test_every_stage_roundtrips(name):
    kernel, args = ROUNDTRIP[name]
    for stage, program in run_pipeline(specialize(kernel, args, {}).program, {"platform": "a2a3sim"}).stages:
        text = program.as_python()
        reparsed = parse(text)
        assert_structural_equal(program, reparsed)
        assert reparsed.as_python() == text, stage


def test_printed_forms():
    stages = dict(run_pipeline(specialize(K.war_deps, ROUNDTRIP["war_deps"][1], {}).program,
                               {"platform": "a2a3sim"}).stages)
    front = stages["frontend"].as_python()
    assert "as reader_tid:" in front and "deps=[reader_tid]" in front  # None is dropped
    outlined = stages["OutlineIncoreScopes"].as_python()
    assert "out_1, reader_tid = pl.submit(self.reader, a, buf, out)" in outlined
    assert "pl.submit(self.writer, a, buf, deps=[reader_tid])" in outlined
    nd = dict(run_pipeline(specialize(K.accum_no_dep, ROUNDTRIP["accum_no_dep"][1], {}).program,
                           {"platform": "a2a3sim"}).stages)
    assert "no_dep_args=[out" in nd["frontend"].as_python()
    assert "pl.no_dep(out" in nd["OutlineIncoreScopes"].as_python()
    m = dict(run_pipeline(specialize(K.manual, ROUNDTRIP["manual"][1], {}).program, {"platform": "a2a3sim"}).stages)
    assert m["frontend"].as_python().count("with pl.manual_scope():") == 2
    assert "manual_dep=True" in dict(run_pipeline(specialize(K.manual_dep_tensor, ROUNDTRIP["manual_dep_tensor"][1],
                                                             {}).program, {"platform": "a2a3sim"}).stages)[
        "frontend"].as_python()


# ------------------------------------------------------------------ R-seq WAW chain and no_dep_args
def test_loop_accumulator_waw_chain_and_no_dep_args(tmp_path):
    a = torch.randn(64, 64)
    K.accum(a, Z(64, 64), config=RunConfig(enable_dep_gen=True, sim_seed=0, save_kernels_dir=str(tmp_path / "a")))
    doc, edges = deps_edges(tmp_path / "a" / "dfx_outputs" / "deps.json")
    assert [arg["type"] for arg in doc["tasks"][1]["args"]] == ["INPUT", "INOUT"]   # R-seq promotion
    assert edges == {(0, 1, "tensormap"), (1, 2, "tensormap"), (2, 3, "tensormap")}  # the WAW chain
    out = Z(64, 64)
    K.accum_no_dep(a, out, config=RunConfig(enable_dep_gen=True, sim_seed=0,
                                            save_kernels_dir=str(tmp_path / "b")))
    doc, edges = deps_edges(tmp_path / "b" / "dfx_outputs" / "deps.json")
    assert edges == set()
    assert [arg["type"] for arg in doc["tasks"][1]["args"]] == ["INPUT", "UNKNOWN"]  # NO_DEP prints UNKNOWN
    assert torch.equal(out, a * 2.0)


# ------------------------------------------------------------------ WAR
def _war(kernel, seeds, readers=1):
    a = torch.randn(64, 64)
    buf0 = torch.randn(64, 64)
    wrong = []
    for s in seeds:
        buf = buf0.clone()
        outs = [Z(64, 64) for _ in range(readers)]
        kernel(a, buf, *outs, config=RunConfig(sim_seed=s))
        if not all(torch.equal(o, a * a + buf0) for o in outs):
            wrong.append(s)
        assert torch.equal(buf, a * a)
    return wrong


def test_war_race_without_edge_is_wrong_for_some_seeds():
    wrong = _war(K.war_racy, range(40))
    assert 0 < len(wrong) < 40, wrong
    rt = last_rt()
    assert [(p.index, src) for t in rt.tasks for p, _, src, _, _ in t.edges] == []


def test_war_fixed_by_reader_tid():
    assert _war(K.war_deps, range(100)) == []
    rt = last_rt()
    assert [(p.index, t.index, src) for t in rt.tasks for p, _, src, _, _ in t.edges] == [(0, 1, "explicit")]
    assert rt.tasks[0].tags == ["INPUT", "INPUT", "OUTPUT_EXISTING"]  # the reader stays a plain input


def test_war_fixed_by_inout_serializes_readers(tmp_path):
    assert _war(K.war_inout, range(100), readers=2) == []
    a, buf = torch.randn(64, 64), torch.randn(64, 64)
    K.war_inout(a, buf, Z(64, 64), Z(64, 64),
                config=RunConfig(enable_dep_gen=True, sim_seed=0, save_kernels_dir=str(tmp_path / "w")))
    doc, edges = deps_edges(tmp_path / "w" / "dfx_outputs" / "deps.json")
    # each reader is the registered producer in turn: reader 2 waits for reader 1, the writer for reader 2
    assert edges == {(0, 1, "tensormap"), (1, 2, "tensormap")}
    assert [arg["type"] for arg in doc["tasks"][0]["args"]] == ["INPUT", "INOUT", "OUTPUT_EXISTING"]


# ------------------------------------------------------------------ manual surfaces
def test_manual_scope_only_declared_edges():
    a = torch.randn(64, 64)
    for s in range(10):
        out = Z(64, 64)
        K.manual(a, out, config=RunConfig(sim_seed=s))
        assert torch.equal(out, (a + a) * (a + a))
    rt = last_rt()
    assert [t.manual for t in rt.tasks] == [False, True, True]
    assert [(p.index, t.index, src) for t in rt.tasks for p, _, src, _, _ in t.edges] == [(1, 2, "explicit")]


def test_manual_dep_tensor_has_no_raw_edge():
    a, out = torch.randn(64, 64), Z(64, 64)
    K.manual_dep_tensor(a, out, config=RunConfig(sim_seed=0))
    assert torch.equal(out, (a + a) * (a + a))
    srcs = {(p.index, t.index, src) for t in last_rt().tasks for p, _, src, _, _ in t.edges}
    assert srcs == {(0, 1, "creator"), (0, 2, "creator"), (1, 2, "explicit")}  # no tensormap (RAW) edge


def test_task_id_array_fan_in():
    a, b, out = torch.randn(256, 64), Z(256, 64), Z(64, 64)
    K.tid_array(a, b, out, config=RunConfig(sim_seed=0))
    assert torch.equal(out, a[0:64] * 2.0 + a[192:256] * 2.0)
    rt = last_rt()
    last = rt.tasks[-1]
    assert sorted(p.index for p, _, src, _, _ in last.edges if src == "explicit") == [0, 1, 2, 3]


def test_task_id_array_elements_read_one_slot():
    """pl.array.update_element stores, tids[i] / pl.array.get_element read: the consumer's only
    explicit edge is to writer 1 (the others are not waited for), and it reads that writer's chunk."""
    a, b, out = torch.randn(256, 64), Z(256, 64), Z(64, 64)
    K.tid_array_elements(a, b, out, config=RunConfig(sim_seed=0))
    assert torch.equal(out, a[64:128] * 2.0 + 1.0)
    last = last_rt().tasks[-1]
    assert sorted({p.index for p, _, src, _, _ in last.edges if src == "explicit"}) == [1]


# ------------------------------------------------------------------ dumps
def _viewer(*args):
    """``python -m pypto.tools.dump_viewer ARGS``, in this process (see tests/inproc.py)."""
    return run_module("pypto.tools.dump_viewer", *args, cwd=REPO)


def test_dumps_level_1_only_marked_level_2_everything(tmp_path):
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    K.dumped(a, b, Z(64, 64), config=RunConfig(enable_dump_args=1, sim_seed=0, save_kernels_dir=str(tmp_path / "one")))
    d1 = tmp_path / "one" / "dfx_outputs" / "args_dump"
    recs = json.loads((d1 / "args_dump.json").read_text())["args"]
    # only dumps=[b], only on the task that marked it
    assert [(r["task_id"], r["arg_index"], r["role"]) for r in recs] == [("0x0000000000000002", 0, "input")]
    K.dumped(a, b, Z(64, 64), config=RunConfig(enable_dump_args=2, sim_seed=0, save_kernels_dir=str(tmp_path / "two")))
    d2 = tmp_path / "two" / "dfx_outputs" / "args_dump"
    recs2 = json.loads((d2 / "args_dump.json").read_text())["args"]
    assert {(r["task_id"], r["arg_index"]) for r in recs2} == {
        ("0x0000000000000001", 0), ("0x0000000000000001", 1),
        ("0x0000000000000002", 0), ("0x0000000000000002", 1), ("0x0000000000000002", 2)}
    for d in (d1, d2):
        r = _viewer(d)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split("\n")[0].split() == ["idx", "task", "task_id", "stage", "role", "arg", "dtype", "shape", "bytes"]
    from pypto.tools.dump_viewer import load_manifest, load_tensor
    assert torch.equal(load_tensor(d1, load_manifest(d1), recs[0]), b)


# ------------------------------------------------------------------ probe
def test_probe_delivers_the_intermediate():
    x = torch.randn(64, 128)
    out, probe = Z(64, 128), Z(64, 128)
    K.probed(x, out, probe, config=RunConfig(sim_seed=0))
    assert torch.equal(probe, x + 1.0)
    assert torch.allclose(out, torch.exp(x + 1.0), rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------ misuse: errors with carets
BAD = {
    "deps_tensor": ("deps= takes TaskIds", "deps=[out]"),
    "tid_level": ("binds a TaskId only for level=pl.Level.CORE_GROUP", "as tid"),
    "nested_manual": ("cannot be nested", "pl.manual_scope()"),
    "manual_in_at": ("orchestration-only", "pl.manual_scope()"),
    "no_dep_unused": ("is not used inside this pl.at scope", None),
}


@pytest.mark.parametrize("name", list(BAD))
def test_misuse_errors(name):
    import kernels_tasks_bad as B

    msg, snippet = BAD[name]
    with pytest.raises(PyptoError) as e:
        getattr(B, name)(torch.randn(64, 64), Z(64, 64))
    text = str(e.value)
    assert msg in text, text
    assert "^" in text and "kernels_tasks_bad.py:" in text
    if snippet:
        assert snippet in text


# ------------------------------------------------------------------ pl.submit keywords of the printed form
def _outlined_war_deps() -> str:
    stages = dict(run_pipeline(specialize(K.war_deps, ROUNDTRIP["war_deps"][1], {}).program,
                               {"platform": "a2a3sim"}).stages)
    return stages["OutlineIncoreScopes"].as_python()


PLAIN = "pl.submit(self.writer, a, buf, deps=[reader_tid])"


def test_submit_allow_early_resolve_is_a_checked_hint():
    text = _outlined_war_deps()
    assert PLAIN in text
    hinted = text.replace(PLAIN, "pl.submit(self.writer, a, buf, deps=[reader_tid], allow_early_resolve=True)")
    assert_structural_equal(parse(hinted), parse(text))      # a scheduling hint: no effect on the IR
    with pytest.raises(PyptoError, match="allow_early_resolve must be True or False"):
        parse(text.replace(PLAIN, "pl.submit(self.writer, a, buf, deps=[reader_tid], allow_early_resolve=1)"))


# ------------------------------------------------------------------ pl.submit(predicate=...)
PREDICATED = "pl.submit(self.writer, a, buf, deps=[reader_tid], predicate=(out_1[0, 0] > 0))"


def _predicated_program():
    text = _outlined_war_deps().replace(PLAIN, PREDICATED)
    return text, parse(text)


def test_predicate_round_trips_and_survives_the_pipeline():
    text, prog = _predicated_program()
    assert PREDICATED in prog.as_python()
    assert_structural_equal(parse(prog.as_python()), prog)
    # every later stage still carries it (printed, and re-parsed equal)
    stages = run_pipeline(prog, {"platform": "a2a3sim"}).stages
    for stage, program in stages:
        printed = program.as_python()
        assert "predicate=(out_1[0, 0] > 0)" in printed, stage
        assert_structural_equal(parse(printed), program)


def test_predicate_decides_at_dispatch_whether_the_task_runs():
    from pypto.ir import compile as ir_compile
    from pypto.debug import torch_codegen

    _, prog = _predicated_program()
    compiled = ir_compile(prog, dump_passes=False)
    ns = {}
    exec(torch_codegen(prog), ns)                     # the reference executor honours it too
    for a00, runs in ((2.0, True), (0.0, False)):
        a = torch.randn(64, 64)
        a[0, 0] = a00
        buf0 = torch.zeros(64, 64)                    # reader: out = a * a + buf; out[0, 0] = a00 ** 2
        for run in ("sim", "reference"):
            buf, out = buf0.clone(), torch.zeros(64, 64)
            if run == "sim":
                compiled(a, buf, out, config=RunConfig(sim_seed=0, enable_chip_swimlane=True))
            else:
                ns["war_deps"](a, buf, out)
            assert torch.equal(out, a * a)
            assert torch.equal(buf, a * a if runs else buf0), (run, a00)
        writer = last_rt().tasks[-1]
        assert writer.kernel == "writer" and writer.skipped is (not runs)
        assert (writer.core >= 0) is runs             # a skipped task takes no core
    trace = json.loads((compiled.output_dir / "dfx_outputs" / "swimlane.json").read_text())
    assert [e["name"] for e in trace["traceEvents"] if e.get("cat") == "skipped"] == ["writer"]


@pytest.mark.parametrize("predicate, message", [
    ("predicate=(out_1[0, 0] > 0.5)", "compares with an int literal"),
    ("predicate=(out_1[0] > 0)", "the predicate reads one element: 2 indices"),
    ("predicate=(out_1[0, 0:2] > 0)", "the predicate reads one element"),
    ("predicate=(out_1[0, 64] > 0)", "index 64 is outside dimension 1"),
    ("predicate=(reader_tid > 0)", "must be `tensor[index] OP int_literal`"),
    ("predicate=(out_1[0, 0] > 0 > 1)", "must be `tensor[index] OP int_literal`"),
])
def test_predicate_errors_point_at_the_source(predicate, message):
    text = _outlined_war_deps().replace(PLAIN, PLAIN[:-1] + f", {predicate})")
    with pytest.raises(PyptoError, match=re.escape(message)) as e:
        parse(text)
    assert "^" in str(e.value)
    no_deps = _outlined_war_deps().replace(PLAIN, "pl.submit(self.writer, a, buf, predicate=(out_1[0, 0] > 0))")
    with pytest.raises(PyptoError, match="needs deps= naming the task that produces"):
        parse(no_deps)


def test_a_predicate_on_an_element_written_by_a_task_outside_deps_is_refused():
    from pypto.backend.platforms import get_platform
    from pypto.errors import SimulationError

    rt = S.Runtime(get_platform("a2a3sim"), {}, 0)
    flags, other = torch.zeros(4, 8, dtype=torch.int32), torch.zeros(4, 8)
    producer = rt.submit("k", [flags], ["OUTPUT_EXISTING"]).task_id
    rt.submit("k", [other], ["OUTPUT_EXISTING"], deps=[producer], predicate=(flags, [1, 2], "eq", 0))
    with pytest.raises(SimulationError, match="not among its dependencies"):
        rt.submit("k", [other], ["OUTPUT_EXISTING"], predicate=(flags, [1, 2], "eq", 0))
    with pytest.raises(SimulationError, match="outside the tensor"):
        rt.submit("k", [other], ["OUTPUT_EXISTING"], deps=[producer], predicate=(flags, [4, 0], "eq", 0))


# ------------------------------------------------------------------ pl.system.task_dummy
def test_task_dummy_joins_its_deps(tmp_path):
    stages = dict(run_pipeline(specialize(K.joined, ROUNDTRIP["joined"][1], {}).program,
                               {"platform": "a2a3sim"}).stages)
    assert "= pl.tensor.task_dummy([t_left, t_right])" in stages["frontend"].as_python()
    a = torch.randn(64, 64)
    b, c, out = Z(64, 64), Z(64, 64), Z(64, 64)
    for seed in range(20):   # a manual scope: only the join orders the consumer after both producers
        K.joined(a, b, c, out, config=RunConfig(sim_seed=seed))
        assert torch.equal(out, (a + a) - a * a)
    tasks = last_rt().tasks
    kinds = [t.kind for t in tasks]
    assert kinds == ["kernel", "kernel", "dummy", "kernel"]
    assert tasks[2].fanin == {0, 1} and tasks[3].fanin == {2}
    K.joined(a, b, c, out, config=RunConfig(sim_seed=0, enable_dep_gen=True, save_kernels_dir=str(tmp_path)))
    doc, edges = deps_edges(tmp_path / "dfx_outputs" / "deps.json")
    assert {(0, 2, "explicit"), (1, 2, "explicit"), (2, 3, "explicit")} <= edges


def test_task_dummy_errors(tmp_path):
    import importlib.util

    text = """
import pypto.language as pl

@pl.jit
def k(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP) as t:
        out[:] = pl.add(a, a)
    j = pl.system.task_dummy(CALL)
    return out
"""
    for i, (call, msg) in enumerate((("[t]", "takes one keyword: deps=[...]"), ("deps=[a]", "takes TaskIds"),
                                     ("deps=t", "deps= must be a literal list"))):
        path = tmp_path / f"bad_dummy{i}.py"
        path.write_text(text.replace("CALL", call))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        with pytest.raises(PyptoError, match=re.escape(msg)) as e:
            mod.k(torch.zeros(64, 64), torch.zeros(64, 64))
        assert "^" in str(e.value) and path.name in str(e.value)
