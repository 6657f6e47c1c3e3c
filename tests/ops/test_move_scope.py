"""InferTileMemorySpace's operand moves are scoped to the block that makes them: a Mat tile moved
to Left / Right in one branch of an ``if`` is moved again in the other (the other branch used to
read the first one's move, a Var never assigned on its path: the L0 contents of an earlier
iteration, a silently wrong result)."""
import pytest
import torch

import kernels_move_scope as K
import ops_harness as H
from pypto.runtime import RunConfig


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_each_branch_moves_its_own_operands(platform):
    g = torch.Generator().manual_seed(3)
    a = torch.randint(-3, 4, (16, 1024), generator=g, dtype=torch.int8)
    b = torch.randint(-3, 4, (1024, 256), generator=g, dtype=torch.int8)
    out = torch.zeros(16, 256, dtype=torch.int32)
    K.split_k_int8(a, b, out, config=RunConfig(platform=platform))
    assert torch.equal(out, a.int() @ b.int())   # integer accumulation: exact
    text = K.split_k_int8.lower(a, b, out, config=RunConfig(platform=platform)).as_python()
    # each of the two stage copies moves its chunk in both branches
    assert text.count("= pl.tile.move(at") == 4, text
