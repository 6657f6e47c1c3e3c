"""8-rank allreduce of 64 MiB (FP32) per rank: the simulator against torch summing the eight buffers.

    python benchmarks/dist_allreduce.py [--repeat 5] [--ray]
    PYPTO_BENCH_ROWS=256 python benchmarks/dist_allreduce.py --ray    # 4 MiB per rank

What is timed (median of ``--repeat`` runs after one warm-up, compile excluded):

* **phase**: the launch phase of ``dist_kernels.allreduce_host`` on the in-process engine: eight
  simulator runs of a kernel whose work is ``pld.tensor.allreduce(data, sig)`` on a [4096, 4096]
  window, i.e. the rendezvous, the reduction in the seeded rank order and every rank's copy of the
  result into its window. The windows are filled with random data when allocated (a hook on the
  run's World stands in for an earlier phase that wrote them) and the result is checked bit for
  bit against torch's chain in the same order.
* **run**: the whole call (host interpreter, window allocation: 8 x 64 MiB zeroed, the hook's fill
  of the windows, the phase).
* **torch**: ``acc = b0.clone(); acc.add_(b1) ... acc.add_(b7)`` on eight 64 MiB buffers, and
  ``functools.reduce(torch.add, bufs)``; the faster of the two. Measured interleaved with the
  simulator runs so both see the same machine load.

``--ray`` also times the same program on the Ray engine (a local cluster, started once).
"""
from __future__ import annotations

import argparse
import functools
import os
import random
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pypto.ir.distributed_compiled_program import DistributedConfig  # noqa: E402
from pypto.ops.support import dist as support_dist  # noqa: E402
from pypto.runtime import RunConfig  # noqa: E402
from pypto.runtime.distributed import engine as engine_mod  # noqa: E402
from pypto.runtime.distributed import program as program_mod  # noqa: E402

import dist_kernels as D  # noqa: E402


def _torch_sum(bufs):
    t0 = time.perf_counter()
    acc = bufs[0].clone()
    for b in bufs[1:]:
        acc.add_(b)
    t1 = time.perf_counter()
    functools.reduce(torch.add, bufs)
    t2 = time.perf_counter()
    return min(t1 - t0, t2 - t1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--ray", action="store_true", help="also time the Ray engine")
    args = ap.parse_args()
    n = D.NR
    seed = 0
    g = torch.Generator().manual_seed(1)
    bufs = [torch.randn(D.R, D.C, generator=g) for _ in range(n)]
    order = list(range(n))
    random.Random(seed).shuffle(order)
    want = bufs[order[0]].clone()
    for r in order[1:]:
        want.add_(bufs[r])

    phases: list[float] = []
    windows: list = []

    class Timed(engine_mod.InProcessEngine):
        def run_phase(self, plan, world, config):
            t = time.perf_counter()
            super().run_phase(plan, world, config)
            phases.append(time.perf_counter() - t)

    def hook(world: support_dist.World) -> None:
        add = world.add_window

        def filled(name, tensors, group=None):
            for r, t in tensors.items():
                if t.numel() == D.R * D.C * 4:   # the data window, not the signals
                    t.view(torch.float32).copy_(bufs[r].reshape(-1))
                    windows.append(t)
            return add(name, tensors, group)
        world.add_window = filled

    def one(backend: str):
        windows.clear()
        cfg = RunConfig(platform="a2a3sim", sim_seed=seed, distributed_backend=backend,
                        distributed_config=DistributedConfig(device_ids=list(range(n))))
        compiled = D.allreduce_host.compile(torch.zeros(n, 1, 1), config=cfg)
        t = time.perf_counter()
        program_mod.execute_distributed_compiled(compiled, (torch.zeros(n, 1, 1),), {}, cfg, world_hook=hook)
        total = time.perf_counter() - t
        for w in windows:
            assert torch.equal(w.view(torch.float32).reshape(D.R, D.C), want), "allreduce result differs"
        return total

    real_get = engine_mod.get_engine
    engine_mod.get_engine = lambda name: Timed() if (name or "inprocess") == "inprocess" else real_get(name)
    program_mod.get_engine = engine_mod.get_engine
    one("inprocess")   # warm-up: compile, first allocations
    runs, torch_t = [], []
    for _ in range(args.repeat):
        torch_t.append(_torch_sum(bufs))
        runs.append(one("inprocess"))
    ph = statistics.median(phases[1:])
    tt = statistics.median(torch_t)
    load = os.getloadavg()[0]
    print(f"ranks {n}, {D.R * D.C * 4 >> 20} MiB FP32 per rank, torch threads {torch.get_num_threads()}, nproc {os.cpu_count()}, "
          f"load average {load:.1f}")
    print(f"torch sum of the {n} buffers: {tt * 1e3:.0f} ms (median of {args.repeat})")
    print(f"in-process allreduce phase:   {ph * 1e3:.0f} ms  -> ratio {ph / tt:.2f}x (target <= 3x)")
    print(f"in-process whole run:         {statistics.median(runs) * 1e3:.0f} ms (window allocation included)")
    if args.ray:
        from pypto.runtime.distributed import ray_engine

        os.environ.setdefault("PYPTO_RAY_OBJECT_STORE_MB", "2048")
        ray_engine.ensure_ray()
        t = time.perf_counter()
        one("ray")
        first = time.perf_counter() - t
        ray_runs = [one("ray") for _ in range(max(1, args.repeat // 2))]
        print(f"ray whole run:                {statistics.median(ray_runs) * 1e3:.0f} ms (first, with actor "
              f"start: {first * 1e3:.0f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
