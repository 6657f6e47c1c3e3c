"""Elementwise 5: slice and assemble. ``pl.slice(x, shape, offset)`` (shape before offset) copies a
sub-tile; ``pl.assemble(target, src, offset)`` writes ``src`` into ``target`` at ``offset``; and
``pl.read(x, [i, j])`` reads one element as a scalar. Here the left and right halves of a tile are
swapped and every element is scaled by the tile's first element: exact vs torch indexing.
"""
import torch

import pypto.language as pl
from _check import check


@pl.jit
def swap_halves_scaled(a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 128])
        left = pl.slice(t, [16, 64], [0, 0])
        right = pl.slice(t, [16, 64], [0, 64])
        swapped = pl.assemble(pl.assemble(t, right, [0, 0]), left, [0, 64])
        s = pl.read(t, [0, 0])
        out = pl.store(pl.mul(swapped, s), [0, 0], out)
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    a = torch.randn(16, 128)
    expected = torch.cat([a[:, 64:], a[:, :64]], dim=-1) * a[0, 0]
    check(swap_halves_scaled, (a,), expected)
