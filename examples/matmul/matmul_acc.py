"""M4: ``matmul_acc`` at tile level: K = 64 as two K = 32 chunks. Chunk 0 is a ``matmul`` into an
Acc tile; chunk 1 (loads at offsets [0, 32] / [32, 0]) accumulates into it."""
import torch

import pypto.language as pl
from _check import check


@pl.jit
def matmul_acc_64(a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
                  c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a0 = pl.load(a, [0, 0], [64, 32], target_memory=pl.Mem.Mat)
        b0 = pl.load(b, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(a0, target_memory=pl.Mem.Left), pl.move(b0, target_memory=pl.Mem.Right))
        a1 = pl.load(a, [0, 32], [64, 32], target_memory=pl.Mem.Mat)
        b1 = pl.load(b, [32, 0], [32, 64], target_memory=pl.Mem.Mat)
        acc = pl.matmul_acc(acc, pl.move(a1, target_memory=pl.Mem.Left), pl.move(b1, target_memory=pl.Mem.Right))
        c = pl.store(acc, [0, 0], c)
    return c


if __name__ == "__main__":
    torch.manual_seed(0)
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    check(matmul_acc_64, (a, b), torch.zeros(64, 64), a @ b, rtol=1e-3, atol=1e-3)
