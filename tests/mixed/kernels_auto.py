"""Mixed kernels written as one pl.at scope (ExpandMixedKernel splits them), for tests/mixed."""
import pypto.language as pl

M, K, N, NB = 16, 32, 128, 32


@pl.program
class VecToCube:
    """The vector core forms both matmul operands: out = (a * 2) @ (b - 1)."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, M], pl.FP32],
             out: pl.Out[pl.Tensor[[M, M], pl.FP32]]) -> pl.Tensor[[M, M], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.mul(a, 2.0)
            y = pl.sub(b, 1.0)
            out = pl.assemble(out, pl.matmul(x, y), [0, 0])
        return out


@pl.program
class CubeToVecLoop:
    """Per column block: the cube multiplies, the vector core adds the bias and relu's:
    out[:, j] = relu(a @ b[:, j] + bias[:, j])."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32], bias: pl.Tensor[[M, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for j in pl.range(N // NB):
                c = pl.matmul(a, pl.slice(b, [K, NB], [0, j * NB]))
                r = pl.relu(pl.add(c, pl.slice(bias, [M, NB], [0, j * NB])))
                out = pl.assemble(out, r, [0, j * NB])
        return out


@pl.program
class CubeToVecLoopUpDown:
    """CubeToVecLoop under pl.split(UP_DOWN): each vector lane adds and relu's its half of the rows."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32], bias: pl.Tensor[[M, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            for j in pl.range(N // NB):
                c = pl.matmul(a, pl.slice(b, [K, NB], [0, j * NB]))
                r = pl.relu(pl.add(c, pl.slice(bias, [M, NB], [0, j * NB])))
                out = pl.assemble(out, r, [0, j * NB])
        return out


@pl.program
class VecToCubeLeftRight:
    """VecToCube under pl.split(LEFT_RIGHT): each lane forms its column half of both operands."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, M], pl.FP32],
             out: pl.Out[pl.Tensor[[M, M], pl.FP32]]) -> pl.Tensor[[M, M], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)]):
            x = pl.mul(a, 2.0)
            y = pl.sub(b, 1.0)
            out = pl.assemble(out, pl.matmul(x, y), [0, 0])
        return out


@pl.program
class ColSumUpDownFallsBack:
    """pl.split(UP_DOWN) over a column sum of a @ b (a reduction over the split axis): the vector
    member keeps one lane computing every element. out = colsum(a @ b)."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, NB], pl.FP32],
             out: pl.Out[pl.Tensor[[1, NB], pl.FP32]]) -> pl.Tensor[[1, NB], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            c = pl.matmul(a, b)
            out = pl.assemble(out, pl.col_sum(c), [0, 0])
        return out
