"""The dist.* ops (issue 17) in multi-rank runs: point-to-point movement with signals, and the
ops the collective tests (tests/distributed) cover."""
import torch

from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig

from tests.distributed import kernels_dist as K

COVERED_OPS = {"dist.world_size", "dist.get_comm_ctx", "dist.rank", "dist.nranks", "dist.notify", "dist.wait",
               "dist.defer_wait", "dist.remote_load", "dist.remote_store", "dist.put", "dist.get", "dist.barrier",
               "dist.allreduce", "dist.allgather", "dist.reduce_scatter", "dist.broadcast", "dist.all_to_all",
               "dist.all_to_all_v"}
N = K.N


def cfg(n, seed=0):
    return RunConfig(platform="a2a3sim", sim_seed=seed, distributed_config=DistributedConfig(device_ids=list(range(n))))


def test_ring_put_notify_defer_wait_3_ranks():
    x = torch.randn(K.MAXR, 1, N)
    y = torch.zeros(K.MAXR, 1, N)
    K.ring_put_host(x, y, config=cfg(3))
    for r in range(3):
        assert torch.equal(y[r], x[(r - 1) % 3])


def test_ring_remote_store_barrier_get_4_ranks():
    x = torch.randn(K.MAXR, 1, N)
    y = torch.zeros(K.MAXR, 2, N)
    K.ring_store_host(x, y, config=cfg(4))
    for r in range(4):
        assert torch.equal(y[r, 0], x[(r - 1) % 4, 0]), "remote_store from the previous rank"
        assert torch.equal(y[r, 1], x[(r - 1) % 4, 0]), "get of the previous rank's src"


def test_all_to_all_v():
    """The reference's push form: 2 ranks, blocks of MR = 4 // 2 = 2 rows; rank i's block j lands in
    block i of rank j; recv_counts[i] on rank j is min(send_counts[j] of rank i, MR)."""
    x = torch.randn(2, 4, N)
    counts = torch.zeros(2, 1, 8, dtype=torch.int32)
    counts[0, 0, :2] = torch.tensor([1, 5])   # 5 is clamped to the capacity 2
    counts[1, 0, :2] = torch.tensor([2, 0])
    y = torch.zeros(2, 4, N)
    K.a2av_host(x, counts, y, config=cfg(2))
    for j in range(2):
        for i in range(2):
            assert torch.equal(y[j, 2 * i:2 * i + 2], x[i, 2 * j:2 * j + 2]), (i, j)
