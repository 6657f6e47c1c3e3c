"""Shared checker of the matmul examples: run on both simulators and under torch_codegen, compare
with a torch result."""
import torch

import pypto.debug
from pypto.runtime import RunConfig


def check(kernel, inputs, out_like, expected, rtol, atol):
    """Run ``kernel(*inputs, out)`` on a2a3sim, a5sim and torch_codegen; assert each is close to ``expected``."""
    results = {}
    for platform in ("a2a3sim", "a5sim"):
        out = torch.zeros_like(out_like)
        kernel(*inputs, out, config=RunConfig(platform=platform))
        results[platform] = out
    ns = {}
    exec(pypto.debug.torch_codegen(kernel.lower(*inputs, torch.zeros_like(out_like))), ns)
    out = torch.zeros_like(out_like)
    ns[kernel.__name__](*inputs, out)
    results["torch_codegen"] = out
    for where, got in results.items():
        torch.testing.assert_close(got, expected, rtol=rtol, atol=atol, msg=lambda m: f"{where}: {m}")
        print(f"{kernel.__name__} on {where}: OK")
