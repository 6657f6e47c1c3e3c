"""Kernels of tests/compiler/test_optimize_orch_tensors.py (parsed from source: module level)."""
import pypto.language as pl


@pl.program
class IterReuse:
    """A loop carrying a fresh tensor through a kernel that allocates its next value each time."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 64])
        out = pl.store(pl.add(pl.mul(t, 0.5), 1.0), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def drain(self, x: pl.Tensor[[16, 64], pl.FP32], a: pl.Tensor[[16, 64], pl.FP32], res: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        res = pl.store(pl.add(pl.load(x, [0, 0], [16, 64]), pl.load(a, [0, 0], [16, 64])), [0, 0], res)
        return res

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], res: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        x = pl.create_tensor([16, 64], dtype=pl.FP32, init_value=3.0)
        for i in pl.range(5):
            out = pl.create_tensor([16, 64], dtype=pl.FP32)
            x = self.step(x, out)
        res = self.drain(x, a, res)
        return res


@pl.program
class ParamCarried:
    """The same loop starting from a parameter: the kernel must not write over the caller's input."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 64])
        out = pl.store(pl.add(pl.mul(t, 0.5), 1.0), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def drain(self, x: pl.Tensor[[16, 64], pl.FP32], a: pl.Tensor[[16, 64], pl.FP32], res: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        res = pl.store(pl.add(pl.load(x, [0, 0], [16, 64]), pl.load(a, [0, 0], [16, 64])), [0, 0], res)
        return res

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], res: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        x = a
        for i in pl.range(5):
            out = pl.create_tensor([16, 64], dtype=pl.FP32)
            x = self.step(x, out)
        res = self.drain(x, a, res)
        return res


@pl.program
class StoreFirst:
    """The kernel writes its output before it reads its input: reusing the input would change it."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        z = pl.create_tile([16, 64], dtype=pl.FP32)
        out = pl.store(pl.muls(z, 0.0), [0, 0], out)
        t = pl.load(x, [0, 0], [16, 64])
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, res: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        x = pl.create_tensor([16, 64], dtype=pl.FP32, init_value=3.0)
        for i in pl.range(5):
            out = pl.create_tensor([16, 64], dtype=pl.FP32)
            x = self.step(x, out)
        return res
