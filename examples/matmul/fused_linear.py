"""F1: a fused linear layer from two kernels: an ``@pl.jit.incore`` cube kernel (x @ w, stored
from Acc to an intermediate GM tensor) and an ``@pl.jit.incore`` vector kernel (+ bias); the entry
allocates the intermediate with ``pl.create_tensor`` and chains the calls.

Two kernels because on a2a3 a matmul result (Acc) cannot move to the vector unit (Vec): it goes
through global memory."""
import torch

import pypto.language as pl
from _check import check


@pl.jit.incore
def linear_mm(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    tx = pl.load(x, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
    tw = pl.load(w, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
    acc = pl.matmul(pl.move(tx, target_memory=pl.Mem.Left), pl.move(tw, target_memory=pl.Mem.Right))
    out = pl.store(acc, [0, 0], out)
    return out


@pl.jit.incore
def linear_bias(y: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    ty = pl.load(y, [0, 0], [64, 64])
    tb = pl.load(bias, [0, 0], [64, 64])
    out = pl.store(pl.add(ty, tb), [0, 0], out)
    return out


@pl.jit
def fused_linear(x: pl.Tensor[[64, 64], pl.FP32], w: pl.Tensor[[64, 64], pl.FP32],
                 bias: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    mm_out = pl.create_tensor([64, 64], dtype=pl.FP32)
    mm_out = linear_mm(x, w, mm_out)
    out = linear_bias(mm_out, bias, out)
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    x, w, bias = torch.full((64, 64), 2.0), torch.full((64, 64), 3.0), torch.randn(64, 64)
    check(fused_linear, (x, w, bias), torch.zeros(64, 64), x @ w + bias, rtol=1e-3, atol=1e-3)
