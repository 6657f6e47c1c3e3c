"""Lockstep gangs (pypto.codegen.gang, pypto.runtime.gangs, pypto.runtime.cores): when the scheduler
may run tasks of one kernel together, and that doing so changes no result.

The op-by-op bit-identity checks (every op with a ``Lockstep`` trait, dtypes, special values, 1 and 2 torch
threads) are in test_lockstep_bits.py."""
from pathlib import Path

import pytest
import torch

from pypto.errors import SimulationError
from pypto.ops import support
from pypto.runtime import RunConfig
from pypto.runtime import simulator as S
from pypto.runtime.gangs import GRAIN, conflict, gang_size

import kernels_batch as KB
import kernels_lockstep as K


def run(kernel, *args, seed=0, lockstep=True, batch=False):
    # task by task unless asked: these tests read the gangs of single tasks (a batched loop is one
    # task whose members form the gangs: tests/runtime/test_batch.py)
    kernel(*args, config=RunConfig(sim_seed=seed, sim_lockstep=lockstep, sim_batch=batch))
    return S._LAST_RUNTIME[0]


def module_source(kernel, *args) -> str:
    c = kernel.compile(*args)
    return "".join(Path(c.output_dir, p).read_text() for p in c.meta["kernels"].values())


# ------------------------------------------------------------------ gang sizes
def _chunks_hold_whole_tiles(n: int, extent: int, threads: int) -> bool:
    """torch's split of one elementwise call over n tiles of ``extent`` elements each
    (at::parallel_for with GRAIN: min(threads, ceil(range / GRAIN)) equal chunks)."""
    total = n * extent
    if total < GRAIN or threads == 1:
        return True
    t = min(threads, -(-total // GRAIN))
    chunk = -(-total // t)
    return all((k * chunk) % extent == 0 for k in range(1, t) if k * chunk < total)


@pytest.mark.parametrize("threads", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("numel", [64, 1000, 8192, 16384, 32767])
def test_gang_sizes_keep_every_thread_chunk_on_tile_boundaries(threads, numel):
    for limit in range(2, 49):
        n = gang_size(limit, numel, threads)
        assert n <= limit
        if n == 0:
            continue
        assert n >= 2
        # every call of the gang runs over n tiles of some per-tile extent <= numel
        for extent in {1, 7, 8, 100, numel // 3 or 1, numel // 2 or 1, numel - 1 or 1, numel}:
            assert _chunks_hold_whole_tiles(n, extent, threads), (limit, n, extent)


def test_gang_sizes():
    assert gang_size(48, 16384, 1) == 48
    assert gang_size(48, 16384, 2) == 48
    assert gang_size(47, 16384, 2) == 46          # an odd gang would split one tile over two threads
    assert gang_size(31, 1000, 2) == 31           # 31 small tiles are one serial call
    assert gang_size(48, GRAIN, 2) == 0           # a single task's call is already split inside a tile
    assert gang_size(48, GRAIN, 1) == 48
    assert gang_size(47, 16384, 4) == 36          # divisible by 2, 3 and 4
    assert gang_size(1, 64, 1) == 0


# ------------------------------------------------------------------ footprints
def _plan_rw(reads, writes):
    """GANG_GM and one member's plan: reads/writes are (tensor, offsets, shape)."""
    gm = [("r", tuple(s)) for _, _, s in reads] + [("w", tuple(s)) for _, _, s in writes]
    plan = [(t, list(o), None) for t, o, _ in reads] + [(list(o), t, None) for t, o, _ in writes]
    return gm, list(enumerate(plan))


def _conflict(members):
    """Members of one kernel: the same accesses (shapes) at their own tensors / offsets."""
    gms, plans = zip(*(_plan_rw(reads, writes) for reads, writes in members))
    assert all(gm == gms[0] for gm in gms)
    return conflict(gms[0], plans)


def test_disjoint_writes_and_shared_reads_do_not_conflict():
    a, out = torch.zeros(64, 64), torch.zeros(64, 64)
    members = [([(a, (0, 0), (64, 64))], [(out, (8 * k, 0), (8, 64))]) for k in range(8)]
    assert not _conflict(members)


def test_overlapping_writes_conflict():
    out = torch.zeros(64, 64)
    members = [([(out, (0, 0), (1, 64))], [(out, (4 * k + 8, 0), (8, 64))]) for k in range(4)]
    # reads row 0 (nobody writes it); member k writes rows 4k+8 .. 4k+15, overlapping member k+1
    assert _conflict(members)


def test_reading_what_another_member_writes_conflicts_but_reading_your_own_does_not():
    t = torch.zeros(64, 64)
    own = [([(t, (8 * k, 0), (8, 64))], [(t, (8 * k, 0), (8, 64))]) for k in range(4)]
    assert not _conflict(own)
    neighbour = [([(t, (8 * k + 8, 0), (8, 64))], [(t, (8 * k, 0), (8, 64))]) for k in range(4)]
    assert _conflict(neighbour)


def test_column_blocks_overlap_as_storage_ranges_but_not_as_boxes():
    out = torch.zeros(64, 1024)
    members = [([], [(out, (0, 64 * j), (16, 64))]) for j in range(16)]
    assert not _conflict(members)
    members.append(([], [(out, (15, 64 * 3 + 63), (16, 64))]))   # one element of it inside block 3
    assert _conflict(members)


def test_different_views_of_one_storage_are_compared_conservatively():
    base = torch.zeros(64, 64)
    view = base[8:]
    # disjoint in fact (rows 0-7 of base vs rows 8-15 of base), but as different tensors only their
    # storage ranges are compared, which do not overlap either
    assert not _conflict([([], [(base, (0, 0), (8, 64))]), ([], [(view, (0, 0), (8, 64))])])
    # base's rows 8..15 are view's rows 0..7
    assert _conflict([([], [(base, (8, 0), (8, 64))]), ([], [(view, (0, 0), (8, 64))])])


# ------------------------------------------------------------------ gang loads and stores
def test_gang_load_and_store_match_per_task_accesses():
    torch.manual_seed(0)
    src = torch.randn(64, 48)
    tiles = torch.zeros(5, 8, 16)
    even = [(src, [8 * k, 16], None) for k in range(5)]          # evenly spaced: one strided copy
    support.gang_load_into(tiles, even)
    for k in range(5):
        assert torch.equal(tiles[k], src[8 * k:8 * k + 8, 16:32])
    ragged = [(src, [o, 3], None) for o in (0, 9, 10, 40, 56)]   # not: one load per task
    support.gang_load_into(tiles, ragged)
    for k, (_, (o, c), _) in enumerate(ragged):
        assert torch.equal(tiles[k], src[o:o + 8, c:c + 16])
    valid = [(src, [8 * k, 0], [5, 9]) for k in range(5)]       # partial tiles: padding zeroed
    support.gang_load_into(tiles, valid)
    for k in range(5):
        assert torch.equal(tiles[k, :5, :9], src[8 * k:8 * k + 5, :9])
        assert tiles[k, 5:].abs().sum() == 0 and tiles[k, :, 9:].abs().sum() == 0
    dst = torch.zeros(64, 48)
    support.gang_store(tiles, [([8 * k, 16], dst, None) for k in range(5)])
    for k in range(5):
        assert torch.equal(dst[8 * k:8 * k + 8, 16:32], tiles[k])
    assert dst[40:].abs().sum() == 0 and dst[:, :16].abs().sum() == 0


def test_gang_accesses_are_bounds_checked():
    src = torch.randn(32, 16)
    tiles = torch.zeros(5, 8, 16)
    with pytest.raises(SimulationError, match="out of bounds"):
        support.gang_load_into(tiles, [(src, [8 * k, 0], None) for k in range(5)])   # the 5th is past the end
    with pytest.raises(SimulationError, match="out of bounds"):
        support.gang_store(tiles, [([8 * k, 0], src, None) for k in range(5)])


# ------------------------------------------------------------------ the scheduler
def test_softmax_runs_in_gangs_with_the_same_bits():
    torch.manual_seed(1)
    a = torch.randn(512, 256)
    a[5, 7] = float("nan")
    a[9] = 0.0
    out_off, out_on = torch.zeros(512, 256), torch.zeros(512, 256)
    run(K.softmax_rows, a, out_off, seed=3, lockstep=False)
    rt = run(K.softmax_rows, a, out_on, seed=3)
    assert torch.equal(out_off.view(torch.int32), out_on.view(torch.int32))
    assert rt.gangs and sum(map(len, rt.gangs)) == 64
    for gang in rt.gangs:
        tasks = [rt.tasks[i] for i in gang]
        assert len(gang) >= 2 and len(gang) % 2 == 0 or torch.get_num_threads() == 1
        cores = [t.core for t in tasks]
        assert cores == list(range(cores[0], cores[0] + len(cores)))     # adjacent cores, task order
        assert len({(t.start, t.end) for t in tasks}) == 1                # in lockstep
    finite = ~torch.isnan(out_on).any(-1)
    ref = torch.softmax(a.double(), -1).float()
    assert torch.allclose(out_on[finite], ref[finite], rtol=1e-5, atol=1e-6)


def test_a_fixed_seed_reproduces_the_gangs():
    a = torch.randn(512, 256)
    first = run(K.softmax_rows, a, torch.zeros(512, 256), seed=11).gangs
    assert run(K.softmax_rows, a, torch.zeros(512, 256), seed=11).gangs == first


def test_lockstep_off_runs_every_task_alone():
    rt = run(K.softmax_rows, torch.randn(512, 256), torch.zeros(512, 256), lockstep=False)
    assert rt.gangs == []


def test_tasks_writing_overlapping_regions_are_never_ganged():
    a = torch.randn(264, 64)
    for seed in range(3):
        rt = run(K.overlapping_writes, a, torch.zeros(264, 64), seed=seed)
        assert rt.gangs == []


def test_column_blocks_are_ganged():
    a = torch.randn(64, 1024)
    out_off, out_on = torch.zeros(64, 1024), torch.zeros(64, 1024)
    run(K.column_blocks, a, out_off, seed=5, lockstep=False)
    rt = run(K.column_blocks, a, out_on, seed=5)
    assert rt.gangs
    assert torch.equal(out_off.view(torch.int32), out_on.view(torch.int32))


def test_the_kernel_module_says_why_it_has_no_lockstep_form():
    src = module_source(K.task_dependent_loop, torch.randn(256, 64), torch.zeros(256, 64))
    assert "GANG = False" in src and "GANG_WHY = " in src and "bounds depend on the task" in src
    src = module_source(K.task_dependent_if, torch.randn(256, 64), torch.zeros(256, 64))
    assert "GANG = False" in src and "condition depends on the task" in src
    assert "GANG = True" in module_source(K.softmax_rows, torch.randn(512, 256), torch.zeros(512, 256))


def test_scalars_named_like_the_gang_codes_own_names_do_not_shadow_them():
    # a scalar called E overwrote GANG_PLAN's list E (AttributeError: 'int' object has no attribute
    # 'append'); P and _c are kernel_gang's plans and access counter
    a = torch.randn(256, 64)
    out_off, out_on = torch.zeros(256, 64), torch.zeros(256, 64)
    run(K.named_like_the_plan, a, out_off, seed=1, lockstep=False)
    rt = run(K.named_like_the_plan, a, out_on, seed=1)
    assert rt.gangs
    assert torch.equal(out_on, a + 1.0) and torch.equal(out_off.view(torch.int32), out_on.view(torch.int32))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kernel, shapes, dtype", [
    (K.looped_body, [(256, 64)], torch.float32),
    (K.row_chunks, [(256, 512)], torch.float32),
    (K.matmul_k_loop, [(256, 256), (256, 256)], torch.float16),
    (K.alternating_chunks, [(256, 512)], torch.float32),
], ids=["looped_body", "row_chunks", "matmul_k_loop", "alternating_chunks"])
def test_kernels_with_uniform_loops_run_in_gangs_with_the_same_bits(kernel, shapes, dtype, threads):
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(4)
        ins = [torch.randn(s).to(dtype) for s in shapes]
        out_shape = {"looped_body": (256, 64), "row_chunks": (256, 128), "matmul_k_loop": (256, 256),
                     "alternating_chunks": (256, 128)}
        outs = [torch.zeros(out_shape[kernel.__name__]) for _ in range(2)]
        run(kernel, *ins, outs[0], seed=2, lockstep=False)
        rt = run(kernel, *ins, outs[1], seed=2)
        assert rt.gangs
        assert torch.equal(outs[0].view(torch.int32), outs[1].view(torch.int32))
    finally:
        torch.set_num_threads(old)
    if kernel is K.row_chunks:
        a = ins[0].double()
        ref = torch.exp(a[:, :128]) + sum(torch.exp(a[:, 128 * k:128 * k + 128] - 0.5) for k in range(1, 4))
        assert torch.allclose(outs[1].double(), ref, rtol=1e-5)
    if kernel is K.matmul_k_loop:
        assert torch.allclose(outs[1].double(), ins[0].double() @ ins[1].double(), rtol=1e-4, atol=1e-3)
    if kernel is K.alternating_chunks:
        a = ins[0].double()
        ref = a[:, :128]
        for k in range(1, 4):
            x = a[:, 128 * k:128 * k + 128]
            ref = ref + torch.exp(x) if k % 2 == 1 else ref * x
        assert torch.allclose(outs[1].double(), ref, rtol=1e-5, atol=1e-5)


def test_an_access_recorder_turns_gangs_off():
    a = torch.randn(512, 256)
    seen = []
    with support.recording(lambda what, view: seen.append(what)):
        rt = run(K.softmax_rows, a, torch.zeros(512, 256))
    assert rt.gangs == [] and seen.count("tile.load") == 64


def test_sim_lockstep_is_validated():
    with pytest.raises(ValueError, match="sim_lockstep must be a bool"):
        RunConfig(sim_lockstep=1)


def test_core_memory_views_of_a_gang_are_the_cores_own_tiles():
    rt = S.Runtime(S.get_platform("a2a3sim"), {}, 0)
    tiles = [("Vec", 256, (8, 64), torch.float32)]
    gang = rt.memory.gang_views("k", 3, 4, tiles)[0]
    assert gang.shape == (4, 8, 64)
    for j in range(4):
        own = rt.cores[3 + j].tile_views("k", tiles)[0]
        assert own.data_ptr() == gang[j].data_ptr() and own.stride() == gang[j].stride()
    rt.cores[0].release()


def test_a_gang_load_of_one_region_for_every_task():
    src = torch.randn(16, 32)
    tiles = torch.zeros(4, 8, 32)
    support.gang_load_into(tiles, [(src, [8, 0], None)] * 4)
    assert all(torch.equal(tiles[k], src[8:]) for k in range(4))


def test_gang_accesses_in_runs():
    # a 2-D task grid: (i, j) reads a's row block i (the same region for 4 tasks in a row, then the
    # next) and b's column block j; runs of evenly spaced regions are one copy each
    torch.manual_seed(2)
    a, b = torch.randn(32, 16), torch.randn(16, 64)
    grid = [(i, j) for i in range(3) for j in range(4)][1:]    # starts mid-row: runs of 3, 4, 4
    ta, tb = torch.zeros(len(grid), 8, 16), torch.zeros(len(grid), 16, 16)
    plans_a = [(a, [8 * i, 0], None) for i, _ in grid]
    plans_b = [(b, [0, 16 * j], None) for _, j in grid]
    # three evenly spaced runs of a load are one gather (index_select of a's 8-row windows)
    runs = support._gang_runs(ta, plans_a, 0, 1, "load")
    assert [(lo, hi) for lo, hi, v in runs] == [(0, 11)] and isinstance(runs[0][2], tuple)
    assert runs[0][2][1].tolist() == [i for i, _ in grid]
    # a store keeps the runs (one copy each)
    dst = torch.zeros(32, 64)
    assert [(lo, hi) for lo, hi, v in support._gang_runs(ta, [([8 * i, 16 * j], dst, None) for i, j in grid],
                                                         1, 0, "store")] == \
        [(0, 3), (3, 7), (7, 11)]
    support.gang_load_into(ta, plans_a)
    support.gang_load_into(tb, plans_b)
    for k, (i, j) in enumerate(grid):
        assert torch.equal(ta[k], a[8 * i:8 * i + 8]) and torch.equal(tb[k], b[:, 16 * j:16 * j + 16])
    out = torch.zeros(32, 64)
    tiles = torch.randn(len(grid), 8, 16)
    support.gang_store(tiles, [([8 * i, 16 * j], out, None) for i, j in grid])
    for k, (i, j) in enumerate(grid):
        assert torch.equal(out[8 * i:8 * i + 8, 16 * j:16 * j + 16], tiles[k])
    assert out[:8, :16].abs().sum() == 0 and out[24:].abs().sum() == 0


@pytest.mark.parametrize("kernel, args", [
    (K.softmax_rows, (torch.randn(512, 256), torch.zeros(512, 256))),
    (K.row_chunks, (torch.randn(256, 512), torch.zeros(256, 128))),
    (K.matmul_k_loop, (torch.randn(256, 256).half(), torch.randn(256, 256).half(), torch.zeros(256, 256))),
    (K.alternating_chunks, (torch.randn(256, 512), torch.zeros(256, 128))),
], ids=["softmax_rows", "row_chunks", "matmul_k_loop", "alternating_chunks"])
def test_a_gang_yields_the_cycles_of_one_task(kernel, args):
    """kernel_gang advances through the same simulated cycles, at the same points, as kernel."""
    c = kernel.compile(*args)
    (name, rel), = c.meta["kernels"].items()
    mod = S.load_module(Path(c.output_dir, rel))
    rt = S.Runtime(S.get_platform("a2a3sim"), {name: mod}, 0)
    S.load_module(Path(c.output_dir, c.meta["orchestration"])).orchestrate(rt, *args)
    tasks = [t for t in rt.tasks if t.kind == "kernel"][:3]
    alone = list(mod.kernel(rt.cores[0].tile_views(name, mod.TILES), *tasks[0].args))
    gang = list(mod.kernel_gang(rt.memory.gang_views(name, 1, 3, mod.TILES),
                                [mod.GANG_PLAN(*t.args) for t in tasks]))
    assert alone and gang == alone
    rt.cores[0].release()


@pytest.mark.parametrize("scale", [0.5, -0.0, 3.0e38])
def test_shared_scalar_parameters_gang_only_members_with_equal_values(scale):
    """A tile op reading a float parameter and an ``if`` on a bool one: the kernel has a lockstep
    form that reads them once (GANG_SAME), and the runtime gangs only tasks whose values agree bit
    for bit (here the flag alternates between tasks: every gang has one flag value)."""
    from pypto.runtime import run as run_program

    a = torch.randn(1024, 64)
    outs = {}
    for lock in (False, True):
        out = torch.zeros(1024, 64)
        # (per-task submission: the test reads each task's arguments; batched loops: test_batch.py)
        run_program(K.SharedScalars, a, scale, out, config=RunConfig(sim_seed=3, sim_lockstep=lock, sim_batch=False))
        outs[lock] = out
        rt = S._LAST_RUNTIME[0]
    mod = rt.kernels["k_scaled_flag"]
    assert mod.GANG is True and mod.GANG_SAME == (1, 2)
    assert rt.gangs and max(len(g) for g in rt.gangs) >= 2
    flags = {t.index: t.args[2] for t in rt.tasks if t.kind == "kernel"}
    for g in rt.gangs:
        assert len({flags[i] for i in g}) == 1, "a gang mixed members with different flags"
    assert torch.equal(outs[False].view(torch.int32), outs[True].view(torch.int32))
    s = torch.tensor(scale, dtype=torch.float32)
    want = (a * s).view(128, 8, 64)
    want[0::2] = want[0::2] + want[0::2]
    assert torch.equal(outs[True].view(torch.int32), want.view(1024, 64).view(torch.int32))


def test_a_straight_line_plan_is_one_list_literal_with_the_same_entries():
    """GANG_PLAN of a kernel without loops binds its entries to locals and returns one list (the
    scheduler calls it once per gang member); a looped plan keeps appending. Both forms give the
    same list, entries evaluated where they were appended (a name reassigned between two entries)."""
    from pypto.codegen.gang import _plan_body

    src = module_source(K.softmax_rows, torch.randn(512, 256), torch.zeros(512, 256))
    plan = src[src.index("def GANG_PLAN"):src.index("GANG_SAME")]
    assert "E.append" not in plan and "return [_E0, _E1]" in plan
    src = module_source(K.looped_body, torch.randn(256, 64), torch.zeros(256, 64))
    plan = src[src.index("def GANG_PLAN"):src.index("GANG_SAME")]
    assert "E = []" in plan and "E.append(" in plan and "return E" in plan

    def build(body):
        ns = {}
        exec("def GANG_PLAN(a, i):\n" + "\n".join(body), ns)
        return ns["GANG_PLAN"]

    lines = ["    x = i * 8", "    E.append((0, (a, [x, 0], None)))  # k.py:1", "    x = x + 1",
             "    E.append((1, ([x, 0], a, [x, 4])))  # k.py:2"]
    fast = _plan_body(lines)
    assert "return [_E0, _E1]" in fast[-1] and not any("E.append" in s for s in fast)
    assert build(fast)("t", 2) == build(["    E = []", *lines, "    return E"])("t", 2) == \
        [(0, ("t", [16, 0], None)), (1, ([17, 0], "t", [17, 4]))]
    # names the fast form would clash with, a use of E itself, a loop: the general form
    for other in (["    _E0 = i"], ["    y = len(E)"], ["    for k in range(2):", "        x = k"]):
        assert _plan_body(lines + other) == ["    E = []", *lines, *other, "    return E"]
    assert _plan_body([]) == ["    return []"]


def test_constant_offsets_of_plan_entries_are_module_constants():
    """GANG_PLAN's constant offsets / valid lists (``[0, 0]``) are module-level lists shared by every
    plan (one object fewer per entry to make and free per gang member); offsets that depend on the
    task or a loop, other lists, and names the plan itself uses are left alone. The plans are equal."""
    from pypto.codegen.gang import _plan_body, hoist_plan_constants

    from pypto.driver.build import compile as ir_compile

    c = ir_compile(KB.Rows, platform="a2a3sim")   # k_scale: x[0, 0] -> y[0, 0]
    src = "".join(Path(c.output_dir, p).read_text() for p in c.meta["kernels"].values())
    head = src[:src.index("def GANG_PLAN")]
    plan = src[src.index("def GANG_PLAN"):src.index("GANG_SAME")]
    assert "_GANG_K0 = [0, 0]" in head and "_GANG_K0, None)" in plan and "[0, 0]" not in plan

    lines = ["    x = [0, 0]", "    E.append((0, (a, [0, 0], None)))  # k.py:1",
             "    E.append((1, ([i, 0], a, [4, -1])))  # k.py:2", "    E.append((2, ([0, 0], a, [1.0])))",
             "    for c in range(2):", "        E.append((3, (a, [c, 0], [0, 0])))", "    _GANG_K1 = 7"]
    out, consts = hoist_plan_constants(lines)
    assert out == ["    x = [0, 0]", "    E.append((0, (a, _GANG_K0, None)))  # k.py:1",
                   "    E.append((1, ([i, 0], a, _GANG_K1001)))  # k.py:2", "    E.append((2, (_GANG_K0, a, [1.0])))",
                   "    for c in range(2):", "        E.append((3, (a, [c, 0], _GANG_K0)))", "    _GANG_K1 = 7"]
    assert [c.split("  #")[0] for c in consts] == ["_GANG_K0 = [0, 0]", "_GANG_K1001 = [4, -1]"]

    def build(body, extra=()):
        ns = {}
        exec("\n".join([*extra, "def GANG_PLAN(a, i):", *body]), ns)
        return ns["GANG_PLAN"]

    want = build(_plan_body(lines))("t", 3)
    got = build(_plan_body(out), consts)("t", 3)
    assert got == want and len(got) == 5


def test_gang_plans_is_gang_plan_per_member():
    """GANG_PLANS(args of each member) is [GANG_PLAN(*args) ...] in one call: one comprehension when
    the plan's other lines are dead copies, a loop over the plan's lines when they compute something
    the entries use; none for a looped plan or one that reads _block (the scheduler then calls
    GANG_PLAN per member)."""
    from pypto.codegen.gang import _plan_body, _plans_function
    from pypto.driver.build import compile as ir_compile
    from pypto.runtime.modules import module_from_source

    c = ir_compile(KB.Rows, platform="a2a3sim")
    rel = c.meta["kernels"]["k_scale"]
    mod = module_from_source(Path(c.output_dir, rel).read_text(), Path(c.output_dir, rel))
    args = [[torch.zeros(16, 64), torch.zeros(16, 64)] for _ in range(3)]
    assert "for x, y in E]" in Path(c.output_dir, rel).read_text()
    assert mod.GANG_PLANS(args) == [mod.GANG_PLAN(*a) for a in args]

    def build(lines, params):
        ns = {}
        exec("\n".join([f"def GANG_PLAN({', '.join(params)}, _block=(0, 1)):", *_plan_body(lines),
                        *_plans_function(_plan_body(lines), params)]), ns)
        return ns

    cases = [
        (["    E.append((0, (a, [i * 8, 0], None)))", "    a_1 = a", "    E.append((1, ([0, 0], b, None)))"], "comp"),
        (["    x = i * 8", "    E.append((0, (a, [x, 0], None)))", "    x = x + 1",
          "    E.append((1, ([x, 0], b, [x, 4])))"], "loop"),
        (["    b_1 = b", "    E.append((1, ([0, 0], b_1, None)))"], "loop"),
        (["    for k in range(2):", "        E.append((0, (a, [k, 0], None)))"], None),
        (["    E.append((0, (a, [_block[0], 0], None)))"], None),
    ]
    members = [["A0", "B0", 1], ["A1", "B1", 2], ["A2", "B2", 3]]
    for lines, form in cases:
        ns = build(lines, ["a", "b", "i"])
        if form is None:
            assert "GANG_PLANS" not in ns
            continue
        src = "\n".join(_plans_function(_plan_body(lines), ["a", "b", "i"]))
        assert ("for a, b, i in E]" in src) == (form == "comp")
        assert ns["GANG_PLANS"](members) == [ns["GANG_PLAN"](*m) for m in members]
    # one parameter: the unpacking target keeps its comma
    ns = build(["    E.append((0, (a, [0, 0], None)))"], ["a"])
    assert ns["GANG_PLANS"]([["x"], ["y"]]) == [[(0, ("x", [0, 0], None))], [(0, ("y", [0, 0], None))]]
