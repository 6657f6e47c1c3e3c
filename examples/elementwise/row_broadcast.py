"""Elementwise 2: row broadcast. A [M, 1] row vector is applied to every column of its row:
``pl.row_expand_sub(t, v)`` is ``t - v`` with torch broadcasting (exact: one rounding), and
``pl.row_expand_expdif(t, v)`` is ``exp(t - v)`` computed as the device does it, the difference
rounded first (within |t - v| + 1 ULP of the exact value, see tests/ops/test_broadcast.py).
"""
import torch

import pypto.language as pl
from _check import check


@pl.jit
def center_rows(a: pl.Tensor[[64, 128], pl.FP32], m: pl.Tensor[[64, 1], pl.FP32],
                out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_expand_sub(a, m)
    return out


@pl.jit
def exp_shifted(a: pl.Tensor[[64, 128], pl.FP32], m: pl.Tensor[[64, 1], pl.FP32],
                out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 128])
        v = pl.load(m, [0, 0], [64, 1])
        out = pl.store(pl.row_expand_expdif(t, v), [0, 0], out)
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    a = torch.randn(64, 128)
    m = a.max(dim=1, keepdim=True).values
    check(center_rows, (a, m), a - m)
    check(exp_shifted, (a, m), torch.exp(a.double() - m.double()).float(), exact=False, rtol=2e-6, atol=0)
