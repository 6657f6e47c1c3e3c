"""Shared checker of the elementwise examples: run a kernel on both simulators and under
torch_codegen and compare each result with a torch result."""
import torch

import pypto.debug
from pypto.runtime import RunConfig


def check(kernel, inputs, expected, exact=True, rtol=1e-5, atol=1e-6):
    """Run ``kernel(*inputs, out)`` on a2a3sim, a5sim and torch_codegen; assert each equals
    ``expected`` (bit for bit when ``exact``, else within rtol/atol)."""
    results = {}
    for platform in ("a2a3sim", "a5sim"):
        out = torch.zeros_like(expected)
        kernel(*inputs, out, config=RunConfig(platform=platform))
        results[platform] = out
    ns = {}
    exec(pypto.debug.torch_codegen(kernel.lower(*inputs, torch.zeros_like(expected))), ns)
    out = torch.zeros_like(expected)
    ns[kernel.__name__](*inputs, out)
    results["torch_codegen"] = out
    for where, got in results.items():
        if exact:
            assert torch.equal(got, expected), f"{kernel.__name__} on {where}: differs from torch"
        else:
            torch.testing.assert_close(got, expected, rtol=rtol, atol=atol, msg=lambda m: f"{where}: {m}")
        print(f"{kernel.__name__} on {where}: OK")
