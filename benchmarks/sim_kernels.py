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
    # one task per 128x128 FP32 output block (64 KB of the 128 KB Acc); K in four chunks of 256 so
    # that each operand chunk fills Left / Right (64 KB FP16); the K steps are unrolled (a loop-carried
    # accumulator costs a 64 KB Acc copy per step)
    for i in pl.parallel(8):
        for j in pl.parallel(8):
            with pl.at(level=pl.Level.CORE_GROUP):
                a0 = pl.load(a, [i * 128, 0], [128, 256], target_memory=pl.Mem.Mat)
                b0 = pl.load(b, [0, j * 128], [256, 128], target_memory=pl.Mem.Mat)
                acc = pl.matmul(pl.move(a0, target_memory=pl.Mem.Left), pl.move(b0, target_memory=pl.Mem.Right))
                a1 = pl.load(a, [i * 128, 256], [128, 256], target_memory=pl.Mem.Mat)
                b1 = pl.load(b, [256, j * 128], [256, 128], target_memory=pl.Mem.Mat)
                acc = pl.matmul_acc(acc, pl.move(a1, target_memory=pl.Mem.Left),
                                    pl.move(b1, target_memory=pl.Mem.Right))
                a2 = pl.load(a, [i * 128, 512], [128, 256], target_memory=pl.Mem.Mat)
                b2 = pl.load(b, [512, j * 128], [256, 128], target_memory=pl.Mem.Mat)
                acc = pl.matmul_acc(acc, pl.move(a2, target_memory=pl.Mem.Left),
                                    pl.move(b2, target_memory=pl.Mem.Right))
                a3 = pl.load(a, [i * 128, 768], [128, 256], target_memory=pl.Mem.Mat)
                b3 = pl.load(b, [768, j * 128], [256, 128], target_memory=pl.Mem.Mat)
                acc = pl.matmul_acc(acc, pl.move(a3, target_memory=pl.Mem.Left),
                                    pl.move(b3, target_memory=pl.Mem.Right))
                out = pl.store(acc, [i * 128, j * 128], out)
    return out


SM_ROWS = 16  # rows of 1024 FP32 per softmax task (64 KB tiles: the block and the reduction scratch)


@pl.jit
def softmax(a: pl.Tensor[[4096, 1024], pl.FP32], out: pl.Out[pl.Tensor[[4096, 1024], pl.FP32]]):
    for i in pl.parallel(256):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * 16, 0], [16, 1024])
            tmp = pl.create_tile([16, 1024], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            m = pl.row_max(x, tmp)
            e = pl.exp(pl.row_expand_sub(x, m))
            s = pl.row_sum(e, tmp)
            out = pl.store(pl.row_expand_div(e, s), [i * 16, 0], out)
    return out


MS_M, MS_K, MS_N, MS_ROWS = 4096, 128, 256, 32   # mixed matmul + softmax: 128 tasks of 32 rows


@pl.jit
def mm_softmax(q: pl.Tensor[[4096, 128], pl.FP16], k: pl.Tensor[[128, 256], pl.FP16],
               out: pl.Out[pl.Tensor[[4096, 256], pl.FP32]]):
    # a mixed kernel per task: the cube computes the [32, 256] FP32 scores q_i @ k, the vector core
    # their row softmax (ExpandMixedKernel splits the scope into AIC + AIV functions and a pipe)
    for i in pl.parallel(128):
        with pl.at(level=pl.Level.CORE_GROUP):
            a = pl.load(q, [i * 32, 0], [32, 128], target_memory=pl.Mem.Mat)
            b = pl.load(k, [0, 0], [128, 256], target_memory=pl.Mem.Mat)
            s = pl.matmul(pl.move(a, target_memory=pl.Mem.Left), pl.move(b, target_memory=pl.Mem.Right))
            tmp = pl.create_tile([32, 256], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            m = pl.row_max(s, tmp)
            e = pl.exp(pl.row_expand_sub(s, m))
            z = pl.row_sum(e, tmp)
            out = pl.store(pl.row_expand_div(e, z), [i * 32, 0], out)
    return out
