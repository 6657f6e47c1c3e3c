"""@pl.jit.inline: a helper spliced into each call site (InlineFunctions leaves no function)."""
import torch
from _check import check

import pypto.language as pl


@pl.jit.inline
def square(x: pl.Tensor):
    y = pl.mul(x, x)
    return y


@pl.jit
def sum_of_squares(a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
                   out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(square(a), square(b))
    return out


if __name__ == "__main__":
    a, b = torch.randn(64, 128), torch.randn(64, 128)
    check(sum_of_squares, (a, b), a * a + b * b)
