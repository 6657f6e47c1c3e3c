"""Reduction 2: reductions read the padding (spec §6.2).

A [64, 64] tile loaded with ``valid_shape=[64, 40]`` has 24 padding columns (zero after the load).
``row_max`` reduces the whole physical tile, so over all-negative data every row maximum is 0.0
(the padding) — the symptom "row maxima all 0.0" of the precision workflow. Filling the padding
with the identity of max first (``pl.fillpad(t, pl.PadValue.min)``: -inf) gives the true maxima
of the 40 valid columns.
"""
import torch

import pypto.language as pl
from softmax import run_everywhere


@pl.jit
def row_max_padded(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64], valid_shape=[64, 40])
        tmp = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.row_max(t, tmp), [0, 0], out)
    return out


@pl.jit
def row_max_filled(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64], valid_shape=[64, 40])
        f = pl.fillpad(t, pl.PadValue.min)
        tmp = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.row_max(f, tmp), [0, 0], out)
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    a = -torch.rand(64, 64) - 0.5                       # all negative
    out = torch.zeros(64, 1)
    for where, got in run_everywhere(row_max_padded, (a,), out).items():
        assert torch.equal(got, torch.zeros(64, 1)), where   # the padding won
        print(f"row_max without fillpad on {where}: all 0.0 (padding participated)")
    expected = a[:, :40].max(dim=1, keepdim=True).values
    for where, got in run_everywhere(row_max_filled, (a,), out).items():
        assert torch.equal(got, expected), where
        print(f"row_max after fillpad(min) on {where}: OK")
