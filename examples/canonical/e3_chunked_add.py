"""E3 (spec §7): ``chunked_add`` of two 512x128 FP32 tensors in four 128-row blocks.

A [512, 128] FP32 operand is 256 KB, more than the Vec buffer, so the add goes block by block:
``for i in pl.range(4)`` loads rows ``i*128 .. i*128+127`` of each operand as a [128, 128] tile,
adds, and stores the block at the same offset. The loop is inside one InCore scope: one task.
``pl.store`` writes ``out`` in place; its result is not rebound (rebinding ``out`` inside the
loop currently fails verification after ConvertTensorToTileOps).
"""
import torch

import pypto.language as pl
from _check import check


@pl.jit
def chunked_add(a: pl.Tensor[[512, 128], pl.FP32], b: pl.Tensor[[512, 128], pl.FP32],
                out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            ta = pl.load(a, [i * 128, 0], [128, 128])
            tb = pl.load(b, [i * 128, 0], [128, 128])
            pl.store(pl.add(ta, tb), [i * 128, 0], out)
    return out


def main():
    torch.manual_seed(0)
    a, b = torch.randn(512, 128), torch.randn(512, 128)
    check(chunked_add, (a, b, torch.zeros(512, 128)), a + b, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    main()
