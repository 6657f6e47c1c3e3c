"""Kernels for tests/ops/test_views.py (reinterpret_view, write, set_validshape, transpose_view,
tensor.view, tensor.dim)."""
import pypto.language as pl


@pl.jit
def rv_i16(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 16])
        out = pl.store(pl.reinterpret_view(t, pl.INT16), [0, 0], out)
    return out


@pl.jit
def rv_same(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 16])
        out = pl.store(pl.tile.reinterpret_view(t, pl.INT32), [0, 0], out)
    return out


@pl.jit
def rv_wider(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """16-bit -> FP32: the innermost extent halves."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 32])
        out = pl.store(pl.reinterpret_view(t, pl.FP32), [0, 0], out)
    return out


@pl.jit
def rv_shape(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 16])
        out = pl.store(pl.reinterpret_view(t, pl.UINT8, shape=[16, 32]), [0, 0], out)
    return out


@pl.jit
def rv_partial(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """A partially valid tile: the valid innermost extent scales too (only it is stored)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 16], valid_shape=[5, 6])
        out = pl.store(pl.reinterpret_view(t, pl.BF16), [0, 0], out)
    return out


@pl.jit
def rv_tensor(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.tensor.reinterpret_view(a, pl.INT16)
    return out


@pl.jit
def rv_bad_shape(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 16])
        out = pl.store(pl.reinterpret_view(t, pl.INT16, shape=[8, 16]), [0, 0], out)
    return out


@pl.jit
def write_tile(a: pl.Tensor, v: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 16])
        pl.tile.write(t, [3, 5], v)           # a statement: rebinds t
        t = pl.write(t, [7, 15], 2.5)
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def write_tensor(vals: pl.Tensor, table: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for k in pl.unroll(2):
            for t in pl.unroll(4):
                v: pl.Scalar[pl.INT32] = pl.read(vals, [k * 4 + t])
                table = pl.write(table, [t, k], v)
    return table


@pl.jit
def write_flat(vals: pl.Tensor, table: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v: pl.Scalar[pl.FP16] = pl.read(vals, [3])
        table = pl.tensor.write(table, 5, v)
    return table


@pl.jit
def write_oob(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 16])
        t = pl.write(t, [8, 0], 1.0)
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def set_valid(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Narrow the valid shape, then fill the new padding: only [3, 10] survives."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 16])
        v = pl.tile.set_validshape(t, 3, 10)
        out = pl.store(pl.fillpad(v, pad_value=pl.PadValue.min), [0, 0], out)
    return out


@pl.jit
def set_valid_store(a: pl.Tensor, out: pl.InOut[pl.Tensor]):
    """A store writes the valid region only."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 16])
        out = pl.store(pl.set_validshape(t, 2, 7), [0, 0], out)
    return out


@pl.jit
def set_valid_bad(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 16])
        out = pl.store(pl.tile.set_validshape(t, 9, 10), [0, 0], out)
    return out


@pl.jit
def transpose_view(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 16], valid_shape=[8, 12])
        out = pl.store(pl.tile.transpose_view(t), [0, 0], out)
    return out


@pl.jit
def tensor_view(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.tensor.view(a, [4, 32])
    return out


@pl.jit
def tensor_dim(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        n = pl.tensor.dim(a, -1)
        m = pl.dim(a, 0)
        out[:] = pl.add(pl.mul(a, n), m)
    return out


@pl.jit
def rv_wider_odd(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 31])
        out = pl.store(pl.reinterpret_view(t, pl.FP32), [0, 0], out)
    return out


@pl.jit
def expand_clone_d1(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.expand_clone(a, out)
    return out


@pl.jit
def expand_clone_bad(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.tensor.expand_clone(a, out)
    return out


@pl.jit
def level_names(a: pl.Tensor[[8, 16], pl.FP32], s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]):
    """pl.tile.create_tile / pl.tensor.create_tensor (the reference's spellings of create) and
    pl.tile.max / pl.tile.min (scalar max / min, runtime operands)."""
    tmp = pl.tensor.create_tensor([8, 16], dtype=pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.tile.create_tile([8, 16], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        n = pl.tile.min(pl.tile.max(s, 3), 40)
        t = pl.tile.adds(pl.load(a, [0, 0], [8, 16]), pl.cast(n, pl.FP32))
        out = pl.store(t, [0, 0], out)
    return out
