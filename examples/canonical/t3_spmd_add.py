"""T3 (spec §7): SPMD add, 256x128 FP32 as two blocks of 128 rows: ``out = x + y``.

``for i in pl.spmd(2):`` runs its body as two blocks, block ``i`` on its own core: the body is the
kernel (loads, compute and stores without a ``pl.at``). Device and simulator submit one task of two
blocks (see docs/language.md, "SPMD").
"""
import torch

import pypto.language as pl
from _check import check

ROWS, COLS, BLOCKS = 256, 128, 2


@pl.jit
def spmd_add(x: pl.Tensor[[256, 128], pl.FP32], y: pl.Tensor[[256, 128], pl.FP32],
             out: pl.Out[pl.Tensor[[256, 128], pl.FP32]]):
    for i in pl.spmd(BLOCKS):
        off = i * 128
        a = pl.load(x, [off, 0], [128, COLS])
        b = pl.load(y, [off, 0], [128, COLS])
        out = pl.store(pl.add(a, b), [off, 0], out)
    return out


def main():
    torch.manual_seed(0)
    x, y = torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)
    check(spmd_add, (x, y, torch.zeros(ROWS, COLS)), x + y, rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    main()
