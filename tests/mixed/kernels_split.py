"""Mixed programs whose AIV / AIC functions carry ``attrs={"split": ...}`` (full-shape bodies that
SplitVectorKernel halves per vector lane) and run-time valid shapes (written for these tests)."""
import pypto.language as pl

R, C = 16, 16
SLOT = R * C * 4


@pl.program
class PopHalvesUpDown:
    """The cube pushes a @ b split UP_DOWN; the AIV function is written at full shape with a
    run-time valid region [vr, vc] on the popped tile: out[:vr, :vc] = (a @ b + 1)[:vr, :vc]."""

    @pl.function(type=pl.FunctionType.AIC, attrs={"split": pl.SplitMode.UP_DOWN})
    def cube(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]], vr: pl.Scalar[pl.INDEX], vc: pl.Scalar[pl.INDEX]):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=SLOT)
        x = pl.load(a, [0, 0], [R, C], target_memory=pl.Mem.Mat)
        y = pl.load(b, [0, 0], [R, C], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(x, target_memory=pl.Mem.Left), pl.move(y, target_memory=pl.Mem.Right))
        pl.tpush_to_aiv(acc, split=1)

    @pl.function(type=pl.FunctionType.AIV, attrs={"split": pl.SplitMode.UP_DOWN})
    def vec(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
            out: pl.Out[pl.Tensor[[R, C], pl.FP32]], vr: pl.Scalar[pl.INDEX],
            vc: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, C], pl.FP32]:
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=SLOT)
        p: pl.Tile[[R, C], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[vr, vc])] = pl.tpop_from_aic(split=1)
        q = pl.add(p, 1.0)
        pl.tfree_to_aic(p)
        return pl.store(q, [0, 0], out)

    @pl.function(type=pl.FunctionType.Group, attrs={"split": pl.SplitMode.UP_DOWN})
    def grp(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
            out: pl.Out[pl.Tensor[[R, C], pl.FP32]], vr: pl.Scalar[pl.INDEX],
            vc: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, C], pl.FP32]:
        self.cube(a, b, out, vr, vc)
        r = self.vec(a, b, out, vr, vc)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
             vs: pl.Tensor[[2], pl.INDEX], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        vr: pl.Scalar[pl.INDEX] = pl.tensor.read(vs, [0])
        vc: pl.Scalar[pl.INDEX] = pl.tensor.read(vs, [1])
        out = self.grp(a, b, out, vr, vc)
        return out


@pl.program
class PushNarrowedNoSplit:
    """The cube narrows a @ b to a run-time [vr, vc] with set_validshape and pushes it whole to one
    vector lane, which adds 1 and stores the valid region."""

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]], vr: pl.Scalar[pl.INDEX], vc: pl.Scalar[pl.INDEX]):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=SLOT)
        x = pl.load(a, [0, 0], [R, C], target_memory=pl.Mem.Mat)
        y = pl.load(b, [0, 0], [R, C], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(x, target_memory=pl.Mem.Left), pl.move(y, target_memory=pl.Mem.Right))
        n: pl.Tile[[R, C], pl.FP32, pl.Mem.Acc, pl.TileView(valid_shape=[vr, vc])] = pl.tile.set_validshape(acc, vr, vc)
        pl.tpush_to_aiv(n, split=0)

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
            out: pl.Out[pl.Tensor[[R, C], pl.FP32]], vr: pl.Scalar[pl.INDEX],
            vc: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, C], pl.FP32]:
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=SLOT)
        p: pl.Tile[[R, C], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[vr, vc])] = pl.tpop_from_aic(split=0)
        q = pl.add(p, 1.0)
        pl.tfree_to_aic(p)
        return pl.store(q, [0, 0], out)

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
            out: pl.Out[pl.Tensor[[R, C], pl.FP32]], vr: pl.Scalar[pl.INDEX],
            vc: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, C], pl.FP32]:
        self.cube(a, b, out, vr, vc)
        r = self.vec(a, b, out, vr, vc)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
             vs: pl.Tensor[[2], pl.INDEX], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        vr: pl.Scalar[pl.INDEX] = pl.tensor.read(vs, [0])
        vc: pl.Scalar[pl.INDEX] = pl.tensor.read(vs, [1])
        out = self.grp(a, b, out, vr, vc)
        return out


@pl.program
class LoadAddLeftRight:
    """LEFT_RIGHT: the AIV function loads x whole, pops a @ b whole, adds them and stores; split per
    lane into column halves. out = a @ b + x."""

    @pl.function(type=pl.FunctionType.AIC, attrs={"split": pl.SplitMode.LEFT_RIGHT})
    def cube(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32], x: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=SLOT)
        p = pl.load(a, [0, 0], [R, C], target_memory=pl.Mem.Mat)
        q = pl.load(b, [0, 0], [R, C], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(p, target_memory=pl.Mem.Left), pl.move(q, target_memory=pl.Mem.Right))
        pl.tpush_to_aiv(acc)

    @pl.function(type=pl.FunctionType.AIV, attrs={"split": pl.SplitMode.LEFT_RIGHT})
    def vec(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32], x: pl.Tensor[[R, C], pl.FP32],
            out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=SLOT)
        t = pl.load(x, [0, 0], [R, C])
        p: pl.Tile[[R, C], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic()
        s = pl.add(p, t)
        pl.tfree_to_aic(p)
        return pl.store(s, [0, 0], out)

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32], x: pl.Tensor[[R, C], pl.FP32],
            out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        self.cube(a, b, x, out)
        r = self.vec(a, b, x, out)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32], x: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.grp(a, b, x, out)
        return out


@pl.program
class ColSumOnSplitAxis:
    """Misuse: a column sum (over rows) in an UP_DOWN-split AIV function."""

    @pl.function(type=pl.FunctionType.AIV, attrs={"split": pl.SplitMode.UP_DOWN})
    def vec(self, x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[1, C], pl.FP32]]) -> pl.Tensor[[1, C], pl.FP32]:
        t = pl.load(x, [0, 0], [R, C])
        s = pl.col_sum(t)  # REDUCES THE SPLIT AXIS
        return pl.store(s, [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[1, C], pl.FP32]]) -> pl.Tensor[[1, C], pl.FP32]:
        out = self.vec(x, out)
        return out


@pl.program
class OddSplitExtent:
    """Misuse: an UP_DOWN split of a tile with 5 rows."""

    @pl.function(type=pl.FunctionType.AIV, attrs={"split": pl.SplitMode.UP_DOWN})
    def vec(self, x: pl.Tensor[[5, C], pl.FP32], out: pl.Out[pl.Tensor[[5, C], pl.FP32]]) -> pl.Tensor[[5, C], pl.FP32]:
        t = pl.load(x, [0, 0], [5, C])  # ODD EXTENT
        return pl.store(pl.add(t, t), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[5, C], pl.FP32], out: pl.Out[pl.Tensor[[5, C], pl.FP32]]) -> pl.Tensor[[5, C], pl.FP32]:
        out = self.vec(x, out)
        return out
