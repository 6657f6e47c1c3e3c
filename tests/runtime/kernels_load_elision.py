"""Kernels for tests/runtime/test_load_elision.py (parsed from source, so they live in a module).

Each is a K-split cube projection in the Qwen3 layer's form (benchmarks/model_kernels.py
``proj_kernel``): per task an activation load, then the weight load right before the matmul (no
yield in between: that load is left out, the matmul reads the global-memory view), the first chunk
by ``matmul``, the others by ``matmul_acc``."""
import pypto.language as pl


@pl.jit
def proj_columns(x: pl.Tensor[[16, 512], pl.BF16], w: pl.Tensor[[512, 256], pl.BF16],
                 out: pl.Out[pl.Tensor[[16, 256], pl.FP32]]):
    # each task a 128-column block of w: its chunks' rows lie apart (row stride 256)
    for j in pl.parallel(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            x0 = pl.load(x, [0, 0], [16, 128], target_memory=pl.MemorySpace.Mat)
            w0 = pl.load(w, [0, j * 128], [128, 128], target_memory=pl.MemorySpace.Mat)
            acc = pl.matmul(pl.move(x0, target_memory=pl.MemorySpace.Left),
                            pl.move(w0, target_memory=pl.MemorySpace.Right))
            for c in pl.range(1, 4):
                xc = pl.load(x, [0, c * 128], [16, 128], target_memory=pl.MemorySpace.Mat)
                wc = pl.load(w, [c * 128, j * 128], [128, 128], target_memory=pl.MemorySpace.Mat)
                acc = pl.matmul_acc(acc, pl.move(xc, target_memory=pl.MemorySpace.Left),
                                    pl.move(wc, target_memory=pl.MemorySpace.Right))
            out = pl.store(acc, [0, j * 128], out)
    return out


@pl.jit
def proj_blocks(x: pl.Tensor[[16, 512], pl.BF16], w: pl.Tensor[[1024, 128], pl.BF16],
                out: pl.Out[pl.Tensor[[16, 256], pl.FP32]]):
    # the weights block-major (task j's 512 x 128 block at rows j * 512): each chunk contiguous
    for j in pl.parallel(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            x0 = pl.load(x, [0, 0], [16, 128], target_memory=pl.MemorySpace.Mat)
            w0 = pl.load(w, [j * 512, 0], [128, 128], target_memory=pl.MemorySpace.Mat)
            acc = pl.matmul(pl.move(x0, target_memory=pl.MemorySpace.Left),
                            pl.move(w0, target_memory=pl.MemorySpace.Right))
            for c in pl.range(1, 4):
                xc = pl.load(x, [0, c * 128], [16, 128], target_memory=pl.MemorySpace.Mat)
                wc = pl.load(w, [j * 512 + c * 128, 0], [128, 128], target_memory=pl.MemorySpace.Mat)
                acc = pl.matmul_acc(acc, pl.move(xc, target_memory=pl.MemorySpace.Left),
                                    pl.move(wc, target_memory=pl.MemorySpace.Right))
            out = pl.store(acc, [0, j * 128], out)
    return out


@pl.jit
def proj_shared(x: pl.Tensor[[64, 512], pl.BF16], w: pl.Tensor[[512, 128], pl.BF16],
                out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    # every task reads the same weights (its own 16 rows of x): one region for the whole gang
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            x0 = pl.load(x, [i * 16, 0], [16, 128], target_memory=pl.MemorySpace.Mat)
            w0 = pl.load(w, [0, 0], [128, 128], target_memory=pl.MemorySpace.Mat)
            acc = pl.matmul(pl.move(x0, target_memory=pl.MemorySpace.Left),
                            pl.move(w0, target_memory=pl.MemorySpace.Right))
            for c in pl.range(1, 4):
                xc = pl.load(x, [i * 16, c * 128], [16, 128], target_memory=pl.MemorySpace.Mat)
                wc = pl.load(w, [c * 128, 0], [128, 128], target_memory=pl.MemorySpace.Mat)
                acc = pl.matmul_acc(acc, pl.move(xc, target_memory=pl.MemorySpace.Left),
                                    pl.move(wc, target_memory=pl.MemorySpace.Right))
            out = pl.store(acc, [i * 16, 0], out)
    return out


@pl.jit
def weight_read_later(x: pl.Tensor[[32, 128], pl.BF16], w: pl.Tensor[[128, 128], pl.BF16],
                      out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    # the weight tile feeds a second matmul after a store (a yield): its load is made
    with pl.at(level=pl.Level.CORE_GROUP):
        x0 = pl.load(x, [0, 0], [16, 128], target_memory=pl.MemorySpace.Mat)
        wt = pl.load(w, [0, 0], [128, 128], target_memory=pl.MemorySpace.Mat)
        s0 = pl.matmul(pl.move(x0, target_memory=pl.MemorySpace.Left),
                       pl.move(wt, target_memory=pl.MemorySpace.Right))
        out = pl.store(s0, [0, 0], out)
        x1 = pl.load(x, [16, 0], [16, 128], target_memory=pl.MemorySpace.Mat)
        s1 = pl.matmul(pl.move(x1, target_memory=pl.MemorySpace.Left),
                       pl.move(wt, target_memory=pl.MemorySpace.Right))
        out = pl.store(s1, [16, 0], out)
    return out


@pl.jit
def weight_then_x(x: pl.Tensor[[16, 128], pl.BF16], w: pl.Tensor[[128, 128], pl.BF16],
                  out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    # the weight load is followed by the activation's (a yield between it and the matmul): made;
    # the activation's, right before the matmul, is left out
    with pl.at(level=pl.Level.CORE_GROUP):
        wt = pl.load(w, [0, 0], [128, 128], target_memory=pl.MemorySpace.Mat)
        x0 = pl.load(x, [0, 0], [16, 128], target_memory=pl.MemorySpace.Mat)
        out = pl.store(pl.matmul(pl.move(x0, target_memory=pl.MemorySpace.Left),
                                 pl.move(wt, target_memory=pl.MemorySpace.Right)), [0, 0], out)
    return out
