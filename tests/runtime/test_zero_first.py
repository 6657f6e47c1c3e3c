"""Core memory a call leaves uncleared (pypto.codegen.first_use, pypto.runtime.cores ``zero``): a
simulated call clears only the bytes some kernel may read before writing them (its ``ZERO_FIRST``);
whatever the previous call left anywhere else changes no output bit, and a runtime without the
tables (a tool's) still finds every byte zeroed."""
import math
import random
import sys
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.backend.platforms import get_platform
from pypto.language.enums import MemorySpace
from pypto.runtime import RunConfig, cores, run
from pypto.runtime import simulator as S

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_cases import M, qwen3_case  # noqa: E402


@pl.jit
def reads_unwritten(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="zf_rbw"):
        t = pl.load(x, [0, 0], [32, 64])
        acc = pl.create_tile([32, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.add(t, acc), [0, 0], out)
    return out


@pl.jit
def matmul_tiles(a: pl.Tensor[[16, 64], pl.BF16], b: pl.Tensor[[64, 32], pl.BF16],
                 out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="zf_mm"):
        x = pl.load(a, [0, 0], [16, 64], target_memory=pl.Mem.Mat)
        y = pl.load(b, [0, 0], [64, 32], target_memory=pl.Mem.Mat)
        xl = pl.move(x, target_memory=pl.Mem.Left)
        yr = pl.move(y, target_memory=pl.Mem.Right)
        out = pl.store(pl.matmul(xl, yr), [0, 0], out)
    return out


def _garble_pool():
    """The worst leftovers a previous call could leave: every pooled (zero-fill) core memory array
    all 0xFF (NaN in every float dtype) and marked stale on every row."""
    n = 0
    for (_, _, _, fill), entries in cores._MEM_POOL.items():
        if fill != 0:
            continue
        for e in entries:
            e[0].fill_(0xFF)
            e.stale = frozenset({(0, e[0].shape[1], 0, e[0].shape[0], 1)})
            n += 1
    assert n   # (something to garble: the reference run's memory went back to the pool)


def _paged():
    batch, heads, D, B, ctx = 4, 16, 128, 128, 256
    mb = ctx // B
    g = torch.Generator().manual_seed(5)
    q = torch.randn(batch * heads, D, dtype=torch.bfloat16, generator=g)
    k = torch.randn(batch * mb * B, D, dtype=torch.bfloat16, generator=g)
    v = torch.randn(batch * mb * B, D, dtype=torch.bfloat16, generator=g)
    table = torch.randperm(batch * mb, generator=g).to(torch.int32)
    lens = torch.full((batch,), ctx, dtype=torch.int32)
    return M.paged_attention(batch, heads, D, B, mb, 16), (q, k, v, table, lens, 1 / math.sqrt(D),
                                                          torch.zeros(batch * heads, D))


def _outputs(args):
    return [a.clone() for a in args if isinstance(a, torch.Tensor)]


@pytest.fixture
def pool(monkeypatch):
    monkeypatch.setattr(cores, "_MEM_POOL", {})
    return cores._MEM_POOL


@pytest.mark.parametrize("lockstep", [True, False])
@pytest.mark.parametrize("which", ["qwen3", "paged"])
def test_garbage_left_outside_zero_first_changes_no_bit(pool, which, lockstep):
    """The model programs (gangs and tasks): a run on memory full of garbage except where the
    kernels' ZERO_FIRST say gives the very bits of a run on fully zeroed memory."""
    prog, args = qwen3_case(kv_heads=2, inter=256) if which == "qwen3" else _paged()
    cfg = RunConfig(platform="a2a3sim", sim_seed=0, sim_lockstep=lockstep)
    fresh = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    run(prog, *fresh, config=cfg)           # fresh (zeroed) memory
    want = _outputs(fresh)
    kernels = S._LAST_RUNTIME[0].kernels
    proven = [m for m in kernels.values() if getattr(m, "ZERO_FIRST", None) is not None]
    assert len(proven) == len(kernels)
    # the cube kernels write every tile before reading it: nothing of them is cleared
    assert any(m.ZERO_FIRST == [] and any(t[0] == "Mat" for t in m.TILES) for m in proven)
    _garble_pool()
    again = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    run(prog, *again, config=cfg)
    got = _outputs(again)
    assert all(torch.equal(a.view(torch.uint8), b.view(torch.uint8)) for a, b in zip(want, got))


def test_a_tile_read_before_written_is_cleared_and_a_wrong_table_would_show(pool):
    x = torch.randn(32, 64)
    out = torch.zeros(32, 64)
    reads_unwritten(x, out)
    assert torch.equal(out, x)
    (mod,) = S._LAST_RUNTIME[0].kernels.values()
    assert mod.ZERO_FIRST and all(sp == "Vec" for sp, _, _ in mod.ZERO_FIRST)
    _garble_pool()
    out = torch.zeros(32, 64)
    reads_unwritten(x, out)
    assert torch.equal(out, x)   # the unwritten tile still reads zeros
    # the check above can fail: with the table emptied, the garbage reaches the output
    saved = mod.ZERO_FIRST
    try:
        mod.ZERO_FIRST = []
        S._ZERO_RANGES.clear()
        _garble_pool()
        out = torch.zeros(32, 64)
        reads_unwritten(x, out)
        assert torch.isnan(out).all()
    finally:
        mod.ZERO_FIRST = saved
        S._ZERO_RANGES.clear()


def test_matmul_tiles_are_written_first(pool):
    a = torch.randn(16, 64).to(torch.bfloat16)
    b = torch.randn(64, 32).to(torch.bfloat16)
    out = torch.zeros(16, 32)
    matmul_tiles(a, b, out)
    (mod,) = S._LAST_RUNTIME[0].kernels.values()
    assert mod.ZERO_FIRST == [] and {t[0] for t in mod.TILES} >= {"Mat", "Acc"}   # (the moves are fused away)
    want = out.clone()
    _garble_pool()
    out.zero_()
    matmul_tiles(a, b, out)
    assert torch.equal(out, want)


def test_zero_ranges_take_tiles_where_a_module_has_no_table():
    class Proven:
        TILES = [("Vec", 0, (4, 8), torch.float32), ("Mat", 0, (8, 8), torch.bfloat16)]
        ZERO_FIRST = [("Vec", 64, 128)]

    class Unproven:   # (built before the tables, or not proven): all of its tiles
        TILES = [("Vec", 96, (4, 8), torch.float32), ("Acc", 32, (2, 2), torch.float32)]

    z = S.zero_ranges({"a": Proven, "b": Unproven})
    assert z == {MemorySpace.Vec: ((64, 224),), MemorySpace.Acc: ((32, 48),)}
    assert S.zero_ranges({"a": Proven, "b": Unproven}) is z   # remembered
    assert S.zero_ranges({"a": Proven}) == {MemorySpace.Vec: ((64, 128),)}


@pytest.mark.parametrize("seed", range(10))
def test_split_clears_exactly_the_zero_ranges_of_the_dirty_bytes(seed):
    rnd = random.Random(seed)
    rows, width = 12, 256
    dirty = [[lo, rnd.randint(lo + 1, width), f, rnd.randint(f + 1, rows), 1]
             for lo, f in ((rnd.randrange(width - 1), rnd.randrange(rows)) for _ in range(rnd.randint(1, 6)))]
    stale = frozenset((lo, rnd.randint(lo + 1, width), f, rows, 2)
                      for lo, f in ((rnd.randrange(width - 1), rnd.randrange(2)) for _ in range(rnd.randint(0, 3))))
    cuts = sorted(rnd.sample(range(width + 1), 2 * rnd.randint(0, 3)))
    zero = tuple(zip(cuts[::2], cuts[1::2]))
    clear, keep = cores._split(dirty, stale, zero)
    zmask = torch.zeros(rows, width, dtype=torch.bool)
    for lo, hi in zero:
        zmask[:, lo:hi] = True
    marked = torch.zeros(rows, width, dtype=torch.bool)
    for lo, hi, first, stop, step in [*dirty, *stale]:
        marked[first:stop:step, lo:hi] = True
    got_clear = torch.zeros(rows, width, dtype=torch.bool)
    for lo, hi, first, stop, step in clear:
        got_clear[first:stop:step, lo:hi] = True
    got_keep = torch.zeros(rows, width, dtype=torch.bool)
    for lo, hi, first, stop, step in keep:
        got_keep[first:stop:step, lo:hi] = True
    assert torch.equal(got_clear, marked & zmask)
    assert torch.equal(got_keep, marked & ~zmask)
    assert cores._split(dirty, stale, zero)[0] is clear   # remembered


def test_split_cache_is_not_fooled_by_a_reused_id():
    """A remembered split names its dirty list: another list that got the same id is split anew."""
    a = [[0, 64, 0, 4, 1]]
    b = [[0, 32, 0, 2, 1]]
    cores._SPLITS[(id(b), cores._NONE, ((0, 16),))] = (a, [(0, 16, 0, 4, 1)], frozenset({(16, 64, 0, 4, 1)}))
    clear, keep = cores._split(b, cores._NONE, ((0, 16),))
    assert clear == [(0, 16, 0, 2, 1)] and keep == {(16, 32, 0, 2, 1)}


def test_stale_bytes_are_kept_marked_and_cleared_by_a_memory_without_tables(pool):
    p = get_platform("a2a3sim")
    zero = {MemorySpace.Vec: ((0, 32),)}
    mem = cores.CoreMemory(p, 48, zero=zero)
    mem.view("Vec", 0, [2, 64], torch.uint8, slice(0, 4), "k").fill_(7)   # bytes 0..128, rows 0..3
    mem.release()
    mem = cores.CoreMemory(p, 48, zero=zero)
    arr = mem.array(MemorySpace.Vec)
    assert int(arr[:4, :32].count_nonzero()) == 0          # read-first bytes: cleared
    assert bool((arr[:4, 32:128] != 0).all())              # written-first bytes: left as they were
    assert mem.stale[MemorySpace.Vec] == {(32, 128, 0, 4, 1)}
    mem.release()                                          # (no view this call: the stale part goes on)
    tool = cores.CoreMemory(p, 48)                         # a runtime without tables (a tool's)
    assert int(tool.array(MemorySpace.Vec).count_nonzero()) == 0
    tool.release()
    poisoned = cores.CoreMemory(p, 48, poison=True, zero=zero)
    assert poisoned.zero is None   # poison: every byte starts as 0xFF, always
