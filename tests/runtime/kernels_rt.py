"""Kernels for the runtime tests (kernel source is read with inspect: module level, real file)."""
import pypto.language as pl



@pl.jit
def raw_chain(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """alloc -> writer of tmp -> reader of tmp: a creator edge and a RAW (tensormap, covered) edge."""
    tmp = pl.create_tensor([64, 64], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP):
        tmp[:] = pl.add(a, a)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(tmp, tmp)
    return out


@pl.jit
def waw_prior(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """Two writers of the same buffer in one scope: the second Out is promoted (R-prior) -> WAW."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, a)
    return out


@pl.jit
def waw_seq(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """Writers of the same region in a sequential loop (R-seq): each waits for the previous one."""
    for i in pl.range(3):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [64, 64])
            acc = pl.load(out, [0, 0], [64, 64])
            out = pl.store(pl.add(acc, t), [0, 0], out)
    return out


@pl.jit
def par_rows(a: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    """Disjoint row blocks written in a parallel loop: no edges between the tasks."""
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 64, 0], [64, 64])
            out = pl.store(pl.mul(t, 2.0), [i * 64, 0], out)
    return out


@pl.jit
def war(a: pl.Tensor[[64, 64], pl.FP32], buf: pl.InOut[pl.Tensor[[64, 64], pl.FP32]], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """A reader of buf, then a writer overwriting buf. The writer is INOUT (R-enclosing) but readers
    never register, so there is no WAR edge: the two race."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(pl.mul(a, a), buf)
    with pl.at(level=pl.Level.CORE_GROUP):
        buf[:] = pl.mul(a, a)
    return out


@pl.jit
def split_atomic(a: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """Four concurrent tasks atomically adding into one zero-initialised output."""
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 64, 0], [64, 64])
            out = pl.store(t, [0, 0], out, atomic=pl.AtomicType.Add)
    return out


@pl.jit
def tagged(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """pl.dump_tag on an intermediate: level-1 dumps capture the tasks that consume it."""
    tmp = pl.create_tensor([64, 64], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP):
        tmp[:] = pl.add(a, a)
    pl.dump_tag(tmp)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(tmp, tmp)
    return out
