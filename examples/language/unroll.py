"""pl.unroll: the UnrollLoops pass copies the body once per iteration (the carried acc threads through)."""
import torch
from _check import check

import pypto.language as pl


@pl.jit
def times_four(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.add(a, a)
        for k in pl.unroll(2):
            acc = pl.add(acc, a)
        out[:] = pl.add(acc, a)
    return out


if __name__ == "__main__":
    a = torch.randn(64, 128)
    check(times_four, (a,), a * 5)
