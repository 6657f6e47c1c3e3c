"""A program with several independent Orchestration functions (the multi-orchestration form):
one sub-build per orchestration under next_levels/<name>/, selected by name; a plain call is
refused rather than silently running the first."""
import pytest
import torch

import pypto.language as pl
from pypto import ir


@pl.program
class AddOrSub:
    @pl.function(type=pl.FunctionType.InCore)
    def k_add(self, a: pl.Tensor[[16, 32], pl.FP32], b: pl.Tensor[[16, 32], pl.FP32],
              f: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        return pl.store(pl.add(pl.load(a, [0, 0], [16, 32]), pl.load(b, [0, 0], [16, 32])), [0, 0], f)

    @pl.function(type=pl.FunctionType.InCore)
    def k_sub(self, a: pl.Tensor[[16, 32], pl.FP32], b: pl.Tensor[[16, 32], pl.FP32],
              f: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        return pl.store(pl.sub(pl.load(a, [0, 0], [16, 32]), pl.load(b, [0, 0], [16, 32])), [0, 0], f)

    @pl.function(type=pl.FunctionType.Orchestration)
    def do_add(self, a: pl.Tensor[[16, 32], pl.FP32], b: pl.Tensor[[16, 32], pl.FP32],
               f: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        return self.k_add(a, b, f)

    @pl.function(type=pl.FunctionType.Orchestration)
    def do_sub(self, a: pl.Tensor[[16, 32], pl.FP32], b: pl.Tensor[[16, 32], pl.FP32],
               f: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        return self.k_sub(a, b, f)


def test_each_orchestration_is_its_own_build(tmp_path):
    compiled = ir.compile(AddOrSub, output_dir=str(tmp_path), platform="a2a3sim")
    assert compiled.orchestration_names == ["do_add", "do_sub"]
    add, sub = compiled["do_add"], compiled.do_sub
    assert add.name == "do_add" and add.output_dir == tmp_path / "next_levels" / "do_add"
    assert sorted(p.name for p in (tmp_path / "next_levels" / "do_sub" / "kernels").rglob("*.py")) == ["k_sub.py"]
    a, b = torch.randn(16, 32), torch.randn(16, 32)
    f = torch.zeros(16, 32)
    add(a, b, f)
    assert torch.equal(f, a + b)
    sub(a, b, f)
    assert torch.equal(f, a - b)
    with pytest.raises(TypeError, match="select one explicitly"):
        compiled(a, b, f)
    with pytest.raises(KeyError, match="do_add, do_sub"):
        compiled["nope"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        compiled.nope  # noqa: B018


def test_a_sub_build_keeps_what_its_orchestration_reaches():
    from pypto.driver.multi_orch import orchestration_roots, sub_program

    sub = sub_program(AddOrSub, "do_sub")
    assert sub.name == "do_sub" and [f.name for f in sub.functions] == ["k_sub", "do_sub"]
    assert orchestration_roots(AddOrSub) == ["do_add", "do_sub"] and orchestration_roots(sub) == ["do_sub"]
