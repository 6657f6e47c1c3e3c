"""Programs whose orchestration reads or writes an element of a tensor that tasks submitted before
it write or read (tests/runtime/test_orch_access.py)."""
import pypto.language as pl


@pl.function(type=pl.FunctionType.InCore)
def k_fill(x: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
    t = pl.load(x, [0, 0], [16, 16], target_memory=pl.MemorySpace.Vec)
    y = pl.store(pl.add(t, 1.0), [0, 0], y)
    return y


@pl.function(type=pl.FunctionType.InCore)
def k_scale(x: pl.Tensor[[16, 16], pl.FP32], s: pl.Scalar[pl.FP32],
            y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
    t = pl.load(x, [0, 0], [16, 16], target_memory=pl.MemorySpace.Vec)
    y = pl.store(pl.mul(t, s), [0, 0], y)
    return y


@pl.function(type=pl.FunctionType.InCore)
def k_row(x: pl.Tensor[[1, 16], pl.FP32], s: pl.Scalar[pl.FP32],
          y: pl.Out[pl.Tensor[[1, 16], pl.FP32]]) -> pl.Tensor[[1, 16], pl.FP32]:
    t = pl.load(x, [0, 0], [1, 16], target_memory=pl.MemorySpace.Vec)
    y = pl.store(pl.mul(t, s), [0, 0], y)
    return y


@pl.program
class ReadAfterProducer:
    """``s`` is an element a task computes: the read must see the task's result (x + 1)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        mid = pl.create_tensor([16, 16], dtype=pl.FP32)
        mid = k_fill(x, mid)
        s = pl.tensor.read(mid, [3, 5])
        out = k_scale(x, s, out)
        return out


@pl.program
class ReadOfInput:
    """A read of the caller's input that no task writes: nothing to wait for."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        mid = pl.create_tensor([16, 16], dtype=pl.FP32)
        mid = k_fill(x, mid)
        s = pl.tensor.read(x, [0, 0])
        out = k_scale(mid, s, out)
        return out


@pl.program
class WriteAfterReader:
    """The orchestration overwrites an element of ``x`` after submitting a task that reads ``x``: the
    task must see the old value (x * 2), the caller the new one."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.InOut[pl.Tensor[[16, 16], pl.FP32]],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = k_scale(x, 2.0, out)
        x = pl.tensor.write(x, [0, 0], 100.0)
        return out


@pl.program
class ReadInBatchedLoop:
    """Each iteration scales a row by an element of ``mid`` (computed by a task before the loop)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        mid = pl.create_tensor([16, 16], dtype=pl.FP32)
        mid = k_fill(x, mid)
        for i in pl.range(16):
            s = pl.tensor.read(mid, [i, 0])
            k_row(pl.slice(x, [1, 16], [i, 0]), s, pl.slice(out, [1, 16], [i, 0]))
        return out
