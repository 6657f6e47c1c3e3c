"""Quickstart 3: a loop-carried value (rebinding t in pl.range makes it an SSA iter_arg)."""
import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def accumulate(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.add(a, a)
        for i in pl.range(3):
            t = pl.add(t, a)
        out[:] = pl.mul(t, t)
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
    a = torch.randn(64, 128)
    check(accumulate, (a,), (5 * a) ** 2)
