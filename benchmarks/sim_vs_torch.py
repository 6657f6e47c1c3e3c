"""Simulator speed against torch eager on the same math (median of several runs, same machine).

    python benchmarks/sim_vs_torch.py [--repeat 5] [--threads N] [--only NAME]

* ``chain4``: 4096x4096 FP32, exp((a + b) * a - b) as 2048 tasks of 2 rows each (parallel loop;
  three [2, 4096] FP32 tiles = 96 KB of the 184 KB Vec: the largest power-of-two row block that fits).
* ``softmax``: 4096x1024 FP32 row softmax as 256 tasks of 16 rows (block + reduction scratch tile,
  64 KB each); torch runs the same five ops (amax, sub, exp, sum, div).
* ``matmul_1k``: 1024^3 FP16 matmul with FP32 accumulation, 64 tasks of 128x128 output blocks, K in
  chunks of 256 (each chunk fills Left / Right: 64 KB).
* ``small_tasks``: 10,000 independent tasks on 8x64 blocks (target >= 20,000 tasks/s).
* ``mm_softmax``: a mixed cube + vector kernel, softmax(q @ k) with q 4096x128 FP16, k 128x256 FP16,
  FP32 scores: 128 Group tasks of 32 rows, each a cluster whose cube core computes the scores and
  pushes them through a cross-core pipe to the vector core, which does the row softmax
  (ExpandMixedKernel splits the scope); torch runs the same ops (FP32 matmul, amax, sub, exp, sum, div).

The simulator time is one call of the compiled program (orchestration + dependency inference +
scheduling + kernels + copy-back), excluding compilation (done once before timing), with lockstep
gangs on (the default); "task by task" is the same call with ``RunConfig(sim_lockstep=False)``.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("PYPTO_PROG_BUILD_DIR", tempfile.mkdtemp(prefix="pypto_bench_"))

import sim_kernels as K  # noqa: E402

from pypto.runtime import RunConfig  # noqa: E402


CPU: dict = {}   # the median CPU time (process_time: all threads) of each median_time call, by fn


def median_times(fn, repeat: int) -> tuple[float, float]:
    """Median wall time and median CPU time (this process: all threads) of ``repeat`` calls of
    ``fn`` after a warm-up (on a loaded machine the wall time includes waiting for a core; the CPU
    time does not)."""
    fn()
    ts, cs = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        ts.append(time.perf_counter() - t)
        cs.append(time.process_time() - c)
    return statistics.median(ts), statistics.median(cs)


def median_time(fn, repeat: int) -> float:
    """Median wall time of ``repeat`` calls after a warm-up; the median CPU time goes to ``CPU[fn]``."""
    wall, CPU[fn] = median_times(fn, repeat)
    return wall


def bench(name, kernel, args, torch_fn, repeat, tasks=None):
    import io, contextlib
    with contextlib.redirect_stderr(io.StringIO()):
        compiled = kernel.compile(*args)
    cfg = RunConfig(platform="a2a3sim", sim_seed=0)
    # torch first, in a process that has not run the simulator yet: torch's large temporaries then
    # reuse warm heap memory (after the simulator's allocations they may page-fault on every call,
    # up to 3-4x slower), so the ratio is taken against torch's best case
    ref = median_time(torch_fn, repeat)
    sim_fn = lambda: compiled(*args, config=cfg)  # noqa: E731
    sim = median_time(sim_fn, repeat)
    off = RunConfig(platform="a2a3sim", sim_seed=0, sim_lockstep=False)
    alone = median_time(lambda: compiled(*args, config=off), repeat)
    line = f"{name:<12} sim {sim * 1e3:9.1f} ms   torch {ref * 1e3:8.2f} ms   ratio {sim / ref:8.1f}x"
    if tasks:
        line += f"   {tasks / sim:9.0f} tasks/s"
    cpu = f"   cpu {CPU[sim_fn] * 1e3:.1f} / {CPU[torch_fn] * 1e3:.1f} ms = {CPU[sim_fn] / CPU[torch_fn]:.1f}x"
    load = f"   load {os.getloadavg()[0]:.1f}"
    print(line + f"   (task by task: {alone * 1e3:.1f} ms, {alone / ref:.1f}x)" + cpu + load, flush=True)
    return sim, ref


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default=None, help="chain4, softmax, matmul, small or mm_softmax")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch.set_num_threads for both sides (default: torch's own choice)")
    args = ap.parse_args()
    if args.only is None:
        # one fresh process per workload: what one workload allocates changes how fast torch's
        # large temporaries are in the next (see bench())
        import subprocess

        # glibc's dynamic mmap / trim thresholds make torch's 16 MB temporaries page-fault on some
        # calls and not others (softmax: 3-5 ms or 15-20 ms from one process to the next); fixed
        # thresholds keep them in warm heap memory: torch's best case, reproducibly
        env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="33554432", MALLOC_TRIM_THRESHOLD_="1073741824")
        for name in ("chain4", "softmax", "matmul", "small", "mm_softmax"):
            cmd = [sys.executable, __file__, "--repeat", str(args.repeat), "--only", name]
            if args.threads:
                cmd += ["--threads", str(args.threads)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout.splitlines()
            print("\n".join(out if name == "chain4" else out[1:]), flush=True)
        return
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"torch {torch.__version__}, threads {torch.get_num_threads()}, python {platform.python_version()}")
    if args.only in (None, "chain4"):
        a, b, o = torch.randn(4096, 4096), torch.randn(4096, 4096), torch.zeros(4096, 4096)
        bench("chain4", K.chain4, (a, b, o), lambda: torch.exp((a + b) * a - b), args.repeat, tasks=2048)
    if args.only in (None, "softmax"):
        a, o = torch.randn(4096, 1024), torch.zeros(4096, 1024)

        def softmax_ref():  # the kernel's math, op for op: max, sub, exp, sum, div
            e = torch.exp(a - a.amax(dim=-1, keepdim=True))
            return e / e.sum(dim=-1, keepdim=True)

        bench("softmax", K.softmax, (a, o), softmax_ref, args.repeat, tasks=256)
    if args.only in (None, "matmul"):
        a = torch.randn(1024, 1024, dtype=torch.float16)
        b = torch.randn(1024, 1024, dtype=torch.float16)
        o = torch.zeros(1024, 1024)
        bench("matmul_1k", K.matmul_1k, (a, b, o), lambda: a.float() @ b.float(), args.repeat, tasks=64)
    if args.only in (None, "mm_softmax"):
        q = torch.randn(4096, 128, dtype=torch.float16)
        k = torch.randn(128, 256, dtype=torch.float16) * 0.1
        o = torch.zeros(4096, 256)

        def mm_softmax_ref():  # the kernel's math, op for op
            s = q.float() @ k.float()
            e = torch.exp(s - s.amax(dim=-1, keepdim=True))
            return e / e.sum(dim=-1, keepdim=True)

        bench("mm_softmax", K.mm_softmax, (q, k, o), mm_softmax_ref, args.repeat, tasks=128)
    if args.only in (None, "small"):
        a, o = torch.randn(80000, 64), torch.zeros(80000, 64)
        bench("small_tasks", K.small_tasks, (a, o), lambda: a + 1.0, args.repeat, tasks=10000)


if __name__ == "__main__":
    main()
