"""Kernels of tests/ops/test_move_scope.py (parsed from source: module level)."""
import pypto.language as pl


@pl.jit
def split_k_int8(a: pl.Tensor[[16, 1024], pl.INT8], b: pl.Tensor[[1024, 256], pl.INT8],
                 c: pl.Out[pl.Tensor[[16, 256], pl.INT32]]):
    """``c = a @ b`` over eight 128-wide K chunks of a pipelined loop: chunk 0 by the then branch
    (a matmul), the others by the else branch (matmul_acc), both reading the chunk's Mat tiles
    (each branch needs its own Left / Right moves; the chunk fits L0, so AutoTile adds none)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.create_tensor([16, 256], dtype=pl.INT32)
        for kb in pl.pipeline(0, 8, stage=2):
            k0 = kb * 128
            at = a[0:16, k0:k0 + 128]
            bt = b[k0:k0 + 128, 0:256]
            if k0 == 0:
                acc = pl.matmul(at, bt, out_dtype=pl.INT32)
            else:
                acc = pl.matmul_acc(acc, at, bt)
        c[0:16, 0:256] = acc
    return c
