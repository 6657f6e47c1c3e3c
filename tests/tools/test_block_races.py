"""Races between the blocks of one multi-block task (pypto.debug.block_races through detect_races):
overlapping stores, a read of another block's region, and what is not a race (disjoint regions,
atomic adds, a barrier between write and read)."""
import torch

import pypto.language as pl
from pypto.debug.block_races import BlockRace, find_block_races
from pypto.debug.races import Access, detect_races

R, C = 16, 32
SRC = open(__file__).read().splitlines()


def _line(marker: str) -> str:
    n = next(i for i, t in enumerate(SRC, 1) if marker in t and "_line(" not in t)
    return f"test_block_races.py:{n}"


@pl.jit
def disjoint(a: pl.Tensor[[4 * R, C], pl.FP32], out: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]):
    for i in pl.spmd(4):
        x = pl.load(a, [i * R, 0], [R, C])
        out = pl.store(pl.add(x, 1.0), [i * R, 0], out)
    return out


@pl.jit
def same_place(a: pl.Tensor[[4 * R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    for i in pl.spmd(4):
        x = pl.load(a, [i * R, 0], [R, C])
        out = pl.store(pl.add(x, 1.0), [0, 0], out)  # SAME PLACE STORE
    return out


@pl.jit
def same_place_atomic(a: pl.Tensor[[4 * R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    for i in pl.spmd(4):
        x = pl.load(a, [i * R, 0], [R, C])
        out = pl.store(x, [0, 0], out, atomic=pl.AtomicType.Add)
    return out


@pl.jit
def neighbour(a: pl.Tensor[[4 * R, C], pl.FP32], out: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]],
              res: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]):
    for i in pl.spmd(4):
        x = pl.load(a, [i * R, 0], [R, C])
        out = pl.store(pl.add(x, 1.0), [i * R, 0], out)  # NEIGHBOUR STORE
        y = pl.load(out, [((i + 1) % 4) * R, 0], [R, C])  # NEIGHBOUR LOAD
        res = pl.store(y, [i * R, 0], res)
    return res


@pl.jit
def neighbour_barrier(a: pl.Tensor[[4 * R, C], pl.FP32], sw: pl.Tensor[[16], pl.INT32],
                      out: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]], res: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]):
    for i in pl.spmd(4):
        x = pl.load(a, [i * R, 0], [R, C])
        out = pl.store(pl.add(x, 1.0), [i * R, 0], out)
        pl.system.fence()
        pl.system.syncall(core_type="aiv_only", mode="soft", gm_workspace=sw, used_cores=4)
        y = pl.load(out, [((i + 1) % 4) * R, 0], [R, C])
        res = pl.store(y, [i * R, 0], res)
    return res


@pl.jit
def neighbour_barrier_no_fence(a: pl.Tensor[[4 * R, C], pl.FP32], sw: pl.Tensor[[16], pl.INT32],
                               out: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]],
                               res: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]):
    for i in pl.spmd(4):
        x = pl.load(a, [i * R, 0], [R, C])
        out = pl.store(pl.add(x, 1.0), [i * R, 0], out)  # UNFENCED STORE
        pl.system.syncall(core_type="aiv_only", mode="soft", gm_workspace=sw, used_cores=4)
        y = pl.load(out, [((i + 1) % 4) * R, 0], [R, C])  # UNFENCED LOAD
        res = pl.store(y, [i * R, 0], res)
    return res


def _a():
    torch.manual_seed(0)
    return torch.randn(4 * R, C)


def test_blocks_writing_disjoint_regions_do_not_race():
    rep = detect_races(disjoint, (_a(), torch.zeros(4 * R, C)))
    assert not rep.blocks and not rep.races, rep.format()


def test_blocks_storing_to_one_place_are_a_waw_race_naming_the_line():
    rep = detect_races(same_place, (_a(), torch.zeros(R, C)))
    assert len(rep.blocks) == 1, rep.format()
    r = rep.blocks[0]
    assert r.kind == "WAW" and r.blocks == 4 and r.first_block != r.second_block
    assert r.first_where.endswith(_line("SAME PLACE STORE")) and r.second_where == r.first_where
    assert r.overlap_bytes == R * C * 4
    assert "atomic=pl.AtomicType.Add" in r.fix and r in rep.findings
    assert "race between blocks of task" in rep.format() and _line("SAME PLACE STORE") in rep.format()


def test_atomic_adds_of_all_blocks_to_one_place_commute():
    rep = detect_races(same_place_atomic, (_a(), torch.zeros(R, C)))
    assert not rep.blocks, rep.format()


def test_a_block_reading_its_neighbours_store_is_a_raw_race_with_both_lines():
    a = _a()
    rep = detect_races(neighbour, (a, torch.zeros(4 * R, C), torch.zeros(4 * R, C)))
    assert len(rep.blocks) == 1, rep.format()
    r = rep.blocks[0]
    assert r.kind == "RAW"
    assert r.first_where.endswith(_line("NEIGHBOUR STORE")) and r.second_where.endswith(_line("NEIGHBOUR LOAD"))
    assert r.second_block == (r.first_block - 1) % 4   # block b reads block b+1's rows
    assert "syncall" in r.fix


def test_a_fence_and_barrier_between_write_and_read_orders_the_blocks():
    a = _a()
    args = (a, torch.zeros(16, dtype=torch.int32), torch.zeros(4 * R, C), torch.zeros(4 * R, C))
    rep = detect_races(neighbour_barrier, args)
    assert not rep.blocks, rep.format()
    res = torch.zeros(4 * R, C)
    neighbour_barrier(a, torch.zeros(16, dtype=torch.int32), torch.zeros(4 * R, C), res)
    assert torch.equal(res, (a + 1).roll(-R, 0))   # the barrier makes the neighbour's rows visible


def test_a_barrier_without_a_fence_does_not_publish_the_store():
    args = (_a(), torch.zeros(16, dtype=torch.int32), torch.zeros(4 * R, C), torch.zeros(4 * R, C))
    rep = detect_races(neighbour_barrier_no_fence, args)
    assert len(rep.blocks) == 1, rep.format()
    r = rep.blocks[0]
    assert r.kind == "RAW"
    assert r.first_where.endswith(_line("UNFENCED STORE")) and r.second_where.endswith(_line("UNFENCED LOAD"))


def _acc(block, lo, hi, write, phase=0, published=1, atomic=False, where=None):
    return Access(1, lo, hi, write, "store" if write else "load", atomic, block, phase, published,
                  where or f"k.py:{block}")


def test_sweep_checks_only_overlaps_of_different_blocks_no_barrier_orders():
    accs = [_acc(0, 0, 64, True), _acc(1, 64, 128, True),          # adjacent: no overlap
            _acc(0, 0, 64, False),                                  # same block: program order
            _acc(2, 32, 96, False, phase=1, published=2),           # after the barrier publishing block 0's write
            _acc(3, 100, 110, False, where="k.py:r"),               # reads block 1's bytes 100..110
            _acc(4, 120, 130, False, phase=1, where="k.py:late")]   # reads them after the barrier
    races = find_block_races("r0t0", "k", 5, accs)
    assert [(r.kind, r.first_block, r.second_block, r.overlap_bytes) for r in races] == [("RAW", 1, 3, 10)]
    assert isinstance(races[0], BlockRace)
    # a write the barrier did not publish (no fence before it) still races with a read after it
    late = find_block_races("r0t0", "k", 2, [_acc(0, 0, 8, True, published=1 << 30),
                                              _acc(1, 0, 8, False, phase=1, published=2)])
    assert [(r.kind, r.first_block, r.second_block) for r in late] == [("RAW", 0, 1)]
    # many blocks reading one region: no pair is a race, and each reported pair of lines appears once
    reads = [_acc(b, 0, 4096, False, where="k.py:w") for b in range(64)]
    assert find_block_races("r0t0", "k", 64, reads) == []
    writes = [_acc(b, 0, 8, True, where="k.py:w") for b in range(64)]
    assert len(find_block_races("r0t0", "k", 64, writes)) == 1


def test_fuzz_reports_a_block_race_and_is_not_clean():
    import json

    from pypto.debug.fuzz import fuzz

    rep = fuzz(same_place, (_a(), torch.zeros(R, C)), seeds=2, jobs=1)
    assert not rep.races and len(rep.task_internal) == 1 and not rep.clean
    assert "race between blocks of task" in rep.format() and "FINDING" in rep.format()
    d = json.loads(json.dumps(rep.to_dict()))
    assert d["task_internal_races"][0]["kind"] == "WAW" and d["clean"] is False
    assert fuzz(disjoint, (_a(), torch.zeros(4 * R, C)), seeds=2, jobs=1).clean


def test_doctor_settles_on_the_block_race_with_its_line():
    from pypto.debug.doctor import doctor

    a = _a()
    rep = doctor(same_place, {"a": a, "out": torch.zeros(R, C)}, expected={"out": a[:R] + 1}, seeds=2)
    assert rep.cause == "block_order", rep.format()
    assert _line("SAME PLACE STORE") in rep.format()
    assert "atomic=pl.AtomicType.Add" in rep.format()
    clean = doctor(disjoint, {"a": a, "out": torch.zeros(4 * R, C)}, expected={"out": a + 1}, seeds=2)
    assert clean.cause == "no_gap", clean.format()
