"""pl.parallel in orchestration: one independent task per iteration (offsets i * 64)."""
import torch
from _check import check

import pypto.language as pl


@pl.jit
def double_rows(a: pl.Tensor[[256, 128], pl.FP32], out: pl.Out[pl.Tensor[[256, 128], pl.FP32]]):
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 64, 0], [64, 128])
            out = pl.store(pl.mul(t, 2.0), [i * 64, 0], out)
    return out


if __name__ == "__main__":
    a = torch.randn(256, 128)
    check(double_rows, (a,), a * 2)
