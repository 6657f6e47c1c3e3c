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
    # a loop with constant bounds: every task makes the same accesses, at its own offsets
    for i in pl.parallel(32):
        with pl.at(level=pl.Level.CORE_GROUP):
            for k in pl.range(2):
                x = pl.load(a, [i * 8, k * 32], [8, 32])
                out = pl.store(pl.add(x, 1.0), [i * 8, k * 32], out)
    return out


@pl.jit
def task_dependent_loop(a: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    for i in pl.parallel(32):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * 8, 0], [8, 64])
            for k in pl.range(i % 2 + 1):
                x = pl.exp(x)
            out = pl.store(x, [i * 8, 0], out)
    return out


@pl.jit
def row_chunks(a: pl.Tensor[[256, 512], pl.FP32], out: pl.Out[pl.Tensor[[256, 128], pl.FP32]]):
    # a loop-carried tile accumulating exp() of the four column chunks of each task's rows
    for i in pl.parallel(32):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.exp(pl.load(a, [i * 8, 0], [8, 128]))
            for k in pl.range(1, 4):
                x = pl.load(a, [i * 8, k * 128], [8, 128])
                acc = pl.add(acc, pl.exp(pl.sub(x, 0.5)))
            out = pl.store(acc, [i * 8, 0], out)
    return out


@pl.jit
def matmul_k_loop(a: pl.Tensor[[256, 256], pl.FP16], b: pl.Tensor[[256, 256], pl.FP16],
                  out: pl.Out[pl.Tensor[[256, 256], pl.FP32]]):
    # the usual form: K in a loop, the accumulator carried in Acc
    for i in pl.parallel(4):
        for j in pl.parallel(4):
            with pl.at(level=pl.Level.CORE_GROUP):
                a0 = pl.load(a, [i * 64, 0], [64, 64], target_memory=pl.Mem.Mat)
                b0 = pl.load(b, [0, j * 64], [64, 64], target_memory=pl.Mem.Mat)
                acc = pl.matmul(pl.move(a0, target_memory=pl.Mem.Left), pl.move(b0, target_memory=pl.Mem.Right))
                for k in pl.range(1, 4):
                    ak = pl.load(a, [i * 64, k * 64], [64, 64], target_memory=pl.Mem.Mat)
                    bk = pl.load(b, [k * 64, j * 64], [64, 64], target_memory=pl.Mem.Mat)
                    acc = pl.matmul_acc(acc, pl.move(ak, target_memory=pl.Mem.Left),
                                        pl.move(bk, target_memory=pl.Mem.Right))
                out = pl.store(acc, [i * 64, j * 64], out)
    return out


@pl.jit
def alternating_chunks(a: pl.Tensor[[256, 512], pl.FP32], out: pl.Out[pl.Tensor[[256, 128], pl.FP32]]):
    # an if on the loop variable: the same branch for every task at each step
    for i in pl.parallel(32):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.load(a, [i * 8, 0], [8, 128])
            for k in pl.range(1, 4):
                x = pl.load(a, [i * 8, k * 128], [8, 128])
                if k % 2 == 1:
                    acc = pl.add(acc, pl.exp(x))
                else:
                    acc = pl.mul(acc, x)
            out = pl.store(acc, [i * 8, 0], out)
    return out


@pl.jit
def task_dependent_if(a: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    for i in pl.parallel(32):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * 8, 0], [8, 64])
            if i % 2 == 0:
                x = pl.exp(x)
            out = pl.store(x, [i * 8, 0], out)
    return out


# ---- scalar parameters a gang shares (GANG_SAME): a scale, and a flag that differs between tasks
@pl.function(type=pl.FunctionType.InCore)
def k_scaled_flag(x: pl.Tensor[[8, 64], pl.FP32], scale: pl.Scalar[pl.FP32], twice: pl.Scalar[pl.BOOL],
                  o: pl.Out[pl.Tensor[[8, 64], pl.FP32]]) -> pl.Tensor[[8, 64], pl.FP32]:
    t = pl.mul(pl.load(x, [0, 0], [8, 64]), scale)
    if twice:
        t2 = pl.add(t, t)
        o = pl.store(t2, [0, 0], o)
    else:
        o = pl.store(t, [0, 0], o)
    return o


@pl.program
class SharedScalars:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[1024, 64], pl.FP32], scale: pl.Scalar[pl.FP32],
             out: pl.Out[pl.Tensor[[1024, 64], pl.FP32]]) -> pl.Tensor[[1024, 64], pl.FP32]:
        for i in pl.range(128):
            flag = i % 2 == 0
            k_scaled_flag(pl.slice(a, [8, 64], [i * 8, 0]), scale, flag, pl.slice(out, [8, 64], [i * 8, 0]))
        return out


@pl.jit
def named_like_the_plan(a: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    # scalars named E and P: names GANG_PLAN and kernel_gang use themselves
    for i in pl.parallel(32):
        with pl.at(level=pl.Level.CORE_GROUP):
            for k in pl.range(2):
                E = i * 8
                P = k * 32
                x = pl.load(a, [E, P], [8, 32])
                out = pl.store(pl.add(x, 1.0), [E, P], out)
    return out
