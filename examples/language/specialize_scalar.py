"""Scalar parameters: each value is a specialisation constant (its own artifact; `if` folds);
pl.RUNTIME keeps one a runtime parameter."""
import torch
from _check import check

import pypto.language as pl


@pl.jit
def scale_or_shift(a: pl.Tensor[[64, 128], pl.FP32], s: pl.FP32, out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        if s > 1.5:
            out[:] = pl.mul(a, s)
        else:
            out[:] = pl.add(a, s)
    return out


@pl.jit
def first_rows(a: pl.Tensor[[256, 128], pl.FP32], n: pl.Scalar[pl.INDEX],
               out: pl.Out[pl.Tensor[[256, 128], pl.FP32]]):
    for i in pl.range(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 64, 0], [64, 128])
            out = pl.store(t, [i * 64, 0], out)
    return out


if __name__ == "__main__":
    a = torch.randn(64, 128)
    check(scale_or_shift, (a, 2.0), a * 2.0)
    check(scale_or_shift, (a, 1.0), a + 1.0)
    compiled = first_rows.compile(n=pl.RUNTIME)
    b = torch.randn(256, 128)
    for n in (1, 3):
        out = torch.zeros(256, 128)
        compiled(b, n, out)
        torch.testing.assert_close(out[:n * 64], b[:n * 64])
        assert (out[n * 64:] == 0).all()
    print("[PASS] first_rows")
