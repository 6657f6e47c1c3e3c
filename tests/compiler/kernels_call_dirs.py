"""Kernels for the DeriveCallDirections tests. Module level, real file: kernel source is read with inspect."""
import pypto.language as pl


@pl.jit
def seq_loop(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """`out` is written in every iteration of a sequential loop: R-seq promotes Out -> INOUT."""
    for i in pl.range(4):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="acc"):
            out[:] = pl.mul(a, 2.0)
    return out


@pl.jit
def par_loop(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    """Disjoint rows written in a pl.parallel loop: no promotion (a parallel loop is not R-seq); the
    loop index reaches the kernel as a scalar argument."""
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            out[i * 64:(i + 1) * 64, :] = pl.mul(a, 2.0)
    return out


@pl.jit
def two_writers(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
                other: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """Two writers of `out` (the second one is R-prior), a reader of `out` writing `other`."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="first"):
        out[:] = pl.mul(a, 2.0)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="second"):
        out[:] = pl.add(a, 1.0)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="reader"):
        other[:] = pl.add(out, a)
    return out, other


@pl.jit
def no_dep(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """no_dep_args=[out]: `out` is NO_DEP for that task."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="nd", no_dep_args=[out]):
        out[:] = pl.mul(a, 2.0)
    return out
