"""Elementwise 1: compare and select. ``pl.cmp`` / ``pl.cmps`` produce a BOOL mask (cmp_type EQ0
NE1 LT2 LE3 GT4 GE5); ``pl.sel(mask, a, b)`` is ``torch.where`` and ``pl.sels(mask, a, s)`` takes a
scalar for the false branch. Here: the elementwise larger of a and b (cmp GT + sel) and a
"leaky" clamp that replaces values below 0.5 by 0.5 (cmps GE + sels); both exact vs torch.
"""
import torch

import pypto.language as pl
from _check import check


@pl.jit
def select_larger(a: pl.Tensor[[32, 128], pl.FP32], b: pl.Tensor[[32, 128], pl.FP32],
                  out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.sel(pl.cmp(a, b, cmp_type=4), a, b)    # a > b ? a : b
    return out


@pl.jit
def clamp_below(a: pl.Tensor[[32, 128], pl.FP32], out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [32, 128])
        out = pl.store(pl.sels(pl.cmps(t, 0.5, cmp_type=5), t, 0.5), [0, 0], out)   # t >= 0.5 ? t : 0.5
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    a, b = torch.randn(32, 128), torch.randn(32, 128)
    check(select_larger, (a, b), torch.where(a > b, a, b))
    check(clamp_below, (a,), torch.where(a >= 0.5, a, torch.tensor(0.5)))
