"""Kernels for tests/semantics (issue 13: items 4, 5, 7, 13, 15). Module level, real file: kernel
source is read with inspect."""
import pypto.language as pl


# -- item 4: writes to an In parameter --------------------------------------------------------------

@pl.jit
def forgot_out(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Tensor[[16, 64], pl.FP32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, 1.0)
    return out


@pl.jit
def stores_into_input(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        out = pl.store(t, [0, 0], out)
        a = pl.store(pl.add(t, t), [0, 0], a)
    return out


@pl.jit
def writes_a_slice_of_input(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    for i in pl.range(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, 1.0)
            a[i * 8:i * 8 + 8, :] = pl.slice(out, [8, 64], [0, 0])
    return out


@pl.jit
def inout_is_fine(a: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a[:] = pl.add(a, 1.0)
    return a


@pl.program
class InCoreWritesIn:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[16, 64], pl.FP32], out: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:
        t: pl.Tile[[16, 64], pl.FP32] = pl.load(x, [0, 0], [16, 64])
        ret: pl.Tensor[[16, 64], pl.FP32] = pl.store(t, [0, 0], out)
        return ret

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        out = self.kernel(x, out)
        return out


# -- item 5: a live tile passed as a reduction's scratch ---------------------------------------------

@pl.jit
def scratch_is_live(a: pl.Tensor[[16, 64], pl.FP32], m: pl.Out[pl.Tensor[[16, 1], pl.FP32]],
                    u_out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        u = pl.mul(t, 2.0)
        m = pl.store(pl.row_max(t, u), [0, 0], m)
        u_out = pl.store(u, [0, 0], u_out)
    return m, u_out


@pl.jit
def scratch_reused_as_scratch(a: pl.Tensor[[16, 64], pl.FP32], m: pl.Out[pl.Tensor[[16, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        tmp = pl.create_tile([16, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        s = pl.row_sum(t, tmp)
        x = pl.row_max(t, tmp)
        m = pl.store(pl.add(s, x), [0, 0], m)
    return m


# -- item 7: overlapping stores in pl.parallel --------------------------------------------------------

@pl.jit
def overlapping_bands(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[40, 64], pl.FP32]]):
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[i * 8:i * 8 + 16, :] = pl.mul(a, 2.0)
    return out


@pl.jit
def two_stores_overlap(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[80, 64], pl.FP32]]):
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="first"):
            out[i * 16:i * 16 + 16, :] = pl.mul(a, 2.0)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="second"):
            out[i * 16 + 8:i * 16 + 24, :] = pl.mul(a, 3.0)
    return out


@pl.jit
def disjoint_bands(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[i * 16:(i + 1) * 16, :] = pl.mul(a, 2.0)
    return out


@pl.jit
def overlapping_but_sequential(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[40, 64], pl.FP32]]):
    for i in pl.range(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[i * 8:i * 8 + 16, :] = pl.mul(a, 2.0)
    return out


# -- item 13: hostile values -------------------------------------------------------------------------

@pl.jit
def full_too_big(a: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, pl.full([16, 32], dtype=pl.FP32, value=1e39))
    return out


@pl.jit
def full_inf(a: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, pl.full([16, 32], dtype=pl.FP32, value=float("inf")))
    return out


@pl.jit
def huge_literal(a: pl.Tensor[[16, 32], pl.INT32], out: pl.Out[pl.Tensor[[16, 32], pl.INT32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, 100000000000000000000)
    return out


@pl.jit
def fractional_range(a: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    for i in pl.range(2.5):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, 1.0)
    return out


@pl.jit
def step_from_data(a: pl.Tensor[[16, 32], pl.FP32], s: pl.Tensor[[1, 8], pl.INT32],
                   out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        st = pl.read(s, [0, 0])
        acc = pl.load(a, [0, 0], [16, 32])
        for i in pl.range(0, 4, st):
            acc = pl.add(acc, 1.0)
        out = pl.store(acc, [0, 0], out)
    return out


@pl.jit
def task_ids_overflow(a: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    tids = pl.array.create(2, pl.TASK_ID)
    for i in pl.range(4):
        with pl.at(level=pl.Level.CORE_GROUP) as tid:
            out[:] = pl.add(a, 1.0)
        tids[i] = tid
    return out


@pl.jit
def reads_past_the_end(a: pl.Tensor[[16, 32], pl.FP32], s: pl.Tensor[[1, 8], pl.INT32],
                       out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        r = pl.read(s, [0, 0])
        t = pl.load(a, [r, 0], [16, 32])
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit.incore
def kernel_without_return(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    out = pl.store(pl.load(x, [0, 0], [16, 32]), [0, 0], out)


@pl.jit
def calls_kernel_without_return(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    out = kernel_without_return(x, out)
    return out


@pl.jit
def negative_dim(a: pl.Tensor[[16, -1], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, 1.0)
    return out


@pl.jit
def write_then_read(a: pl.Tensor[[16, 32], pl.FP32], out: pl.InOut[pl.Tensor[[16, 32], pl.FP32]],
                    o2: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, 1.0)
        o2[:] = pl.mul(out, 2.0)
    return out, o2


@pl.jit
def returns_a_new_tensor(x: pl.Tensor[[16, 32], pl.INT32], y: pl.Tensor[[16, 32], pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        r = pl.cmp(x, y, cmp_type=2)
    return r


# -- item 15: arguments ------------------------------------------------------------------------------

@pl.jit
def bare_add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def adds_fp16_param(a: pl.Tensor[[16, 32], pl.FP16], s: pl.Scalar[pl.FP16],
                    out: pl.Out[pl.Tensor[[16, 32], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, s)
    return out


@pl.jit
def literal_too_big(a: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, 1e39)
    return out


@pl.jit
def loads_past_a_short_tensor(a: pl.Tensor[[1, 128], pl.FP32], n: pl.Scalar[pl.INDEX],
                              out: pl.Out[pl.Tensor[[256, 128], pl.FP32]]):
    for i in pl.range(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 64, 0], [64, 128])
            out = pl.store(t, [i * 64, 0], out)
    return out
