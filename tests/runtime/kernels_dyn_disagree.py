"""Programs whose parameters give one ``pl.dynamic`` dim different extents (each parameter keeps its
own; see docs/language.md, "Dynamic shapes"), for tests/runtime/test_dyn_disagree.py."""
import pypto.language as pl

M = pl.dynamic("M")
N = pl.dynamic("N")
ROWS = 8     # rows of one tile
COLS = 32    # columns of every 2-D view
FLAT_ROWS = 24   # FlatToRows's reshape is static (as the reference writes it)


@pl.program
class FlatToRows:
    """``a``, ``b`` flat (``[M]``: rows * 32 elements), ``c`` ``[M, N]`` (rows x 32): M disagrees."""

    @pl.function(type=pl.FunctionType.InCore)
    def fma_rows(self, a: pl.Tensor[[M, N], pl.FP32], b: pl.Tensor[[M, N], pl.FP32],
                 c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        rows = pl.tensor.dim(c, 0)
        for i in pl.range(0, rows, ROWS):
            x = pl.load(a, [i, 0], [ROWS, COLS])
            y = pl.load(b, [i, 0], [ROWS, COLS])
            c = pl.store(pl.add(pl.mul(x, y), x), [i, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M], pl.FP32], b: pl.Tensor[[M], pl.FP32],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        a2 = pl.reshape(a, [FLAT_ROWS, COLS])
        b2 = pl.reshape(b, [FLAT_ROWS, COLS])
        c = self.fma_rows(a2, b2, c)
        return c


@pl.program
class FoldHalves:
    """``a`` ``[M, N]`` given 2r x 32, ``c`` ``[M, N]`` given r x 32, for any r a multiple of 8: one
    build; the kernel reads each extent from its tensor."""

    @pl.function(type=pl.FunctionType.InCore)
    def fold(self, a: pl.Tensor[[M, N], pl.FP32],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        half = pl.tensor.dim(c, 0)
        for i in pl.range(0, half, ROWS):
            x = pl.load(a, [i, 0], [ROWS, COLS])
            y = pl.load(a, [i + half, 0], [ROWS, COLS])
            c = pl.store(pl.sub(x, y), [i, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, N], pl.FP32],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        c = self.fold(a, c)
        return c


@pl.program
class SwapAxes:
    """``a``, ``b`` ``[M, N]`` given 8 x 32, ``c`` ``[M, N]`` given 32 x 8: the kernel is called with
    the transposed inputs, the caller's ``N`` and ``M`` meeting the callee's ``M``."""

    @pl.function(type=pl.FunctionType.InCore)
    def sub(self, a: pl.Tensor[[M, N], pl.FP32], b: pl.Tensor[[M, N], pl.FP32],
            c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        x = pl.load(a, [0, 0], [COLS, ROWS])
        y = pl.load(b, [0, 0], [COLS, ROWS])
        return pl.store(pl.sub(x, y), [0, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, N], pl.FP32], b: pl.Tensor[[M, N], pl.FP32],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        at = pl.transpose(a, axis1=0, axis2=1)
        bt = pl.transpose(b, axis1=0, axis2=1)
        c = self.sub(at, bt, c)
        return c


@pl.program
class StaticDisagree:
    """A static caller giving the callee's ``M`` 16 (``a``) and 8 (``c``)."""

    @pl.function(type=pl.FunctionType.InCore)
    def head(self, a: pl.Tensor[[M, 64], pl.FP32],
             c: pl.Out[pl.Tensor[[M, 64], pl.FP32]]) -> pl.Tensor[[M, 64], pl.FP32]:
        return pl.store(pl.load(a, [0, 0], [8, 64]), [0, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32],
             c: pl.Out[pl.Tensor[[8, 64], pl.FP32]]) -> pl.Tensor[[8, 64], pl.FP32]:
        c = self.head(a, c)
        return c


@pl.program
class StaticAgree:
    """A static caller whose arguments agree on ``M``: bound to 16, the result typed static."""

    @pl.function(type=pl.FunctionType.InCore)
    def head(self, a: pl.Tensor[[M, 64], pl.FP32],
             c: pl.Out[pl.Tensor[[M, 64], pl.FP32]]) -> pl.Tensor[[M, 64], pl.FP32]:
        return pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32],
             c: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        c = self.head(a, c)
        return c


FLAT = pl.dynamic("FLAT")


@pl.program
class DimAfterCall:
    """The callee's ``M`` is 16 from the static reshape and the caller's run-time ``M`` from ``c``;
    ``pl.tensor.dim`` of the call's result must read ``c``'s rows (it once folded to 16)."""

    @pl.function(type=pl.FunctionType.InCore)
    def copy16(self, a: pl.Tensor[[M, N], pl.FP32],
               c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        return pl.store(pl.load(a, [0, 0], [16, 16]), [0, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[FLAT], pl.FP32], c: pl.Out[pl.Tensor[[M, N], pl.FP32]],
             rows: pl.Out[pl.Tensor[[1], pl.INT64]]) -> pl.Tensor[[M, N], pl.FP32]:
        a2 = pl.reshape(a, [16, 16])
        c = self.copy16(a2, c)
        n = pl.tensor.dim(c, 0)
        pl.tensor.write(rows, [0], pl.cast(n, pl.INT64))
        return c



R = pl.dynamic("R")
Q = pl.dynamic("Q")


@pl.program
class DimValueRule:
    """``M`` used as a value where ``a`` (``[M * 2, N]``), ``b`` and ``c`` (``[M, N]``) disagree on it:
    the kernel reads ``a`` (the first carrier it can invert: ``rows(a) // 2``), as the reference's kernel
    wrapper does; ``out[0]`` gets that ``M``. The entry's own ``M`` (``main``'s ``[M * 2]`` ``x`` and
    ``[M]`` ``z``, bound as one) is read from ``z``, its first *bare* carrier, as the reference's
    orchestration codegen does; ``out[1]`` gets it."""

    @pl.function(type=pl.FunctionType.InCore)
    def count(self, a: pl.Tensor[[M * 2, N], pl.FP32], b: pl.Tensor[[M, N], pl.FP32],
              c: pl.Tensor[[M, N], pl.FP32], m_orch: pl.Scalar[pl.INDEX],
              out: pl.Out[pl.Tensor[[2], pl.INT64]]) -> pl.Tensor[[2], pl.INT64]:
        m = pl.tensor.dim(b, 1) * 0 + M     # M as a scalar value (pl.cast takes a scalar, not a dim)
        pl.tensor.write(out, [0], pl.cast(m, pl.INT64))
        pl.tensor.write(out, [1], pl.cast(m_orch, pl.INT64))
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M * 2, N], pl.FP32], y: pl.Tensor[[R, N], pl.FP32],
             w: pl.Tensor[[Q, N], pl.FP32], z: pl.Tensor[[M, N], pl.FP32],
             out: pl.Out[pl.Tensor[[2], pl.INT64]]) -> pl.Tensor[[2], pl.INT64]:
        m = pl.tensor.dim(y, 1) * 0 + M
        out = self.count(x, y, w, m, out)
        return out


@pl.program
class DimFoldOrch:
    """``pl.tensor.dim(c, 0)`` in an Orchestration function, ``c``'s rows declared ``M`` and ``M`` first
    carried by ``a`` (``[M]``, the flat form): the reference folds the read onto ``M``, whose value is
    ``a``'s extent (its ``_fold_tensor_dim``; codegen defines ``M`` from the first bare carrier)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M], pl.FP32], c: pl.Tensor[[M, N], pl.FP32],
             rows: pl.Out[pl.Tensor[[1], pl.INT64]]) -> pl.Tensor[[1], pl.INT64]:
        n = pl.tensor.dim(c, 0)
        pl.tensor.write(rows, [0], pl.cast(n, pl.INT64))
        return rows


@pl.program
class DimFoldOpaque:
    """The same read in an Opaque function: the reference folds only in Orchestration functions, so
    it reads ``c``."""

    @pl.function
    def main(self, a: pl.Tensor[[M], pl.FP32], c: pl.Tensor[[M, N], pl.FP32],
             rows: pl.Out[pl.Tensor[[1], pl.INT64]]) -> pl.Tensor[[1], pl.INT64]:
        n = pl.tensor.dim(c, 0)
        pl.tensor.write(rows, [0], pl.cast(n, pl.INT64))
        return rows
