"""Window buffers used by a subset of the ranks form their own communication group (the reference
clusters windows into comm domains by the devices they are dispatched to): peers, ``pld.rank`` and
``pld.nranks`` count in that group. A window view in another static shape of the same element
count is the kernel parameter's view of the same memory."""
import torch

from pypto import ir
from pypto.ir.distributed_compiled_program import DistributedConfig

from tests.distributed import kernels_dist as K
from tests.distributed.kernels_dist import N


def test_two_overlapping_groups_exchange_within_their_own_ranks():
    compiled = ir.compile(K.ProgramSubGroup, platform="a2a3sim",
                          distributed_config=DistributedConfig(device_ids=[0, 1, 2]))
    for seed in (0, 1):
        x = torch.randn(3, 1, N)
        ya, yb = torch.zeros(3, 1, N), torch.zeros(3, 1, N)
        ia, ib = torch.full((3, 1, 2), -1, dtype=torch.int32), torch.full((3, 1, 2), -1, dtype=torch.int32)
        compiled(x, ya, yb, ia, ib)
        # group A = ranks {0, 1}: each reads the other's row
        assert torch.equal(ya[0], x[1]) and torch.equal(ya[1], x[0]) and torch.equal(ya[2], torch.zeros(1, N))
        # group B = ranks {1, 2}: group rank 0 is rank 1, so rank 2's peer 0 is rank 1 (not rank 0)
        assert torch.equal(yb[1], x[2]) and torch.equal(yb[2], x[1]) and torch.equal(yb[0], torch.zeros(1, N))
        assert ia[:2].tolist() == [[[0, 2]], [[1, 2]]] and ib[1:].tolist() == [[[0, 2]], [[1, 2]]]
    assert [m for _, m in compiled.window_groups] == [[0, 1], [0, 1], [1, 2], [1, 2]]
