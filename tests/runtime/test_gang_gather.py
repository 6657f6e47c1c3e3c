"""Gang loads of randomly placed regions of one storage are one gather (``index_select``,
``pypto.ops.support.core._gang_runs``): the paged-attention K / V pages. A gather copies elements,
so it must give every member exactly the bits its own ``load_into`` gives -- checked here on random
bit patterns (NaN payloads, signalling NaNs, subnormals, -0, inf) in every float width."""
import pytest
import torch

from pypto.errors import SimulationError
from pypto.ops import support


def _random_bits(shape, dtype, gen):
    width = torch.empty(0, dtype=dtype).element_size()
    ints = {1: torch.int8, 2: torch.int16, 4: torch.int32}[width]
    lo, hi = torch.iinfo(ints).min, torch.iinfo(ints).max
    return torch.randint(lo, hi + 1, shape, dtype=torch.int64, generator=gen).to(ints).view(dtype)


def _gang_dst(n, tile, dtype):
    """``[n, *tile]`` rows of a byte memory, like a gang's core-memory view (not contiguous)."""
    width = torch.empty(0, dtype=dtype).element_size()
    numel = tile[0] * tile[1]
    mem = torch.zeros(n, numel * width + 256, dtype=torch.uint8)
    return mem[:, 64:64 + numel * width].view(dtype).view(n, *tile)


def _bits(t):
    width = t.element_size()
    return t.contiguous().view({1: torch.int8, 2: torch.int16, 4: torch.int32}[width])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int8])
@pytest.mark.parametrize("seed", range(4))
def test_gang_gather_gives_every_member_its_own_loads_bits(dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    page, dim, pages, n = 16, 32, 40, 24
    pool = _random_bits((pages * page, dim), dtype, gen)
    picked = torch.randint(0, pages, (n,), generator=gen).tolist()     # duplicates allowed
    views = [pool[p * page:(p + 1) * page] for p in picked]           # pl.slice of the pool per member
    plans = [(v, [0, 0], None) for v in views]
    runs = support._gang_runs(_gang_dst(n, (page, dim), dtype), plans, 0, 1, "tile.load")
    assert len(runs) == 1 and isinstance(runs[0][2], tuple)
    got, want = _gang_dst(n, (page, dim), dtype), _gang_dst(n, (page, dim), dtype)
    support.gang_load_into(got, plans)
    for k, (t, offs, valid) in enumerate(plans):
        support.load_into(want[k], t, offs, valid)
    assert torch.equal(_bits(got), _bits(want))
    # one tensor at random (not evenly spaced) row and column offsets: windows at the offsets' gcd
    cols = torch.randint(0, 3, (n,), generator=gen).tolist()
    rows = torch.randint(0, pages * page - page, (n,), generator=gen).tolist()
    plans = [(pool, [r, 8 * c], None) for r, c in zip(rows, cols)]
    sub = (page, 8)
    got, want = _gang_dst(n, sub, dtype), _gang_dst(n, sub, dtype)
    support.gang_load_into(got, plans)
    for k, (t, offs, valid) in enumerate(plans):
        support.load_into(want[k], t, offs, valid)
    assert torch.equal(_bits(got), _bits(want))


def test_gang_gather_member_out_of_its_tensor_is_its_own_error():
    pool = torch.randn(8 * 16, 32)
    views = [pool[p * 16:(p + 1) * 16] for p in (5, 1, 7, 2)]
    plans = [(v, [0, 0], None) for v in views] + [(views[0], [8, 0], None)] + [(v, [0, 0], None) for v in views]
    with pytest.raises(SimulationError, match="out of bounds"):
        support.gang_load_into(torch.empty(len(plans), 16, 32), plans)


def test_gang_gather_breaks_at_another_storage_and_partial_tiles():
    gen = torch.Generator().manual_seed(7)
    a, b = torch.randn(160, 32, generator=gen), torch.randn(160, 32, generator=gen)
    order = [(a, 3), (a, 0), (a, 9), (a, 4), (b, 1), (b, 6), (a, 2), (a, 8), (a, 5), (a, 1)]
    plans = [(t[p * 16:(p + 1) * 16], [0, 0], None) for t, p in order]
    plans[6] = (plans[6][0], [0, 0], [8, 32])                        # a partial tile: its own load
    runs = support._gang_runs(torch.empty(len(plans), 16, 32), plans, 0, 1, "tile.load")
    assert [(lo, hi, isinstance(v, tuple)) for lo, hi, v in runs] == \
        [(0, 4, True), (4, 6, False), (6, 7, False), (7, 10, True)]
    got = torch.full((len(plans), 16, 32), float("nan"))
    support.gang_load_into(got, plans)
    for k, (t, p) in enumerate(order):
        want = t[p * 16:(p + 1) * 16].clone()
        if k == 6:
            want[8:] = 0
        assert torch.equal(got[k], want)


def test_gang_store_at_random_places_stays_member_by_member():
    out = torch.zeros(160, 32)
    places = [3, 0, 9, 4, 7]
    tiles = torch.randn(5, 16, 32)
    plans = [([0, 0], out[p * 16:(p + 1) * 16], None) for p in places]
    assert [v is None for _, _, v in support._gang_runs(tiles, plans, 1, 0, "tile.store")] == \
        [True, False, False]                                          # 3 | 0, 9 | 4, 7 (no gather for stores)
    support.gang_store(tiles, plans)
    for k, p in enumerate(places):
        assert torch.equal(out[p * 16:(p + 1) * 16], tiles[k])


def test_rows_of_a_tagged_stack_are_found_from_the_tags():
    """A batched loop's stacked intermediate (create_batch) tags its row views: a gang access of
    whole rows is one view (rows evenly spaced) or one gather (a load in any order) without reading
    the members' metadata; sub-tiles, untagged views and stores out of order take the general path."""
    whole = torch.randn(8, 16, 32)
    rows = whole.unbind(0)
    support.tag_stack_rows(whole, rows)
    dst = torch.empty(5, 16, 32)
    plans = [(rows[j], [0, 0], None) for j in (1, 3, 5, 7, 0)]
    runs = support._gang_runs(dst, plans, 0, 1, "tile.load")
    assert [(lo, hi, isinstance(v, tuple)) for lo, hi, v in runs] == [(0, 5, True)]
    support.gang_load_into(dst, plans)
    assert all(torch.equal(dst[k], rows[j]) for k, j in enumerate((1, 3, 5, 7, 0)))
    plans = [(rows[j], [0, 0], None) for j in (1, 3, 5, 7)]
    (lo, hi, v), = support._gang_runs(dst[:4], plans, 0, 1, "tile.load")
    assert (lo, hi) == (0, 4) and v.data_ptr() == rows[1].data_ptr() and torch.equal(v, whole[1::2])
    # a store: runs of increasing, evenly spaced rows; the rest member by member
    tiles = torch.randn(5, 16, 32)
    plans = [([0, 0], rows[j], None) for j in (2, 3, 4, 0, 6)]
    assert [(lo, hi, v is None) for lo, hi, v in support._gang_runs(tiles, plans, 1, 0, "tile.store")] == \
        [(0, 3, False), (3, 5, False)]
    support.gang_store(tiles, plans)
    assert all(torch.equal(rows[j], tiles[k]) for k, j in enumerate((2, 3, 4, 0, 6)))
    # a sub-tile of the rows (offsets): the general path, still bounds-checked per member
    half = torch.empty(3, 8, 32)
    plans = [(rows[j], [8, 0], None) for j in (0, 1, 2)]
    support.gang_load_into(half, plans)
    assert torch.equal(half, whole[:3, 8:])
    with pytest.raises(SimulationError, match="out of bounds"):
        support.gang_load_into(half, [(rows[0], [8, 0], None), (rows[1], [9, 0], None), (rows[2], [8, 0], None)])
