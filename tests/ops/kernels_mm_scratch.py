"""Kernels of tests/ops/test_mat_scratch.py: a matmul result consumed on-chip by another matmul
(AutoTileMatmulL0's Mat-scratch placement and FIXPIPE cast fold)."""
from __future__ import annotations

import pypto.language as pl


@pl.jit
def chain_bf16(a: pl.Tensor, b: pl.Tensor, e: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``rint_bf16(a @ b) @ e``: the cast folds into the Acc -> Mat drain (one assemble when
    ``a @ b`` fits Acc, one per sub-tile when it does not)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.matmul(a, b, out_dtype=pl.FP32)
        cb = pl.cast(c, pl.BF16, mode="rint")
        d = pl.matmul(cb, e, out_dtype=pl.FP32)
        out = pl.assemble(out, d, [0, 0])
    return out


@pl.jit
def chain_fp16(a: pl.Tensor, b: pl.Tensor, e: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``rint_fp16(a @ b) @ e`` (FP16 scratch)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.matmul(a, b, out_dtype=pl.FP32)
        cb = pl.cast(c, pl.FP16, mode="rint")
        d = pl.matmul(cb, e, out_dtype=pl.FP32)
        out = pl.assemble(out, d, [0, 0])
    return out


@pl.jit
def chain_round(a: pl.Tensor, b: pl.Tensor, e: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``round_bf16(a @ b) @ e``: ties away from zero, which FIXPIPE cannot do (vector cast: a5 only)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.matmul(a, b, out_dtype=pl.FP32)
        cb = pl.cast(c, pl.BF16, mode="round")
        d = pl.matmul(cb, e, out_dtype=pl.FP32)
        out = pl.assemble(out, d, [0, 0])
    return out


@pl.jit
def chain_fp32(a: pl.Tensor, b: pl.Tensor, e: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``(a @ b) @ e`` with the FP32 intermediate fed straight to the second matmul."""
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [256, 32], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [32, 384], target_memory=pl.Mem.Mat)
        te = pl.load(e, [0, 0], [384, 16], target_memory=pl.Mem.Mat)
        c = pl.matmul(ta, tb)
        d = pl.matmul(c, te)
        out = pl.store(d, [0, 0], out)
    return out



def _chain(out_dtype):
    @pl.jit
    def split_k_chain(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        """``c = a[:, :128] @ b[:128] + a[:, 128:] @ b[128:]`` as the frontend's unrolled split-K form
        (``matmul`` then ``matmul_acc`` then one store) whose ``[272, 144]`` INT32 / FP32 result
        exceeds a2a3's Acc: AutoTileMatmulL0 runs the whole chain per sub-tile."""
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.matmul(a[0:272, 0:128], b[0:128, 0:144], out_dtype=out_dtype)
            acc = pl.matmul_acc(acc, a[0:272, 128:256], b[128:256, 0:144])
            c[0:272, 0:144] = acc
        return c

    return split_k_chain


split_k_chain_i32 = _chain(pl.INT32)
split_k_chain_f32 = _chain(pl.FP32)
