"""The reference's parser forms run here with the reference's meaning."""
import textwrap

import pytest
import torch

from kernels_forms_compat import AnnotatedYield, MixedCarry
import pypto.language as pl
from pypto import ir
from pypto.errors import ParserTypeError


def test_explicit_and_implicit_carries_mix(tmp_path):
    a = torch.randn(256, 64)
    out = torch.zeros(256, 64)
    ir.compile(MixedCarry, tmp_path)(a, out)
    scale = torch.tensor([1.0, 2.0, 4.0, 8.0]).repeat_interleave(64)[:, None]
    assert torch.equal(out, a * scale)


def test_implicit_carry_beside_init_values_keeps_its_type():
    src = textwrap.dedent('''
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32]) -> pl.Tensor[[64, 64], pl.FP32]:
                x: pl.Scalar[pl.INDEX] = 0
                for i, (acc,) in pl.range(4, init_values=(a,)):
                    x = a
                    acc2 = pl.yield_(acc)
                return acc2
        ''')
    with pytest.raises(ParserTypeError, match="Cannot reassign 'x'"):
        pl.parse(src)


def test_annotated_yield_in_if_branches(tmp_path):
    a = torch.randn(256, 64)
    out = torch.zeros(256, 64)
    ir.compile(AnnotatedYield, tmp_path)(a, out)
    add = torch.tensor([1.0, 1.0, 1.0, 3.0]).repeat_interleave(64)[:, None]
    assert torch.equal(out, a + add)
