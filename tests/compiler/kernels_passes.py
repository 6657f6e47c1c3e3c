"""Kernels for the pass tests (tests/compiler/test_passes.py): Simplify, NormalizeReturnOrder,
FlattenTileNdTo2D, and the verifier properties."""
import pypto.language as pl


@pl.jit
def one_trip(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    """A 1-trip loop whose variable feeds offsets and a branch condition; a 0-trip loop."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 128])
        for i in pl.range(1):
            t = pl.add(t, pl.load(a, [i * 32, 0], [64, 128]))
            if i + 1 > 1:
                t = pl.mul(t, 3.0)
            else:
                t = pl.mul(t, 2.0)
        for j in pl.range(0):
            t = pl.add(t, t)
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def multi_trip(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    """A 2-trip loop: Simplify must keep it."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 128])
        for i in pl.range(2):
            t = pl.add(t, t)
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def two_outs(a: pl.Tensor[[64, 128], pl.FP32], x: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
             y: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    """Writes y before x: the outlined kernel returns (y, x) until NormalizeReturnOrder."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 128])
        y = pl.store(pl.mul(t, 2.0), [0, 0], y)
        x = pl.store(pl.add(t, t), [0, 0], x)
    return x, y


@pl.jit
def three_d(a: pl.Tensor[[2, 16, 64], pl.FP32], b: pl.Tensor[[2, 16, 64], pl.FP32],
            out: pl.Out[pl.Tensor[[2, 16, 64], pl.FP32]]):
    """Rank-3 tiles: whole-tensor loads, an elementwise chain, a last-axis reduction."""
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.add(a, b)
        out[:] = pl.mul(s, s)
    return out


@pl.jit
def three_d_region(a: pl.Tensor[[4, 8, 64], pl.FP32], out: pl.Out[pl.Tensor[[4, 8, 64], pl.FP32]]):
    """Contiguous rank-3 regions at non-zero offsets: rows 1..2 of the leading dim, and a column band."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [1, 0, 0], [2, 8, 64])
        out = pl.store(pl.exp(t), [2, 0, 0], out)
        u = pl.load(a, [0, 3, 32], [1, 1, 32])
        out = pl.store(pl.add(u, u), [0, 0, 0], out)
    return out


@pl.jit
def three_d_strided(a: pl.Tensor[[4, 8, 64], pl.FP32], out: pl.Out[pl.Tensor[[4, 8, 64], pl.FP32]]):
    """A region that is not contiguous in the leading dims (2 x 4 of 4 x 8): no 2-D form."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0, 0], [2, 4, 64])
        out = pl.store(t, [0, 0, 0], out)
    return out


@pl.jit
def one_d(a: pl.Tensor[[128], pl.FP32], out: pl.Out[pl.Tensor[[128], pl.FP32]]):
    """Rank-1 tiles become [1, N]."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)
    return out
