"""Quickstart 7: FP16 add; simulator and reference executor agree bit for bit."""
import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def add_fp16(a: pl.Tensor[[128, 128], pl.FP16], b: pl.Tensor[[128, 128], pl.FP16],
             out: pl.Out[pl.Tensor[[128, 128], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
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
    a, b = torch.randn(128, 128).half(), torch.randn(128, 128).half()
    check(add_fp16, (a, b), a + b, exact=True)
