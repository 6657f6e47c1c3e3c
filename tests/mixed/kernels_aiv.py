"""Kernels with pl.split_aiv regions and the named crossings pl.aiv_shard / pl.aic_gather (written
for tests/mixed/test_split_aiv.py)."""
import pypto.language as pl

M, K, N = 16, 32, 16
H = M // 2


@pl.program
class ShardUpDown:
    """The cube computes a @ b; each lane takes its half of the rows and stores relu(x + 1) there."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="shard"):
            acc = pl.matmul(a, b)
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                h = pl.relu(pl.add(pl.aiv_shard(acc), 1.0))
                out = pl.assemble(out, h, [aiv_id * H, 0])
        return out


@pl.program
class GatherLeftRight:
    """Each lane forms its column half of x = a * 2 (columns aiv_id * K/2 ...); the cube gets the
    joined tile and computes x @ b."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="gather", optimizations=[pl.cross_core_slot(slot_num=2)]):
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.LEFT_RIGHT):
                x = pl.mul(pl.slice(a, [M, K // 2], [0, aiv_id * (K // 2)]), 2.0)
                xs = pl.aic_gather(x)
            out = pl.assemble(out, pl.matmul(xs, b), [0, 0])
        return out


@pl.program
class NoneRegionVector:
    """A task-parallel region: both lanes run the whole body, each on the rows aiv_id picks."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, N], pl.FP32], out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            base = aiv_id * H
            t = pl.load(a, [base, 0], [H, N])
            out = pl.store(pl.add(t, t), [base, 0], out)
        return out


@pl.program
class ShardOfVectorValue:
    """Misuse: pl.aiv_shard of a value already on the vector lanes."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, N], pl.FP32], out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                t = pl.load(a, [0, 0], [M, N])
                h = pl.aiv_shard(t)   # SHARD OF A VECTOR TILE
                out = pl.store(h, [aiv_id * H, 0], out)
        return out


@pl.program
class UnnamedCrossing:
    """Misuse: a lane value feeds the cube without pl.aic_gather."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                x = pl.mul(a, 2.0)
            out = pl.assemble(out, pl.matmul(x, b), [0, 0])   # UNNAMED CROSSING
        return out


@pl.program
class SplitAndRegions:
    """Misuse: pl.split(...) on a scope that also opens a pl.split_aiv region."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, N], pl.FP32], out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):   # SPLIT AND REGION
                t = pl.load(a, [aiv_id * H, 0], [H, N])
                out = pl.store(t, [aiv_id * H, 0], out)
        return out


@pl.program
class RaggedTail:
    """A slice whose box (16 rows) passes the end of a 13-row tensor, valid to its 13 rows."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[13, N], pl.FP32], out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.slice(a, [M, N], [0, 0], valid_shape=[13, N])
            out = pl.assemble(out, pl.add(t, 1.0), [0, 0])
        return out


VALID_M = 5


@pl.jit
def ragged_shard(a: pl.Tensor[[VALID_M, K], pl.FP32], w: pl.Tensor[[N, K], pl.FP32],
                 out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
    """A product valid to 5 of its 16 rows, shared out UP_DOWN: lane 0 holds 5 valid rows, lane 1
    none; each lane stores its own."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="ragged"):
        a_tile = pl.slice(a, [M, K], [0, 0], valid_shape=[VALID_M, K])
        acc = pl.matmul(a_tile, w[0:N, 0:K], b_trans=True, out_dtype=pl.FP32)
        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            shard = pl.relu(pl.aiv_shard(acc))
            out[aiv_id * H: aiv_id * H + H, 0:N] = shard
    return out


ODD, ODD_HALF = 17, 9


@pl.jit
def odd_shard(a: pl.Tensor[[ODD, K], pl.FP32], w: pl.Tensor[[N, K], pl.FP32],
              out: pl.Out[pl.Tensor[[ODD, N], pl.FP32]]) -> pl.Tensor[[ODD, N], pl.FP32]:
    """17 rows shared out UP_DOWN: lane 0 rows 0-8, lane 1 rows 9-16 (pto-isa's odd split code)."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="odd"):
        acc = pl.matmul(a[0:ODD, 0:K], w[0:N, 0:K], b_trans=True, out_dtype=pl.FP32)
        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            shard = pl.aiv_shard(acc)
            out[aiv_id * ODD_HALF: aiv_id * ODD_HALF + ODD_HALF, 0:N] = shard
    return out


@pl.program
class NoneGatherDiffers:
    """Misuse: out of a NONE region each lane gathers a different tile (rows aiv_id * M ...)."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[2 * M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                x = pl.aic_gather(pl.mul(pl.slice(a, [M, K], [aiv_id * M, 0]), 2.0))   # LANES DIFFER
            out = pl.assemble(out, pl.matmul(x, b), [0, 0])
        return out


@pl.jit
def none_region_in_spmd_pipeline(a: pl.Tensor[[M, N], pl.FP32], c: pl.Out[pl.Tensor[[M, N], pl.FP32]]):
    """A NONE region in a pl.spmd task, around a pl.pipeline loop: each lane accumulates its rows
    (aiv_id * H ...) four times (the reference's split_aiv_none codegen kernel, smaller)."""
    for blk in pl.spmd(2):  # noqa: B007
        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            base = aiv_id * H
            acc = pl.load(a, [base, 0], [H, N])
            for sb in pl.pipeline(1, 4, stage=2):  # noqa: B007
                t = pl.load(a, [base, 0], [H, N])
                acc = pl.add(acc, t)
            c = pl.store(acc, [base, 0], c)
    return c
