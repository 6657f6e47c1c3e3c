"""Misuse of the task surfaces: each kernel fails to compile with a caret error."""
import pypto.language as pl


@pl.jit
def deps_tensor(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, deps=[out]):
        out[:] = pl.add(a, a)
    return out


@pl.jit
def tid_level(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.HOST) as tid:
        out[:] = pl.add(a, a)
    return out


@pl.jit
def nested_manual(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.manual_scope():
        with pl.manual_scope():
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(a, a)
    return out


@pl.jit
def manual_in_at(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        with pl.manual_scope():
            out[:] = pl.add(a, a)
    return out


@pl.jit
def no_dep_unused(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    b = pl.create_tensor([64, 64], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[b]):
        out[:] = pl.add(a, a)
    return out
