"""Quickstart 2: two ops in one kernel scope; the intermediate never leaves on-chip memory."""
import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def add_then_square(a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.add(a, b)
        out[:] = pl.mul(s, s)
    return out


def check(kernel, inputs, expected, exact=False):
    """Run on both simulators and under torch_codegen; compare each result with ``expected``."""
    import pypto.debug

    results = {}
    for platform in ("a2a3sim", "a5sim"):
        out = torch.zeros_like(expected)
        kernel(*inputs, out, config=RunConfig(platform=platform))
        results[platform] = out
    src = pypto.debug.torch_codegen(kernel.lower(*inputs, torch.zeros_like(expected)))
    ns = {}
    exec(src, ns)
    out = torch.zeros_like(expected)
    ns[kernel.__name__](*inputs, out)
    results["torch_codegen"] = out
    for where, got in results.items():
        if exact:
            assert torch.equal(got, expected), where
        else:
            torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4, msg=lambda m: f"{where}: {m}")
        print(f"{kernel.__name__} on {where}: OK")


if __name__ == "__main__":
    torch.manual_seed(0)
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    check(add_then_square, (a, b), (a + b) ** 2)
