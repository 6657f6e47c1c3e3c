"""Multi-rank programs on simulated cards (issue 17): collectives against a float64 reference and,
bit for bit, against the fixed-order reduction the seed selects; a deadlock named with ranks and
lines; the reference's surface (pld names, DistributedConfig)."""
import random

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.errors import SimulationError
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig

from kernel_templates import where
from tests.distributed import kernels_dist as K

N = K.N
COVERED_OPS = {"dist.allreduce", "dist.allgather", "dist.reduce_scatter", "dist.broadcast", "dist.all_to_all",
               "dist.wait", "dist.get_comm_ctx", "dist.rank"}


def cfg(nranks: int, seed: int | None = 0) -> RunConfig:
    return RunConfig(platform="a2a3sim", sim_seed=seed,
                     distributed_config=DistributedConfig(device_ids=list(range(nranks))))


def spread(nranks: int, seed: int = 7) -> torch.Tensor:
    """Rows of very different magnitudes, so the order of an FP32 sum changes its rounding."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn((K.MAXR, 1, N), generator=g)
    scale = torch.tensor([1e6, 1.0, 1e-3, 3e3])[:, None, None]
    return (x * scale).float()


def seeded_order(nranks: int, seed: int) -> list[int]:
    """The rank order the first reduction of a run with ``sim_seed=seed`` accumulates in (the
    World's documented rule: one random.Random(seed) shuffle per collective)."""
    order = list(range(nranks))
    random.Random(seed).shuffle(order)
    return order


def fixed_order_sum(x: torch.Tensor, order: list[int]) -> torch.Tensor:
    acc = x[order[0]].clone()
    for r in order[1:]:
        acc = acc + x[r]
    return acc


@pytest.mark.parametrize("nranks", [2, 4])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_allreduce_sum_bits_per_seed(nranks, seed):
    x = spread(nranks)
    y = torch.zeros_like(x)
    K.allreduce_sum_host(x, y, config=cfg(nranks, seed))
    want = fixed_order_sum(x, seeded_order(nranks, seed))
    for r in range(nranks):
        assert torch.equal(y[r], want), f"rank {r} differs from the seed's fixed-order sum"
    f64 = x[:nranks].double().sum(0)
    # float64 oracle: within the bound of an n-term FP32 chain (n-1 roundings of the running sum)
    bound = (nranks - 1) * 2.0 ** -24 * x[:nranks].double().abs().sum(0) + 1e-30
    assert bool(((y[0].double() - f64).abs() <= bound).all())


def test_allreduce_drift_is_reproducible():
    x = spread(4)
    runs = {}
    for seed in (0, 1, 2, 3, 0):
        y = torch.zeros_like(x)
        K.allreduce_sum_host(x, y, config=cfg(4, seed))
        if seed in runs:
            assert torch.equal(runs[seed], y), "same seed, different bits"
        runs[seed] = y.clone()
    distinct = {tuple(v[0].view(torch.int32).flatten().tolist()) for v in runs.values()}
    assert len(distinct) > 1, "the seeds should give different reduction orders and roundings"


def test_allreduce_max():
    x = spread(2)
    y = torch.zeros_like(x)
    K.allreduce_max_host(x, y, config=cfg(2))
    assert torch.equal(y[0], torch.maximum(x[0], x[1])) and torch.equal(y[1], y[0])


def test_allgather():
    x = torch.randn(2, 1, N)
    y = torch.zeros(2, 2, N)
    K.gather_host(x, y, config=cfg(2))
    want = torch.cat([x[0], x[1]])
    assert torch.equal(y[0], want) and torch.equal(y[1], want)


def test_reduce_scatter_bits():
    x = spread(2).reshape(K.MAXR // 2, 2, N)   # rank r's two chunks
    y = torch.zeros(2, 2, N)
    K.scatter_host(x[:2], y, config=cfg(2, 5))
    order = seeded_order(2, 5)
    for r in range(2):
        want = fixed_order_sum(x[:2, r], order)
        assert torch.equal(y[r, r], want)
        assert torch.equal(y[r, 1 - r], x[r, 1 - r]), "the other chunk keeps the rank's own data"
        assert torch.allclose(y[r, r].double(), x[:2, r].double().sum(0), rtol=1e-6, atol=1e-3)


def test_broadcast():
    x = torch.randn(2, 2, N)
    y = torch.zeros(2, 2, N)
    K.bcast_host(x, y, config=cfg(2))
    assert torch.equal(y[0], x[1]) and torch.equal(y[1], x[1])


def test_all_to_all():
    x = torch.randn(2, 2, N)
    y = torch.zeros(2, 2, N)
    K.a2a_host(x, y, config=cfg(2))
    for j in range(2):
        assert torch.equal(y[j], torch.stack([x[0, j], x[1, j]]))


def test_host_allreduce_between_phases():
    x = spread(4)
    y = torch.zeros_like(x)
    K.host_allreduce(x, y, config=cfg(4, 3))
    want = fixed_order_sum(x, seeded_order(4, 3))
    for r in range(4):
        assert torch.equal(y[r], want)


def test_deadlock_names_ranks_and_line():
    y = torch.zeros(2, 1, N)
    with pytest.raises(SimulationError) as ei:
        K.stuck_host(y, config=cfg(2))
    msg = str(ei.value)
    assert "deadlock" in msg and "rank 0" in msg and "rank 1" in msg
    # the file and line of stuck_k's wait (its text is generated: kernel_templates.where finds the line)
    assert "pld.system.wait" in msg and where(K.stuck_k, "pld.system.wait(sig") in msg


def test_host_without_distributed_config_is_an_error():
    from pypto.errors import PyptoError

    with pytest.raises(PyptoError, match="distributed_config"):
        K.stuck_host(torch.zeros(2, 1, N), config=RunConfig(platform="a2a3sim"))


def test_pld_names():
    for name in ("AtomicType", "CommCtx", "CommCtxType", "DistributedTensor", "NotifyOp", "ReduceOp", "WaitCmp",
                 "alloc_window_buffer", "get_comm_ctx", "nranks", "rank", "remote_load", "remote_store", "system",
                 "tensor", "tile", "window", "world_size"):
        assert hasattr(pld, name), name
    for ns, names in ((pld.system, ("world_size", "get_comm_ctx", "rank", "nranks", "notify", "wait", "defer_wait")),
                      (pld.tensor, ("alloc_window_buffer", "window", "get", "put", "allreduce", "barrier", "broadcast",
                                    "allgather", "reduce_scatter", "all_to_all", "all_to_all_v")),
                      (pld.tile, ("remote_load", "remote_store"))):
        for n in names:
            getattr(ns, n)
    with pytest.raises(AttributeError, match="has no op"):
        pld.tile.nonexistent
    assert pld.AtomicType is pl.AtomicType


def test_distributed_config_validation():
    for bad in ([], [0, 0], [-1]):
        with pytest.raises(ValueError):
            DistributedConfig(device_ids=bad)
    with pytest.raises(ValueError):
        DistributedConfig(aicpu_thread_num=1)
    with pytest.raises(ValueError, match="DistributedConfig"):
        RunConfig(distributed_config=object())
    from pypto.ir.distributed_compiled_program import DistributedCompiledProgram
    from pypto.runtime.distributed_runner import DistributedRunHandle, DistributedWorker, execute_distributed_compiled

    assert DistributedCompiledProgram and DistributedWorker and DistributedRunHandle and execute_distributed_compiled


def test_prepared_worker_reruns():
    x = spread(2)
    prog = K.allreduce_sum_host.compile(x, torch.zeros_like(x), config=cfg(2, 1))
    with prog.prepare() as w:
        y1, y2 = torch.zeros_like(x), torch.zeros_like(x)
        w(x, y1)
        h = w.submit(prog, x, y2)
        h.wait()
    assert torch.equal(y1[:2], y2[:2])   # windows are zeroed per run, same seed -> same bits


@pytest.mark.parametrize("host_args", ["ring_put", "allreduce"])
def test_dist_ops_roundtrip_every_stage(host_args):
    from pypto.frontend.specialize import specialize
    from pypto.ir import run_pipeline, structural_equal
    from pypto.language import parse

    x = torch.zeros(1, N)
    if host_args == "ring_put":
        spec = specialize(K.ring_put_rank, (x, x.clone(), x.clone(), x.clone(), torch.zeros(1, 1, dtype=torch.int32)), {})
    else:
        spec = specialize(K.allreduce_sum_rank, (x, x.clone(), x.clone(), torch.zeros(K.MAXR, 1, dtype=torch.int32)), {})
    result = run_pipeline(spec.program, {"platform": "a2a3sim"})
    for stage, program in result.stages:
        text = program.as_python()
        assert structural_equal(program, parse(text)), f"{stage}:\n{text}"


def test_planted_missing_wait_is_a_race_with_both_lines():
    from pypto.debug.dist_races import find_rank_races

    x = torch.randn(K.MAXR, 1, N)
    races = find_rank_races(K.racy_host, x, torch.zeros(K.MAXR, 1, N), config=cfg(2))
    assert races, "the load without a wait must race with the previous rank's remote_store"
    store, load = where(K.racy_k, "pld.tile.remote_store(t, dst"), where(K.racy_k, "# RACE: no wait")
    wheres = {(a.where, b.where) for r in races for a, b in [(r.first, r.second)]}
    assert any({w1, w2} == {store, load} for w1, w2 in wheres), wheres
    text = str(races[0])
    assert "rank 0" in text and "rank 1" in text


def test_the_same_program_with_its_wait_has_no_race():
    from pypto.debug.dist_races import find_rank_races

    x = torch.randn(K.MAXR, 1, N)
    y = torch.zeros(K.MAXR, 1, N)
    assert find_rank_races(K.ordered_host, x, y, config=cfg(2)) == []
    assert torch.equal(y[0], x[1]) and torch.equal(y[1], x[0])


def test_program_form_host_method_with_dynamic_rank_count():
    from pypto import ir

    for n in (2, 3):
        compiled = ir.compile(K.ProgramHostScale, platform="a2a3sim",
                              distributed_config=DistributedConfig(device_ids=list(range(n))))
        x = torch.randn(n, 1, N)
        y = torch.zeros(n, 1, N)
        compiled(x, y)
        want = x.max(dim=0).values
        for r in range(n):
            assert torch.equal(y[r], want)


def test_program_without_host_method_still_refuses_distributed_config():
    from pypto import ir
    from pypto.errors import UnsupportedFeatureError

    with pytest.raises(UnsupportedFeatureError, match="multi-rank"):
        ir.compile(K.ProgramNoHost, distributed_config=DistributedConfig(device_ids=[0, 1]))
