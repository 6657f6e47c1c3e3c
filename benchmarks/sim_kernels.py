"""Kernels for benchmarks/sim_vs_torch.py (module level in a real file: source is read with inspect)."""
import pypto.language as pl

ROWS = 2  # rows of 4096 FP32 per task of the elementwise chain (32 KB tiles)


@pl.jit
def chain4(a: pl.Tensor[[4096, 4096], pl.FP32], b: pl.Tensor[[4096, 4096], pl.FP32],
           out: pl.Out[pl.Tensor[[4096, 4096], pl.FP32]]):
    for i in pl.parallel(2048):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * 2, 0], [2, 4096])
            y = pl.load(b, [i * 2, 0], [2, 4096])
            out = pl.store(pl.exp(pl.sub(pl.mul(pl.add(x, y), x), y)), [i * 2, 0], out)
    return out


@pl.jit
def small_tasks(a: pl.Tensor[[80000, 64], pl.FP32], out: pl.Out[pl.Tensor[[80000, 64], pl.FP32]]):
    for i in pl.parallel(10000):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * 8, 0], [8, 64])
            out = pl.store(pl.add(x, 1.0), [i * 8, 0], out)
    return out


@pl.jit
def matmul_1k(a: pl.Tensor[[1024, 1024], pl.FP16], b: pl.Tensor[[1024, 1024], pl.FP16],
              out: pl.Out[pl.Tensor[[1024, 1024], pl.FP32]]):
    for i in pl.parallel(8):
        for j in pl.parallel(8):
            with pl.at(level=pl.Level.CORE_GROUP):
                c = pl.matmul(a[i * 128:i * 128 + 128, :], b[:, j * 128:j * 128 + 128], out_dtype=pl.FP32)
                out[i * 128:i * 128 + 128, j * 128:j * 128 + 128] = c
    return out
