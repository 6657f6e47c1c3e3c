"""Helpers for the language tests: run a kernel on both simulated platforms and the reference."""
import inspect

import torch

from pypto.debug.torch_codegen import torch_codegen
from pypto.runtime import RunConfig

PLATFORMS = ("a2a3sim", "a5sim")


def _clone(args):
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in args]


def run_ref(kernel, *args, stage: str = "lowered"):
    """Run ``kernel`` under the torch reference executor (of the frontend or the lowered program)."""
    a = _clone(args)
    prog = kernel.lower(*a) if stage == "lowered" else kernel._specialize(tuple(a), {}).program
    ns: dict = {}
    exec(compile(torch_codegen(prog), f"<ref {kernel.__name__}>", "exec"), ns)
    names = list(inspect.signature(kernel.fn).parameters)
    params = [p.name for p in prog.entry.params]
    ns[prog.entry.name](*[a[names.index(n)] for n in params])
    return a


def check_all(kernel, args, expected: dict, atol=1e-5, rtol=1e-5):
    """Run on both platforms and under torch_codegen (frontend and lowered IR); compare the
    arguments at the indices of ``expected`` with the expected tensors."""
    runs = {}
    for plat in PLATFORMS:
        a = _clone(args)
        kernel(*a, config=RunConfig(platform=plat))
        runs[plat] = a
    runs["ref-frontend"] = run_ref(kernel, *args, stage="frontend")
    runs["ref-lowered"] = run_ref(kernel, *args, stage="lowered")
    for who, a in runs.items():
        for i, want in expected.items():
            torch.testing.assert_close(a[i], want, atol=atol, rtol=rtol, msg=lambda m, who=who: f"{who}: {m}")
    return runs
