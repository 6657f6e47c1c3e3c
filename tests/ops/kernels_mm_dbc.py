"""Kernels of tests/ops/test_matmul_dbc.py: a matmul whose chooser design is double-buffered C."""
from __future__ import annotations

import pypto.language as pl


@pl.jit
def mm_store(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``out = a @ b`` (FP32 accumulate), the result stored straight to GM."""
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.matmul(a, b, out_dtype=pl.FP32)
        out = pl.assemble(out, c, [0, 0])
    return out
