"""Elementwise 4: layout ops. ``pl.concat(a, b)`` joins two tiles column-wise (``torch.cat(dim=-1)``)
and ``pl.transpose(x, 0, 1)`` swaps the axes (``.T``); neither does arithmetic, so the results
are exact. ``pl.full`` makes a constant tile (here: a column of ones, i.e. a bias column).
"""
import torch

import pypto.language as pl
from _check import check


@pl.jit
def concat_then_transpose(a: pl.Tensor[[16, 64], pl.FP16], b: pl.Tensor[[16, 64], pl.FP16],
                          out: pl.Out[pl.Tensor[[128, 16], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64])
        tb = pl.load(b, [0, 0], [16, 64])
        out = pl.store(pl.transpose(pl.concat(ta, tb), 0, 1), [0, 0], out)
    return out


@pl.jit
def append_ones(a: pl.Tensor[[16, 48], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 48])
        ones = pl.tile.full([16, 16], pl.FP32, 1.0)
        out = pl.store(pl.concat(ta, ones), [0, 0], out)
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    a, b = torch.randn(16, 64).half(), torch.randn(16, 64).half()
    check(concat_then_transpose, (a, b), torch.cat([a, b], dim=-1).T.contiguous())
    x = torch.randn(16, 48)
    check(append_ones, (x,), torch.cat([x, torch.ones(16, 16)], dim=-1))
