"""pl.cluster() around kernel dispatches (written for test_cluster.py)."""
import pypto.language as pl

R, C = 32, 64


@pl.program
class ClusterDispatch:
    """A four-block scaling kernel dispatched inside pl.cluster(), then a mixed (cube + vector)
    kernel in another cluster scope: c = a * 2 + block, d = c @ w + 1."""

    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[[4 * R, C], pl.FP32],
              c: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]) -> pl.Tensor[[4 * R, C], pl.FP32]:
        b = pl.tile.get_block_idx()
        x = pl.load(a, [b * R, 0], [R, C])
        return pl.store(pl.add(pl.mul(x, 2.0), pl.cast(b, pl.FP32)), [b * R, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[4 * R, C], pl.FP32], w: pl.Tensor[[C, C], pl.FP32],
             c: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]],
             d: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]) -> pl.Tensor[[4 * R, C], pl.FP32]:
        with pl.cluster():
            with pl.spmd(core_num=4):
                c = self.scale(a, c)
        with pl.cluster(name_hint="mm"):
            with pl.at(level=pl.Level.CORE_GROUP):
                m = pl.matmul(c, w)
                d = pl.assemble(d, pl.add(m, 1.0), [0, 0])
        return d
