"""M2: K-blocked matmul A[128,512] @ B[512,128] FP16: ``matmul`` on the first K chunk, then
``matmul_acc`` over the others in a ``pl.range`` loop; operands are tensor slices.

The accumulator stays in Acc across iterations (a loop-carried tile); the slices become loads into
Mat (a cube consumer) at offsets that depend on the loop index.
"""
import torch

import pypto.language as pl
from _check import check

K_CHUNK = 128


@pl.jit
def matmul_k_blocked(a: pl.Tensor[[128, 512], pl.FP16], b: pl.Tensor[[512, 128], pl.FP16],
                     c: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="matmul_k_blocked"):
        acc = pl.matmul(a[:, 0:128], b[0:128, :], out_dtype=pl.FP32)
        for k in pl.range(1, 4):
            k0 = k * 128
            acc = pl.matmul_acc(acc, a[:, k0:k0 + 128], b[k0:k0 + 128, :])
        c[:] = acc
    return c


if __name__ == "__main__":
    torch.manual_seed(0)
    a, b = torch.randn(128, 512).half(), torch.randn(512, 128).half()
    check(matmul_k_blocked, (a, b), torch.zeros(128, 128), a.float() @ b.float(), rtol=1e-2, atol=1e-2)
