"""Programs for the compatibility-layer tests, written as a reference user would (``@pl.program``)."""
import pypto.language as pl


@pl.program
class ScaleRows:
    """out[i*64:(i+1)*64] = a[...] * 2 for the first n row blocks (n is a runtime scalar)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[256, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
             out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for i in pl.range(n):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [i * 64, 0], [64, 64])
                out = pl.store(pl.mul(t, 2.0), [i * 64, 0], out)
        return out


@pl.program
class AddOne:
    """out = a + b, with an unused intermediate (a PTO-W002 UnusedVariable warning)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
             out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            unused = pl.mul(a, 3.0)
            out[:] = pl.add(a, b)
        return out


@pl.program
class NamedScope:
    """out = a * 2 in a scope named by name_hint (its kernel carries the name)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[32, 64], pl.FP32], k: pl.Scalar[pl.FP32],
             out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="ScaleRows"):
            out[:] = pl.mul(a, k)
        return out
