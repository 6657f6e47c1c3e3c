"""Kernels of tests/ops/test_matmul_pipeline_k.py: a user pl.pipeline K loop around matmul /
matmul_acc on a pl.create_tensor accumulator, whose per-chunk matmul AutoTileMatmulL0 K-tiles."""
from __future__ import annotations

import pypto.language as pl


@pl.jit
def chunked_mm(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``out = a @ b`` in K chunks of 192: chunk 0 is a matmul, the others accumulate."""
    chunk = 192
    m, k = a.shape
    n = b.shape[1]
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.create_tensor([m, n], dtype=pl.FP32)
        for kb in pl.pipeline(k // chunk, stage=2):
            k0 = kb * chunk
            ta = a[:, k0:k0 + chunk]
            tb = b[k0:k0 + chunk, 0:n]
            if kb == 0:
                acc = pl.matmul(ta, tb, out_dtype=pl.FP32)
            else:
                acc = pl.matmul_acc(acc, ta, tb)
        out = pl.assemble(out, acc, [0, 0])
    return out


@pl.jit
def chunked_mm_256(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """:func:`chunked_mm` with K chunks of 256."""
    chunk = 256
    m, k = a.shape
    n = b.shape[1]
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.create_tensor([m, n], dtype=pl.FP32)
        for kb in pl.pipeline(k // chunk, stage=2):
            k0 = kb * chunk
            ta = a[:, k0:k0 + chunk]
            tb = b[k0:k0 + chunk, 0:n]
            if kb == 0:
                acc = pl.matmul(ta, tb, out_dtype=pl.FP32)
            else:
                acc = pl.matmul_acc(acc, ta, tb)
        out = pl.assemble(out, acc, [0, 0])
    return out
