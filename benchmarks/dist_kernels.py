"""Kernels of benchmarks/dist_allreduce.py (module level: kernels are parsed from source)."""
import os

import pypto.language as pl
import pypto.language.distributed as pld

# FP32 [R, C]: 64 MiB per rank; PYPTO_BENCH_ROWS=256 gives 4 MiB (the Ray figure)
R, C = int(os.environ.get("PYPTO_BENCH_ROWS", 4096)), 4096
NR = 8


@pl.jit.incore
def allreduce_k(data: pld.DistributedTensor[[R, C], pl.FP32], sig: pld.DistributedTensor[[NR, 1], pl.INT32]):
    data = pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Sum)
    return data


@pl.jit
def allreduce_rank(data: pld.DistributedTensor[[R, C], pl.FP32], sig: pld.DistributedTensor[[NR, 1], pl.INT32]):
    return allreduce_k(data, sig)


@pl.jit.host
def allreduce_host(x: pl.Tensor[[NR, 1, 1], pl.FP32]):
    data_buf = pld.alloc_window_buffer([R, C], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([NR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        allreduce_rank(pld.window(data_buf, [R, C], dtype=pl.FP32), pld.window(sig_buf, [NR, 1], dtype=pl.INT32),
                       device=r)
