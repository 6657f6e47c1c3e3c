"""Programs for tests/runtime/test_batch.py (batched orchestration; parsed from source, so they live
in a module). Each orchestration loop writes slices of ``out``: disjoint per iteration
(``rows``, ``nested``, ``ragged``: batched) or not (``overlap``, ``reads_back``, ``whole``: task by task)."""
import pypto.language as pl


@pl.function(type=pl.FunctionType.InCore)
def k_scale(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
    t = pl.load(x, [0, 0], [16, 64], target_memory=pl.MemorySpace.Vec)
    y = pl.store(pl.exp(pl.mul(t, 0.5)), [0, 0], y)
    return y


@pl.function(type=pl.FunctionType.InCore)
def k_acc(x: pl.Tensor[[16, 64], pl.FP32], acc: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
    t = pl.load(x, [0, 0], [16, 64], target_memory=pl.MemorySpace.Vec)
    a = pl.load(acc, [0, 0], [16, 64], target_memory=pl.MemorySpace.Vec)
    acc = pl.store(pl.add(pl.mul(a, 0.75), t), [0, 0], acc)
    return acc


@pl.program
class Rows:
    """Per block of 16 rows: a private intermediate, then the block of ``out``."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(8):
            t = k_scale(pl.slice(a, [16, 64], [i * 16, 0]), pl.create_tensor([16, 64], dtype=pl.FP32))
            k_scale(t, pl.slice(out, [16, 64], [i * 16, 0]))
        return out


@pl.program
class Nested:
    """Two independent loops nested (batched together: 4 x 4 members), each iteration a chain over
    ``steps`` (read from a tensor: the same for all) into a private accumulator."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[256, 64], pl.FP32], steps: pl.Tensor[[4], pl.INT32],
             out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for b in pl.range(4):
            n = pl.tensor.read(steps, [b])
            for g in pl.range(4):
                row = b * 64 + g * 16
                acc = k_scale(pl.slice(a, [16, 64], [row, 0]), pl.create_tensor([16, 64], dtype=pl.FP32))
                for j in pl.range(n):
                    acc = k_acc(pl.slice(a, [16, 64], [(row + j * 16) % 256, 0]), acc)
                k_scale(acc, pl.slice(out, [16, 64], [row, 0]))
        return out


@pl.program
class Ragged:
    """Each iteration runs its own number of steps (``steps[i]``, 0 allowed): members leave the
    inner loop at different steps."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], steps: pl.Tensor[[8], pl.INT32],
             out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(8):
            n = pl.tensor.read(steps, [i])
            acc = k_scale(pl.slice(a, [16, 64], [i * 16, 0]), pl.create_tensor([16, 64], dtype=pl.FP32))
            for j in pl.range(n):
                acc = k_acc(pl.slice(a, [16, 64], [((i + j) % 8) * 16, 0]), acc)
            k_scale(acc, pl.slice(out, [16, 64], [i * 16, 0]))
        return out


@pl.program
class Overlap:
    """Iteration i writes rows [8 i, 8 i + 16): neighbours overlap (WAW): not batched."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(8):
            k_scale(pl.slice(a, [16, 64], [i * 16, 0]), pl.slice(out, [16, 64], [i * 8, 0]))
        return out


@pl.program
class ReadsBack:
    """Iteration i reads the block iteration i - 1 wrote (RAW between iterations): not batched."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[144, 64], pl.FP32]]) -> pl.Tensor[[144, 64], pl.FP32]:
        k_scale(a, pl.slice(out, [16, 64], [0, 0]))
        for i in pl.range(8):
            k_scale(pl.slice(out, [16, 64], [i * 16, 0]), pl.slice(out, [16, 64], [i * 16 + 16, 0]))
        return out


@pl.program
class Whole:
    """Every iteration accumulates into the same tensor (InOut of all of it): not batched."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], out: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        for i in pl.range(8):
            k_acc(pl.slice(a, [16, 64], [i * 16, 0]), out)
        return out


@pl.program
class Chain:
    """Per block: four tasks through three private intermediates (7 task slots, 12 KiB of heap per
    iteration's scope), for the ring limits."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(8):
            t1 = k_scale(pl.slice(a, [16, 64], [i * 16, 0]), pl.create_tensor([16, 64], dtype=pl.FP32))
            t2 = k_scale(t1, pl.create_tensor([16, 64], dtype=pl.FP32))
            t3 = k_scale(t2, pl.create_tensor([16, 64], dtype=pl.FP32))
            k_scale(t3, pl.slice(out, [16, 64], [i * 16, 0]))
        return out


@pl.function(type=pl.FunctionType.InCore)
def k_row(x: pl.Tensor[[1, 64], pl.FP32], y: pl.InOut[pl.Tensor[[1, 64], pl.FP32]]) -> pl.Tensor[[1, 64], pl.FP32]:
    # read-modify-write: two updates of one row give an order-dependent result
    t = pl.load(x, [0, 0], [1, 64], target_memory=pl.MemorySpace.Vec)
    a = pl.load(y, [0, 0], [1, 64], target_memory=pl.MemorySpace.Vec)
    y = pl.store(pl.add(pl.mul(a, 0.5), t), [0, 0], y)
    return y


@pl.program
class Scatter:
    """Iteration i updates row ``table[i]`` of ``cache`` (a KV-cache write through a page table):
    the offsets are data, so the loop is batched only when the run-time guard finds the rows
    distinct."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], table: pl.Tensor[[16], pl.INT32],
             cache: pl.InOut[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        for i in pl.range(16):
            row = pl.tensor.read(table, [i])
            k_row(pl.slice(a, [1, 64], [i, 0]), pl.slice(cache, [1, 64], [row, 0]))
        return cache


@pl.program
class ScatterRagged:
    """Request b updates ``counts[b]`` rows, ``table[4 b + j]``: the guard replays the inner loop
    (its trip count read too) for every request."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], counts: pl.Tensor[[4], pl.INT32],
             table: pl.Tensor[[16], pl.INT32],
             cache: pl.InOut[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        for b in pl.range(4):
            n = pl.tensor.read(counts, [b])
            for j in pl.range(n):
                row = pl.tensor.read(table, [b * 4 + j])
                k_row(pl.slice(a, [1, 64], [b * 4 + j, 0]), pl.slice(cache, [1, 64], [row, 0]))
        return cache


@pl.program
class WriteThenScatter:
    """An orchestration-level element write into the InOut ``cache``, then :class:`Scatter`'s loop."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], table: pl.Tensor[[16], pl.INT32],
             cache: pl.InOut[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        cache = pl.tensor.write(cache, [31, 3], 7.0)
        for i in pl.range(16):
            row = pl.tensor.read(table, [i])
            k_row(pl.slice(a, [1, 64], [i, 0]), pl.slice(cache, [1, 64], [row, 0]))
        return cache
