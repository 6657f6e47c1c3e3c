"""Programs for test_blocks_and_dyn.py: multi-block tasks (pl.spmd) and dynamic dims."""
import pypto.language as pl

R, C = 32, 64
M = pl.dynamic("M")
N = pl.dynamic("N")


@pl.program
class Blocks:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[[8 * R, C], pl.FP32],
              c: pl.Out[pl.Tensor[[8 * R, C], pl.FP32]]) -> pl.Tensor[[8 * R, C], pl.FP32]:
        b = pl.tile.get_block_idx()
        x = pl.load(a, [b * R, 0], [R, C])
        y = pl.add(pl.mul(x, 1.5), pl.cast(pl.tile.get_block_num(), pl.FP32))
        return pl.store(y, [b * R, 0], c)

    @pl.function(type=pl.FunctionType.InCore)
    def poison(self, e: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t: pl.Tile[[R, C], pl.FP32] = pl.tile.full([R, C], dtype=pl.FP32, value=-9.0)
        return pl.store(t, [0, 0], e)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[8 * R, C], pl.FP32], c: pl.Out[pl.Tensor[[8 * R, C], pl.FP32]],
             d: pl.Out[pl.Tensor[[8 * R, C], pl.FP32]], e: pl.Out[pl.Tensor[[R, C], pl.FP32]],
             gate: pl.Tensor[[1, 8], pl.INT32]) -> pl.Tensor[[8 * R, C], pl.FP32]:
        c, t0 = pl.spmd_submit(self.scale, a, c, core_num=8)
        for i in pl.spmd(8):
            x = pl.load(c, [i * R, 0], [R, C])
            d = pl.store(pl.sub(x, pl.load(a, [i * R, 0], [R, C])), [i * R, 0], d)
        with pl.spmd(1, deps=[t0], predicate=(gate[0, 0] > 0)) as t2:
            e = self.poison(e)
        return d


@pl.program
class DynAdd:
    @pl.function(type=pl.FunctionType.InCore)
    def add(self, a: pl.Tensor[[M, N], pl.FP32], b: pl.Tensor[[M, N], pl.FP32],
            c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        return pl.store(pl.add(pl.load(a, [0, 0], [16, C]), pl.load(b, [0, 0], [16, C])), [0, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, C], pl.FP32], b: pl.Tensor[[16, C], pl.FP32],
             c: pl.Out[pl.Tensor[[16, C], pl.FP32]]) -> pl.Tensor[[16, C], pl.FP32]:
        c = self.add(a, b, c)
        return c


@pl.program
class DynRows:
    """Entry and kernel dynamic in rows (``M * 2``): one build serves every even row count."""

    @pl.function(type=pl.FunctionType.InCore)
    def double(self, a: pl.Tensor[[M * 2, C], pl.FP32],
               c: pl.Out[pl.Tensor[[M * 2, C], pl.FP32]]) -> pl.Tensor[[M * 2, C], pl.FP32]:
        rows = pl.tensor.dim(a, 0)
        cols = pl.tensor.dim(a, 1)          # static: folds to 64
        for i in pl.range(0, rows, 2):
            x = pl.load(a, [i, 0], [2, cols])
            c = pl.store(pl.add(x, x), [i, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M * 2, C], pl.FP32],
             c: pl.Out[pl.Tensor[[M * 2, C], pl.FP32]]) -> pl.Tensor[[M * 2, C], pl.FP32]:
        c = self.double(a, c)
        return c


@pl.program
class RuntimeValid:
    """``valid_shape=[m, n]`` from scalars read at run time: the store writes only that region."""

    @pl.function(type=pl.FunctionType.InCore)
    def add(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
            c: pl.Out[pl.Tensor[[64, 64], pl.FP32]], m: pl.Scalar[pl.INDEX],
            n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64, 64], pl.FP32]:
        x = pl.load(a, [0, 0], [64, 64], valid_shape=[m, n])
        y = pl.load(b, [0, 0], [64, 64], valid_shape=[m, n])
        return pl.store(pl.add(x, y), [0, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32], vs: pl.Tensor[[2], pl.INDEX],
             c: pl.Out[pl.Tensor[[64, 64], pl.FP32]], d: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        m: pl.Scalar[pl.INDEX] = pl.tensor.read(vs, [0])
        n: pl.Scalar[pl.INDEX] = pl.tensor.read(vs, [1])
        c = self.add(a, b, c, m, n)
        with pl.at(level=pl.Level.CORE_GROUP):   # outlined: m becomes a parameter of the kernel
            x = pl.load(a, [0, 0], [64, 64], valid_shape=[m, 64])
            d = pl.store(pl.mul(x, 2.0), [0, 0], d)
        return d


@pl.program
class WholeDevice:
    """A launch sized on the device: one block per vector core, block b writes row b."""

    @pl.function(type=pl.FunctionType.InCore)
    def row(self, a: pl.Tensor[[64, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        b = pl.tile.get_block_idx()
        x = pl.load(a, [b, 0], [1, 64])
        return pl.store(pl.add(x, pl.cast(pl.tile.get_subblock_idx(), pl.FP32)), [b, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        c, t = pl.spmd_submit(self.row, a, c, core_num=pl.system.available_aiv_count())
        return c


@pl.jit
def bound_rows(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    """``bind_dynamic`` on bare tensors: one build for every row count."""
    B = pl.dynamic("B")
    a.bind_dynamic(0, B)
    c.bind_dynamic(0, B)
    with pl.at(level=pl.Level.CORE_GROUP):
        rows = pl.tensor.dim(a, 0)
        for i in pl.range(rows):
            c = pl.store(pl.mul(pl.load(a, [i, 0], [1, 64]), 3.0), [i, 0], c)
    return c


V = pl.DynVar("V")


@pl.jit
def dynvar_rows(a: pl.Tensor[[V, 64], pl.FP32], c: pl.Out[pl.Tensor[[V, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(pl.tensor.dim(a, 0)):
            c = pl.store(pl.neg(pl.load(a, [i, 0], [1, 64])), [i, 0], c)
    return c


@pl.program
class BlockRace:
    """Planted: in a manual scope the reader of row block 3 has no edge to the 4-block writer."""

    @pl.function(type=pl.FunctionType.InCore)
    def write(self, a: pl.Tensor[[4 * R, C], pl.FP32], c: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]) -> pl.Tensor[[4 * R, C], pl.FP32]:
        b = pl.tile.get_block_idx()
        return pl.store(pl.load(a, [b * R, 0], [R, C]), [b * R, 0], c)

    @pl.function(type=pl.FunctionType.InCore)
    def read(self, c: pl.Tensor[[4 * R, C], pl.FP32], d: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        return pl.store(pl.load(c, [3 * R, 0], [R, C]), [0, 0], d)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[4 * R, C], pl.FP32], c: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]],
             d: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        with pl.manual_scope():
            c, t = pl.spmd_submit(self.write, a, c, core_num=4)
            d, _ = pl.submit(self.read, c, d)
        return d
