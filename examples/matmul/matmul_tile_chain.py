"""M3: the explicit cube chain at tile level, FP32 64x64:
load (GM -> Mat) -> move (Mat -> Left / Right) -> matmul (-> Acc) -> store (Acc -> GM)."""
import torch

import pypto.language as pl
from _check import check


@pl.jit
def matmul_64(a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
              c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        la = pl.move(ta, target_memory=pl.Mem.Left)
        rb = pl.move(tb, target_memory=pl.Mem.Right)
        tc = pl.matmul(la, rb)
        c = pl.store(tc, [0, 0], c)
    return c


if __name__ == "__main__":
    torch.manual_seed(0)
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    check(matmul_64, (a, b), torch.zeros(64, 64), a @ b, rtol=1e-3, atol=1e-3)
