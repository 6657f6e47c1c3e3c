"""Kernels of the concurrency test (tests/runtime/test_concurrency.py) and its worker.

Run as a script, this module is one worker process: ``python kernels_concurrency.py THREADS JOBS
SHARED_DIR SEED`` runs ``JOBS`` compile-and-run jobs in each of ``THREADS`` threads (started
together), checks every result bit for bit against torch and prints one JSON line
``{"runs": n, "wrong": [...], "errors": [...]}``.
"""
import json
import sys
import threading
import traceback

import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def doubled(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)
    return out


@pl.jit
def tripled(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, 3.0)
    return out


@pl.jit
def squared(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, a)
    return out


KERNELS = {"doubled": (doubled, lambda a: a + a), "tripled": (tripled, lambda a: a * 3.0),
           "squared": (squared, lambda a: a * a)}
ROWS = (64, 32, 16)


def jobs(worker: int, count: int) -> list:
    """A fixed job list per worker: (kernel, rows, shared dir or default, seed). Workers overlap on
    purpose: the same kernel and shape in several threads (one cache entry built concurrently), and
    other shapes of the same kernel through one shared directory (the 64 -> 32 -> 64 pattern)."""
    names = sorted(KERNELS)
    out = []
    for j in range(count):
        name = names[(worker + j) % len(names)]
        rows = ROWS[(worker * 7 + j) % len(ROWS)]
        out.append((name, rows, (worker + j) % 2 == 0, worker * 1000 + j))
    return out


def run_jobs(worker: int, count: int, shared_dir: str, start: threading.Barrier | None = None) -> dict:
    """Run one worker's jobs; returns ``{"runs", "wrong", "errors"}`` (never raises)."""
    wrong, errors, runs = [], [], 0
    if start is not None:
        start.wait()
    for name, rows, shared, seed in jobs(worker, count):
        kernel, expect = KERNELS[name]
        fresh = pl.jit(kernel.fn)  # an empty in-memory cache: this thread compiles (or reuses from disk)
        g = torch.Generator().manual_seed(seed)
        a = torch.randn(rows, 128, generator=g)
        out = torch.full((rows, 128), float("nan"))
        cfg = RunConfig(save_kernels_dir=shared_dir) if shared else RunConfig()
        try:
            for _ in range(2):  # the second call takes the in-memory cache
                out.fill_(float("nan"))
                fresh(a, out, config=cfg)
                runs += 1
                if not torch.equal(out, expect(a)):
                    bad = int((out != expect(a)).any(dim=1).sum())
                    wrong.append(f"worker {worker}: {name} rows={rows} shared={shared}: {bad} rows differ")
        except Exception:  # noqa: BLE001 - every failure is reported, none may happen
            errors.append(f"worker {worker}: {name} rows={rows} shared={shared}:\n{traceback.format_exc()}")
    return {"runs": runs, "wrong": wrong, "errors": errors}


def run_threads(threads: int, count: int, shared_dir: str, first_worker: int = 0) -> dict:
    """``threads`` workers started together; their results merged."""
    start = threading.Barrier(threads)
    results = [None] * threads

    def body(i):
        results[i] = run_jobs(first_worker + i, count, shared_dir, start)

    ts = [threading.Thread(target=body, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    merged = {"runs": 0, "wrong": [], "errors": []}
    for r in results:
        merged["runs"] += r["runs"]
        merged["wrong"] += r["wrong"]
        merged["errors"] += r["errors"]
    return merged


if __name__ == "__main__":
    n_threads, n_jobs, shared, first = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    print(json.dumps(run_threads(n_threads, n_jobs, shared, first)))
