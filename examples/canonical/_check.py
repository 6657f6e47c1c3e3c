"""Shared checker of the canonical examples (spec §7): run a kernel on a2a3sim, a5sim and under
torch_codegen, and compare the written outputs with torch results."""
import inspect

import torch

import pypto.debug
from pypto.runtime import RunConfig

PLATFORMS = ("a2a3sim", "a5sim")


def _fresh(args):
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def run_everywhere(kernel, args):
    """Run ``kernel(*args)`` on both simulators and under torch_codegen, each on a fresh copy of
    ``args`` (tensors cloned, so zeroed outputs and InOut initial values are reused). Returns
    ``{where: args_after_run}``. Scalar arguments are specialisation constants: the reference
    entry takes only the parameters the lowered program kept."""
    results = {}
    for platform in PLATFORMS:
        run_args = _fresh(args)
        kernel(*run_args, config=RunConfig(platform=platform))
        results[platform] = run_args
    run_args = _fresh(args)
    lowered = kernel.lower(*_fresh(args))
    ns = {}
    exec(pypto.debug.torch_codegen(lowered), ns)
    by_name = dict(zip(inspect.signature(kernel.fn).parameters, run_args))
    ns[lowered.entry.name](*[by_name[p.name] for p in lowered.entry.params])
    results["torch_codegen"] = run_args
    return results


def check(kernel, args, expected, rtol=1e-5, atol=1e-5):
    """``expected``: ``{arg_index: tensor}`` for each output (Out / InOut) argument, or one tensor
    for the last argument. Asserts every executor's outputs are within ``rtol``/``atol``."""
    if isinstance(expected, torch.Tensor):
        expected = {len(args) - 1: expected}
    for where, got in run_everywhere(kernel, args).items():
        for idx, exp in expected.items():
            torch.testing.assert_close(got[idx], exp, rtol=rtol, atol=atol,
                                       msg=lambda m: f"{kernel.__name__} on {where}, arg {idx}: {m}")
        print(f"{kernel.__name__} on {where}: OK")
