"""Recycled core memory (pypto.runtime.cores): a call clears only the byte ranges, on the rows, that
the previous call's tile views covered, and every call still starts from the fill byte everywhere."""
import pytest
import torch

from pypto.backend.platforms import get_platform
from pypto.language.enums import MemorySpace
from pypto.runtime import cores


@pytest.fixture
def pool(monkeypatch):
    monkeypatch.setattr(cores, "_MEM_POOL", {})
    return cores._MEM_POOL


@pytest.mark.parametrize("poison", [False, True])
def test_only_the_rows_a_view_covered_are_marked_and_the_next_call_sees_the_fill(pool, poison):
    p = get_platform("a2a3sim")
    mem = cores.CoreMemory(p, 48, poison=poison)
    one = mem.view("Vec", 256, [4, 8], torch.float32, 3, "k")          # core 3
    gang = mem.view("Vec", 0, [2, 8], torch.int32, slice(5, 9), "k")    # cores 5..8
    lane = mem.view("Vec", 1024, [8], torch.int16, slice(1, None, 3), "k")   # rows 1, 4, 7, ...
    one.fill_(1.5)
    gang.fill_(-7)
    lane.fill_(3)
    mem.release()
    (arr, dirty), = pool[(p.name, MemorySpace.Vec, 48, mem.fill)]
    assert sorted(map(tuple, dirty)) == [(0, 64, 5, 9, 1), (256, 384, 3, 4, 1), (1024, 1040, 1, 48, 3)]
    # every written byte lies in a marked range (the rows and bytes outside are still the fill)
    mask = torch.ones(arr.shape, dtype=torch.bool)
    for lo, hi, first, stop, step in dirty:
        mask[first:stop:step, lo:hi] = False
    assert int((arr[mask] != mem.fill).count_nonzero()) == 0
    assert int((arr != mem.fill).count_nonzero()) > 0
    again = cores.CoreMemory(p, 48, poison=poison)
    a = again.array(MemorySpace.Vec)
    assert a.data_ptr() == arr.data_ptr()   # recycled, and cleared where the last call wrote
    assert int((a != again.fill).count_nonzero()) == 0
    again.release()


def test_recycled_memory_keeps_its_views_and_still_marks_and_clears_them(pool):
    p = get_platform("a2a3sim")
    mem = cores.CoreMemory(p, 48)
    gang = mem.view("Vec", 0, [2, 8], torch.int32, slice(5, 9), "k")
    assert mem.view("Vec", 0, [2, 8], torch.int32, slice(5, 9), "k") is gang   # cached within a call
    gang.fill_(-7)
    mem.release()
    again = cores.CoreMemory(p, 48)
    v = again.view("Vec", 0, [2, 8], torch.int32, slice(5, 9), "k")
    assert v is gang and int(v.count_nonzero()) == 0   # the same view, of memory cleared for this call
    # another shape, dtype, row set or single core is another view
    assert again.view("Vec", 0, [2, 8], torch.float32, slice(5, 9), "k") is not v
    assert again.view("Vec", 0, [2, 8], torch.int32, slice(5, 10), "k").shape == (5, 2, 8)
    one = again.view("Vec", 0, [2, 8], torch.int32, 5, "k")
    assert one.shape == (2, 8) and one.data_ptr() == v.data_ptr()
    v.fill_(3)
    again.release()
    (arr, dirty), = pool[(p.name, MemorySpace.Vec, 48, 0)]
    # a cached view used again is marked again: the next call clears what it wrote
    # (merged with the other views' ranges: rows 5..9 as one rectangle)
    assert [tuple(r) for r in dirty] == [(0, 64, 5, 10, 1)]
    third = cores.CoreMemory(p, 48)
    assert int(third.array(MemorySpace.Vec).count_nonzero()) == 0
    # a tile past the memory's end is still refused (nothing cached for it)
    cap = third.array(MemorySpace.Vec).shape[1]
    for _ in range(2):
        with pytest.raises(Exception, match="exceeds"):
            third.view("Vec", cap - 16, [2, 8], torch.int32, slice(0, 2), "k")
    third.release()


@pytest.mark.parametrize("seed", range(12))
def test_merged_ranges_cover_the_same_bytes_once(seed):
    """The ranges a call's views marked (nested gangs of adjacent cores, single cores, strided
    cluster rows) merge into rectangles covering exactly their union, the adjacent-row ones
    disjoint: clearing them clears every marked byte, once, and nothing else."""
    import random

    rnd = random.Random(seed)
    rows, width = 48, 512
    ranges = set()
    for _ in range(rnd.randint(1, 14)):
        lo = rnd.randrange(0, width - 1)
        hi = rnd.randint(lo + 1, width)
        kind = rnd.random()
        if kind < 0.6:
            first = rnd.randrange(rows)
            ranges.add((lo, hi, first, rnd.randint(first + 1, rows), 1))
        elif kind < 0.8:
            c = rnd.randrange(rows)
            ranges.add((lo, hi, c, c + 1, 1))
        else:
            ranges.add((lo, hi, rnd.randrange(3), rnd.choice([None, rows]), rnd.choice([2, 3])))
    want = torch.zeros(rows, width, dtype=torch.bool)
    for lo, hi, first, stop, step in ranges:
        want[first:stop:step, lo:hi] = True
    got = torch.zeros(rows, width, dtype=torch.int32)
    merged = cores._merge(ranges, rows)
    for lo, hi, first, stop, step in merged:
        got[first:stop:step, lo:hi] += 1
    assert torch.equal(got > 0, want)
    plain = torch.zeros(rows, width, dtype=torch.int32)
    for lo, hi, first, stop, step in merged:
        if step == 1:
            plain[first:stop, lo:hi] += 1
    assert int(plain.max()) <= 1
    # nested gangs on one byte range: one rectangle
    assert cores._merge({(0, 64, 0, 8, 1), (0, 64, 0, 48, 1), (0, 32, 32, 48, 1), (0, 64, 3, 4, 1)}, rows) \
        == [[0, 64, 0, 48, 1]]


def test_gang_views_are_the_views_and_marks_of_each_tile(pool):
    """gang_views (its own cache lookups) gives each tile's view() and marks the same ranges, on
    fresh and on recycled memory."""
    p = get_platform("a2a3sim")
    tiles = [("Vec", 0, (4, 8), torch.float32), ("Vec", 256, [2, 8], torch.int16), ("Mat", 64, (8, 8), torch.bfloat16)]
    for _ in range(2):   # the second time from the pool, its views cached
        a, b = cores.CoreMemory(p, 48), cores.CoreMemory(p, 48)
        got = a.gang_views("k", 6, 5, tiles)
        want = [b.view(sp, addr, shape, dt, slice(6, 11), "k") for sp, addr, shape, dt in tiles]
        assert [(v.shape, v.dtype, v.stride(), v.data_ptr() - a.array(v_sp).data_ptr())
                for v, v_sp in zip(got, [MemorySpace.Vec, MemorySpace.Vec, MemorySpace.Mat])] == \
            [(v.shape, v.dtype, v.stride(), v.data_ptr() - b.array(v_sp).data_ptr())
             for v, v_sp in zip(want, [MemorySpace.Vec, MemorySpace.Vec, MemorySpace.Mat])]
        assert a.dirty == b.dirty and a.dirty[MemorySpace.Vec] == {(0, 128, 6, 11, 1), (256, 288, 6, 11, 1)}
        assert a.gang_views("k", 6, 5, tiles)[0] is got[0]   # cached
        for v in got:
            v.fill_(1)
        a.release()
        b.release()


def test_the_same_marks_reuse_the_previous_merge_and_other_marks_merge_anew(pool):
    """A call that marks the same ranges as the call its memory came from (every call of one program)
    hands back that call's merged ranges without merging again; different marks are merged afresh,
    and either way the next call finds the fill everywhere."""
    p = get_platform("a2a3sim")

    def call(views):
        mem = cores.CoreMemory(p, 48)
        for addr, rows in views:
            mem.view("Vec", addr, [2, 8], torch.float32, rows, "k").fill_(2.0)
        assert int((mem.array(MemorySpace.Vec) != 0).count_nonzero()) > 0
        mem.release()
        (entry,) = pool[(p.name, MemorySpace.Vec, 48, 0)]
        return entry

    first = call([(0, slice(0, 4)), (64, slice(2, 6))])
    second = call([(0, slice(0, 4)), (64, slice(2, 6))])
    assert second[1] is first[1]                  # the same merge, not made again
    third = call([(0, slice(0, 8))])
    assert third[1] is not first[1] and sorted(map(tuple, third[1])) == [(0, 64, 0, 8, 1)]
    mem = cores.CoreMemory(p, 48)
    assert int((mem.array(MemorySpace.Vec) != 0).count_nonzero()) == 0
    mem.release()


def test_gang_views_remembered_across_calls_only_on_the_same_arrays(pool):
    """The gang views of a (tiles, first, n) are remembered with their arrays (in the first tile's
    array's view cache: they go with it): a later memory that recycled those arrays gets the same
    list (and marks the same ranges); one on other arrays (two memories at once, a fresh one) gets
    views of its own arrays."""
    p = get_platform("a2a3sim")
    tiles = [("Vec", 0, (4, 8), torch.float32), ("Mat", 64, (8, 8), torch.bfloat16)]
    a = cores.CoreMemory(p, 48)
    got = a.gang_views("k", 2, 4, tiles)
    vec0 = a.arrays[MemorySpace.Vec]
    a.release()
    b = cores.CoreMemory(p, 48)   # the same arrays, from the pool
    assert b.gang_views("k", 2, 4, tiles) is got
    assert b.dirty[MemorySpace.Vec] == {(0, 128, 2, 6, 1)} and b.dirty[MemorySpace.Mat] == {(64, 192, 2, 6, 1)}
    c = cores.CoreMemory(p, 48)   # b holds the pooled arrays: c's are new ones
    other = c.gang_views("k", 2, 4, tiles)
    assert other is not got
    for v, arr_sp in zip(other, (MemorySpace.Vec, MemorySpace.Mat)):
        base = c.array(arr_sp)
        assert base.data_ptr() <= v.data_ptr() < base.data_ptr() + base.numel()
    assert c.dirty[MemorySpace.Vec] == {(0, 128, 2, 6, 1)}
    b.release()
    c.release()
    # the Vec array that remembers the list comes back, with a new Mat array: built again
    while pool[(p.name, MemorySpace.Vec, 48, 0)][-1][0] is not vec0:   # (the next one handed out)
        pool[(p.name, MemorySpace.Vec, 48, 0)].insert(0, pool[(p.name, MemorySpace.Vec, 48, 0)].pop())
    pool[(p.name, MemorySpace.Mat, 48, 0)].clear()
    d = cores.CoreMemory(p, 48)
    again = d.gang_views("k", 2, 4, tiles)
    vec, mat = d.arrays[MemorySpace.Vec], d.arrays[MemorySpace.Mat]
    assert vec.data_ptr() == vec0.data_ptr() and again is not got
    assert again[0].data_ptr() == vec.data_ptr() + 2 * vec.shape[1]
    assert again[1].data_ptr() == mat.data_ptr() + 64 + 2 * mat.shape[1]
    d.release()
