"""Kernels for the fault-location, DFX-output and task-window tests (issue 13)."""
import pypto.language as pl


@pl.jit
def load_past_end(a: pl.Tensor, out: pl.Out[pl.Tensor], r: pl.Scalar[pl.INT64]):
    for i in pl.range(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [r + i * 8, 0], [8, 64])
            pl.store(t, [i * 8, 0], out)
    return out


@pl.jit
def add_one_inout(x: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]):
    for i in pl.range(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [i * 16, 0], [16, 64])
            x = pl.store(pl.add(t, 1.0), [i * 16, 0], x)
    return x


@pl.jit
def many_increments(x: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]):
    # 800 tasks, each on its own loop-iteration scope (ring 1): 200 increments of each 16-row band
    for i in pl.range(800):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [(i % 4) * 16, 0], [16, 64])
            x = pl.store(pl.add(t, 1.0), [(i % 4) * 16, 0], x)
    return x
