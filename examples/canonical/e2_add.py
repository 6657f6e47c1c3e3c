"""E2 (spec §7): elementwise add of two 128x128 FP32 tensors, in its two forms.

``add_tensor`` is the tensor form (``out[:] = pl.add(a, b)``; the compiler loads each operand as
one Vec tile, adds and stores). ``add_tile`` writes the same chain by hand: ``pl.load`` both
operands at [0, 0] with shape [128, 128], ``pl.add`` the tiles, ``pl.store`` the result.
"""
import torch

import pypto.language as pl
from _check import check


@pl.jit
def add_tensor(a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
               out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def add_tile(a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
             out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [128, 128])
        tb = pl.load(b, [0, 0], [128, 128])
        out = pl.store(pl.add(ta, tb), [0, 0], out)
    return out


def main():
    torch.manual_seed(0)
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    for kernel in (add_tensor, add_tile):
        check(kernel, (a, b, torch.zeros(128, 128)), a + b, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    main()
