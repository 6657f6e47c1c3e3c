"""Kernels for tests/compiler/test_pipeline_loops.py (parsed from source, so they live in a module)."""
import pypto.language as pl


@pl.jit
def piped_tasks(a: pl.Tensor[[256, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
                out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    # n tasks of 16 rows in a pipelined orchestration loop
    for i in pl.pipeline(n, stage=3):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * 16, 0], [16, 64])
            out = pl.store(pl.add(pl.mul(x, 2.0), 1.0), [i * 16, 0], out)
    return out


@pl.jit
def ranged_tasks(a: pl.Tensor[[256, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
                 out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    for i in pl.range(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * 16, 0], [16, 64])
            out = pl.store(pl.add(pl.mul(x, 2.0), 1.0), [i * 16, 0], out)
    return out


@pl.jit
def piped_carry(a: pl.Tensor[[16, 512], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    # an implicitly carried tile (re-assigned in the body) through a stage-2 pipeline of 7 trips
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(a, [0, 0], [16, 64])
        for k in pl.pipeline(1, 8, stage=2):
            x = pl.load(a, [0, k * 64], [16, 64])
            acc = pl.add(pl.mul(acc, 0.5), x)
        out = pl.store(acc, [0, 0], out)
    return out


@pl.jit
def piped_yield(a: pl.Tensor[[16, 512], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    # the explicit form: init_values and pl.yield_, stride 2, stage 3 (iterations 1, 3, 5, 7)
    with pl.at(level=pl.Level.CORE_GROUP):
        acc0 = pl.load(a, [0, 0], [16, 64])
        for k, (acc,) in pl.pipeline(1, 8, 2, stage=3, init_values=(acc0,)):
            x = pl.load(a, [0, k * 64], [16, 64])
            acc2 = pl.yield_(pl.sub(pl.mul(acc, 0.5), x))
        out = pl.store(acc2, [0, 0], out)
    return out


@pl.jit
def spmd_rows(a: pl.Tensor[[256, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
              out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    # n blocks; block i owns rows [16 i, 16 i + 16)
    for i in pl.spmd(n):
        x = pl.load(a, [i * 16, 0], [16, 64])
        out = pl.store(pl.add(pl.mul(x, 2.0), 1.0), [i * 16, 0], out)
    return out
