"""Kernels for tests/ops/test_tensor_layouts.py: DN (column-major trailing pair) global tensors: a DN
parameter, a pl.transpose view handed to a kernel, tensor.view layout flips and reinterprets, a
store into a DN tensor, a matmul whose operand comes from a DN view."""
import pypto.language as pl

R, C = 16, 32          # the row-major source [R, C]; its DN view is [C, R]
DN_VIEW = pl.TensorView(layout=pl.TensorLayout.DN)


@pl.program
class DnParam:
    """An entry whose parameter is DN: the caller's contiguous [C, R] buffer is read column-major."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[C, R], pl.FP32, DN_VIEW],
               out: pl.Out[pl.Tensor[[C, R], pl.FP32]]) -> pl.Tensor[[C, R], pl.FP32]:
        t = pl.load(x, [0, 0], [C, R])
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[C, R], pl.FP32, DN_VIEW],
             out: pl.Out[pl.Tensor[[C, R], pl.FP32]]) -> pl.Tensor[[C, R], pl.FP32]:
        out = self.kernel(x, out)
        return out


@pl.program
class DnStore:
    """A kernel storing into a DN Out parameter (a window of it, at an offset): the caller's buffer
    receives the tile column-major."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[8, R], pl.FP32],
               out: pl.Out[pl.Tensor[[C, R], pl.FP32, DN_VIEW]]) -> pl.Tensor[[C, R], pl.FP32, DN_VIEW]:
        t = pl.load(x, [0, 0], [8, R])
        out = pl.store(t, [8, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, R], pl.FP32],
             out: pl.Out[pl.Tensor[[C, R], pl.FP32, DN_VIEW]]) -> pl.Tensor[[C, R], pl.FP32, DN_VIEW]:
        out = self.kernel(x, out)
        return out


@pl.program
class TransposeToKernel:
    """pl.transpose in orchestration is a DN view of x's bytes: the kernel reads and writes through it."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, xt: pl.Tensor[[C, R], pl.FP32, DN_VIEW],
               yt: pl.InOut[pl.Tensor[[C, R], pl.FP32, DN_VIEW]],
               out: pl.Out[pl.Tensor[[4, R], pl.FP32]]) -> tuple[pl.Tensor[[C, R], pl.FP32, DN_VIEW],
                                                                 pl.Tensor[[4, R], pl.FP32]]:
        t = pl.load(xt, [3, 0], [4, R])
        out = pl.store(t, [0, 0], out)
        yt = pl.store(pl.mul(t, 2.0), [0, 0], yt)     # rows 0..3 of the view: columns 0..3 of y
        return yt, out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], y: pl.InOut[pl.Tensor[[R, C], pl.FP32]],
             out: pl.Out[pl.Tensor[[4, R], pl.FP32]]) -> pl.Tensor[[4, R], pl.FP32]:
        xt = pl.transpose(x, 0, 1)
        yt = pl.transpose(y, 0, 1)
        yt, out = self.kernel(xt, yt, out)
        return out


@pl.program
class ViewFlip:
    """tensor.view(x, layout=DN): the layout-only flip (the transpose, zero-copy) in orchestration;
    the same view taken inside a kernel."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, xt: pl.Tensor[[C, R], pl.FP32, DN_VIEW], x: pl.Tensor[[R, C], pl.FP32],
               out: pl.Out[pl.Tensor[[C, R], pl.FP32]],
               out2: pl.Out[pl.Tensor[[C, R], pl.FP32]]) -> tuple[pl.Tensor[[C, R], pl.FP32],
                                                                  pl.Tensor[[C, R], pl.FP32]]:
        out = pl.store(pl.load(xt, [0, 0], [C, R]), [0, 0], out)
        v = pl.tensor.view(x, layout=pl.TensorLayout.DN)
        out2[:] = v
        return out, out2

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[C, R], pl.FP32]],
             out2: pl.Out[pl.Tensor[[C, R], pl.FP32]]) -> tuple[pl.Tensor[[C, R], pl.FP32],
                                                                pl.Tensor[[C, R], pl.FP32]]:
        xt = pl.tensor.view(x, layout=pl.TensorLayout.DN)
        out, out2 = self.kernel(xt, x, out, out2)
        return out, out2


@pl.program
class ViewReinterpret:
    """tensor.view(x, shape, layout=): x's packed bytes read as another shape in another layout,
    in orchestration (a view) and in a kernel (on chip)."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, v: pl.Tensor[[8, 64], pl.FP32, DN_VIEW], xt: pl.Tensor[[C, R], pl.FP32, DN_VIEW],
               out: pl.Out[pl.Tensor[[8, 64], pl.FP32]],
               out2: pl.Out[pl.Tensor[[64, 8], pl.FP32]]) -> tuple[pl.Tensor[[8, 64], pl.FP32],
                                                                   pl.Tensor[[64, 8], pl.FP32]]:
        out = pl.store(pl.load(v, [0, 0], [8, 64]), [0, 0], out)
        w = pl.tensor.view(xt, [64, 8], layout=pl.TensorLayout.ND)
        out2[:] = w
        return out, out2

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[8, 64], pl.FP32]],
             out2: pl.Out[pl.Tensor[[64, 8], pl.FP32]]) -> tuple[pl.Tensor[[8, 64], pl.FP32],
                                                                 pl.Tensor[[64, 8], pl.FP32]]:
        v = pl.tensor.view(x, [8, 64], layout=pl.TensorLayout.DN)
        xt = pl.transpose(x, 0, 1)
        out, out2 = self.kernel(v, xt, out, out2)
        return out, out2


@pl.program
class DnMatmul:
    """C = A @ B^T with B [N, K] row-major handed over as its DN view [K, N] (the b_trans pattern)."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[16, 32], pl.FP16], bt: pl.Tensor[[32, 16], pl.FP16, DN_VIEW],
               c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        la = pl.move(pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb = pl.move(pl.load(bt, [0, 0], [32, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        c = pl.store(pl.matmul(la, rb), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[16, 32], pl.FP16],
             c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        c = self.kernel(a, pl.transpose(b, 0, 1), c)
        return c


@pl.program
class TileLayouts:
    """The reference's tile layout attributes: a move naming the destination's layout, a transposed
    (ZN) Mat scratch tile, a tile annotation with blayout / slayout / fractal. Values are logical."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
               c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        a_l1: pl.Tile[[16, 32], pl.FP16, pl.Mem.Mat,
                      pl.TileView(blayout=pl.TileLayout.col_major, slayout=pl.TileLayout.row_major, fractal=512)] = \
            pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat)
        la = pl.move(a_l1, target_memory=pl.Mem.Left, blayout=pl.TileLayout.col_major,
                     slayout=pl.TileLayout.row_major)
        scratch = pl.tile.create([32, 16], pl.FP16, target_memory=pl.Mem.Mat, transpose=True)
        rb = pl.move(pl.load(b, [0, 0], [32, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right,
                     blayout=pl.TileLayout.row_major, slayout=pl.TileLayout.col_major)
        c = pl.store(pl.matmul(la, rb), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
             c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        c = self.kernel(a, b, c)
        return c


@pl.program
class CreateDn:
    """pl.create_tensor(..., layout=DN): a column-major buffer; a kernel writes it logically, an ND
    view of another shape reads its bytes."""

    @pl.function(type=pl.FunctionType.InCore)
    def fill(self, x: pl.Tensor[[C, R], pl.FP32],
             t: pl.Out[pl.Tensor[[C, R], pl.FP32, DN_VIEW]]) -> pl.Tensor[[C, R], pl.FP32, DN_VIEW]:
        t = pl.store(pl.load(x, [0, 0], [C, R]), [0, 0], t)
        return t

    @pl.function(type=pl.FunctionType.InCore)
    def copy(self, y: pl.Tensor[[8, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[8, 64], pl.FP32]]) -> pl.Tensor[[8, 64], pl.FP32]:
        out = pl.store(pl.load(y, [0, 0], [8, 64]), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[C, R], pl.FP32],
             out: pl.Out[pl.Tensor[[8, 64], pl.FP32]]) -> pl.Tensor[[8, 64], pl.FP32]:
        t = pl.create_tensor([C, R], pl.FP32, layout=pl.TensorLayout.DN)
        t = self.fill(x, t)
        out = self.copy(pl.tensor.view(t, [8, 64], layout=pl.TensorLayout.ND), out)
        return out


@pl.program
class ReturnsCreatedDn:
    """An entry returning a DN tensor it created (no Out parameter), with a square pl.transpose of
    its input and the input itself: the call returns the first two, the argument as the caller's
    own tensor."""

    @pl.function(type=pl.FunctionType.InCore)
    def fill(self, x: pl.Tensor[[C, R], pl.FP32],
             t: pl.Out[pl.Tensor[[C, R], pl.FP32, DN_VIEW]]) -> pl.Tensor[[C, R], pl.FP32, DN_VIEW]:
        t = pl.store(pl.mul(pl.load(x, [0, 0], [C, R]), 2.0), [0, 0], t)
        return t

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[C, R], pl.FP32], sq: pl.Tensor[[R, R], pl.FP32]
             ) -> tuple[pl.Tensor[[C, R], pl.FP32, DN_VIEW], pl.Tensor[[R, R], pl.FP32, DN_VIEW],
                        pl.Tensor[[R, R], pl.FP32]]:
        t = pl.create_tensor([C, R], pl.FP32, layout=pl.TensorLayout.DN)
        t = self.fill(x, t)
        sq_t = pl.transpose(sq, 0, 1)
        return t, sq_t, sq


@pl.program
class ColumnViaExtract:
    """A column of a tensor as a [ROWS, 1] Vec tile without a column load: a C0-wide strip, its
    on-chip transpose, a Vec -> Vec tile.extract of row 0 (the reference's #1398 workaround)."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[16, 64], pl.FP32], scale: pl.Tensor[[16, 8], pl.FP32],
               y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        strip = pl.load(scale, [0, 0], [16, 8])
        strip_t = pl.transpose(strip, axis1=0, axis2=1)
        row = pl.tile.extract(strip_t, 2, 0, [1, 16], target_memory=pl.Mem.Vec)
        col = pl.reshape(row, [16, 1])
        y = pl.store(pl.row_expand_mul(pl.load(x, [0, 0], [16, 64]), col), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], scale: pl.Tensor[[16, 8], pl.FP32],
             y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        y = self.kernel(x, scale, y)
        return y


@pl.program
class WriteReshapedDn:
    """A kernel writing a pl.reshape of a DN view: the reshape is a copy, the write would be lost."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[8, 64], pl.FP32],
               out: pl.Out[pl.Tensor[[8, 64], pl.FP32]]) -> pl.Tensor[[8, 64], pl.FP32]:
        out = pl.store(pl.load(x, [0, 0], [8, 64]), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 64], pl.FP32],
             y: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        yt = pl.transpose(y, 0, 1)
        z = pl.reshape(yt, [8, 64])
        z = self.kernel(x, z)
        return y
