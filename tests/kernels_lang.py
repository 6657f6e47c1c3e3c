"""Kernels for the language tests (control flow, functions, specialisation, errors).

Kernel source is read with ``inspect``, so they live at module level in a real file.
"""
import pypto.language as pl

M = pl.dynamic("M")


# ---------------------------------------------------------------- loops
@pl.jit
def parallel_rows(a: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 64, 0], [64, 64])
            out = pl.store(pl.mul(t, 2.0), [i * 64, 0], out)
    return out


@pl.jit
def range_rows(a: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    for i in pl.range(1, 4, 2):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 64 - 64, 0], [64, 64])
            out = pl.store(pl.add(t, 1.0), [(i - 1) * 64 + 64, 0], out)
    return out


@pl.jit
def unroll_acc(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        acc = pl.mul(t, 0.0)
        for k in pl.unroll(3):
            acc = pl.add(acc, t)
        out = pl.store(acc, [0, 0], out)
    return out


@pl.jit
def unroll_tasks(a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
    for i in pl.unroll(0, 2):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 64, 0], [64, 64])
            out = pl.store(pl.exp(t), [i * 64, 0], out)
    return out


@pl.jit
def two_scopes(a: pl.Tensor[[64, 64], pl.FP32], scratch: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
               out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage1"):
        scratch[:] = pl.add(a, a)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage2"):
        out[:] = pl.mul(scratch, scratch)
    return out


# ---------------------------------------------------------------- functions
@pl.jit.inline
def double(x: pl.Tensor):
    y = pl.add(x, x)
    return y


@pl.jit.inline
def quad(x: pl.Tensor):
    y = double(x)
    z = double(y)
    return z


@pl.jit
def use_inline(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        b = double(a)
        c = quad(b)
        out[:] = c
    return out


@pl.jit.incore
def k_scale(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [64, 64])
    out = pl.store(pl.mul(t, 3.0), [0, 0], out)
    return out


@pl.jit.inline
def k_left(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = k_scale(x, out)
    return out


@pl.jit.incore
def k_add(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor]):
    tx = pl.load(x, [0, 0], [64, 64])
    ty = pl.load(y, [0, 0], [64, 64])
    out = pl.store(pl.add(tx, ty), [0, 0], out)
    return out


@pl.jit
def diamond(a: pl.Tensor[[64, 64], pl.FP32], l: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
            r: pl.Out[pl.Tensor[[64, 64], pl.FP32]], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    l = k_scale(a, l)
    r = k_scale(a, r)
    out = k_add(l, r, out)
    return out


@pl.jit
def transitive(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    out = k_left(a, out)
    return out


@pl.jit
def scaled(a: pl.Tensor[[64, 64], pl.FP32], s: pl.FP32, out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        if s > 1.5:
            out[:] = pl.mul(a, s)
        else:
            out[:] = pl.add(a, s)
    return out


@pl.jit
def runtime_n(a: pl.Tensor[[256, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
              out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    for i in pl.range(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 64, 0], [64, 64])
            out = pl.store(pl.mul(t, 2.0), [i * 64, 0], out)
    return out


# ---------------------------------------------------------------- dynamic dims (spec D1)
@pl.jit.incore
def rows(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [32, 64])
    out = pl.store(pl.mul(t, 2.0), [0, 0], out)
    return out


@pl.jit
def drive(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
    out = rows(x, out)
    return out


# ---------------------------------------------------------------- subscript sugar
@pl.jit
def slice_read(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a[16:32, :], a[0:16, :])
    return out


@pl.jit
def region_write(a: pl.Tensor[[16, 32], pl.FP32], out: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]):
    for i in pl.range(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[i * 16:i * 16 + 16, 32:64] = pl.add(a, a)
    return out


# ---------------------------------------------------------------- directives
@pl.jit
def directives(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    pl.static_print(f"a is {a}", a.shape)
    pl.static_assert(a.shape[0] == 64, "rows must be 64")
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, pl.const(1, pl.FP32))
    pl.dump_tag(out)
    return out


@pl.jit
def static_assert_fails(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    pl.static_assert(a.shape[0] == 32, "rows must be 32")
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)
    return out


# ---------------------------------------------------------------- kernels that must fail
@pl.jit
def no_annotation(a, out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)
    return out


@pl.jit
def bad_init_target(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.add(a, a)
        for i in pl.range(2, init_values=(t,)):
            t2 = pl.add(t, a)
        out[:] = t
    return out


@pl.jit
def unroll_init(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.add(a, a)
        for i, (u,) in pl.unroll(2, init_values=(t,)):
            u2 = pl.add(u, a)
            u3 = pl.yield_(u2)
        out[:] = t
    return out


@pl.jit
def out_rebound(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.add(a, a)
    return out


@pl.jit
def bare_sig(a: pl.Tensor, out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)
    return out


@pl.jit
def unroll_if(a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
    for i in pl.unroll(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 64, 0], [64, 64])
            if i == 0:
                u = pl.add(t, t)
            else:
                u = pl.mul(t, t)
            out = pl.store(u, [i * 64, 0], out)
    return out


@pl.jit.opaque
def bands(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.range(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 64, 0], [64, 64])
            out = pl.store(pl.add(t, t), [i * 64, 0], out)
    return out


@pl.jit
def use_opaque(a: pl.Tensor[[128, 64], pl.FP32], tmp: pl.Out[pl.Tensor[[128, 64], pl.FP32]],
               out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
    tmp = bands(a, tmp)
    out = bands(tmp, out)
    return out


@pl.jit
def dump_in_scope(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)
        pl.dump_tag(out)
    return out


@pl.jit
def tile_read(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 128])
        s = t[0, 1]
        out = pl.store(pl.add(t, s), [0, 0], out)
    return out
