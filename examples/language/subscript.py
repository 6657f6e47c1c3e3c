"""Subscript sugar: A[16:32, :] reads a slice; out[i:i+16, 32:64] = v writes a region."""
import torch
from _check import check

import pypto.language as pl


@pl.jit
def add_halves(a: pl.Tensor[[32, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a[16:32, :], a[0:16, :])
    return out


if __name__ == "__main__":
    a = torch.randn(32, 128)
    check(add_halves, (a,), a[16:32] + a[0:16])
