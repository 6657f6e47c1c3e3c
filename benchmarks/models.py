"""Model programs on the simulator against torch eager doing the same math, same machine, same run.

    python benchmarks/models.py [--only decode|prefill] [--context 1024] [--batch 64] [--repeat 3]
                                [--threads N]

* ``decode``: paged-attention decode (benchmarks/model_kernels.py) at the size of the reference's
  examples/models/04_paged_attention main(): batch 64, 16 heads, head_dim 128, BF16 KV cache in pages
  of 128 rows, 256 pages per request (max_model_len 32768), context 8192 (``--context 8192``; the
  default 1024 keeps the KV cache at 64 MiB... the pool is sized by ``--max-blocks``).
* ``prefill``: flash-attention prefill, the same online-softmax pipeline over a contiguous K / V
  (each head is one "request" whose pages are in order), 64-row query tiles: ``--heads`` heads of
  ``--seq`` tokens.

Per workload: compile time (cold: first compile in the process; warm: the same program again),
simulator time and torch eager time (median of ``--repeat`` after one warm-up) and their ratio, the
largest difference between the two results, and the process's peak RSS against the bytes of the
tensors the caller allocated (the simulator runs the caller's In tensors in place: no copy of the
KV cache). The peak RSS includes the interpreter, torch and the compiler (~300-400 MiB here), which
is why the ratio is only meaningful at sizes where the tensors dominate.
"""
from __future__ import annotations

import argparse
import io
import contextlib
import math
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("PYPTO_PROG_BUILD_DIR", tempfile.mkdtemp(prefix="pypto_bench_"))

import model_kernels as M  # noqa: E402

from pypto.driver.build import compile as ir_compile  # noqa: E402
from pypto.runtime import RunConfig  # noqa: E402


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _median(fn, repeat: int) -> tuple[float, float]:
    """Median wall time and median CPU time (this process) of ``fn`` after one warm-up. On a loaded
    machine the CPU time is the steadier figure (wall time includes waiting for a core)."""
    fn()
    ts, cs = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        ts.append(time.perf_counter() - t)
        cs.append(time.process_time() - c)
    return statistics.median(ts), statistics.median(cs)


def _attention(name, batch, heads, dim, block, max_blocks, ctx, q_rows, table, repeat):
    torch.manual_seed(0)
    rss0 = _rss_mib()
    q = torch.randn(batch * heads, dim, dtype=torch.bfloat16)
    k = torch.randn(batch * max_blocks * block, dim, dtype=torch.bfloat16)
    v = torch.randn_like(k)
    lens = torch.full((batch,), ctx, dtype=torch.int32)
    out = torch.zeros(batch * heads, dim)
    ref = torch.zeros_like(out)
    scale = 1.0 / math.sqrt(dim)
    user = sum(t.numel() * t.element_size() for t in (q, k, v, table, lens, out))
    args = (q, k, v, table, lens, scale, out)

    opts = RunConfig(platform="a2a3sim").compile_options()   # what pypto.runtime.run compiles with
    t = time.perf_counter()
    program = M.paged_attention(batch, heads, dim, block, max_blocks, q_rows)
    with contextlib.redirect_stderr(io.StringIO()):   # the intended BF16 double-rounding warning
        compiled = ir_compile(program, **opts)
        cold = time.perf_counter() - t
        t = time.perf_counter()
        ir_compile(program, **opts)
        warm = time.perf_counter() - t
    cfg = RunConfig(platform="a2a3sim", sim_seed=0)
    kw = dict(batch=batch, heads=heads, dim=dim, block=block, max_blocks=max_blocks, q_rows=q_rows)
    tt, tc = _median(lambda: M.torch_paged_attention(q, k, v, table, lens, scale, ref, **kw), repeat)
    ts, sc = _median(lambda: compiled(*args, config=cfg), repeat)
    diff = (out - ref).abs().max().item()
    peak = _rss_mib()
    print(f"{name:<8} sim {ts * 1e3:9.1f} ms   torch {tt * 1e3:8.1f} ms   ratio {ts / tt:5.1f}x   "
          f"(CPU time: sim {sc * 1e3:.0f} ms, torch {tc * 1e3:.0f} ms, ratio {sc / tc:.1f}x)   "
          f"max|sim-torch| {diff:.1e}   compile cold {cold * 1e3:.0f} ms warm {warm * 1e3:.1f} ms   "
          f"tensors {user / 2**20:.0f} MiB, peak RSS {peak:.0f} MiB (before the tensors {rss0:.0f} MiB; "
          f"peak / (before + tensors) = {peak / (rss0 + user / 2**20):.2f})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["decode", "prefill"], default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--max-blocks", type=int, default=None,
                    help="pages per request in the pool (default: context / 128; 256 is the reference's size)")
    ap.add_argument("--heads", type=int, default=8, help="prefill: heads")
    ap.add_argument("--seq", type=int, default=1024, help="prefill: tokens")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    load = os.getloadavg()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load average {load[0]:.1f} / {load[1]:.1f}, "
          f"torch {torch.__version__} ({torch.get_num_threads()} threads), python {platform.python_version()}")
    if args.only in (None, "decode"):
        mb = args.max_blocks or args.context // 128
        table = torch.randperm(args.batch * mb, generator=torch.Generator().manual_seed(1)).to(torch.int32)
        _attention(f"decode b{args.batch} ctx{args.context}", args.batch, 16, 128, 128, mb, args.context, 16,
                   table, args.repeat)
    if args.only in (None, "prefill"):
        mb = args.seq // 128
        table = torch.arange(args.heads * mb, dtype=torch.int32)   # contiguous: head h's keys in order
        _attention(f"prefill h{args.heads} s{args.seq}", args.heads, args.seq, 128, 128, mb, args.seq, 64,
                   table, args.repeat)


if __name__ == "__main__":
    main()
