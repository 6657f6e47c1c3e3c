"""Programs for tests/compiler/test_fuse_create_assemble.py (FuseCreateAssembleToView)."""
import pypto.language as pl


@pl.program
class ChunksInto3D:
    """Each [4, 16] chunk a kernel fills is assembled at [b, 0, 0] of a [3, 4, 16] tensor."""

    @pl.function(type=pl.FunctionType.InCore)
    def fill(self, x: pl.Tensor[[4, 16], pl.FP32], b: pl.Scalar[pl.INDEX],
             out: pl.Out[pl.Tensor[[4, 16], pl.FP32]]) -> pl.Tensor[[4, 16], pl.FP32]:
        t = pl.load(x, [0, 0], [4, 16])
        out = pl.store(pl.adds(t, pl.cast(b, pl.FP32)), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, x: pl.Tensor[[4, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[3, 4, 16], pl.FP32]]) -> pl.Tensor[[3, 4, 16], pl.FP32]:
        for b in pl.range(3):
            chunk: pl.Tensor[[4, 16], pl.FP32] = pl.create_tensor([4, 16], dtype=pl.FP32)
            chunk = self.fill(x, b, chunk)
            out = pl.assemble(out, chunk, [b, 0, 0])
        return out


@pl.program
class ChunksSameRank:
    """[2, 16] chunks assembled at row offsets of an [8, 16] tensor (same rank: a plain slice)."""

    @pl.function(type=pl.FunctionType.InCore)
    def fill(self, x: pl.Tensor[[2, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[2, 16], pl.FP32]]) -> pl.Tensor[[2, 16], pl.FP32]:
        t = pl.load(x, [0, 0], [2, 16])
        out = pl.store(pl.mul(t, t), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, x: pl.Tensor[[2, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
        for i in pl.range(4):
            chunk: pl.Tensor[[2, 16], pl.FP32] = pl.create_tensor([2, 16], dtype=pl.FP32)
            chunk = self.fill(x, chunk)
            out = pl.assemble(out, chunk, [i * 2, 0])
        return out


@pl.program
class ReadBetween:
    """The target is read between the create and the assemble: not fused, so still refused."""

    @pl.function(type=pl.FunctionType.InCore)
    def fill(self, x: pl.Tensor[[2, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[2, 16], pl.FP32]]) -> pl.Tensor[[2, 16], pl.FP32]:
        t = pl.load(x, [0, 0], [2, 16])
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, x: pl.Tensor[[2, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[2, 16], pl.FP32]]) -> pl.Tensor[[2, 16], pl.FP32]:
        chunk: pl.Tensor[[2, 16], pl.FP32] = pl.create_tensor([2, 16], dtype=pl.FP32)
        chunk = self.fill(out, chunk)
        out = pl.assemble(out, chunk, [0, 0])
        return out
