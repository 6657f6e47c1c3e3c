"""M5 (spec §7): split-K matmul, M = N = 64, K = 512, SPLIT = 4, KS = 128, FP32.

A ``zero_init`` task writes zeros to ``c`` (``pl.assemble`` of a ``pl.full`` tensor); then
``for ks in pl.parallel(0, 4)`` one task per K slice computes ``a[:, k0:k0+KS] @ b[k0:k0+KS, :]``
and adds it into ``c`` with ``pl.assemble(..., atomic=pl.AtomicType.Add)``. The partial sums
arrive in a scheduler-dependent order, so results may differ in the last bits between runs
(tolerance 1e-3). See ``examples/precision/case4_split_k.py`` for the nondeterminism itself.
"""
import torch

import pypto.language as pl
from _check import check

M, N, K, SPLIT = 64, 64, 512, 4
KS = K // SPLIT


@pl.jit
def split_k(a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32], c: pl.Out[pl.Tensor[[M, N], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="zero_init"):
        c = pl.assemble(c, pl.full([M, N], dtype=pl.FP32, value=0.0), [0, 0])
    for ks in pl.parallel(0, SPLIT):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="partial"):
            k0 = ks * KS
            partial = pl.matmul(a[:, k0:k0 + KS], b[k0:k0 + KS, :], out_dtype=pl.FP32)
            c = pl.assemble(c, partial, [0, 0], atomic=pl.AtomicType.Add)
    return c


def main():
    torch.manual_seed(0)
    a, b = torch.randn(M, K), torch.randn(K, N)
    c0 = torch.full((M, N), 7.0)   # not zero: the zero_init task must clear it
    check(split_k, (a, b, c0), a @ b, rtol=1e-3, atol=1e-3)


if __name__ == "__main__":
    main()
