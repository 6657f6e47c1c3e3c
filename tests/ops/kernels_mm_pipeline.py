"""Kernels of tests/ops/test_matmul_pipeline_k.py: a user pl.pipeline K loop around matmul /
matmul_acc on a pl.create_tensor accumulator, whose per-chunk matmul AutoTileMatmulL0 K-tiles."""
from __future__ import annotations

import pypto.language as pl
from kernel_templates import kernels


# The K-chunked matmul, one kernel per chunk width (a case is one line below).
_CHUNKED = '''
@pl.jit
def $name(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``out = a @ b`` in K chunks of $chunk: chunk 0 is a matmul, the others accumulate."""
    chunk = $chunk
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
'''

chunked_mm = kernels("chunked_mm", _CHUNKED, chunk=192).chunked_mm
chunked_mm_256 = kernels("chunked_mm_256", _CHUNKED, chunk=256).chunked_mm_256


@pl.jit
def split_k_wide(a: pl.Tensor[[16, 1024], pl.INT8], b: pl.Tensor[[1024, 1152], pl.INT8],
                 c: pl.Out[pl.Tensor[[16, 1152], pl.INT32]]):
    """The frontend's split-K form whose ``[16, 1152]`` INT32 accumulator (two of it with the loop's
    carried copy) exceeds a2a3's Acc: AutoTileMatmulL0 runs the whole K loop per output tile."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.create_tensor([16, 1152], dtype=pl.INT32)
        for kb in pl.pipeline(0, 8, stage=2):
            k0 = kb * 128
            at = a[0:16, k0:k0 + 128]
            bt = b[k0:k0 + 128, 0:1152]
            if k0 == 0:
                acc = pl.matmul(at, bt, out_dtype=pl.INT32)
            else:
                acc = pl.matmul_acc(acc, at, bt)
        c[0:16, 0:1152] = acc
    return c
