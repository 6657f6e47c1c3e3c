"""Compile time of a seed-sized kernel through the full pipeline (target: <= 100 ms).

    python benchmarks/compile_time.py [--repeat 20]

Measures ``kernel.lower`` (specialise + parse + every pass + verification) and ``ir.compile`` into a
fresh directory (pipeline + codegen + artifacts), median over repeats, after one warm-up.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch

import pypto.ir as ir
import pypto.language as pl
from pypto.frontend.specialize import specialize


@pl.jit
def fused(a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
          out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.add(a, b), 2.0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    tensors = (torch.zeros(64, 128), torch.zeros(64, 128), torch.zeros(64, 128))
    fused.lower(*tensors)
    lower_t, compile_t = [], []
    with tempfile.TemporaryDirectory() as d:
        for i in range(args.repeat):
            t0 = time.perf_counter()
            fused.lower(*tensors)
            lower_t.append(time.perf_counter() - t0)
            prog = specialize(fused, tensors, {}).program
            t0 = time.perf_counter()
            ir.compile(prog, output_dir=f"{d}/{i}", dump_passes=False)
            compile_t.append(time.perf_counter() - t0)
    print(f"lower (parse + pipeline + verify): median {statistics.median(lower_t) * 1e3:.1f} ms")
    print(f"ir.compile (pipeline + codegen + artifacts): median {statistics.median(compile_t) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
