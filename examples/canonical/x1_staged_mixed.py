"""X1 (spec §7), "staged" variant: ``a[128, 256] @ b[256, 128]`` (FP16, FP32 accumulation) plus
an FP32 bias, as two scopes: a cube task (``matmul`` with ``out_dtype=pl.FP32`` into an FP32
intermediate in global memory) and a vector task (``add`` of the bias).

The one-scope mixed form, ``pl.at(..., optimizations=[pl.split(pl.SplitMode.UP_DOWN)])``, is not
written: ``pl.split`` / the ``optimizations=`` argument do not exist in this implementation.
"""
import torch

import pypto.language as pl
from _check import check

M, K, N = 128, 256, 128


@pl.jit
def matmul_bias_staged(a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16],
                       bias: pl.Tensor[[M, N], pl.FP32], out: pl.Out[pl.Tensor[[M, N], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="cube"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="vector"):
        out[:] = pl.add(acc, bias)
    return out


def main():
    torch.manual_seed(0)
    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    bias = torch.randn(M, N)
    check(matmul_bias_staged, (a, b, bias, torch.zeros(M, N)), a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)


if __name__ == "__main__":
    main()
