"""Elementwise 3: column broadcast. A [1, N] column vector is applied to every row:
``pl.col_expand_mul(t, scale)`` then ``pl.col_expand_add(t, bias)`` is a per-column affine map
(each op rounds once, so it equals torch's ``a * scale + bias`` evaluated op by op, bit for bit).
BF16 operands are computed in FP32 and rounded once per op, like torch's CPU kernels.
"""
import torch

import pypto.language as pl
from _check import check


@pl.jit
def scale_shift(a: pl.Tensor[[32, 256], pl.BF16], scale: pl.Tensor[[1, 256], pl.BF16],
                bias: pl.Tensor[[1, 256], pl.BF16], out: pl.Out[pl.Tensor[[32, 256], pl.BF16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_expand_add(pl.col_expand_mul(a, scale), bias)
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    a = torch.randn(32, 256).bfloat16()
    scale, bias = torch.rand(1, 256).bfloat16() + 0.5, torch.randn(1, 256).bfloat16()
    check(scale_shift, (a, scale, bias), a * scale + bias)
