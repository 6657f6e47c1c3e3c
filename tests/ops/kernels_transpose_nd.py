"""Kernels for tests/ops/test_transpose_nd.py: ``transpose`` / ``tile.transpose_view`` on tiles of
rank > 2 (FlattenTileNdTo2D keeps them on the flattened tile with ``nd_shape``)."""
import pypto.language as pl


@pl.jit
def t3_swap12(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0, 0], [4, 24, 8])
        out = pl.store(pl.transpose(t, axis1=1, axis2=2), [0, 0, 0], out)
    return out


@pl.jit
def t3_swap01(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0, 0], [4, 6, 8])
        out = pl.store(pl.tile.transpose(t, 0, 1), [0, 0, 0], out)
    return out


@pl.jit
def t4_swap_neg(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0, 0, 0], [2, 3, 4, 8])
        out = pl.store(pl.transpose(t, -4, -2), [0, 0, 0, 0], out)
    return out


@pl.jit
def deinterleave(x: pl.Tensor, even: pl.Out[pl.Tensor], odd: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [8, 32])
        t3 = pl.reshape(t, [8, 16, 2])
        t3t = pl.transpose(t3, axis1=1, axis2=2)
        flat = pl.reshape(t3t, [8, 32])
        even = pl.store(pl.slice(flat, [8, 16], [0, 0]), [0, 0], even)
        odd = pl.store(pl.slice(flat, [8, 16], [0, 16]), [0, 0], odd)
    return even, odd


@pl.jit
def view3(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0, 0], [3, 16, 8])
        out = pl.store(pl.tile.transpose_view(t), [0, 0, 0], out)
    return out


@pl.jit
def tensor_t3(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.tensor.transpose(a, 0, 2)
    return out


@pl.jit
def bad_axes(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0, 0], [4, 6, 8])
        out = pl.store(pl.transpose(t, 1, 3), [0, 0, 0], out)
    return out


@pl.jit
def same_axes(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0, 0], [4, 6, 8])
        out = pl.store(pl.transpose(t, 1, -2), [0, 0, 0], out)
    return out


@pl.jit
def orch_transpose_cols(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    xt = pl.transpose(x, 0, 1)                  # orchestration: a strided view, no copy
    for h in pl.range(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            col = pl.reshape(pl.slice(xt, [1, 16], [h, 0]), [16, 1])
            out = pl.assemble(out, col, [0, h])
    return out
