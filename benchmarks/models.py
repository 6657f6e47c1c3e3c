"""Model programs on the simulator against torch eager doing the same math, same machine, same run.

    python benchmarks/models.py [--only decode|prefill|qwen3] [--context 1024] [--batch 64] [--repeat 3] [--per-task]
                                [--threads N]

* ``decode``: paged-attention decode (benchmarks/model_kernels.py) at the size of the reference's
  examples/models/04_paged_attention main(): batch 64, 16 heads, head_dim 128, BF16 KV cache in pages
  of 128 rows, 256 pages per request (max_model_len 32768), context 8192 (``--context 8192``; the
  default 1024 keeps the KV cache at 64 MiB... the pool is sized by ``--max-blocks``).
* ``qwen3``: a Qwen3-style decode layer in BF16 (benchmarks/model_kernels.decode_layer): input
  RMSNorm, Q / K / V projections, RoPE, the new token's K / V written into a paged cache, grouped-
  query paged attention, O projection + residual, post-attention RMSNorm, SwiGLU MLP + residual.
  Default: 16 requests (the reference's batch), 8 query / 2 KV heads of 128 (hidden 1024),
  intermediate 3072, context 1024 -- about 7 s in all on a loaded 2-core machine. The reference's
  Qwen3-32B layer (examples/models/qwen3_jit) is 16 requests, 64 / 8 heads (hidden 8192),
  intermediate 25600, max_seq 4096: ``--q-heads 64 --kv-heads 8 --inter 25600 --qwen-context 4096``
  (1.2 GiB of BF16 weights; minutes here). The output is checked against torch (``QWEN3_TOL``).
* ``prefill``: flash-attention prefill, the same online-softmax pipeline over a contiguous K / V
  (each head is one "request" whose pages are in order), 64-row query tiles: ``--heads`` heads of
  ``--seq`` tokens.

``--per-task`` also times each simulator call with ``RunConfig(sim_batch=False)`` (every task
submitted on its own, as before batched orchestration) in the same minutes and asserts that its
outputs are bit-identical to the batched run's.

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
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("PYPTO_PROG_BUILD_DIR", tempfile.mkdtemp(prefix="pypto_bench_"))

import model_kernels as M  # noqa: E402
from sim_vs_torch import median_times  # noqa: E402

from pypto.driver.build import compile as ir_compile  # noqa: E402
from pypto.runtime import RunConfig  # noqa: E402


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _per_task(run_batched, run_per_task, outs, repeat):
    """``--per-task``: the same call with ``RunConfig(sim_batch=False)`` (every task submitted on its
    own), timed in the same minutes, and its outputs checked bit for bit against the batched run's:
    a string for the report line."""
    saved = [o.clone() for o in outs]
    tp, cp = median_times(run_per_task, repeat)
    same = all(torch.equal(a.view(torch.uint8), b.view(torch.uint8)) for a, b in zip(saved, outs))
    assert same, "batched and per-task runs differ"
    tb, cb = median_times(run_batched, repeat)
    return (f"   per-task (sim_batch=False) {tp * 1e3:.1f} ms, CPU {cp * 1e3:.0f} ms (batched again: {tb * 1e3:.1f} ms, "
            f"CPU {cb * 1e3:.0f} ms; outputs bit-identical)")


def _attention(name, batch, heads, dim, block, max_blocks, ctx, q_rows, table, repeat, per_task=False):
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
    tt, tc = median_times(lambda: M.torch_paged_attention(q, k, v, table, lens, scale, ref, **kw), repeat)
    ts, sc = median_times(lambda: compiled(*args, config=cfg), repeat)
    diff = (out - ref).abs().max().item()
    peak = _rss_mib()
    cfg_off = RunConfig(platform="a2a3sim", sim_seed=0, sim_batch=False)
    extra = _per_task(lambda: compiled(*args, config=cfg), lambda: compiled(*args, config=cfg_off), [out],
                      repeat) if per_task else ""
    print(f"{name:<8} sim {ts * 1e3:9.1f} ms   torch {tt * 1e3:8.1f} ms   ratio {ts / tt:5.1f}x   "
          f"(CPU time: sim {sc * 1e3:.0f} ms, torch {tc * 1e3:.0f} ms, ratio {sc / tc:.1f}x)   "
          f"max|sim-torch| {diff:.1e}   compile cold {cold * 1e3:.0f} ms warm {warm * 1e3:.1f} ms   "
          f"tensors {user / 2**20:.0f} MiB, peak RSS {peak:.0f} MiB (before the tensors {rss0:.0f} MiB; "
          f"peak / (before + tensors) = {peak / (rss0 + user / 2**20):.2f}){extra}", flush=True)


QWEN3_TOL = 5e-3   # max |sim - torch| of the layer's FP32 output (values ~1-5); see _qwen3


def _qwen3(args) -> None:
    """The Qwen3-style decode layer (``model_kernels.decode_layer``) against torch eager doing the same
    math. Tolerance: both sides round to BF16 at the same points (normed activations, Q / K / V, P,
    the attention output, the SwiGLU product) but sum in different orders (row sums: a tree against
    torch's vectorised sum; GEMMs: 16x256x128 tiles against whole-row GEMMs), so an FP32 difference
    of ~1e-6 can flip a BF16 rounding (2^-8 relative) of an activation, which reaches the FP32 output
    through the next projection scaled by a 1/sqrt(K) weight: ~1e-4. A 1% error in the softmax scale
    alone gives 1e-2; a wrong index, page or head gives O(1) differences."""
    T, NH, NKV, D, I, B = args.batch, args.q_heads, args.kv_heads, 128, args.inter, 128
    ctx = args.context
    mb = ctx // B
    H = NH * D
    g = torch.Generator().manual_seed(0)

    def w(*shape, fan_in=None):
        t = torch.randn(*shape, generator=g)
        return (t / math.sqrt(fan_in) if fan_in else t).to(torch.bfloat16)

    rss0 = _rss_mib()
    x = w(T, H)
    w_in, w_post = (1.0 + 0.1 * torch.randn(1, H, generator=g)).to(torch.bfloat16), \
        (1.0 + 0.1 * torch.randn(1, H, generator=g)).to(torch.bfloat16)
    wq, wk, wv = w(H, H, fan_in=H), w(H, NKV * D, fan_in=H), w(H, NKV * D, fan_in=H)
    wo, wg, wu, wd = w(H, H, fan_in=H), w(H, I, fan_in=H), w(H, I, fan_in=H), w(I, H, fan_in=I)
    k_cache, v_cache = w(NKV * T * mb * B, D), w(NKV * T * mb * B, D)
    table = torch.randperm(T * mb, generator=torch.Generator().manual_seed(1)).to(torch.int32)
    lens = torch.full((T,), ctx, dtype=torch.int32)
    inv_freq = 1.0e6 ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)   # Qwen3's rope_theta 1e6
    ang = (lens.double() - 1)[:, None] * inv_freq[None, :]
    cos, sin = ang.cos().float(), ang.sin().float()
    eps, scale = 1e-6, 1.0 / math.sqrt(D)
    out, ref = torch.zeros(T, H), torch.zeros(T, H)
    kc_ref, vc_ref = k_cache.clone(), v_cache.clone()
    tensors = (x, w_in, wq, wk, wv, cos, sin, k_cache, v_cache, table, lens, wo, w_post, wg, wu, wd, out)
    user = sum(t.numel() * t.element_size() for t in tensors)

    opts = RunConfig(platform="a2a3sim").compile_options()
    t = time.perf_counter()
    program = M.decode_layer(T, NH, NKV, D, I, B, mb)
    with contextlib.redirect_stderr(io.StringIO()):   # the intended BF16 double-rounding warnings
        compiled = ir_compile(program, **opts)
        cold = time.perf_counter() - t
        t = time.perf_counter()
        ir_compile(program, **opts)
        warm = time.perf_counter() - t
    cfg = RunConfig(platform="a2a3sim", sim_seed=0)
    sim_args = (x, w_in, wq, wk, wv, cos, sin, k_cache, v_cache, table, lens, wo, w_post, wg, wu, wd,
                eps, scale, out)
    ref_args = (x, w_in, wq, wk, wv, cos, sin, kc_ref, vc_ref, table, lens, wo, w_post, wg, wu, wd,
                eps, scale, ref)
    kw = dict(tokens=T, heads=NH, kv_heads=NKV, dim=D, inter=I, block=B, max_blocks=mb)
    tt, tc = median_times(lambda: M.torch_decode_layer(*ref_args, **kw), args.repeat)
    ts, sc = median_times(lambda: compiled(*sim_args, config=cfg), args.repeat)
    extra = ""
    if args.per_task:
        # (the layer writes the new token's K / V rows in place: every call writes the same values)
        cfg_off = RunConfig(platform="a2a3sim", sim_seed=0, sim_batch=False)
        extra = _per_task(lambda: compiled(*sim_args, config=cfg), lambda: compiled(*sim_args, config=cfg_off),
                          [out, k_cache, v_cache], args.repeat)
    if getattr(args, "pairs", 0):
        _pairs(lambda: compiled(*sim_args, config=cfg), lambda: M.torch_decode_layer(*ref_args, **kw), args.pairs)
    diff = (out - ref).abs().max().item()
    # the caches: the rows written agree to one BF16 ulp (2^-7 relative: an FP32 difference of the
    # K / V projections between differently shaped GEMMs can flip the BF16 rounding); all others exact
    cache_diff = max(((a.float() - b.float()).abs() / b.float().abs().clamp_min(2.0**-126)).max().item()
                     for a, b in ((k_cache, kc_ref), (v_cache, vc_ref)))
    peak = _rss_mib()
    print(f"qwen3 b{T} h{NH}/{NKV}x{D} hidden {H} inter {I} ctx {ctx}: sim {ts * 1e3:.1f} ms   "
          f"torch {tt * 1e3:.1f} ms   ratio {ts / tt:.1f}x   (CPU time: sim {sc * 1e3:.0f} ms, torch "
          f"{tc * 1e3:.0f} ms, ratio {sc / tc:.1f}x)   max|sim-torch| {diff:.1e} (output max "
          f"{ref.abs().max().item():.1f}, tolerance {QWEN3_TOL}), KV cache max relative diff {cache_diff:.1e}   "
          f"compile cold {cold * 1e3:.0f} ms warm {warm * 1e3:.1f} ms   tensors {user / 2**20:.0f} MiB, "
          f"peak RSS {peak:.0f} MiB (before the tensors {rss0:.0f} MiB){extra}", flush=True)
    assert diff <= QWEN3_TOL, f"qwen3 layer: max |sim - torch| {diff} > {QWEN3_TOL}"
    assert cache_diff <= 2.0**-7, f"qwen3 layer: the KV cache differs by {cache_diff} (relative)"


def _pairs(sim, ref, n: int, block: int = 25) -> None:
    """Sim and torch calls alternated in one process, ``n`` pairs in blocks of ``block``: both see the
    same machine state (this VM's speed drifts by tens of percent between runs), so the per-block
    ratio is steadier than two separate medians. Torch's time depends on glibc's mmap threshold
    (benchmarks/README.md): pin it with MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ to compare
    against its fast mode."""
    ratios, tot = [], [0.0, 0.0]
    for b in range(max(1, n // block)):
        ts = tt = 0.0
        for _ in range(block):
            t0 = time.process_time()
            sim()
            t1 = time.process_time()
            ref()
            t2 = time.process_time()
            ts, tt = ts + t1 - t0, tt + t2 - t1
        ratios.append(ts / tt)
        tot[0], tot[1] = tot[0] + ts, tot[1] + tt
        print(f"  pairs block {b}: sim {ts / block * 1e3:.1f} ms  torch {tt / block * 1e3:.1f} ms  "
              f"ratio {ts / tt:.2f}x", flush=True)
    ratios.sort()
    print(f"  pairs: ratio per block min {ratios[0]:.2f} median {ratios[len(ratios) // 2]:.2f} max "
          f"{ratios[-1]:.2f}, overall {tot[0] / tot[1]:.2f}x (CPU time)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["decode", "prefill", "qwen3"], default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--per-task", action="store_true",
                    help="also time RunConfig(sim_batch=False) and check its outputs bit for bit")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--max-blocks", type=int, default=None,
                    help="pages per request in the pool (default: context / 128; 256 is the reference's size)")
    ap.add_argument("--heads", type=int, default=8, help="prefill: heads")
    ap.add_argument("--seq", type=int, default=1024, help="prefill: tokens")
    ap.add_argument("--q-heads", type=int, default=8, help="qwen3: query heads (hidden = heads x 128)")
    ap.add_argument("--kv-heads", type=int, default=2, help="qwen3: key / value heads")
    ap.add_argument("--inter", type=int, default=3072, help="qwen3: MLP intermediate size")
    ap.add_argument("--qwen-context", type=int, default=1024, help="qwen3: context incl. the new token")
    ap.add_argument("--qwen-batch", type=int, default=16, help="qwen3: requests (decode tokens)")
    ap.add_argument("--pairs", type=int, default=0,
                    help="qwen3: also alternate N sim and torch calls in one process (blocks of 25) and print the ratios")
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
                   table, args.repeat, args.per_task)
    if args.only in (None, "prefill"):
        mb = args.seq // 128
        table = torch.arange(args.heads * mb, dtype=torch.int32)   # contiguous: head h's keys in order
        _attention(f"prefill h{args.heads} s{args.seq}", args.heads, args.seq, 128, 128, mb, args.seq, 64,
                   table, args.repeat, args.per_task)
    if args.only in (None, "qwen3"):
        _qwen3(argparse.Namespace(**{**vars(args), "batch": args.qwen_batch, "context": args.qwen_context}))


if __name__ == "__main__":
    main()
