"""Shared checker of the language examples: both simulators and the torch reference."""
import torch

from pypto.debug import torch_codegen
from pypto.runtime import RunConfig


def check(kernel, inputs, expected, atol=1e-5):
    """Run ``kernel(*inputs, out)`` on a2a3sim and a5sim and under torch_codegen; assert vs ``expected``."""
    for platform in ("a2a3sim", "a5sim"):
        out = torch.zeros_like(expected)
        kernel(*inputs, out, config=RunConfig(platform=platform))
        torch.testing.assert_close(out, expected, atol=atol, rtol=atol)
    import inspect

    ns: dict = {}
    lowered = kernel.lower(*inputs, torch.zeros_like(expected))
    exec(torch_codegen(lowered), ns)
    out = torch.zeros_like(expected)
    args = dict(zip(inspect.signature(kernel.fn).parameters, (*inputs, out)))
    ns[lowered.entry.name](*[args[p.name] for p in lowered.entry.params])  # scalar constants are compiled in
    torch.testing.assert_close(out, expected, atol=atol, rtol=atol)
    print(f"[PASS] {kernel.__name__}")
