"""Lockstep gangs of mixed-kernel groups (pypto.runtime.cross_core.GroupGang) must not change a bit.

A Group task runs its AIC function on the cube core of a cluster and its AIV function on one or
two vector cores, talking through cross-core pipes. When both member functions have a lockstep form,
the scheduler runs ready Group tasks as a gang of adjacent clusters: each member's gang kernel on the
gang views of its core of every cluster, the pipes carrying every cluster's tiles at once. Each
program below has many independent Group tasks and is run with ``sim_lockstep`` off and on under one
seed, the outputs compared bit for bit (``run_both`` of test_lockstep_bits: its ops then count as
bit-tested in tests/runtime/lockstep_record.py). Errors (a deadlock, a popped tile of the wrong
shape) read the same in both modes; tasks whose footprints overlap are not ganged."""
from __future__ import annotations

import re

import pytest
import torch

import kernels_group_lockstep as K
from kernel_templates import filename
import pypto.ir as ir
from pypto.errors import SimulationError
from pypto.runtime import simulator as S
from pypto.runtime.config import RunConfig
from test_lockstep_bits import assert_same_bits, close, data, run_both, threads  # noqa: F401  (fixture)

# the gang record and its check run in one process (pytest-xdist: --dist loadgroup, scripts/test.sh);
# the autouse fixture notes each test as run (tests/runtime/lockstep_record.py)
pytestmark = pytest.mark.xdist_group("lockstep_record")
from lockstep_record import lockstep_recorder_ran  # noqa: E402,F401

FP16, FP32 = torch.float16, torch.float32
mm_softmax, mm_overlap = K.mm_softmax, K.mm_overlap   # (in this namespace: the gang record finds their builds)


def compiled(name: str, platform: str = "a2a3sim"):
    """The program ``name`` of kernels_group_lockstep compiled once, kept in this module's globals (where
    the gang record looks for the builds of the kernels it ran)."""
    key = f"_compiled_{name}_{platform}"
    if key not in globals():
        globals()[key] = ir.compile(getattr(K, name), platform=platform)
    return globals()[key]


def assert_group_gangs(rt) -> None:
    """Every gang of the run was of Group tasks, and some had many members."""
    by_index = {t.index: t for t in rt.tasks}
    kernels = {by_index[i].kernel for g in rt.gangs for i in g}
    assert kernels and all(getattr(rt.kernels[k], "GROUP", None) is not None for k in kernels), kernels
    assert max(len(g) for g in rt.gangs) >= 16


@pytest.mark.parametrize("flavor", ["special", "normal"])
def test_mm_softmax_group_gangs_bit_identical(threads, flavor):
    """softmax(q_i @ k) (ExpandMixedKernel's cube + vector split, one c2v pipe): FP16 operands with
    NaN / inf / subnormals / -0 (special) or ordinary values, FP32 scores."""
    r = 16
    q = data((K.N * r, 32), FP16, 11, flavor)
    k = (data((32, 64), FP16, 12, "normal") * 0.01).to(FP16)

    def call(cfg):
        out = torch.zeros(K.N * r, 64)
        mm_softmax(q, k, K.N, r, out, config=cfg)
        return [out]

    (out,), gangs, rt = run_both(call)
    assert_group_gangs(rt)
    if flavor == "normal":
        s = q.float() @ k.float()
        e = torch.exp(s - s.amax(-1, keepdim=True))
        close(out, e / e.sum(-1, keepdim=True), 1e-5)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_ping_pong_group_gangs_bit_identical(threads, platform):
    """Both directions of a pipe, 2-slot rings (a push waits for a tfree in each direction), a loop
    in the cube function, every pipe op on both sides; on a5 the pipes are on-chip copies."""
    a, w = data((K.N * K.R, K.C), FP32, 21, "normal"), data((K.C, K.C), FP32, 22, "normal")

    def call(cfg):
        out = torch.zeros(K.N * K.R, K.C)
        compiled("PingPong", platform)(a, w, out, config=RunConfig(platform=platform, sim_seed=cfg.sim_seed,
                                                                   sim_lockstep=cfg.sim_lockstep))
        return [out]

    (out,), gangs, rt = run_both(call)
    assert_group_gangs(rt)
    close(out, ((a @ w) + (a * 2) @ w) + (a + 1) @ w, 1e-3)


def test_split_lanes_group_gangs_bit_identical(threads):
    """Two vector lanes: split pushes cube -> lanes (halves) and lanes -> cube (joined on the pop),
    each lane's store at rows from pl.tile.get_subblock_idx()."""
    a = data((K.N * K.R, K.C), FP32, 31, "normal") * 0.01
    w = data((K.C, K.C), FP32, 32, "normal") * 0.01

    def call(cfg):
        out = torch.zeros(K.N * K.R, K.C)
        compiled("SplitLanes")(a, w, out, config=cfg)
        return [out]

    (out,), gangs, rt = run_both(call)
    assert_group_gangs(rt)
    c = a @ w
    close(out, (c + 1) @ w + torch.exp(c), 1e-4)


def test_group_gangs_follow_the_seed():
    """A seed fixes the schedule with gangs as without: the same seed gives the same gangs and the
    same (core, start, end) of every task; other seeds give other schedules and the same bits."""
    a, w = data((K.N * K.R, K.C), FP32, 41, "normal"), data((K.C, K.C), FP32, 42, "normal")
    runs = []
    for seed in (3, 3, 4):
        out = torch.zeros(K.N * K.R, K.C)
        compiled("PingPong")(a, w, out, config=RunConfig(sim_seed=seed))
        rt = S._LAST_RUNTIME[0]
        runs.append((out, list(rt.gangs), [(t.core, t.start, t.end) for t in rt.tasks if t.kind == "kernel"]))
    assert runs[0][1] and runs[0][1] == runs[1][1] and runs[0][2] == runs[1][2]
    assert runs[0][2] != runs[2][2]
    for out, _, _ in runs[1:]:
        assert_same_bits(runs[0][0], out)


def _error(call) -> str:
    with pytest.raises(SimulationError) as e:
        call()
    return str(e.value)


def test_deadlock_in_a_gang_reads_as_in_one_task():
    """Every task's cube pops twice what its vector core pushed once: the run ends with the deadlock
    report in both modes; in a gang it names the gang's clusters instead of one."""
    a = torch.randn(K.N * K.R, K.C)
    msgs = {}
    for lock in (False, True):
        msgs[lock] = _error(lambda: compiled("PopsTwice")(a, torch.zeros(K.N * K.R, K.C),
                                                          config=RunConfig(sim_seed=0, sim_lockstep=lock)))
    assert re.search(r"\(cluster \d+\)", msgs[False])
    assert re.search(r"\(clusters \d+-\d+: a lockstep gang of \d+ tasks, each stuck alike\)", msgs[True])
    assert (re.sub(r"\(clusters? [^)]*\)", "(...)", msgs[False]) ==
            re.sub(r"\(clusters? [^)]*\)", "(...)", msgs[True]))
    assert "AIC (cube) waits in tpop (nothing pushed) on pipe v2c (vector -> cube) id 3" in msgs[True]
    assert "AIV0 (vec) has finished" in msgs[True]


def test_wrong_pop_shape_in_a_gang_reads_as_in_one_task():
    """The vector core pops [8, 32] tiles from a pipe the cube pushes [16, 32] tiles into: the same
    located error in both modes (the gang axis is not part of the shapes it names)."""
    a = torch.randn(K.N * K.R, K.C)
    msgs = [_error(lambda: compiled("PopsWrongShape")(a, torch.zeros(K.N * K.R, K.C),
                                                      config=RunConfig(sim_seed=0, sim_lockstep=lock)))
            for lock in (False, True)]
    assert msgs[0] == msgs[1]
    assert "into a [8, 32] tile, but the slot holds [16, 32] (split 0)" in msgs[1]
    assert filename(K.PopsWrongShape) + ":" in msgs[1]   # located in its (generated) source


def test_overlapping_group_tasks_are_not_ganged():
    """Tasks whose stores overlap (a race by design) are never run in lockstep: the footprint check
    refuses, and the run is the per-task one, bit for bit, under the same seed."""
    r, h = 16, 8
    q = data((K.N * r, 32), FP16, 51, "normal")
    k = (data((32, 64), FP16, 52, "normal") * 0.01).to(FP16)
    outs = {}
    for lock in (False, True):
        outs[lock] = torch.zeros((K.N - 1) * h + r, 64)
        mm_overlap(q, k, K.N, r, h, outs[lock], config=RunConfig(sim_seed=0, sim_lockstep=lock))
        assert S._LAST_RUNTIME[0].gangs == []
    assert_same_bits(outs[False], outs[True])


def test_race_detector_sees_group_tasks_with_gang_forms():
    """The race detector runs task by task (never in gangs): it still reports the overlapping
    stores of the Group tasks above, and none for the ping-pong program."""
    from pypto.debug.races import detect_races

    r, h = 16, 8
    q = data((K.N * r, 32), FP16, 51, "normal")
    k = (data((32, 64), FP16, 52, "normal") * 0.01).to(FP16)
    report = detect_races(mm_overlap, (q, k, K.N, r, h, torch.zeros((K.N - 1) * h + r, 64)))
    assert report.races, "the overlapping stores were not reported"
    a, w = torch.randn(K.N * K.R, K.C), torch.randn(K.C, K.C)
    clean = detect_races(compiled("PingPong"), (a, w, torch.zeros(K.N * K.R, K.C)))
    assert not clean.races and not clean.cores


def test_a_member_without_a_lockstep_form_keeps_the_group_per_task():
    """A member function using reserve_buffer (no lockstep form: its address is a scalar the kernel
    may read) says so in its GANG_WHY, and its Group has no gang form."""
    from pypto.runtime.cross_core import Clusters, group_gang
    from tests.mixed import kernels_mixed as M

    kernels, _ = ir.compile(M.TwoPipes, platform="a2a3sim").load_modules()
    group = next(m for m in kernels.values() if getattr(m, "GROUP", None) is not None)
    whys = [kernels[name].GANG_WHY for name, *_ in group.GROUP["members"] if not kernels[name].GANG]
    assert any("reserve_buffer" in w or "import_peer_buffer" in w for w in whys), whys
    assert group_gang(group, kernels, Clusters(None, kernels, 1, False)) is None


def _yields(source: str, fn: str) -> list[str]:
    """The yield statements of function ``fn`` of a generated kernel module, in order (their text:
    the cycles, or the cross-core op waited on)."""
    body = source.split(f"\ndef {fn}(", 1)[1].split("\n\n\n", 1)[0]
    return [re.sub(r"\s+#.*", "", line.strip()) for line in body.splitlines()
            if re.match(r"\s+yield\b", line)]


@pytest.mark.parametrize("name", ["PingPong", "SplitLanes", "Blocks"])
def test_gang_kernels_yield_what_their_task_kernels_yield(name):
    """A gang kernel yields the same cycles and makes the same cross-core waits at the same points
    as its task kernel: none after the last instruction of a body without a return (the group
    members), one cycle for a per-task scalar computed in the plan (get_subblock_idx, get_block_idx
    of the Blocks program's spmd loop), so a gang's clocks are each member's."""
    if name == "Blocks":
        import kernels_blocks

        kernels, _ = ir.compile(kernels_blocks.Blocks, platform="a2a3sim").load_modules()
    else:
        kernels, _ = compiled(name).load_modules()
    members = [m for m in kernels.values() if getattr(m, "GANG", False)]
    assert len(members) == 2   # (Blocks: the spmd loop's kernel and poison)
    for m in members:
        src = open(m.__file__, encoding="utf-8").read()
        assert _yields(src, "kernel") == _yields(src, "kernel_gang"), m.KERNEL_NAME


def test_multi_block_mixed_task_gangs_its_blocks_bit_identical():
    """The blocks of one pl.spmd mixed task run as gangs of clusters (block index in the plans)."""
    a = data((K.N * 16, 64), FP32, 61, "normal") * 0.1
    b = data((64, 32), FP32, 62, "normal") * 0.1

    def call(cfg):
        out = torch.zeros(K.N * 16, 32)
        compiled("MixedBlocks")(a, b, out, config=cfg)
        return [out]

    (out,), gangs, rt = run_both(call)
    assert_group_gangs(rt)
    close(out, (a + 1) @ b + 1, 1e-4)


def test_group_gang_reading_a_float_parameter_bit_identical():
    """The vector member reads a float scalar parameter in a tile op: its GANG_SAME maps to the
    group's parameter, and the gang runs with the first member's value (all members share it)."""
    from pypto.runtime.cross_core import Clusters, group_gang

    a = data((K.N * K.R, K.C), FP32, 71, "normal") * 0.1
    w = data((K.C, K.C), FP32, 72, "normal") * 0.1

    def call(cfg):
        out = torch.zeros(K.N * K.R, K.C)
        compiled("Scaled")(a, w, 0.37, out, config=cfg)
        return [out]

    (out,), gangs, rt = run_both(call)
    assert_group_gangs(rt)
    group = next(m for m in rt.kernels.values() if getattr(m, "GROUP", None) is not None)
    assert group_gang(group, rt.kernels, Clusters(None, rt.kernels, 1, False)).GANG_SAME == (2,)
    close(out, torch.exp(0.37 * (a @ w)), 1e-5)
