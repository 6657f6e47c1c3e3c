"""Reference program forms issue 14 accepts (module level: kernels are parsed from source)."""
import pypto.language as pl

M = pl.dynamic("M")
N = pl.dynamic("N")
K = pl.dynamic("K")


@pl.program
class DimAnnotatedInt64:
    """An orchestration reads a run-time extent into a scalar annotated INT64 (tensor.dim gives INDEX)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]) -> pl.Tensor[[M, 64], pl.FP32]:
        rows: pl.Scalar[pl.INT64] = pl.tensor.dim(a, 0)
        for i in pl.range(rows // 16):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [i * 16, 0], [16, 64])
                out = pl.store(pl.add(t, 1.0), [i * 16, 0], out)
        return out


@pl.program
class StaticAndRunTimeExtents:
    """A kernel's dynamic M gets a static extent from a reshaped view and the caller's run-time M
    from ``c``: they meet at run time."""

    @pl.function(type=pl.FunctionType.InCore)
    def add_kernel(self, a: pl.Tensor[[M, N], pl.FP32], b: pl.Tensor[[M, N], pl.FP32],
                   c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        ta = pl.load(a, [0, 0], [16, 32])
        tb = pl.load(b, [0, 0], [16, 32])
        return pl.store(pl.add(ta, tb), [0, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a_flat: pl.Tensor[[K], pl.FP32], b_flat: pl.Tensor[[K], pl.FP32],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        a2d: pl.Tensor[[16, 32], pl.FP32] = pl.reshape(a_flat, [16, 32])
        b2d: pl.Tensor[[16, 32], pl.FP32] = pl.reshape(b_flat, [16, 32])
        c = self.add_kernel(a2d, b2d, c)
        return c


B = pl.dynamic("B")
S = pl.dynamic("S")


@pl.jit
def chunked_add_3d(x: pl.Tensor[[B, S, 128], pl.FP32], out: pl.Out[pl.Tensor[[B, S, 128], pl.FP32]]):
    """A dynamic middle dim walked in chunks of 8 rows, the tail clamped by a run-time valid extent:
    a [1, 8, 128] tile with valid_shape [1, n, 128] flattens to [8, 128] with n valid rows."""
    nb = pl.tensor.dim(x, 0)
    ns = pl.tensor.dim(x, 1)
    for b in pl.parallel(0, nb):
        with pl.at(level=pl.Level.CORE_GROUP):
            for c, (o,) in pl.range(0, ns, 8, init_values=(out,)):
                n = pl.min(8, ns - c)
                t = pl.load(x, [b, c, 0], [1, 8, 128], valid_shape=[1, n, 128])
                o = pl.store(pl.add(t, 1.0), [b, c, 0], o)
                done = pl.yield_(o)  # noqa: F841
    return out


@pl.jit
def chunk_overrun_3d(x: pl.Tensor[[B, S, 128], pl.FP32], out: pl.Out[pl.Tensor[[B, S, 128], pl.FP32]]):
    """The same walk without the clamp: the last chunk of a batch would read the next batch's rows."""
    nb = pl.tensor.dim(x, 0)
    ns = pl.tensor.dim(x, 1)
    for b in pl.parallel(0, nb):
        with pl.at(level=pl.Level.CORE_GROUP):
            for c, (o,) in pl.range(0, ns, 8, init_values=(out,)):
                t = pl.load(x, [b, c, 0], [1, 8, 128])
                o = pl.store(pl.add(t, 1.0), [b, c, 0], o)
                done = pl.yield_(o)  # noqa: F841
    return out


@pl.jit
def sin_cos(x: pl.Tensor[[32, 128], pl.FP32], s: pl.Out[pl.Tensor[[32, 128], pl.FP32]],
            c: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    """FP32 sin and cos of a tile (LowerCompositeOps turns both into the device's recipe)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 128])
        s = pl.store(pl.sin(t), [0, 0], s)
        c = pl.store(pl.cos(t), [0, 0], c)
    return s, c


SHIFT = 2


@pl.jit
def shifted_rows(x: pl.Tensor[[8, 64], pl.FP32], out: pl.Out[pl.Tensor[[8, 64], pl.FP32]]):
    """Slices whose bounds are one run-time base plus constants on both sides (``r + 1:r + 2``,
    ``r + SHIFT - 1:r + SHIFT``): the extent is the constants' difference, as the reference reads it."""
    for r in pl.range(6):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[r + 1 : r + 2, :] = pl.mul(x[r + 1 : r + 2, :], 2.0)
        with pl.at(level=pl.Level.CORE_GROUP):
            out[r + SHIFT - 1 : SHIFT + r, :] = pl.add(x[r + SHIFT - 1 : SHIFT + r, :], 1.0)
    return out
