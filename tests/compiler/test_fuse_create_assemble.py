"""FuseCreateAssembleToView: a kernel-filled orchestration chunk assembled into a bigger tensor is
written in place through a view of the target region (the reference's FuseCreateAssembleToSlice);
results == a torch oracle on both platforms; the pattern is refused (the "Misplaced tensor op"
error, located) when the target is read in between."""
from __future__ import annotations

import pytest
import torch

import kernels_fuse_assemble as K
from pypto.errors import PyptoError
from pypto.runtime import RunConfig, run

PLATFORMS = ("a2a3sim", "a5sim")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_chunks_into_a_higher_rank_target(platform):
    x = torch.randn(4, 16)
    out = torch.full((3, 4, 16), 9.0)
    run(K.ChunksInto3D, x, out, config=RunConfig(platform=platform, sim_seed=0))
    want = torch.stack([x + b for b in range(3)])
    assert torch.equal(out, want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_chunks_same_rank(platform):
    x = torch.randn(2, 16)
    out = torch.zeros(8, 16)
    run(K.ChunksSameRank, x, out, config=RunConfig(platform=platform, sim_seed=1))
    assert torch.equal(out, (x * x).repeat(4, 1))


def test_target_read_in_between_is_not_fused():
    with pytest.raises(PyptoError, match="Misplaced tensor op 'tensor.assemble'") as e:
        run(K.ReadBetween, torch.zeros(2, 16), torch.zeros(2, 16), config=RunConfig(platform="a5sim"))
    assert "kernels_fuse_assemble.py" in str(e.value)
