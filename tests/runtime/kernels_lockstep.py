"""Kernels for tests/runtime/test_lockstep.py (parsed from source, so they live in a module)."""
import pypto.language as pl


@pl.jit
def softmax_rows(a: pl.Tensor[[512, 256], pl.FP32], out: pl.Out[pl.Tensor[[512, 256], pl.FP32]]):
    for i in pl.parallel(64):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * 8, 0], [8, 256])
            tmp = pl.create_tile([8, 256], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            m = pl.row_max(x, tmp)
            e = pl.exp(pl.row_expand_sub(x, m))
            s = pl.row_sum(e, tmp)
            out = pl.store(pl.row_expand_div(e, s), [i * 8, 0], out)
    return out


@pl.jit
def overlapping_writes(a: pl.Tensor[[264, 64], pl.FP32], out: pl.Out[pl.Tensor[[264, 64], pl.FP32]]):
    # task i writes rows [4i, 4i + 8): each task's block overlaps its neighbours' (a race by design)
    for i in pl.parallel(64):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * 4, 0], [8, 64])
            out = pl.store(pl.add(x, 1.0), [i * 4, 0], out)
    return out


@pl.jit
def column_blocks(a: pl.Tensor[[64, 1024], pl.FP32], out: pl.Out[pl.Tensor[[64, 1024], pl.FP32]]):
    # task (i, j) owns the 16x64 block (i, j): footprints of one block row interleave in memory
    # (their storage ranges overlap) but are disjoint as boxes
    for i in pl.parallel(4):
        for j in pl.parallel(16):
            with pl.at(level=pl.Level.CORE_GROUP):
                x = pl.load(a, [i * 16, j * 64], [16, 64])
                out = pl.store(pl.mul(pl.exp(x), 2.0), [i * 16, j * 64], out)
    return out


@pl.jit
def looped_body(a: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    for i in pl.parallel(32):
        with pl.at(level=pl.Level.CORE_GROUP):
            for k in pl.range(2):
                x = pl.load(a, [i * 8, k * 32], [8, 32])
                out = pl.store(pl.add(x, 1.0), [i * 8, k * 32], out)
    return out
