"""Reduction 1: row softmax of a 64x64 FP32 tile (spec §7 R1).

``row_max`` and ``row_sum`` are given a scratch tile (``tmp``), so they reduce in binary-tree
order; ``row_expand_sub`` / ``row_expand_div`` broadcast the [64, 1] row vectors back over the
rows. Checked against ``torch.softmax`` on both simulators and under torch_codegen.
"""
import torch

import pypto.debug
import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def softmax(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        tmp = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        m = pl.row_max(t, tmp)             # [64, 1]
        e = pl.exp(pl.row_expand_sub(t, m))
        tmp2 = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        s = pl.row_sum(e, tmp2)            # [64, 1]
        out = pl.store(pl.row_expand_div(e, s), [0, 0], out)
    return out


def run_everywhere(kernel, inputs, out_like):
    """Results on a2a3sim, a5sim and under torch_codegen."""
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
    return results


if __name__ == "__main__":
    torch.manual_seed(0)
    a = torch.randn(64, 64)
    expected = torch.softmax(a, dim=1)
    for where, got in run_everywhere(softmax, (a,), expected).items():
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5, msg=lambda m: f"{where}: {m}")
        print(f"softmax on {where}: OK")
