"""Per-view caches of the simulator helpers: tile.reshape's reshaped view (pypto.ops.support.reshape_into)
and the FP32 -> BF16 ties-away cast's int32 view (numerics.cast._bits_view): made once per view and
reused, never a stale copy; what cannot be cached safely is made per call."""
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
    assert hit[0]() is dst and hit[1]() is x and hit[2]._base is not None   # a view
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
    assert (id(dst), id(x)) not in views._RESHAPED              # nothing kept
    base.add_(1.0)
    support.reshape_into(dst, x)
    assert torch.equal(dst, x.reshape(64))                      # the new values, not a kept copy


def test_entries_die_with_their_tensors_and_new_tensors_are_looked_up_anew():
    """An entry is dropped when either tensor dies (weak references), so a new tensor reusing an id
    is never taken for the old one; base tensors (not views) are not kept at all."""
    import gc
    keys = []
    for k in range(20):
        mem = torch.full((3, 8), float(k))
        x = mem[:, 0:4].view(3, 4, 1)
        dst = torch.zeros(3, 1, 4)
        support.reshape_into(dst, x)
        assert (dst == k).all()
        keys.append((id(dst), id(x)))
        assert keys[-1] in views._RESHAPED
        del mem, x, dst
        gc.collect()
        assert keys[-1] not in views._RESHAPED or views._RESHAPED[keys[-1]][0]() is not None
    base = torch.randn(4, 1)
    out = torch.zeros(1, 4)
    support.reshape_into(out, base)
    assert torch.equal(out, base.reshape(1, 4)) and (id(out), id(base)) not in views._RESHAPED


# ------------------------------------------------------------------ the FP32 -> BF16 cast's bit view
def test_round_cast_of_a_tile_view_reuses_its_bit_view_and_reads_current_data():
    """numerics.cast._bits_view: a tile view's int32 view is made once and dropped with the view;
    the ties-away cast of the same view with new values (a tie, NaN, inf) gives the new bits."""
    import gc
    from pypto.numerics import cast as C
    mem = torch.zeros(4, 256)
    x = mem[:, 0:64].view(4, 2, 32)
    dst = torch.zeros(4, 2, 32, dtype=torch.bfloat16)
    oracle = {0x3F808000: 0x3F81, 0x3F818000: 0x3F82, 0x7F800000: 0x7F80, 0x7FC00001: 0x7FC0}
    for bits in ([0x3F808000] * 8, [0x3F818000, 0x7F800000, 0x7FC00001, 0x3F808000] * 2):
        x.view(torch.int32)[:, 0, :8] = torch.tensor(bits, dtype=torch.int32)
        C.cast_into(dst, x, "round")
        want = torch.tensor([oracle[b] for b in bits], dtype=torch.int32).to(torch.int16)
        assert torch.equal(dst.view(torch.int16)[:, 0, :8], want.expand(4, 8))
    k = id(x)
    assert C._BITS[k][0]() is x
    del x
    gc.collect()
    assert k not in C._BITS or C._BITS[k][0]() is not None      # the dead view's entry is gone
    base = torch.full((2, 3), 1.5)
    C.cast_into(torch.zeros(2, 3, dtype=torch.bfloat16), base, "round")
    assert id(base) not in C._BITS                               # a base tensor is not kept
