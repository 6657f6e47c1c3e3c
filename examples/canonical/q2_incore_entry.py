"""Q2 (spec §7), third form: an ``@pl.jit.incore`` kernel ``add_kernel`` (tile ops) and a
``@pl.jit`` entry ``add_program`` that just calls it. Reference ``a + b``.

(The other Q2 forms are ``examples/quickstart/add_then_square.py`` and ``accumulate.py``.)
"""
import torch

import pypto.language as pl
from _check import check


@pl.jit.incore
def add_kernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    ta = pl.load(a, [0, 0], [128, 128])
    tb = pl.load(b, [0, 0], [128, 128])
    out = pl.store(pl.add(ta, tb), [0, 0], out)
    return out


@pl.jit
def add_program(a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    out = add_kernel(a, b, out)
    return out


def main():
    torch.manual_seed(0)
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    check(add_program, (a, b, torch.zeros(128, 128)), a + b, rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    main()
