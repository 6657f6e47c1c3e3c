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
