"""DSL twins of the programs tests/test_ir_builder.py builds with ``ir.IRBuilder``: a built program
must equal its parsed twin (``ir.assert_structural_equal``)."""
import pypto.language as pl


@pl.program
class AddLoop:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
               out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        ta = pl.load(a, [0, 0], [16, 16])
        tb = pl.load(b, [0, 0], [16, 16])
        acc = ta
        for i in pl.range(3):
            acc = pl.add(acc, tb)
        out = pl.store(acc, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = self.kernel(a, b, out)
        return out


@pl.program
class Carried:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) \
            -> pl.Tensor[[16, 16], pl.FP32]:
        ta = pl.load(a, [0, 0], [16, 16])
        for i, (acc,) in pl.range(1, 4, init_values=(ta,)):
            acc2 = pl.mul(acc, ta)
            acc_out = pl.yield_(acc2)
        out = pl.store(acc_out, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = self.kernel(a, out)
        return out


@pl.program
class Scoped:
    @pl.function
    def main(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="mul_add"):
            ta = pl.load(a, [0, 0], [16, 16])
            tb = pl.load(b, [0, 0], [16, 16])
            out = pl.store(pl.add(pl.mul(ta, tb), ta), [0, 0], out)
        return out


@pl.program
class SplitShard:
    """A pl.split_aiv region in a pl.at scope: each vector lane takes its half of the cube's rows."""

    @pl.function
    def main(self, a: pl.Tensor[[16, 32], pl.FP32], b: pl.Tensor[[32, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="shard"):
            acc = pl.matmul(a, b)
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                h = pl.relu(pl.add(pl.aiv_shard(acc), 1.0))
                out = pl.assemble(out, h, [aiv_id * 8, 0])
        return out


@pl.program
class SplitNone:
    """A bare task-parallel pl.split_aiv region (its own scope): each lane doubles the rows it picks."""

    @pl.function
    def main(self, a: pl.Tensor[[16, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            base = aiv_id * 8
            t = pl.load(a, [base, 0], [8, 16])
            out = pl.store(pl.add(t, t), [base, 0], out)
        return out
