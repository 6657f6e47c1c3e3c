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


# ---- loops carrying ``out`` through kernels that store into all of it (``out = k(..., i, out)``):
# the proof reads where the kernels store (batched when disjoint per iteration, else task by task)

@pl.function(type=pl.FunctionType.InCore)
def k_rows(a: pl.Tensor[[128, 64], pl.FP32], i: pl.Scalar[pl.INDEX],
           out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
    t = pl.load(a, [i * 16, 0], [16, 64], target_memory=pl.MemorySpace.Vec)
    out = pl.store(pl.exp(pl.mul(t, 0.5)), [i * 16, 0], out)
    return out


@pl.function(type=pl.FunctionType.InCore)
def k_halves(a: pl.Tensor[[128, 64], pl.FP32], i: pl.Scalar[pl.INDEX],
             out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
    # two stores per task from a kernel loop: rows 32 i + 16 j, j in 0..1 (a 32-row band per task)
    for j in pl.range(2):
        row = i * 32 + j * 16
        t = pl.load(a, [row, 0], [16, 64], target_memory=pl.MemorySpace.Vec)
        out = pl.store(pl.add(t, 1.0), [row, 0], out)
    return out


@pl.function(type=pl.FunctionType.InCore)
def k_shifted(a: pl.Tensor[[128, 64], pl.FP32], i: pl.Scalar[pl.INDEX],
              out: pl.Out[pl.Tensor[[136, 64], pl.FP32]]) -> pl.Tensor[[136, 64], pl.FP32]:
    # 16 rows at 8 i: neighbouring tasks overlap by 8 rows (WAW)
    t = pl.load(a, [i * 16, 0], [16, 64], target_memory=pl.MemorySpace.Vec)
    out = pl.store(t, [i * 8, 0], out)
    return out


@pl.function(type=pl.FunctionType.InCore)
def k_rmw(a: pl.Tensor[[128, 64], pl.FP32], i: pl.Scalar[pl.INDEX],
          out: pl.InOut[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
    # reads its rows of out before writing them
    t = pl.load(a, [i * 16, 0], [16, 64], target_memory=pl.MemorySpace.Vec)
    o = pl.load(out, [i * 16, 0], [16, 64], target_memory=pl.MemorySpace.Vec)
    out = pl.store(pl.add(t, o), [i * 16, 0], out)
    return out


@pl.function(type=pl.FunctionType.InCore)
def k_atomic(a: pl.Tensor[[128, 64], pl.FP32], i: pl.Scalar[pl.INDEX],
             out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
    t = pl.load(a, [i * 16, 0], [16, 64], target_memory=pl.MemorySpace.Vec)
    out = pl.store(t, [i * 16, 0], out, atomic=pl.AtomicType.Add)
    return out


@pl.function(type=pl.FunctionType.InCore)
def k_dyn(a: pl.Tensor[[128, 64], pl.FP32], i: pl.Scalar[pl.INDEX], n: pl.Scalar[pl.INDEX],
          out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
    # a kernel loop with a run-time trip count: its variable in the offset cannot be bounded
    for j in pl.range(n):
        t = pl.load(a, [i * 16 + j * 8, 0], [8, 64], target_memory=pl.MemorySpace.Vec)
        out = pl.store(t, [i * 16 + j * 8, 0], out)
    return out


@pl.program
class CarriedRows:
    """``out = k_rows(a, i, out)``: each task stores rows [16 i, 16 i + 16) of all of ``out``."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(8):
            out = k_rows(a, i, out)
        return out


@pl.program
class CarriedKernelLoop:
    """A kernel storing twice from its own loop (rows 32 i + 16 j), then a second call site writing
    the same 32-row band of a second output: two batched tasks."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], mid: pl.Out[pl.Tensor[[128, 64], pl.FP32]],
             out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(4):
            mid = k_halves(a, i, mid)
            out = k_halves(a, i, out)
        return out


@pl.program
class CarriedNested:
    """``out`` carried through two nested loops (the matmul-block pattern): tasks of block (i, j) store
    rows [32 i + 16 j, + 16); the outer loop is batched, the inner one runs step by step."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(4):
            for j in pl.range(2):
                out = k_rows(a, i * 2 + j, out)
        return out


@pl.program
class CarriedOverlap:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[136, 64], pl.FP32]]) -> pl.Tensor[[136, 64], pl.FP32]:
        for i in pl.range(8):
            out = k_shifted(a, i, out)
        return out


@pl.program
class CarriedReadModifyWrite:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], out: pl.InOut[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(8):
            out = k_rmw(a, i, out)
        return out


@pl.program
class CarriedAtomic:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(8):
            out = k_atomic(a, i, out)
        return out


@pl.program
class CarriedDynamicKernelLoop:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
             out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(8):
            out = k_dyn(a, i, n, out)
        return out


@pl.program
class CarriedReadInLoop:
    """The loop also reads ``out`` (a whole-tensor input of another call): not batched."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(8):
            k_scale(pl.slice(out, [16, 64], [0, 0]), pl.create_tensor([16, 64], dtype=pl.FP32))
            out = k_rows(a, i, out)
        return out


@pl.jit
def mm_softmax_rows(q: pl.Tensor[[256, 32], pl.FP16], k: pl.Tensor[[32, 64], pl.FP16],
                    out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    """softmax(q_i @ k) per 16 rows, one mixed (cube + vector) scope per iteration, ``out`` carried
    (benchmarks/sim_kernels.py mm_softmax at a test size)."""
    for i in pl.parallel(16):
        with pl.at(level=pl.Level.CORE_GROUP):
            a = pl.load(q, [i * 16, 0], [16, 32], target_memory=pl.Mem.Mat)
            b = pl.load(k, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
            s = pl.matmul(pl.move(a, target_memory=pl.Mem.Left), pl.move(b, target_memory=pl.Mem.Right))
            tmp = pl.create_tile([16, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            m = pl.row_max(s, tmp)
            e = pl.exp(pl.row_expand_sub(s, m))
            z = pl.row_sum(e, tmp)
            out = pl.store(pl.row_expand_div(e, z), [i * 16, 0], out)
    return out


@pl.jit
def softmax_rows(a: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    """Row softmax per 16 rows in ``pl.at`` scopes, ``out`` carried (the common @pl.jit loop)."""
    for i in pl.parallel(16):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * 16, 0], [16, 64])
            tmp = pl.create_tile([16, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            m = pl.row_max(x, tmp)
            e = pl.exp(pl.row_expand_sub(x, m))
            s = pl.row_sum(e, tmp)
            out = pl.store(pl.row_expand_div(e, s), [i * 16, 0], out)
    return out


@pl.program
class CarriedRepeated:
    """The carried loop inside a loop that rewrites the same rows each time (not provable): the outer
    loop runs step by step, the inner one batched at each step (its carried tensor: the outer's)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for t in pl.range(3):
            for i in pl.range(8):
                out = k_rows(a, i, out)
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


@pl.program
class ScatterTwoReads:
    """Iteration i updates row ``table[idx[i]] // div[i]`` of ``cache``: two data-dependent reads and
    a division before the region is known (the batched guard's reads and expressions; a bad index
    or a zero divisor fails in the guard, with the per-task form's error)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], idx: pl.Tensor[[16], pl.INT32],
             table: pl.Tensor[[16], pl.INT32], div: pl.Tensor[[16], pl.INT32],
             cache: pl.InOut[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        for i in pl.range(16):
            n = pl.tensor.read(idx, [i])
            row = pl.tensor.read(table, [n]) // pl.tensor.read(div, [i])
            k_row(pl.slice(a, [1, 64], [i, 0]), pl.slice(cache, [1, 64], [row, 0]))
        return cache


@pl.program
class ReturnsCreated:
    """A created tensor (outside the loop) whose slices a batched loop writes, returned to the caller."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32]) -> pl.Tensor[[128, 64], pl.FP32]:
        mid = pl.create_tensor([128, 64], dtype=pl.FP32)
        for i in pl.range(8):
            k_scale(pl.slice(a, [16, 64], [i * 16, 0]), pl.slice(mid, [16, 64], [i * 16, 0]))
        return mid
