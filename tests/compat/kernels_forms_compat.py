"""Programs in the reference's parser forms that our own dialect spells differently (module-level:
kernels are parsed from source)."""
import pypto.language as pl


@pl.program
class MixedCarry:
    """A loop with init_values that also rebinds 'out' (not listed there): out is carried implicitly.
    acc doubles each trip (1, 2, 4, 8), and trip i writes a * acc into row block i."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[256, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        acc0: pl.Scalar[pl.FP32] = 1.0
        for i, (acc,) in pl.range(4, init_values=(acc0,)):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [i * 64, 0], [64, 64])
                out = pl.store(pl.mul(t, acc), [i * 64, 0], out)
            acc_next = pl.yield_(acc * 2.0)
        return out


@pl.program
class AnnotatedYield:
    """`n: pl.Scalar[pl.INDEX] = pl.yield_(...)` in both if branches (the reference's annotated form):
    the last row block gets 3.0 added, the others 1.0."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[256, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for i in pl.range(4):
            if i == 3:
                k: pl.Scalar[pl.INDEX] = pl.yield_(3)
            else:
                k: pl.Scalar[pl.INDEX] = pl.yield_(1)
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [i * 64, 0], [64, 64])
                out = pl.store(pl.add(t, pl.cast(k, pl.FP32)), [i * 64, 0], out)
        return out


R = pl.dynamic("R")


@pl.jit.incore
def double_rows(x: pl.Tensor[[R, 64], pl.FP32], out: pl.Out[pl.Tensor[[R, 64], pl.FP32]]):
    t = pl.load(x, [0, 0], [32, 64])
    out = pl.store(pl.mul(t, 2.0), [0, 0], out)
    return out


@pl.jit
def double_two_shapes(a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
                      oa: pl.Out[pl.Tensor[[32, 64], pl.FP32]], ob: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """One dynamic-row callee called with 32 and with 64 rows: R binds per call."""
    oa = double_rows(a, oa)
    ob = double_rows(b, ob)
    return oa, ob


@pl.program
class RsqrtPrecise:
    """pl.rsqrt(x, high_precision=True) on a tensor (the reference's tensor-level keyword)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[32, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.rsqrt(a, high_precision=True)
        return out


@pl.program
class ShiftRows:
    """Row block i scaled by (1 << i) | 1 and block offsets from a shift: the reference's integer
    operators on runtime scalars (<<, >>, &, |, ^)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[256, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for i in pl.range(4):
            row = (i << 8) >> 2                # i * 64
            k = ((1 << i) | 1) ^ (i & 0)       # 1, 3, 5, 9
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [row, 0], [64, 64])
                out = pl.store(pl.mul(t, pl.cast(k, pl.FP32)), [row, 0], out)
        return out


@pl.jit
def two_scopes_one_name(a: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    """'t' names a tile in two task scopes (the second inside a loop): two values, not one carried
    from the first task into the second."""
    scratch = pl.create_tensor([256, 64], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            t = pl.load(a, [i * 64, 0], [64, 64])
            pl.store(pl.mul(t, 2.0), [i * 64, 0], scratch)
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            t = pl.load(scratch, [i * 64, 0], [64, 64])
            pl.store(pl.add(t, 1.0), [i * 64, 0], out)
    return out


SLOTS = pl.MemRef(slots=2)


@pl.jit
def slotted_loads(a: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    """The reference's slot placement, inline and through a module-level MemRef."""
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            x: pl.Tile[[64, 64], pl.FP32, SLOTS[i % 2], pl.Mem.Vec] = pl.load(a, [i * 64, 0], [64, 64])
            y: pl.Tile[[64, 64], pl.FP32, pl.MemRef("ub", slots=2)[(i + 1) % 2], pl.Mem.Vec] = pl.exp(x)
            pl.store(pl.add(x, y), [i * 64, 0], out)
    return out


@pl.program
class AssembleLowerRank:
    """A [4, 16] chunk per batch assembled into a [2, 4, 16] tensor at [b, 0, 0] (leading 1 padded,
    the reference's rule), the second with the reference's offset= keyword."""

    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, x: pl.Tensor[[4, 16], pl.FP32], k: pl.Scalar[pl.FP32],
              out: pl.Out[pl.Tensor[[4, 16], pl.FP32]]) -> pl.Tensor[[4, 16], pl.FP32]:
        t = pl.load(x, [0, 0], [4, 16])
        out = pl.store(pl.mul(t, k), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[4, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[2, 4, 16], pl.FP32]]) -> pl.Tensor[[2, 4, 16], pl.FP32]:
        c0 = pl.create_tensor([4, 16], dtype=pl.FP32)
        c0 = self.scale(x, 1.0, c0)
        c1 = pl.create_tensor([4, 16], dtype=pl.FP32)
        c1 = self.scale(x, 3.0, c1)
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.assemble(out, c0, [0, 0, 0])
            out = pl.assemble(out, c1, offset=[1, 0, 0])
        return out


@pl.program
class TidPerLoop:
    """Two loops each binding 'tid' (a TaskId) in the body; the second loop's tasks wait on the
    first loop's last task. The first loop's 'tid' is rebound before any later read."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[128, 64], pl.FP32], row: pl.Scalar[pl.INDEX], s: pl.Scalar[pl.FP32],
          out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        t = pl.load(a, [row, 0], [64, 64])
        out = pl.store(pl.add(t, s), [row, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(2):
            out, tid = pl.submit(self.k, a, i * 64, 1.0, out)
        for j in pl.range(2):
            out, tid = pl.submit(self.k, a, j * 64, 2.0, out)
        return out


@pl.program
class ReadFlat:
    """pl.read(table, i) with a bare index into a 1-D table (the reference's flat form), in
    orchestration code: row block i of out is a's block table[i]."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[256, 64], pl.FP32], table: pl.Tensor[[4], pl.INT32],
             out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for i in pl.range(4):
            blk = pl.read(table, i)
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [pl.cast(blk, pl.INDEX) * 64, 0], [64, 64])
                out = pl.store(t, [i * 64, 0], out)
        return out
