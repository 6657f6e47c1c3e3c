"""Kernels for tests/ops/test_store_narrow.py: a matmul's FP32 accumulator stored / assembled
(plain and atomic) into a BF16 / FP16 global tensor (the FIXPIPE narrowing)."""
import pypto.language as pl


@pl.jit
def mm_assemble_narrow(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.assemble(c, pl.matmul(a, b, out_dtype=pl.FP32), [0, 0])
    return c


@pl.jit
def mm_split_k_atomic(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.assemble(c, pl.full([16, 32], dtype=c.dtype, value=0.0), [0, 0])
    for ks in pl.range(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            k0 = ks * 16
            partial = pl.matmul(a[:, k0:k0 + 16], b[k0:k0 + 16, :], out_dtype=pl.FP32)
            c = pl.assemble(c, partial, [0, 0], atomic=pl.AtomicType.Add)
    return c


@pl.jit
def mm_store_narrow(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64], target_memory=pl.MemorySpace.Mat)
        tb = pl.load(b, [0, 0], [64, 32], target_memory=pl.MemorySpace.Mat)
        acc = pl.matmul(pl.move(ta, target_memory=pl.MemorySpace.Left), pl.move(tb, target_memory=pl.MemorySpace.Right))
        c = pl.store(acc, [0, 0], c)
    return c


@pl.jit
def vec_assemble_narrow(x: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.assemble(c, pl.add(x, x), [0, 0])
    return c


@pl.jit
def int_assemble_mismatch(x: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.assemble(c, x, [0, 0])
    return c


@pl.jit
def assemble_loop_carried(x: pl.Tensor, src: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        tile_x = pl.load(x, [0, 0], [32, 32], target_memory=pl.MemorySpace.Vec)
        tile_src = pl.load(src, [0, 0], [32, 8], target_memory=pl.MemorySpace.Vec)
        for c in pl.range(4):
            tile_x = pl.tile.assemble(tile_x, tile_src, [0, c * 8])
        y = pl.store(tile_x, [0, 0], y)
    return y
