"""Kernels for test_tail_cycles.py: one Group program twice, its member functions ending without
a return (the AIC / AIV member form: MembersWithoutReturn) or with one (MembersWithReturn);
everything else the same, line for line. The cube function's last instructions after its only
store (a tfree) and the vector function's after its push (a mul) are what a missing return used to
leave unyielded: the task then ended before their cycles."""
import pypto.language as pl

N = 4           # group tasks
R, C = 16, 32
SLOT = R * C * 4


@pl.program
class MembersWithoutReturn:
    """out_i = a_i @ w, stored by the cube; neither member function returns."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[N * R, C], pl.FP32], w: pl.Tensor[[C, C], pl.FP32], i: pl.Scalar[pl.INDEX],
            out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]):
        pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, slot_num=2, id=0)
        x: pl.Tile[[R, C], pl.FP32, pl.Mem.Vec] = pl.load(a, [i * R, 0], [R, C])
        pl.tpush_to_aic(x, split=0, id=0)
        _doubled = pl.mul(x, 2.0)   # (computed and dropped: the last instruction)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[N * R, C], pl.FP32], w: pl.Tensor[[C, C], pl.FP32], i: pl.Scalar[pl.INDEX],
             out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]):
        pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, slot_num=2, id=0)
        wm = pl.load(w, [0, 0], [C, C], target_memory=pl.Mem.Mat)
        wr = pl.move(wm, target_memory=pl.Mem.Right)
        m: pl.Tile[[R, C], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
        r = pl.matmul(pl.move(m, target_memory=pl.Mem.Left), wr)
        out = pl.store(r, [i * R, 0], out)
        pl.tfree_to_aiv(m, id=0)

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, a: pl.Tensor[[N * R, C], pl.FP32], w: pl.Tensor[[C, C], pl.FP32], i: pl.Scalar[pl.INDEX],
            out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]) -> pl.Tensor[[N * R, C], pl.FP32]:
        self.vec(a, w, i, out)
        self.cube(a, w, i, out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[N * R, C], pl.FP32], w: pl.Tensor[[C, C], pl.FP32],
             out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]) -> pl.Tensor[[N * R, C], pl.FP32]:
        for i in pl.parallel(N):
            out = self.grp(a, w, i, out)
        return out


@pl.program
class MembersWithReturn:
    """MembersWithoutReturn with a final ``return out`` in both member functions."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[N * R, C], pl.FP32], w: pl.Tensor[[C, C], pl.FP32], i: pl.Scalar[pl.INDEX],
            out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]) -> pl.Tensor[[N * R, C], pl.FP32]:
        pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, slot_num=2, id=0)
        x: pl.Tile[[R, C], pl.FP32, pl.Mem.Vec] = pl.load(a, [i * R, 0], [R, C])
        pl.tpush_to_aic(x, split=0, id=0)
        _doubled = pl.mul(x, 2.0)   # (computed and dropped: the last instruction)
        return out

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[N * R, C], pl.FP32], w: pl.Tensor[[C, C], pl.FP32], i: pl.Scalar[pl.INDEX],
             out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]) -> pl.Tensor[[N * R, C], pl.FP32]:
        pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, slot_num=2, id=0)
        wm = pl.load(w, [0, 0], [C, C], target_memory=pl.Mem.Mat)
        wr = pl.move(wm, target_memory=pl.Mem.Right)
        m: pl.Tile[[R, C], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
        r = pl.matmul(pl.move(m, target_memory=pl.Mem.Left), wr)
        out = pl.store(r, [i * R, 0], out)
        pl.tfree_to_aiv(m, id=0)
        return out

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, a: pl.Tensor[[N * R, C], pl.FP32], w: pl.Tensor[[C, C], pl.FP32], i: pl.Scalar[pl.INDEX],
            out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]) -> pl.Tensor[[N * R, C], pl.FP32]:
        self.vec(a, w, i, out)
        self.cube(a, w, i, out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[N * R, C], pl.FP32], w: pl.Tensor[[C, C], pl.FP32],
             out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]) -> pl.Tensor[[N * R, C], pl.FP32]:
        for i in pl.parallel(N):
            out = self.grp(a, w, i, out)
        return out
