"""E6 (spec §7): column-wise concat of two [32, 16] FP32 tiles into a [32, 32] tile.

(``examples/elementwise/concat_transpose.py`` shows concat chained with a transpose and with a
constant tile; this is the plain form of the spec's table.) Concat does no arithmetic: exact.
"""
import torch

import pypto.language as pl
from _check import check


@pl.jit
def concat(a: pl.Tensor[[32, 16], pl.FP32], b: pl.Tensor[[32, 16], pl.FP32],
           out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [32, 16])
        tb = pl.load(b, [0, 0], [32, 16])
        c: pl.Tile[[32, 32], pl.FP32] = pl.concat(ta, tb)
        out = pl.store(c, [0, 0], out)
    return out


def main():
    torch.manual_seed(0)
    a, b = torch.randn(32, 16), torch.randn(32, 16)
    check(concat, (a, b, torch.zeros(32, 32)), torch.cat([a, b], 1), rtol=0, atol=0)


if __name__ == "__main__":
    main()
