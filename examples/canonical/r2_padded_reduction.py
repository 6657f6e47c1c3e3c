"""R2 (spec §7): padded reductions. A [64, 64] tile loaded with ``valid_shape=[64, vlen]`` has
``64 - vlen`` padding columns; reductions read the padding (spec §6.2), so the padding is filled
with the identity of max (``pl.fillpad(t, pl.PadValue.min)``: -inf) before ``row_max``.

Variants:
* ``row_max_vlen``: ``vlen`` is a scalar parameter, a specialisation constant (one artifact per
  value), used in ``valid_shape=[64, vlen]``.
* ``row_max_cfg``: ``vlen`` chosen by an ``if`` over a value read from a config tensor at run time
  (``pl.read(cfg, [0, 0])``).
* ``row_max_blocked``: a 64x224 row max over 64-wide column blocks: a ``pl.range`` loop over the
  full blocks and a peeled last block of 32 valid columns, combined with a running ``pl.maximum``.
  (The spec's form, one loop whose last iteration loads ``valid_shape=[64, min(64, W - c0)]``,
  is not expressible: ``tile.load`` requires constant ``valid_shape`` entries.)
Data is all negative, so forgetting the fillpad would give 0.0 (the zero padding) everywhere.
"""
import torch

import pypto.language as pl
from _check import check

W, TILE = 224, 64
N_FULL = W // TILE   # 3 full blocks, then a partial one of 32 columns


@pl.jit
def row_max_vlen(a: pl.Tensor[[64, 64], pl.FP32], vlen: pl.INDEX, out: pl.Out[pl.Tensor[[64, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64], valid_shape=[64, vlen])
        f = pl.fillpad(t, pl.PadValue.min)
        tmp = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.row_max(f, tmp), [0, 0], out)
    return out


@pl.jit
def row_max_cfg(a: pl.Tensor[[64, 64], pl.FP32], cfg: pl.Tensor[[1, 8], pl.INT32],
                out: pl.Out[pl.Tensor[[64, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        mode = pl.read(cfg, [0, 0])
        tmp = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        if mode == 1:
            t = pl.fillpad(pl.load(a, [0, 0], [64, 64], valid_shape=[64, 40]), pl.PadValue.min)
        else:
            t = pl.fillpad(pl.load(a, [0, 0], [64, 64], valid_shape=[64, 24]), pl.PadValue.min)
        out = pl.store(pl.row_max(t, tmp), [0, 0], out)
    return out


@pl.jit
def row_max_blocked(a: pl.Tensor[[64, W], pl.FP32], out: pl.Out[pl.Tensor[[64, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        tmp = pl.create_tile([64, TILE], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        m = pl.row_max(pl.load(a, [0, 0], [64, TILE]), tmp)
        for i in pl.range(1, N_FULL):                       # the other full blocks
            m = pl.maximum(m, pl.row_max(pl.load(a, [0, i * TILE], [64, TILE]), tmp))
        last = pl.load(a, [0, N_FULL * TILE], [64, TILE], valid_shape=[64, W - N_FULL * TILE])
        m = pl.maximum(m, pl.row_max(pl.fillpad(last, pl.PadValue.min), tmp))
        out = pl.store(m, [0, 0], out)
    return out


def main():
    torch.manual_seed(0)
    a = -torch.rand(64, 64) - 0.5
    z = torch.zeros(64, 1)
    for vlen in (40, 17, 64):
        check(row_max_vlen, (a, vlen, z), a[:, :vlen].max(dim=1, keepdim=True).values, rtol=0, atol=0)
    for mode, vlen in ((1, 40), (0, 24)):
        cfg = torch.zeros(1, 8, dtype=torch.int32)
        cfg[0, 0] = mode
        check(row_max_cfg, (a, cfg, z), a[:, :vlen].max(dim=1, keepdim=True).values, rtol=0, atol=0)
    b = -torch.rand(64, W) - 0.5
    check(row_max_blocked, (b, z), b.max(dim=1, keepdim=True).values, rtol=0, atol=0)


if __name__ == "__main__":
    main()
