"""The probe pattern (seed: "When the value you want is not a tensor").

An intermediate inside an InCore kernel never reaches GM, so it cannot be tagged or dumped. Give it
somewhere to go: a temporary ``pl.Out`` parameter, ``probe = pl.store(acc, [0, 0], probe)``, threaded
out through the entry. A debugging edit, not a design: remove it once the question is answered.
Run: python examples/precision/probe.py
"""
import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit.incore
def fused(x: pl.Tensor, out: pl.Out[pl.Tensor], probe: pl.Out[pl.Tensor]):   # probe: temporary
    acc = pl.add(pl.load(x, [0, 0], [64, 128]), 1.0)
    probe = pl.store(acc, [0, 0], probe)    # the intermediate, now inspectable
    out = pl.store(pl.exp(acc), [0, 0], out)
    return out, probe


@pl.jit
def entry(x: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
          probe: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    out, probe = fused(x, out, probe)
    return out, probe


def main() -> str:
    torch.manual_seed(0)
    x = torch.randn(64, 128)
    out, probe = torch.zeros(64, 128), torch.zeros(64, 128)
    entry(x, out, probe, config=RunConfig(platform="a2a3sim"))
    assert torch.equal(probe, x + 1.0), "the intermediate matches the host reference"
    assert torch.allclose(out, torch.exp(x + 1.0), rtol=1e-6, atol=1e-6)
    return "probe: the accumulator before exp equals x + 1 bit for bit; the step after it is the one to check"


if __name__ == "__main__":
    print(main())
