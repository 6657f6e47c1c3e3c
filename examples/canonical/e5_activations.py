"""E5 (spec §7): activations built from elementwise tile ops.

* ``fused_add_relu`` 128x128: ``relu(a + b)``.
* ``silu`` / ``gelu`` / ``swiglu`` / ``geglu`` 32x128. There is no sigmoid op: it is built as
  ``recip(add(exp(mul(x, -1.0)), 1.0))`` = 1 / (1 + e^-x). ``gelu`` is the sigmoid approximation
  ``x * sigmoid(1.702 x)`` (the ``x * 1.702`` comes first); ``swiglu`` = ``silu(g) * u`` and
  ``geglu`` = ``gelu(g) * u``.

The sigmoid is written out in each kernel: an ``@pl.jit.inline`` helper taking a tile parameter is
not accepted by the parser (a bare ``pl.Tile`` annotation is rejected, and an annotated one gets
"Parameter 'x' is a tensor but the call passes Var").
"""
import torch

import pypto.language as pl
from _check import check


@pl.jit
def fused_add_relu(a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                   out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [128, 128])
        tb = pl.load(b, [0, 0], [128, 128])
        out = pl.store(pl.relu(pl.add(ta, tb)), [0, 0], out)
    return out


@pl.jit
def silu(x: pl.Tensor[[32, 128], pl.FP32], out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 128])
        out = pl.store(pl.mul(t, pl.recip(pl.add(pl.exp(pl.mul(t, -1.0)), 1.0))), [0, 0], out)
    return out


@pl.jit
def gelu(x: pl.Tensor[[32, 128], pl.FP32], out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 128])
        t17 = pl.mul(t, 1.702)
        s = pl.recip(pl.add(pl.exp(pl.mul(t17, -1.0)), 1.0))
        out = pl.store(pl.mul(t, s), [0, 0], out)
    return out


@pl.jit
def swiglu(gate: pl.Tensor[[32, 128], pl.FP32], up: pl.Tensor[[32, 128], pl.FP32],
           out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        g = pl.load(gate, [0, 0], [32, 128])
        u = pl.load(up, [0, 0], [32, 128])
        s = pl.recip(pl.add(pl.exp(pl.mul(g, -1.0)), 1.0))
        out = pl.store(pl.mul(pl.mul(g, s), u), [0, 0], out)
    return out


@pl.jit
def geglu(gate: pl.Tensor[[32, 128], pl.FP32], up: pl.Tensor[[32, 128], pl.FP32],
          out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        g = pl.load(gate, [0, 0], [32, 128])
        u = pl.load(up, [0, 0], [32, 128])
        g17 = pl.mul(g, 1.702)
        s = pl.recip(pl.add(pl.exp(pl.mul(g17, -1.0)), 1.0))
        out = pl.store(pl.mul(pl.mul(g, s), u), [0, 0], out)
    return out


def main():
    torch.manual_seed(0)
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    check(fused_add_relu, (a, b, torch.zeros(128, 128)), torch.relu(a + b))
    x, g, u = torch.randn(32, 128), torch.randn(32, 128), torch.randn(32, 128)
    z = torch.zeros(32, 128)
    check(silu, (x, z), x * torch.sigmoid(x))
    check(gelu, (x, z), x * torch.sigmoid(1.702 * x))
    check(swiglu, (g, u, z), g * torch.sigmoid(g) * u)
    check(geglu, (g, u, z), g * torch.sigmoid(1.702 * g) * u)


if __name__ == "__main__":
    main()
