"""Kernels for the memory-planning tests (tests/compiler/test_memory_passes.py, test_memory_map.py):
InitMemRef, MemoryReuse, AllocateMemoryAddr."""
import pypto.language as pl


@pl.jit
def disjoint(a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
             x: pl.Out[pl.Tensor[[64, 128], pl.FP32]], y: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    """``t`` dies at its store before ``u`` is loaded: one buffer serves both."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 128])
        x = pl.store(t, [0, 0], x)
        u = pl.load(b, [0, 0], [64, 128])
        y = pl.store(u, [0, 0], y)
    return x, y


@pl.jit
def overlapping(a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
                out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    """``t`` and ``u`` are live together; their sum is written over ``t`` (in place)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 128])
        u = pl.load(b, [0, 0], [64, 128])
        s = pl.add(t, u)
        out = pl.store(pl.mul(s, u), [0, 0], out)
    return out


@pl.jit
def carried(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    """A loop-carried tile initialised from a tile that dies at the loop."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(a, [0, 0], [64, 128])
        for i in pl.range(3):
            acc = pl.add(acc, pl.exp(acc))
        out = pl.store(acc, [0, 0], out)
    return out


@pl.jit
def carried_init_kept(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    """The loop's initial value is read again after the loop: it keeps its own buffer."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 128])
        acc = t
        for i in pl.range(2):
            acc = pl.mul(acc, 2.0)
        out = pl.store(pl.sub(acc, t), [0, 0], out)
    return out


@pl.jit
def too_big(a: pl.Tensor[[128, 256], pl.FP32], b: pl.Tensor[[128, 256], pl.FP32],
            out: pl.Out[pl.Tensor[[128, 256], pl.FP32]]):
    """Two live 128 KiB tiles: more than the Vec buffer of either platform."""
    with pl.at(level=pl.Level.CORE_GROUP):
        big_a = pl.load(a, [0, 0], [128, 256])
        big_b = pl.load(b, [0, 0], [128, 256])
        out = pl.store(pl.add(big_a, big_b), [0, 0], out)
    return out


@pl.jit
def mixed_sizes(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    """An FP32 tile, its FP16 cast and an FP32 result: buffers of two sizes."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 128])
        h = pl.cast(t, pl.FP16)
        w = pl.cast(h, pl.FP32)
        out = pl.store(pl.add(w, t), [0, 0], out)
    return out


@pl.jit
def two_loops(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    """The first loop's result initialises the second loop and dies there: one carried buffer."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(a, [0, 0], [64, 128])
        for i in pl.range(2):
            acc = pl.add(acc, acc)
        for j in pl.range(2):
            acc = pl.mul(acc, 0.5)
        out = pl.store(acc, [0, 0], out)
    return out


@pl.jit
def branchy(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    """An if inside a loop: the phi's buffer is live over the whole if."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(a, [0, 0], [64, 128])
        for i in pl.range(4):
            if i < 2:
                acc = pl.add(acc, pl.exp(acc))
            else:
                acc = pl.mul(acc, 0.5)
        out = pl.store(acc, [0, 0], out)
    return out
