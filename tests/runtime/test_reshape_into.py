"""The simulator's tile.reshape (pypto.ops.support.reshape_into): the reshaped view of a tile pair
made once and reused, never a stale copy; a source that cannot be viewed is reshaped per call."""
import torch

from pypto.ops import support
from pypto.ops.support import views


def test_gang_views_reshape_reuses_one_view_and_reads_current_data():
    mem = torch.zeros(6, 1024)                                  # 6 cores' memories
    x = mem[:, 0:16].view(6, 16, 1)                             # a gang's [R, 1] column tiles
    dst = mem[:, 512:528].view(6, 1, 16)                        # ... reshaped to [1, R] rows
    x.copy_(torch.randn(x.shape))
    support.reshape_into(dst, x)
    assert torch.equal(dst, x.reshape(6, 1, 16))
    hit = views._RESHAPED[(id(dst), id(x))]
    assert hit[0] is dst and hit[1] is x and hit[2] is not None and hit[2]._base is not None   # a view
    x.copy_(torch.randn(x.shape))                               # new data in the same tile
    support.reshape_into(dst, x)
    assert torch.equal(dst, x.reshape(6, 1, 16))                # not the first call's values
    assert views._RESHAPED[(id(dst), id(x))] is hit


def test_a_source_that_cannot_be_viewed_is_reshaped_each_call():
    base = torch.randn(8, 8)
    x = base.t()                                                # strided: reshape must copy
    dst = torch.zeros(64)
    support.reshape_into(dst, x)
    assert torch.equal(dst, x.reshape(64))
    assert views._RESHAPED[(id(dst), id(x))][2] is None         # nothing kept
    base.add_(1.0)
    support.reshape_into(dst, x)
    assert torch.equal(dst, x.reshape(64))                      # the new values, not a kept copy


def test_a_pair_of_new_tensors_is_not_taken_for_a_cached_one():
    """An entry holds its tensors: a new tensor can only have a cached id while the entry lives, and
    the entry is checked by identity; a fresh pair is looked up anew."""
    for k in range(20):
        x = torch.full((4, 1), float(k))
        dst = torch.zeros(1, 4)
        support.reshape_into(dst, x)
        assert (dst == k).all()
