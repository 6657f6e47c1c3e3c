"""The reference's parser forms run here with the reference's meaning."""
import textwrap

import pytest
import torch

from kernels_forms_compat import AnnotatedYield, MixedCarry
import pypto.language as pl
from pypto import ir
from pypto.ir import assert_structural_equal
from pypto.ir.printer import print_program
from pypto.errors import InvalidOperationError, ParserTypeError, UnsupportedFeatureError


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


def test_callee_dynamic_dim_binds_to_each_callers_extent():
    from kernels_forms_compat import double_two_shapes

    a, b = torch.randn(32, 64), torch.randn(64, 64)
    oa, ob = torch.zeros(32, 64), torch.full((64, 64), 7.0)
    double_two_shapes(a, b, oa, ob)
    assert torch.equal(oa, a * 2)
    assert torch.equal(ob[:32], b[:32] * 2)   # the callee stores its first 32 rows only
    assert torch.equal(ob[32:], torch.full((32, 64), 7.0))


def test_rsqrt_high_precision_on_tensors_and_refused_on_tiles(tmp_path):
    from kernels_forms_compat import RsqrtPrecise

    a = torch.rand(32, 64) + 0.5
    out = torch.zeros(32, 64)
    ir.compile(RsqrtPrecise, tmp_path)(a, out)
    torch.testing.assert_close(out, torch.rsqrt(a), rtol=0, atol=0)
    src = textwrap.dedent('''
        @pl.program
        class TileHp:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[32, 64], pl.FP32], o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
                t = pl.load(a, [0, 0], [32, 64])
                o = pl.store(pl.rsqrt(t, high_precision=True), [0, 0], o)
                return o
        ''')
    with pytest.raises(InvalidOperationError, match="scratch tile"):
        pl.parse(src)


def test_integer_shift_and_bitwise_operators(tmp_path):
    from kernels_forms_compat import ShiftRows

    a = torch.randn(256, 64)
    out = torch.zeros(256, 64)
    ir.compile(ShiftRows, tmp_path)(a, out)
    assert torch.equal(out, a * torch.tensor([1.0, 3.0, 5.0, 9.0]).repeat_interleave(64)[:, None])
    text = print_program(ShiftRows)
    assert "<<" in text and ">>" in text and "|" in text and "^" in text and "&" in text
    assert_structural_equal(pl.parse(text), ShiftRows)   # the printed operators parse back
    with pytest.raises(ParserTypeError, match="integer scalars"):
        pl.parse(textwrap.dedent('''
            @pl.program
            class F:
                @pl.function(type=pl.FunctionType.Orchestration)
                def main(self, a: pl.Tensor[[64, 64], pl.FP32], s: pl.Scalar[pl.FP32]) -> pl.Tensor[[64, 64], pl.FP32]:
                    k = s << 1
                    return a
            '''))


def test_a_tile_name_reused_in_a_later_task_scope_is_a_new_value():
    from kernels_forms_compat import two_scopes_one_name

    a = torch.randn(256, 64)
    out = torch.zeros(256, 64)
    two_scopes_one_name(a, out)
    assert torch.equal(out, a * 2 + 1)


def test_reading_a_tile_after_its_task_scope_is_a_located_error():
    src = textwrap.dedent('''
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                with pl.at(level=pl.Level.CORE_GROUP):
                    t = pl.load(a, [0, 0], [64, 64])
                o = pl.store(t, [0, 0], o)
                return o
        ''')
    with pytest.raises(UnsupportedFeatureError, match="'t' is computed inside a pl.at scope") as e:
        pl.parse(src)
    assert "o = pl.store(t" in str(e.value)


def test_memref_slots_are_a_checked_placement_hint():
    from kernels_forms_compat import slotted_loads

    a = torch.randn(256, 64)
    out = torch.zeros(256, 64)
    slotted_loads(a, out)
    torch.testing.assert_close(out, a + torch.exp(a), rtol=1e-6, atol=1e-6)
    bad = textwrap.dedent('''
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                x: pl.Tile[[64, 64], pl.FP32, pl.MemRef(slots=2)[SLOT], pl.Mem.Vec] = pl.load(a, [0, 0], [64, 64])
                o = pl.store(x, [0, 0], o)
                return o
        ''')
    with pytest.raises(ParserTypeError, match="slot 2 of pl.MemRef"):
        pl.parse("SLOT = 2\n" + bad)
    with pytest.raises(ParserTypeError, match="needs the slot"):
        pl.parse(bad.replace("pl.MemRef(slots=2)[SLOT]", "pl.MemRef(slots=2)"))


def test_assemble_of_a_lower_rank_value_pads_leading_ones(tmp_path):
    from kernels_forms_compat import AssembleLowerRank

    x = torch.randn(4, 16)
    out = torch.zeros(2, 4, 16)
    ir.compile(AssembleLowerRank, tmp_path)(x, out)
    assert torch.equal(out, torch.stack([x, x * 3]))
    # padded, an [8, 16] value at [0, 0, 0] is [1, 8, 16]: it leaves the [2, 4, 16] tensor (the
    # flattened reading would have written both batches without a word)
    bad = print_program(AssembleLowerRank).replace("pl.Tensor[[4, 16], pl.FP32]", "pl.Tensor[[8, 16], pl.FP32]")
    bad = bad.replace("[4, 16]", "[8, 16]")
    with pytest.raises(InvalidOperationError, match="leaves the tensor on axis 1"):
        pl.parse(bad)


def test_a_task_id_bound_in_two_loops(tmp_path):
    from kernels_forms_compat import TidPerLoop

    a = torch.randn(128, 64)
    out = torch.zeros(128, 64)
    ir.compile(TidPerLoop, tmp_path)(a, out)
    assert torch.equal(out, a + 2.0)
    head, tail = print_program(TidPerLoop).rsplit("        return out", 1)   # the orchestration's return
    bad = head + "        x = tid\n        return out" + tail
    with pytest.raises(Exception, match="defined inside the loop body only"):
        pl.parse(bad)


def test_read_with_a_bare_index_of_a_1d_tensor(tmp_path):
    from kernels_forms_compat import ReadFlat

    a = torch.randn(256, 64)
    table = torch.tensor([2, 0, 3, 1], dtype=torch.int32)
    out = torch.zeros(256, 64)
    ir.compile(ReadFlat, tmp_path)(a, table, out)
    assert torch.equal(out, a.view(4, 64, 64)[table.long()].reshape(256, 64))
