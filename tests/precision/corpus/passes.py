"""Corpus kernels compiled with a planted faulty pass in a custom pipeline: the kernel and the golden
are right, a pass breaks the meaning."""
import torch

import pypto.language as pl
from pypto.ir.nodes import ConstFloat
from pypto.ir.visit import Mutator
from pypto.passes.pipeline import Pipeline


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


class _MaxToMin(Mutator):
    def visit_Call(self, c):
        c = self.rebuild(c)
        return c.replace(op="tile.row_min") if c.op == "tile.row_max" else c


def RowMaxAsMin(program):
    """Planted: a 'canonicalisation' that turns row_max into row_min."""
    return _MaxToMin().program(program)


class _DropExp(Mutator):
    def visit_Call(self, c):
        c = self.rebuild(c)
        return c.replace(op="tile.neg") if c.op == "tile.exp" else c


def ExpAsNeg(program):
    """Planted: a 'strength reduction' that replaces exp by neg."""
    return _DropExp().program(program)


class _HalveScalars(Mutator):
    def visit_Call(self, c):
        c = self.rebuild(c)
        k = c.args[1] if c.op in ("tile.muls", "tile.mul") and len(c.args) > 1 else None
        if isinstance(k, ConstFloat):
            return c.replace(args=(c.args[0], k.replace(value=k.value * 0.5)) + tuple(c.args[2:]))
        return c


def FoldScalarsWrong(program):
    """Planted: constant folding that halves every scalar multiplier."""
    return _HalveScalars().program(program)


@pl.jit
def row_peak(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        tmp = pl.create_tile([32, 64], dtype=pl.FP32)
        out = pl.store(pl.row_max(t, tmp), [0, 0], out)
    return out


def row_peak_case():
    x = torch.randn(32, 64, generator=_g(1))
    return {"kernel": row_peak, "inputs": {"x": x, "out": torch.zeros(32, 1)},
            "expected": {"out": x.max(1, keepdim=True).values}, "rtol": 1e-6, "atol": 1e-6,
            "passes": Pipeline.default().insert_after("ConvertTensorToTileOps", RowMaxAsMin)}


@pl.jit
def exp_bias(x: pl.Tensor[[16, 256], pl.FP16], out: pl.Out[pl.Tensor[[16, 256], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(pl.exp(x), 1.0)


def exp_bias_case():
    x = torch.randn(16, 256, generator=_g(2)).half()
    return {"kernel": exp_bias, "inputs": {"x": x, "out": torch.zeros(16, 256, dtype=torch.float16)},
            "expected": {"out": (x.double().exp().half().double() + 1.0).half()}, "rtol": 1e-3, "atol": 1e-3,
            "passes": Pipeline.default().insert_after("ConvertTensorToTileOps", ExpAsNeg)}


@pl.jit
def scale_tiles(x: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [i * 32, 0], [32, 64])
            out = pl.store(pl.mul(t, 3.0), [i * 32, 0], out)
    return out


def scale_tiles_case():
    x = torch.randn(128, 64, generator=_g(3))
    return {"kernel": scale_tiles, "inputs": {"x": x, "out": torch.zeros(128, 64)},
            "expected": {"out": x * 3.0}, "rtol": 1e-6, "atol": 1e-6,
            "passes": Pipeline.default().insert_after("ConvertTensorToTileOps", FoldScalarsWrong)}


@pl.jit
def wrong_op(a: pl.Tensor[[32, 32], pl.FP32], b: pl.Tensor[[32, 32], pl.FP32],
             out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.sub(a, b), 0.5)             # planted: the golden averages (a + b)


def wrong_op_case():
    """No pass is at fault: the kernel as written computes something else (the default pipeline)."""
    a, b = torch.randn(32, 32, generator=_g(4)), torch.randn(32, 32, generator=_g(5))
    return {"kernel": wrong_op, "inputs": {"a": a, "b": b, "out": torch.zeros(32, 32)},
            "expected": {"out": (a + b) * 0.5}, "rtol": 1e-6, "atol": 1e-6}
