"""A loop whose writes are at offsets read in the loop (the run-time guard of batched orchestration,
pypto.codegen.batch.guarded_plan) reading its offsets from a tensor that the loop itself writes
under another name (a reshape of the written tensor): the compiler's check compares variables, so
the run-time check must compare storages, and the loop runs task by task, where each read waits for
the earlier iterations' writes. Batching it would read every offset before any write: other rows,
a silently wrong result."""
import pypto.language as pl
import torch

from pypto.runtime import RunConfig, run
from pypto.runtime import simulator as S


@pl.function(type=pl.FunctionType.InCore)
def k_copy_row(x: pl.Tensor[[1, 64], pl.INT32], y: pl.Out[pl.Tensor[[1, 64], pl.INT32]]) -> pl.Tensor[[1, 64], pl.INT32]:
    y = pl.store(pl.load(x, [0, 0], [1, 64], target_memory=pl.MemorySpace.Vec), [0, 0], y)
    return y


@pl.program
class ScatterIntoItsTable:
    """Iteration i reads row index ``cache[0, i]`` and copies ``a[i]`` into that row of ``cache``:
    a write of row 0 changes the indices later iterations read."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.INT32],
             cache: pl.InOut[pl.Tensor[[32, 64], pl.INT32]]) -> pl.Tensor[[32, 64], pl.INT32]:
        flat = pl.reshape(cache, [2048])
        for i in pl.range(16):
            row = pl.tensor.read(flat, [i])
            k_copy_row(pl.slice(a, [1, 64], [i, 0]), pl.slice(cache, [1, 64], [row, 0]))
        return cache


def _want(a, cache):
    c = cache.clone()
    for i in range(16):
        c[int(c[0, i])] = a[i]
    return c


def test_a_guarded_loop_reading_what_it_writes_under_another_name_runs_task_by_task():
    g = torch.Generator().manual_seed(0)
    cache = torch.randint(0, 32, (32, 64), dtype=torch.int32, generator=g)
    cache[0, :16] = torch.tensor([5, 9, 0, 3, 17, 30, 2, 8, 11, 4, 21, 6, 13, 1, 25, 7], dtype=torch.int32)
    a = torch.randint(0, 32, (16, 64), dtype=torch.int32, generator=g)
    a[2, :16] = torch.arange(16, 32, dtype=torch.int32)   # iteration 2 rewrites row 0: the later rows change
    want = _want(a, cache)
    assert not torch.equal(want, cache)
    got = {}
    for batch in (True, False):
        c = cache.clone()
        run(ScatterIntoItsTable, a, c, config=RunConfig(platform="a2a3sim", sim_seed=0, sim_batch=batch))
        got[batch] = c
        rt = S._LAST_RUNTIME[0]
        assert all(t.members is None for t in rt.tasks)   # one task per iteration either way
    assert torch.equal(got[True], want) and torch.equal(got[False], want)


def test_the_storage_check_is_what_keeps_it_task_by_task(monkeypatch):
    from pathlib import Path

    from pypto.driver.build import compile as ir_compile
    from pypto.runtime.batch import BatchRuntime

    c = ir_compile(ScatterIntoItsTable, **RunConfig(platform="a2a3sim").compile_options())
    src = Path(c.output_dir, c.meta["orchestration"]).read_text()
    assert "_rt.bguard(" in src and "[cache], [flat, a])" in src   # guarded; flat passed as a read
    # without the run-time storage comparison the loop would batch and read every index first
    plain = BatchRuntime.batching
    monkeypatch.setattr(BatchRuntime, "batching", lambda self, n, writes=(), reads=(): plain(self, n))
    g = torch.Generator().manual_seed(0)
    cache = torch.randint(0, 32, (32, 64), dtype=torch.int32, generator=g)
    cache[0, :16] = torch.tensor([5, 9, 0, 3, 17, 30, 2, 8, 11, 4, 21, 6, 13, 1, 25, 7], dtype=torch.int32)
    a = torch.randint(0, 32, (16, 64), dtype=torch.int32, generator=g)
    a[2, :16] = torch.arange(16, 32, dtype=torch.int32)
    c2 = cache.clone()
    run(ScatterIntoItsTable, a, c2, config=RunConfig(platform="a2a3sim", sim_seed=0))
    assert any(t.members is not None for t in S._LAST_RUNTIME[0].tasks)
    assert not torch.equal(c2, _want(a, cache))
