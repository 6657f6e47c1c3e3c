"""Runtime dependency inference (docs/simulator.md, "What a run does"), DFX outputs and seeded scheduling."""
import inspect
import json
import warnings
from pathlib import Path

import pytest
import torch

from pypto.backend.platforms import get_platform
from pypto.runtime import RunConfig
from pypto.runtime import simulator as S
from pypto.runtime.deps import COVERED, NO_OVERLAP, OTHER, View, overlap, tensor_id

import kernels_rt as K
from inproc import run_module

REPO = Path(__file__).resolve().parents[2]


def last_rt():
    return S._LAST_RUNTIME[0]


def edges(rt):
    """{(pred kernel index, succ kernel index, source)} over the submit log."""
    return {(p.index, t.index, src) for t in rt.tasks for p, _, src, _, _ in t.edges}


def rand(*shape):
    return torch.randn(*shape)


# ------------------------------------------------------------------ edges from generated orchestration
def test_raw_and_creator_edges():
    a, out = rand(64, 64), torch.zeros(64, 64)
    K.raw_chain(a, out, config=RunConfig(sim_seed=0))
    assert torch.equal(out, (a + a) * (a + a))
    rt = last_rt()
    kinds = [t.kind for t in rt.tasks]
    assert kinds == ["alloc", "kernel", "kernel"]
    assert [t.tags for t in rt.tasks[1:]] == [["INPUT", "OUTPUT_EXISTING"], ["OUTPUT_EXISTING", "INPUT"]]
    assert edges(rt) == {(0, 1, "creator"), (0, 2, "creator"), (1, 2, "tensormap")}
    raw = [e for e in rt.tasks[2].edges if e[2] == "tensormap"][0]
    assert raw[3] == COVERED


def test_waw_via_prior_promotion():
    a, out = rand(64, 64), torch.zeros(64, 64)
    K.waw_prior(a, out, config=RunConfig(sim_seed=1))
    rt = last_rt()
    assert rt.tasks[0].tags[1] == "OUTPUT_EXISTING" and rt.tasks[1].tags[1] == "INOUT"
    assert edges(rt) == {(0, 1, "tensormap")}
    assert torch.equal(out, a * a)  # the second writer lands last, for every seed


def test_waw_via_sequential_loop_promotion():
    a = rand(64, 64)
    for seed in range(4):
        out = torch.zeros(64, 64)
        K.waw_seq(a, out, config=RunConfig(sim_seed=seed))
        assert torch.equal(out, a + a + a)
    rt = last_rt()
    assert all(t.tags[-1] == "INOUT" or "INOUT" in t.tags for t in rt.tasks)
    assert edges(rt) == {(0, 1, "tensormap"), (1, 2, "tensormap")}
    assert all(t.task_id >> 32 == 1 for t in rt.tasks)  # loop body = nested scope = ring 1
    assert [t.task_id & 0xFFFFFFFF for t in rt.tasks] == [0, 1, 2]


def test_parallel_disjoint_blocks_have_no_edges():
    a, out = rand(256, 64), torch.zeros(256, 64)
    K.par_rows(a, out, config=RunConfig(sim_seed=2))
    assert torch.equal(out, a * 2)
    rt = last_rt()
    assert all(t.tags[-1] == "OUTPUT_EXISTING" for t in rt.tasks)
    assert edges(rt) == set()


def _war_results(seeds):
    a, buf0 = torch.randn(64, 64, generator=torch.Generator().manual_seed(5)), torch.randn(
        64, 64, generator=torch.Generator().manual_seed(6))
    res = []
    for s in seeds:
        buf, out = buf0.clone(), torch.zeros(64, 64)
        K.war(a, buf, out, config=RunConfig(sim_seed=s))
        res.append(out)
    return a, buf0, res


def test_no_war_edge_gives_wrong_results_for_some_seeds():
    a, buf0, res = _war_results(range(40))
    rt = last_rt()
    assert rt.tasks[1].tags == ["INPUT", "INOUT"]
    assert edges(rt) == set()  # the reader never registered: no WAR edge
    right = a * a + buf0
    raced = a * a + a * a
    good = [torch.equal(r, right) for r in res]
    bad = [torch.equal(r, raced) for r in res]
    assert all(g or b for g, b in zip(good, bad))
    assert any(good) and any(bad), "the unordered reader/writer pair should race for some seeds"


# ------------------------------------------------------------------ hand-built orchestration (runtime API)
def _hand_runtime(seed):
    a, buf = rand(64, 64), rand(64, 64)
    c = K.war.compile(a, buf, torch.zeros(64, 64))
    kernels = {n: S.load_module(c.output_dir / rel) for n, rel in c.meta["kernels"].items()}
    rt = S.Runtime(get_platform("a2a3sim"), kernels, seed)
    names = sorted(kernels)
    for n in names:
        # (without _block: the block of a multi-block task, passed by keyword by the scheduler)
        params = [p for p in list(inspect.signature(kernels[n].kernel).parameters)[1:] if p != "_block"]
        assert params in (["a", "buf", "out"], ["a", "buf"]), params
    return rt, names[0], names[1]  # reader (a, buf, out): out = a*a + buf; writer (a, buf): buf = a*a


def test_war_fixed_by_explicit_deps():
    for seed in range(40):
        rt, reader, writer = _hand_runtime(seed)
        a, buf, out = rand(64, 64), rand(64, 64), torch.zeros(64, 64)
        buf0 = buf.clone()
        r = rt.submit(reader, [a, buf, out], ["INPUT", "INPUT", "OUTPUT_EXISTING"], returns=[2])
        w = rt.submit(writer, [a, buf], ["INPUT", "INOUT"], returns=[1], deps=[r.task_id, None])
        assert r.value is out and w.value is buf
        rt.run_all()
        assert torch.equal(out, a * a + buf0)
        assert torch.equal(buf, a * a)
    assert [(p.index, src) for p, _, src, _, _ in rt.tasks[1].edges] == [(0, "explicit")]


def test_manual_scope_skips_inference_but_keeps_explicit_deps():
    rt, reader, writer = _hand_runtime(0)
    a, buf = rand(64, 64), rand(64, 64)
    o1, o2, o3 = (torch.zeros(64, 64) for _ in range(3))
    tags = ["INPUT", "INPUT", "OUTPUT_EXISTING"]
    with rt.scope(manual=True):
        w = rt.submit(writer, [a, buf], ["INPUT", "INOUT"])
        rt.submit(reader, [a, buf, o1], tags)  # RAW not inferred
        rt.submit(reader, [a, buf, o2], tags, deps=[w.task_id])
        with pytest.raises(Exception, match="manual scope"):
            with rt.scope(manual=True):
                pass
    r3 = rt.submit(reader, [a, buf, o3], tags)  # outside: the manual writer never registered
    assert rt.tasks[1].edges == [] and rt.tasks[3].edges == []
    assert [(p.index, s) for p, _, s, _, _ in rt.tasks[2].edges] == [(0, "explicit")]
    assert all(t.manual for t in rt.tasks[:3]) and not rt.tasks[3].manual
    assert w.task_id >> 32 == 1 and r3.task_id >> 32 == 0
    rt.run_all()
    assert torch.equal(o2, a * a + a * a)


def test_manual_dep_tensor_and_no_dep_tag():
    rt, reader, writer = _hand_runtime(0)
    a = rand(64, 64)
    t = rt.create_tensor([64, 64], torch.float32, manual_dep=True)
    rt.submit(writer, [a, t], ["INPUT", "INOUT"])
    rt.submit(reader, [a, t, torch.zeros(64, 64)], ["INPUT", "INPUT", "OUTPUT_EXISTING"])
    assert [s for _, _, s, _, _ in rt.tasks[1].edges] == ["creator"]
    assert [s for _, _, s, _, _ in rt.tasks[2].edges] == ["creator"]  # no RAW: manual_dep
    u = torch.zeros(64, 64)
    rt.submit(writer, [a, u], ["INPUT", "OUTPUT_EXISTING"])
    rt.submit(reader, [a, u, torch.zeros(64, 64)], ["INPUT", "NO_DEP", "OUTPUT_EXISTING"])
    assert rt.tasks[4].edges == []
    rt.submit(reader, [a, u, torch.zeros(64, 64)], ["In", "In", "Out"])  # IR directions are accepted as tags
    assert [(p.index, s, i) for p, i, s, _, _ in rt.tasks[5].edges] == [(3, "tensormap", 1)]
    rt.run_all()


def test_overlap_levels():
    buf = torch.zeros(8, 16)
    v = lambda t: View(t)  # noqa: E731
    assert overlap(v(buf[0:4]), v(buf[4:8])) == NO_OVERLAP          # L1 disjoint
    assert overlap(v(buf), v(buf[2:4, 4:8])) == COVERED              # consumer covers producer
    assert overlap(v(buf[2:4, 4:8]), v(buf)) == OTHER                # partial
    assert overlap(v(buf[:, 0:4]), v(buf[:, 8:12])) == NO_OVERLAP    # L2: disjoint columns
    assert overlap(v(buf[:, 0:8]), v(buf.view(-1)[0:16])) == OTHER   # rank differs: conservative
    assert overlap(v(buf.t()), v(buf.t())) == OTHER                  # not row-major derivable
    assert tensor_id(0) == 0x4ED2A9C3BF57C6C5 or isinstance(tensor_id(0), int)


# ------------------------------------------------------------------ seeds, atomics
def test_fixed_seed_is_bit_identical_and_seeds_differ():
    _, _, r1 = _war_results([3, 11, 17])
    _, _, r2 = _war_results([3, 11, 17])
    assert all(torch.equal(x, y) for x, y in zip(r1, r2))
    a = torch.randn(256, 64, generator=torch.Generator().manual_seed(0)) * torch.logspace(-4, 4, 64)
    outs = []
    for s in list(range(12)) + [0]:
        o = torch.zeros(64, 64)
        K.split_atomic(a, o, config=RunConfig(sim_seed=s))
        outs.append(o)
    assert torch.equal(outs[0], outs[-1])
    distinct = {o.numpy().tobytes() for o in outs}
    assert len(distinct) > 1, "atomic adds should land in a seed-dependent order"
    assert torch.allclose(outs[0], a.view(4, 64, 64).sum(0), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ DFX: deps.json
def test_deps_json_schema(tmp_path, capsys):
    a, out = rand(64, 64), torch.zeros(64, 64)
    cfg = RunConfig(enable_dep_gen=True, sim_seed=0, save_kernels_dir=str(tmp_path / "w"))
    assert cfg.save_kernels
    K.raw_chain(a, out, config=cfg)
    path = tmp_path / "w" / "dfx_outputs" / "deps.json"
    assert f"deps.json written to {path}" in capsys.readouterr().out
    doc = json.loads(path.read_text())
    assert set(doc) == {"tasks", "tensors", "edges"}
    for t in doc["tasks"]:
        assert set(t) >= {"task_id", "scope", "early_dispatch", "kernel_ids", "block_num", "args"}
        assert isinstance(t["task_id"], str) and int(t["task_id"]) >= 0 and t["scope"] in ("auto", "manual")
        assert t["task"] == f"r{int(t['task_id']) >> 32}t{int(t['task_id']) & 0xFFFFFFFF}"   # the reports' label
        assert len(t["kernel_ids"]) == 3 and t["block_num"] == 1
        for arg in t["args"]:
            assert arg["type"] in ("INPUT", "OUTPUT", "INOUT", "OUTPUT_EXISTING", "UNKNOWN")
            assert isinstance(arg["start_offset"], str) and isinstance(arg["shape"], list)
    assert doc["tasks"][0]["kernel_ids"] == [-1, -1, -1]  # the alloc task
    ids = {t["tensor_id"] for t in doc["tensors"]}
    for t in doc["tensors"]:
        assert t["tensor_id"] == str(tensor_id(int(t["buffer_addr"]), t["version"]))
        assert t["dtype"] == "FLOAT32" and isinstance(t["buffer_numel"], str)
    srcs = sorted((e["pred"], e["succ"], e["source"]) for e in doc["edges"])
    assert srcs == [("0", "1", "creator"), ("0", "2", "creator"), ("1", "2", "tensormap")]
    for e in doc["edges"]:
        assert e["tensor_id"] in ids and e["consumer_dtype"] == "FLOAT32"
        if e["source"] == "tensormap":
            assert e["flags"] == ["wait"] and e["overlap"] == "covered" and "producer_shape" in e
        else:
            assert e["flags"] == ["wait", "retain"]
    assert (tmp_path / "w" / "dfx_outputs" / "name_map_w.json").is_file()


def test_deps_json_is_reproducible_across_runs(tmp_path):
    # issue 13 item 16: deps.json embedded host pointers (buffer_addr, tensor ids hashed from them),
    # so two runs of one program never wrote the same file
    a = rand(64, 64)
    keep, docs = [], []
    for k in range(2):
        x, out = a.clone(), torch.zeros(64, 64)
        keep.append((x, out))  # both alive: their buffers have different host addresses
        K.raw_chain(x, out, config=RunConfig(enable_dep_gen=True, sim_seed=0, save_kernels_dir=str(tmp_path / "w")))
        docs.append((tmp_path / "w" / "dfx_outputs" / "deps.json").read_text())
    assert docs[0] == docs[1]
    doc = json.loads(docs[0])
    ptrs = {str(t.untyped_storage().data_ptr()) for pair in keep for t in pair}
    assert not ptrs & {t["buffer_addr"] for t in doc["tensors"]}
    addrs = sorted(int(t["buffer_addr"]) for t in doc["tensors"])
    assert len(set(addrs)) == len(addrs) and all(x % 512 == 0 for x in addrs)


# ------------------------------------------------------------------ DFX: dumps + viewer
def _viewer(*args):
    """``python -m simpler_setup.tools.dump_viewer ARGS``, in this process (see tests/inproc.py)."""
    return run_module("simpler_setup.tools.dump_viewer", *args, cwd=REPO)


def test_dump_level_2_and_viewer(tmp_path):
    a, out = rand(64, 64), torch.zeros(64, 64)
    K.raw_chain(a, out, config=RunConfig(enable_dump_args=2, sim_seed=0, save_kernels_dir=str(tmp_path / "w")))
    d = tmp_path / "w" / "dfx_outputs" / "args_dump"
    doc = json.loads((d / "args_dump.json").read_text())
    assert doc["dump_args_level"] == 2 and doc["bin_file"] == "args.bin" and doc["run_dir"] == "args_dump"
    assert doc["bin_format"]["type"] == "logical_contiguous"
    recs = doc["args"]
    # task 1: in a (before), out tmp (after); task 2: out (after), in tmp (before)
    assert sorted((r["task_id"], r["stage"], r["role"], r["arg_index"]) for r in recs) == sorted([
        ("0x0000000000000001", "before_dispatch", "input", 0), ("0x0000000000000001", "after_completion", "output", 1),
        ("0x0000000000000002", "before_dispatch", "input", 1), ("0x0000000000000002", "after_completion", "output", 0)])
    assert doc["total_args"] == 4 and doc["input_args"] == 2 and doc["output_args"] == 2
    assert (d / "args.bin").stat().st_size == sum(r["bin_size"] for r in recs) == 4 * 64 * 64 * 4
    r = _viewer(d)
    assert r.returncode == 0 and r.stdout.split("\n")[0].split() == ["idx", "task", "task_id", "stage", "role",
                                                                     "arg", "dtype", "shape", "bytes"]
    # one task-id scheme: the r<ring>t<index> label of the race report and doctor, accepted by --task
    assert "r0t2" in r.stdout and "r0t1" in r.stdout
    r = _viewer(d, "--task", "r0t2", "--stage", "after")
    assert r.returncode == 0 and "Filtered: 1/4 args" in r.stdout and "r0t1" not in r.stdout, r.stdout
    r = _viewer(d, "--task", "0x0000000000000002", "--stage", "after", "--role", "output", "--export")
    assert r.returncode == 0, r.stderr
    txt = d / "txt" / "task_0x0000000000000002_after_out0.txt"
    body = txt.read_text()
    assert "# task_id: 0x0000000000000002" in body and "# Overview:" in body and "# Detail:" in body
    assert f"[0, 1] {float(out[0, 1]):.6g}" in body
    ref = tmp_path / "ref.pt"
    torch.save((a + a) * (a + a), ref)
    r = _viewer(d, "--task", "2", "--stage", "after", "--compare", 0, ref)
    assert r.returncode == 0 and "mismatches=0/4096" in r.stdout, r.stdout + r.stderr
    torch.save(a, ref)
    r = _viewer(d, "--task", "2", "--stage", "after", "--compare", 0, ref)
    assert r.returncode == 1 and "max_abs_err=" in r.stdout
    assert _viewer(tmp_path / "nowhere").returncode == 2


def test_dump_level_1_tagged_only(tmp_path):
    a, out = rand(64, 64), torch.zeros(64, 64)
    K.tagged(a, out, config=RunConfig(enable_dump_args=1, sim_seed=0, save_kernels_dir=str(tmp_path / "w")))
    d = tmp_path / "w" / "dfx_outputs" / "args_dump"
    doc = json.loads((d / "args_dump.json").read_text())
    # only the consumer of the tagged tmp, only that argument, at dispatch
    assert [(r["task_id"], r["arg_index"], r["role"], r["stage"]) for r in doc["args"]] == [
        ("0x0000000000000002", 1, "input", "before_dispatch")]
    r = _viewer(d, "--index", 0)
    assert r.returncode == 0
    from pypto.tools.dump_viewer import load_manifest, load_tensor
    assert torch.equal(load_tensor(d, load_manifest(d), doc["args"][0]), a + a)
    # no tags: no manifest at level 1
    K.raw_chain(a, out, config=RunConfig(enable_dump_args=1, save_kernels_dir=str(tmp_path / "v")))
    assert not (tmp_path / "v" / "dfx_outputs" / "args_dump").exists()


def test_dump_budget_warns_and_truncates(tmp_path):
    a, out = rand(64, 64), torch.zeros(64, 64)
    with pytest.warns(RuntimeWarning, match="dump budget"):
        K.raw_chain(a, out, config=RunConfig(enable_dump_args=2, dump_budget_bytes=20000,
                                             save_kernels_dir=str(tmp_path / "w")))
    doc = json.loads((tmp_path / "w" / "dfx_outputs" / "args_dump" / "args_dump.json").read_text())
    assert doc["truncated_args"] == 3 and sum(r["truncated"] for r in doc["args"]) == 3
    assert (tmp_path / "w" / "dfx_outputs" / "args_dump" / "args.bin").stat().st_size == 16384


# ------------------------------------------------------------------ DFX: swimlane
def test_swimlane_chrome_trace_schema(tmp_path):
    a, out = rand(256, 64), torch.zeros(256, 64)
    K.par_rows(a, out, config=RunConfig(enable_chip_swimlane=True, sim_seed=0, save_kernels_dir=str(tmp_path / "w")))
    doc = json.loads((tmp_path / "w" / "dfx_outputs" / "swimlane.json").read_text())
    assert isinstance(doc["traceEvents"], list)
    spans, named = [], set()
    for e in doc["traceEvents"]:
        assert isinstance(e["name"], str) and isinstance(e["ph"], str)
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "X":
            assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)) and e["dur"] > 0
            assert isinstance(e["cat"], str) and isinstance(e["args"], dict) and e["args"]["task"].startswith("r")
            spans.append(e)
        elif e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "thread_sort_index") and isinstance(e["args"], dict)
            if e["name"] == "thread_name":
                named.add(e["tid"])
        else:
            assert e["ph"] == "i" and isinstance(e["ts"], (int, float))
    assert len(spans) == 4 and {e["tid"] for e in spans} <= named
    rec = json.loads((tmp_path / "w" / "dfx_outputs" / "chip_swimlane_records.json").read_text())
    assert rec["chip_swimlane_level"] == 4 and len(rec["aicore_tasks"]) == 4


# ------------------------------------------------------------------ RunConfig
def test_runconfig_validation():
    assert RunConfig(enable_chip_swimlane=True).enable_chip_swimlane == 4
    assert RunConfig(enable_dep_gen=True).save_kernels and not RunConfig().save_kernels
    assert RunConfig(platform="a5sim").backend_type == "Ascend950"
    assert RunConfig(ring_task_window=(8, 0, 16, 4)).ring_task_window == [8, 0, 16, 4]
    for bad in (dict(enable_chip_swimlane=5), dict(enable_dump_args=3), dict(ring_task_window=6),
                dict(ring_heap=512), dict(ring_dep_pool=[4, 4, 4]), dict(ring_task_window=True),
                dict(sim_seed="x"), dict(dump_budget_bytes=-1), dict(aicpu_thread_num=1)):
        with pytest.raises(ValueError):
            RunConfig(**bad)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c = RunConfig(enable_l2_swimlane=2)
        assert c.enable_chip_swimlane == 2 and c.enable_l2_swimlane == 2 and c.save_kernels
    assert sum(issubclass(x.category, DeprecationWarning) for x in w) == 2
    with pytest.raises(ValueError), pytest.warns(DeprecationWarning):
        RunConfig(enable_l2_swimlane=1, enable_chip_swimlane=1)
    assert RunConfig().compile_options()["platform"] == "a2a3sim" and isinstance(RunConfig().cache_key(), tuple)
