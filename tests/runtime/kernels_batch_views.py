"""Programs for tests/runtime/test_batch_views.py: batched orchestration loops over rank-reducing
views (``x[b]``: a full-rank ``tensor.slice`` then a ``tensor.reshape`` dropping the unit axis).
``Views`` and ``Columns`` batch; ``Regroup``, ``ReadsWritten`` and ``SameRow`` are refused by the
proof; ``HalfRows`` is accepted with a run-time guard that refuses (two iterations per row)."""
import pypto.language as pl


@pl.function(type=pl.FunctionType.InCore)
def k_sq(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
    t = pl.load(x, [0, 0], [16, 64], target_memory=pl.MemorySpace.Vec)
    y = pl.store(pl.add(pl.mul(t, t), 1.0), [0, 0], y)
    return y


@pl.function(type=pl.FunctionType.InCore)
def k_half(x: pl.Tensor[[8, 64], pl.FP32], y: pl.Out[pl.Tensor[[8, 64], pl.FP32]]) -> pl.Tensor[[8, 64], pl.FP32]:
    t = pl.load(x, [0, 0], [8, 64], target_memory=pl.MemorySpace.Vec)
    y = pl.store(pl.sub(pl.mul(t, 0.5), 2.0), [0, 0], y)
    return y


@pl.function(type=pl.FunctionType.InCore)
def k_flat(x: pl.Tensor[[32, 32], pl.FP32], y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
    t = pl.load(x, [0, 0], [32, 32], target_memory=pl.MemorySpace.Vec)
    y = pl.store(pl.mul(t, 3.0), [0, 0], y)
    return y


@pl.program
class Views:
    """Per batch entry: ``x[b]`` read, a private intermediate created with a unit axis and viewed
    without it, ``out[b]`` written."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 16, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[8, 16, 64], pl.FP32]]) -> pl.Tensor[[8, 16, 64], pl.FP32]:
        for b in pl.range(8):
            xb = x[b]
            tmp = pl.tensor.reshape(pl.create_tensor([1, 16, 64], dtype=pl.FP32), [16, 64])
            t = k_sq(xb, tmp)
            ob = out[b]
            k_sq(t, ob)
        return out


@pl.program
class Columns:
    """A dropped middle axis: ``x[:, j]`` / ``out[:, j]`` are strided views (rows 1024 apart)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 16, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[8, 16, 64], pl.FP32]]) -> pl.Tensor[[8, 16, 64], pl.FP32]:
        for j in pl.range(16):
            k_half(x[:, j], out[:, j])
        return out


@pl.program
class Regroup:
    """A reshape that regroups the elements ([16, 64] -> [32, 32]): not a unit-axis view, refused."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 16, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[8, 16, 64], pl.FP32]]) -> pl.Tensor[[8, 16, 64], pl.FP32]:
        for b in pl.range(8):
            k_flat(pl.tensor.reshape(x[b], [32, 32]), pl.tensor.reshape(out[b], [32, 32]))
        return out


@pl.program
class ReadsWritten:
    """Iteration b writes ``out[b]`` and reads ``out[(b + 1) % 8]`` (a neighbour's row): refused."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 16, 64], pl.FP32],
             out: pl.InOut[pl.Tensor[[8, 16, 64], pl.FP32]]) -> pl.Tensor[[8, 16, 64], pl.FP32]:
        for b in pl.range(8):
            t = k_sq(out[(b + 1) % 8], pl.create_tensor([16, 64], dtype=pl.FP32))
            k_sq(t, out[b])
        return out


@pl.program
class SameRow:
    """Every iteration writes ``out[0]`` (a write-after-write race between iterations): refused."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 16, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[8, 16, 64], pl.FP32]]) -> pl.Tensor[[8, 16, 64], pl.FP32]:
        for b in pl.range(8):
            k_sq(x[b], out[0])
        return out


@pl.program
class HalfRows:
    """Iterations 2k and 2k + 1 both write ``out[k]`` (``b // 2``: not affine, so a run-time guard
    decides; it finds the overlap and the loop runs task by task)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 16, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[8, 16, 64], pl.FP32]]) -> pl.Tensor[[8, 16, 64], pl.FP32]:
        for b in pl.range(8):
            k_sq(x[b], out[b // 2])
        return out


@pl.jit
def jit_rows(x: pl.Tensor[[8, 16, 64], pl.FP32], out: pl.Out[pl.Tensor[[8, 16, 64], pl.FP32]]):
    """The ``@pl.jit`` form: views taken in the loop, an outlined kernel storing into ``out[b]``."""
    for b in pl.parallel(8):
        xb = x[b]
        ob = out[b]
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(xb, [0, 0], [16, 64])
            ob = pl.store(pl.sub(pl.mul(t, t), t), [0, 0], ob)
    return out
