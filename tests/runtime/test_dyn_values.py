"""A ``pl.dynamic`` dim used as a run-time value in a function body (``for r in pl.range(M)``,
``r + 1 < M``, ``pl.range(0, M * 2, 2)``): it reads the extent of a parameter carrying it, one
build serves every extent, results are bit-exact against torch, and a dim no parameter carries is
a located error."""
import importlib.util
import sys

import pytest
import torch

import pypto.language as pl
from pypto.errors import ParserTypeError
from pypto.ir import compile as ir_compile
from pypto.ir import parse as parse_program
from pypto.runtime import run

M = pl.dynamic("M")
C = 32


@pl.program
class RowLoop:
    """Every row of an ``[M, C]`` tensor in a kernel loop whose trip count is ``M``; the last row is
    scaled differently (a run-time comparison with ``M``)."""

    @pl.function(type=pl.FunctionType.InCore)
    def rows(self, a: pl.Tensor[[M, C], pl.FP32], c: pl.Out[pl.Tensor[[M, C], pl.FP32]]) -> pl.Tensor[[M, C], pl.FP32]:
        for r in pl.range(M):
            x = pl.load(a, [r, 0], [1, C])
            if r + 1 < M:
                c = pl.store(pl.mul(x, 2.0), [r, 0], c)
            else:
                c = pl.store(pl.mul(x, 3.0), [r, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, C], pl.FP32], c: pl.Out[pl.Tensor[[M, C], pl.FP32]]) -> pl.Tensor[[M, C], pl.FP32]:
        c = self.rows(a, c)
        return c


@pl.program
class EvenRows:
    """A composite bound: ``pl.range(0, M * 2, 2)`` over a ``[M * 2, C]`` tensor (even rows only)."""

    @pl.function(type=pl.FunctionType.InCore)
    def even(self, a: pl.Tensor[[M * 2, C], pl.FP32],
             c: pl.Out[pl.Tensor[[M * 2, C], pl.FP32]]) -> pl.Tensor[[M * 2, C], pl.FP32]:
        for r in pl.range(0, M * 2, 2):
            c = pl.store(pl.neg(pl.load(a, [r, 0], [1, C])), [r, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M * 2, C], pl.FP32],
             c: pl.Out[pl.Tensor[[M * 2, C], pl.FP32]]) -> pl.Tensor[[M * 2, C], pl.FP32]:
        c = self.even(a, c)
        return c


@pytest.mark.parametrize("rows", [1, 2, 7, 16])
def test_a_dynamic_trip_count_runs_every_row_bit_exact(rows):
    a = torch.randn(rows, C)
    c = torch.full((rows, C), float("nan"))
    run(RowLoop, a, c)
    want = a * 2.0
    want[-1] = a[-1] * 3.0
    assert torch.equal(c, want)


def test_one_build_serves_every_trip_count():
    keys = set()
    for rows in (3, 9):
        run(RowLoop, torch.randn(rows, C), torch.zeros(rows, C))
        keys.add(ir_compile(RowLoop).cache_key)
    assert len(keys) == 1


def test_a_composite_dynamic_bound_steps_over_its_extent():
    for m in (1, 4):
        a = torch.randn(2 * m, C)
        c = torch.zeros(2 * m, C)
        run(EvenRows, a, c)
        want = torch.zeros(2 * m, C)
        want[0::2] = -a[0::2]
        assert torch.equal(c, want)


def test_the_dim_reads_the_parameter_extent_and_prints_back():
    text = RowLoop.as_python()
    assert "pl.range(pl.tensor.dim(a, 0))" in text
    again = parse_program(text)
    assert again.as_python() == text


def test_a_dim_no_parameter_carries_is_a_located_error(tmp_path):
    src = '''import pypto.language as pl

N = pl.dynamic("N")


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[8, 32], pl.FP32], c: pl.Out[pl.Tensor[[8, 32], pl.FP32]]) -> pl.Tensor[[8, 32], pl.FP32]:
        for r in pl.range(N):
            c = pl.store(pl.load(a, [r, 0], [1, 32]), [r, 0], c)
        return c
'''
    path = tmp_path / "dyn_unbound.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("dyn_unbound", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["dyn_unbound"] = mod
    with pytest.raises(ParserTypeError, match="dynamic dimension 'N' is used as a value") as e:
        spec.loader.exec_module(mod)
    assert "dyn_unbound.py:10:" in str(e.value) and "pl.Scalar" in str(e.value)


@pl.program
class PastTheEnd:
    """Reads row ``r + 1`` for every ``r < M``: the last iteration reads past the tensor."""

    @pl.function(type=pl.FunctionType.InCore)
    def shift(self, a: pl.Tensor[[M, C], pl.FP32], c: pl.Out[pl.Tensor[[M, C], pl.FP32]]) -> pl.Tensor[[M, C], pl.FP32]:
        for r in pl.range(M):
            c = pl.store(pl.load(a, [r + 1, 0], [1, C]), [r, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, C], pl.FP32], c: pl.Out[pl.Tensor[[M, C], pl.FP32]]) -> pl.Tensor[[M, C], pl.FP32]:
        c = self.shift(a, c)
        return c


def test_an_access_past_the_dynamic_extent_is_a_run_time_error():
    from pypto.errors import SimulationError

    with pytest.raises(SimulationError) as e:
        run(PastTheEnd, torch.randn(5, C), torch.zeros(5, C))
    assert "test_dyn_values.py" in str(e.value)
