"""D2 (spec §7): parameter directions. ``scale_rows`` reads FP16 ``x`` (In), casts it to FP32 and
multiplies by the Scalar ``factor``; it writes ``out`` (Out) = scaled and updates ``acc`` (InOut)
to ``acc + scaled``. The entry ``scale_rows_by_two`` calls it with the literal 2.0, written
``pl.const(2.0, pl.FP32)``: a bare ``2.0`` argument makes the callee specialise ``factor`` away
while the call still passes it ("scale_rows() takes 3 arguments, got 4").
"""
import torch

import pypto.language as pl
from _check import check


@pl.jit.incore
def scale_rows(x: pl.Tensor, factor: pl.FP32, acc: pl.InOut[pl.Tensor], out: pl.Out[pl.Tensor]):
    t = pl.cast(pl.load(x, [0, 0], [64, 128]), pl.FP32)
    scaled = pl.mul(t, factor)
    a = pl.load(acc, [0, 0], [64, 128])
    acc = pl.store(pl.add(a, scaled), [0, 0], acc)
    out = pl.store(scaled, [0, 0], out)
    return acc, out


@pl.jit
def scale_rows_by_two(x: pl.Tensor[[64, 128], pl.FP16], acc: pl.InOut[pl.Tensor[[64, 128], pl.FP32]],
                      out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    acc, out = scale_rows(x, pl.const(2.0, pl.FP32), acc, out)
    return acc, out


def main():
    torch.manual_seed(0)
    x = torch.randn(64, 128).half()
    acc0 = torch.randn(64, 128)
    scaled = x.float() * 2
    check(scale_rows_by_two, (x, acc0, torch.zeros(64, 128)), {1: acc0 + scaled, 2: scaled},
          rtol=1e-2, atol=1e-2)


if __name__ == "__main__":
    main()
