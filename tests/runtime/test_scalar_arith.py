"""Scalar arithmetic in generated code computes what the device's scalar unit computes.

FP32 scalar ``+ - * /`` round after every operation (not once from a float64 chain), a division by
zero is IEEE 754's, an FP32 literal and an FP32 parameter are FP32 values, and an integer division
by zero is a located SimulationError, not a Python traceback. The oracle is NumPy's float32
arithmetic, one operation at a time."""
import math

import numpy as np
import pytest
import torch

import pypto.language as pl
from pypto.debug.torch_codegen import torch_codegen
from pypto.errors import SimulationError
from pypto.ir import compile as ir_compile
from pypto.ops.support import scalars
from pypto.runtime import RunConfig

f = np.float32


@pl.program
class Fma:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[8, 64], pl.FP32], a: pl.Scalar[pl.FP32], b: pl.Scalar[pl.FP32],
          c: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor[[8, 64], pl.FP32]]) -> pl.Tensor[[8, 64], pl.FP32]:
        s = a * b + c
        t = s / b - a * 0.1
        return pl.store(pl.add(pl.mul(pl.load(x, [0, 0], [8, 64]), s), t), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 64], pl.FP32], a: pl.Scalar[pl.FP32], b: pl.Scalar[pl.FP32],
             c: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor[[8, 64], pl.FP32]]) -> pl.Tensor[[8, 64], pl.FP32]:
        out = self.k(x, a, b, c, out)
        return out


def _oracle(a, b, c):
    """NumPy float32, one rounding per operation (the parameters first rounded to FP32)."""
    a, b, c = f(a), f(b), f(c)
    with np.errstate(all="ignore"):
        s = f(a * b) + c
        t = f(s / b) - f(a * f(0.1))
        return f(f(1.0) * s) + t   # x is ones: the tile computes x * s + t in FP32


_CASES = [(1 + 2 ** -12, 1 + 2 ** -12, -1.0),   # float64 keeps the 2**-24 FP32 rounds away
          (0.1, 3.0, 0.2), (1e20, 1e20, 1.0), (3.4e38, 2.0, 0.0), (-2.5, 0.0, 1.0), (0.0, 0.0, 0.0),
          (1.5, -0.0, 2.0), (1e-40, 1e-3, 0.0), (math.inf, 1.0, -math.inf)]


@pytest.fixture(scope="module")
def fma():
    return ir_compile(Fma, platform="a2a3sim")


def _run(compiled, a, b, c):
    x, out = torch.ones(8, 64), torch.zeros(8, 64)
    compiled(x, a, b, c, out)
    return out


@pytest.mark.parametrize("a,b,c", _CASES + [tuple(v) for v in np.random.default_rng(7).normal(0, 100, (12, 3))])
def test_fp32_scalar_chain_rounds_every_operation(fma, a, b, c):
    got = _run(fma, a, b, c)
    want = torch.full((8, 64), float(_oracle(a, b, c)))
    assert torch.equal(got.isnan(), want.isnan())
    assert torch.equal(got.nan_to_num(), want.nan_to_num())


def test_the_first_case_differs_from_float64_arithmetic(fma):
    """(the test above could not pass by accident: float64 arithmetic gives other bits here)"""
    a = 1 + 2 ** -12
    s64 = a * a - 1.0
    got = _run(fma, a, a, -1.0)
    s32 = f(f(f(a) * f(a)) - f(1.0))
    assert s32 == f(2 ** -11) and f(s64) != s32
    assert got[0, 0].item() == float(_oracle(a, a, -1.0))


def test_torch_codegen_reference_computes_the_same(fma):
    ns: dict = {}
    exec(compile(torch_codegen(fma.lowered), "<ref Fma>", "exec"), ns)
    for a, b, c in _CASES[:5]:
        x, out = torch.ones(8, 64), torch.zeros(8, 64)
        ns["main"](x, a, b, c, out)
        assert torch.equal(out.nan_to_num(), _run(fma, a, b, c).nan_to_num())


@pytest.mark.parametrize("dtype,np_dtype", [(torch.float32, np.float32), (torch.float16, np.float16)])
def test_rounding_helpers_against_numpy(dtype, np_dtype):
    rng = np.random.default_rng(3)
    vals = np.concatenate([rng.normal(0, 1, 2000) * 10.0 ** rng.integers(-45, 39, 2000),
                           [0.0, -0.0, math.inf, -math.inf, 65504.0, 65520.0, -65520.0, 3.4028235e38, 3.5e38,
                            1e-8, 2 ** -25, 2 ** -24 * 1.5]])
    with np.errstate(over="ignore"):
        for v in vals:
            assert np.array(scalars.sround(float(v), dtype), dtype=np_dtype).tobytes() == \
                np.array(v, dtype=np.float64).astype(np_dtype).tobytes(), v


def test_bf16_rounding_against_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(5)
    for v in list(rng.normal(0, 1, 300) * 10.0 ** rng.integers(-30, 30, 300)) + [1 + 2 ** -8, 1 + 3 * 2 ** -9]:
        want = float(np.float64(v).astype(ml_dtypes.bfloat16))
        assert scalars.sround(float(v), torch.bfloat16) == want, v


def test_division_by_zero_is_ieee():
    sdiv = scalars.sdiv
    assert sdiv(1.0, 0.0, torch.float32) == math.inf
    assert sdiv(-1.0, 0.0, torch.float32) == -math.inf
    assert sdiv(1.0, -0.0, torch.float32) == -math.inf
    assert math.isnan(sdiv(0.0, 0.0, torch.float32)) and math.isnan(sdiv(math.nan, 0.0, torch.float32))
    assert math.isnan(scalars.smod(1.0, 0.0, torch.float32))
    assert scalars.sfloordiv(-3.0, 0.0, torch.float32) == -math.inf
    assert scalars.sfloordiv(7.0, 2.0, torch.float32) == 3.0 and scalars.smod(-7.0, 2.0, torch.float32) == 1.0


def test_fp32_parameters_enter_as_fp32_values(fma):
    """0.1 given for an FP32 parameter is FP32's 0.1: (0.1 * 0.1) in float64 and rounded once differs
    from the FP32 product of the FP32 values for some inputs; the kernel sees the latter."""
    rng = np.random.default_rng(11)
    vals = rng.normal(0, 1, 400)
    hit = [v for v in vals if f(float(v) * float(v)) != f(f(v) * f(v))]
    assert hit, "no input tells the two apart"
    v = float(hit[0])
    got = _run(fma, v, v, 0.0)
    assert got[0, 0].item() == float(_oracle(v, v, 0.0))


@pl.program
class IntDiv:
    @pl.function(type=pl.FunctionType.InCore)
    def row(self, a: pl.Tensor[[4, 64], pl.FP32], i: pl.Scalar[pl.INDEX],
            c: pl.InOut[pl.Tensor[[4, 64], pl.FP32]]) -> pl.Tensor[[4, 64], pl.FP32]:
        return pl.store(pl.add(pl.load(a, [i, 0], [1, 64]), 1.0), [i, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[4, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
             c: pl.InOut[pl.Tensor[[4, 64], pl.FP32]]) -> pl.Tensor[[4, 64], pl.FP32]:
        for i in pl.range(4):
            c = self.row(a, (i * 4) // n, c)
        return c


@pytest.mark.parametrize("batch", [False, True])
def test_integer_division_by_zero_is_a_located_error(batch):
    compiled = ir_compile(IntDiv, platform="a2a3sim")
    a, c = torch.randn(4, 64), torch.zeros(4, 64)
    with pytest.raises(SimulationError) as ei:
        compiled(a, 0, c, config=RunConfig(platform="a2a3sim", sim_batch=batch))
    msg = str(ei.value)
    assert "integer division by zero" in msg and "test_scalar_arith.py" in msg and "// n" in msg
    assert torch.equal(c, torch.zeros(4, 64))   # the caller's InOut tensor as it was
    compiled(a, 16, c, config=RunConfig(platform="a2a3sim", sim_batch=batch))   # (i * 4) // 16 == 0
    assert torch.equal(c[0], a[0] + 1.0) and torch.equal(c[1:], torch.zeros(3, 64))


@pl.program
class Params:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[8, 64], pl.FP32], h: pl.Scalar[pl.FP16], n: pl.Scalar[pl.INT32],
          out: pl.Out[pl.Tensor[[8, 64], pl.FP32]]) -> pl.Tensor[[8, 64], pl.FP32]:
        return pl.store(pl.mul(pl.load(x, [0, 0], [8, 64]), pl.cast(h, pl.FP32) + pl.cast(n, pl.FP32)), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 64], pl.FP32], h: pl.Scalar[pl.FP16], n: pl.Scalar[pl.INT32],
             out: pl.Out[pl.Tensor[[8, 64], pl.FP32]]) -> pl.Tensor[[8, 64], pl.FP32]:
        out = self.k(x, h, n, out)
        return out


@pytest.mark.parametrize("h,n,what", [(1e6, 1, "'h' is FP16"), (70000.0, 1, "'h' is FP16"),
                                      (1.0, 2 ** 31, "'n' is INT32"), (1.0, -2 ** 31 - 1, "'n' is INT32")])
def test_scalar_arguments_out_of_their_dtypes_range_are_refused(h, n, what):
    compiled = ir_compile(Params, platform="a2a3sim")
    x, out = torch.ones(8, 64), torch.zeros(8, 64)
    with pytest.raises(ValueError, match=what):
        compiled(x, h, n, out)
    compiled(x, 0.1, -2 ** 31, out)   # in range: FP16's 0.1, INT32's minimum
    assert out[0, 0].item() == float(f(float(np.float16(0.1))) + f(-2.0 ** 31))
    compiled(x, float("inf"), 2 ** 31 - 1, out)   # an infinity asked for is one
    assert out[0, 0].item() == math.inf
