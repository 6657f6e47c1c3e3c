"""M1: tensor-level matmul, 128x128 FP16 operands, FP32 result (out_dtype=pl.FP32).

The compiler loads both operands into Mat, moves them to Left/Right, runs the cube matmul into
Acc (FP32 accumulator) and stores Acc straight to the FP32 output.
"""
import torch

import pypto.language as pl
from _check import check


@pl.jit
def matmul_small(a: pl.Tensor[[128, 128], pl.FP16], b: pl.Tensor[[128, 128], pl.FP16],
                 c: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="matmul"):
        c[:] = pl.matmul(a, b, out_dtype=pl.FP32)
    return c


if __name__ == "__main__":
    torch.manual_seed(0)
    a, b = torch.randn(128, 128).half(), torch.randn(128, 128).half()
    check(matmul_small, (a, b), torch.zeros(128, 128), a.float() @ b.float(), rtol=1e-2, atol=1e-2)
