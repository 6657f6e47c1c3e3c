"""Kernels for tests/test_rank_views.py (module level: kernels are parsed from source)."""
import pypto.language as pl


@pl.jit
def kernel_views(x: pl.Tensor[[2, 16, 32], pl.FP32], out: pl.Out[pl.Tensor[[2, 16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a = x[1]                       # [16, 32]: axis 0 dropped, trailing ':' implied
        out[0] = pl.add(a, a)          # a window written with the reduced rank
        b = x[0, 2:4, :]               # [2, 32]
        out[1, 0:2, :] = b
        c = x[0, :, 5]                 # [16]: a 1-D tensor, reshaped back to the window on write
        out[1, 4, 0:16] = c
        d = x[1][3]                    # chained: [32]
        out[1, 5, :] = pl.mul(d, d)
    return out


@pl.jit
def orchestration_views(x: pl.Tensor[[2, 16, 32], pl.FP32], out: pl.Out[pl.Tensor[[3, 16, 32], pl.FP32]]):
    for b in pl.range(2):
        xb = x[b]                      # views of the caller's tensors, passed to the kernel
        ob = out[b]
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(xb, [0, 0], [16, 32])
            ob = pl.store(pl.mul(t, t), [0, 0], ob)
    v = pl.tensor.slice(x, [1, 16, 32], [1, 0, 0], drop_dims=[0])
    with pl.at(level=pl.Level.CORE_GROUP):
        t2 = pl.load(v, [0, 0], [16, 32])
        out = pl.store(pl.add(t2, t2), [2, 0, 0], out)
    return out


@pl.jit
def inner_axis_write(x: pl.Tensor[[16, 8], pl.FP32], out: pl.Out[pl.Tensor[[16, 8], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        col = x[:, 2]                  # [16]
        out[:, 6] = pl.add(col, col)   # a dropped inner axis: the value is reshaped to [16, 1]
    return out


@pl.jit
def tile_views(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 32])
        r = t[3]                       # a tile row stays 2-D: [1, 32]
        u = pl.add(r, r)
        t[5] = u                       # tile.assemble
        s = pl.tile.slice(t, [1, 32], [7, 0], drop_dims=[0])
        t[6, :] = s
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def clamped_slice(x: pl.Tensor[[20, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.slice(x, [16, 32], [8, 0], clamp=True)   # rows 8..19 valid, the rest padding
        out[:] = pl.fillpad(s)
    return out


@pl.jit
def bad_drop_axis(x: pl.Tensor[[2, 16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    v = pl.tensor.slice(x, [2, 16, 32], [0, 0, 0], drop_dims=[0])
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.load(v, [0, 0], [16, 32]), [0, 0], out)
    return out


@pl.jit
def bad_pad_value(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.slice(x, [16, 32], [0, 0], [8, 32], None, pl.PadValue.zero)
        out[:] = s
    return out


@pl.jit
def bad_write_shape(x: pl.Tensor[[2, 16, 32], pl.FP32], out: pl.Out[pl.Tensor[[2, 16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[0] = x[0, 0:8, :]
    return out


@pl.jit
def bad_element_write(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[1, 2] = x
    return out


@pl.jit
def bad_runtime_tile_index(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 32])
        for i in pl.range(4):
            out = pl.store(t[i], [i, 0], out)
    return out


@pl.jit
def load_from_kernel_view(x: pl.Tensor[[4, 512, 512], pl.FP32], out: pl.Out[pl.Tensor[[2, 32, 512], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a = x[2]                             # a 1 MiB view: only accessed piecewise (never loaded whole)
        t = pl.load(a, [64, 0], [16, 512])   # = pl.load(x, [2, 64, 0], [16, 512])
        ob = out[1]
        ob = pl.store(pl.add(t, t), [8, 0], ob)   # a store through a view writes out
    return out


@pl.jit
def view_store_then_read(x: pl.Tensor[[16, 32], pl.FP32], tmp: pl.Out[pl.Tensor[[2, 16, 32], pl.FP32]],
                         out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = tmp[1]
        t = pl.load(x, [0, 0], [16, 32])
        v = pl.store(pl.mul(t, 2.0), [0, 0], v)
    with pl.at(level=pl.Level.CORE_GROUP):
        u = pl.load(tmp, [1, 0, 0], [16, 32])
        out = pl.store(pl.add(u, 1.0), [0, 0], out)
    return out


@pl.jit
def load_from_same_rank_view(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a = pl.slice(x, [32, 32], [16, 8])
        out = pl.store(pl.load(a, [4, 2], [16, 16]), [0, 0], out)   # = x[20:36, 10:26]
    return out


@pl.jit
def bad_view_access(x: pl.Tensor[[4, 16, 32], pl.FP32], out: pl.Out[pl.Tensor[[4, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a = x[:, 3, :]
        out = pl.store(pl.load(a, [0, 0], [4, 32]), [0, 0], out)
    return out


@pl.jit
def bad_clamp(x: pl.Tensor[[20, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.slice(x, [16, 32], [24, 0], clamp=True)
        out[:] = pl.fillpad(s)
    return out
