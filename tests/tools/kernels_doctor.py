"""Kernels for tests/tools/test_doctor_parts.py (kernels are parsed from source: module level)."""
import pypto.language as pl


@pl.jit.incore
def masked_sum(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [16, 64], valid_shape=[16, 24])
    tmp = pl.create_tile([16, 64], dtype=pl.FP32)
    out = pl.store(pl.row_sum(pl.exp(t), tmp), [0, 0], out)    # the padding's exp(0) = 1 joins the sum
    return out


@pl.jit
def calls_masked_sum(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 1], pl.FP32]]):
    out = masked_sum(x, out)
    return out


@pl.jit
def ranged_producers(a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
    tmp = pl.create_tensor([128, 64], pl.FP32, manual_dep=True)
    for i in pl.range(1, 3):
        with pl.at(level=pl.Level.CORE_GROUP):
            tmp = pl.store(pl.exp(pl.load(a, [i * 32, 0], [32, 64])), [i * 32, 0], tmp)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(tmp, 1.0)
    return out
