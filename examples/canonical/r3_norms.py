"""R3 (spec §7): RMSNorm and LayerNorm over the hidden dimension, 32x64 FP32, eps = 1e-5.

* ``row_sum`` reduces each row to a [32, 1] column with a [32, 64] Vec scratch tile.
* [N, 1] tiles are column-major; the scalar steps (``mul`` by 1/64, ``add`` eps, ``sqrt``) run on
  the row vector reshaped to [1, 32] and reshaped back to [32, 1] afterwards.
* ``row_expand_div`` divides every row by its [32, 1] statistic; ``col_expand_mul`` scales every
  column by ``gamma[1, 64]``.
* LayerNorm centres first (``row_expand_sub`` of the mean) and adds ``beta``: ``col_expand``
  broadcasts beta[1, 64] to [32, 64], then a plain ``add``.

References: ``x / sqrt(mean(x^2) + eps) * gamma``; ``(x - mu) / sqrt(var + eps) * gamma + beta``.
"""
import torch

import pypto.language as pl
from _check import check

EPS = 1e-5
INV_H = 1.0 / 64


@pl.jit
def rms_norm(x: pl.Tensor[[32, 64], pl.FP32], gamma: pl.Tensor[[1, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        g = pl.load(gamma, [0, 0], [1, 64])
        tmp = pl.create_tile([32, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        ss = pl.row_sum(pl.mul(t, t), tmp)                 # [32, 1]
        ms = pl.mul(pl.reshape(ss, [1, 32]), INV_H)        # mean of squares, [1, 32]
        rms = pl.reshape(pl.sqrt(pl.add(ms, EPS)), [32, 1])
        y = pl.row_expand_div(t, rms)
        out = pl.store(pl.col_expand_mul(y, g), [0, 0], out)
    return out


@pl.jit
def layer_norm(x: pl.Tensor[[32, 64], pl.FP32], gamma: pl.Tensor[[1, 64], pl.FP32],
               beta: pl.Tensor[[1, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        g = pl.load(gamma, [0, 0], [1, 64])
        b = pl.load(beta, [0, 0], [1, 64])
        tmp = pl.create_tile([32, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        s = pl.row_sum(t, tmp)                             # [32, 1]
        mean = pl.reshape(pl.mul(pl.reshape(s, [1, 32]), INV_H), [32, 1])
        xc = pl.row_expand_sub(t, mean)
        tmp2 = pl.create_tile([32, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        ss = pl.row_sum(pl.mul(xc, xc), tmp2)
        var = pl.mul(pl.reshape(ss, [1, 32]), INV_H)
        std = pl.reshape(pl.sqrt(pl.add(var, EPS)), [32, 1])
        scaled = pl.col_expand_mul(pl.row_expand_div(xc, std), g)
        shift = pl.col_expand(scaled, b)                   # beta broadcast to [32, 64]
        out = pl.store(pl.add(scaled, shift), [0, 0], out)
    return out


def main():
    torch.manual_seed(0)
    x, gamma, beta = torch.randn(32, 64), torch.randn(1, 64), torch.randn(1, 64)
    rms_ref = x / torch.sqrt((x * x).mean(dim=1, keepdim=True) + EPS) * gamma
    check(rms_norm, (x, gamma, torch.zeros(32, 64)), rms_ref, rtol=1e-5, atol=1e-5)
    ln_ref = torch.nn.functional.layer_norm(x, (64,), eps=EPS) * gamma + beta
    check(layer_norm, (x, gamma, beta, torch.zeros(32, 64)), ln_ref, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    main()
