"""Mixed cube + vector kernels on the simulators: Group tasks, cross-core pipes, deadlock reports."""
import pytest
import torch

import pypto.ir as ir
import pypto.language as pl
from pypto.errors import SimulationError

from tests.mixed import kernels_mixed as K

D = K.D
PLATFORMS = ["a2a3sim", "a5sim"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_two_pipes_dual_lane_vector_to_cube(platform):
    c = ir.compile(K.TwoPipes, platform=platform)
    a, b = torch.randn(D, D), torch.randn(D, D)
    out = torch.zeros(D, D)
    c(a, b, out)
    # fp32 matmul of the simulator vs float64 with a tolerance of a few fp32 ulps of the sum
    want = ((a.double() + b.double()) @ (a.double() - b.double()))
    torch.testing.assert_close(out.double(), want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_cube_to_vector_split_up_down_each_lane_gets_its_half(platform):
    c = ir.compile(K.CubeToVectorSplit, platform=platform)
    a, b = torch.randn(D, D), torch.randn(D, D)
    out = torch.full((D, D), float("nan"))
    c(a, b, out)
    torch.testing.assert_close(out.double(), a.double() @ b.double() + 1, rtol=1e-5, atol=1e-4)


def test_group_module_records_members_and_lanes():
    c = ir.compile(K.CubeToVectorSplit, platform="a2a3sim")
    text = next(v for k, v in c.files.items() if k.endswith("grp.py")) if hasattr(c, "files") else None
    if text is None:
        from pypto.codegen.group import aiv_lanes, group_members

        prog = c.program if hasattr(c, "program") else K.CubeToVectorSplit
        g = prog.functions["grp"]
        assert aiv_lanes(g, group_members(g, prog)) == 2
    else:
        assert "'aiv_lanes': 2" in text


def test_pop_that_never_gets_a_push_is_a_deadlock_naming_core_pipe_and_line():
    c = ir.compile(K.PopsTwice, platform="a2a3sim")
    with pytest.raises(SimulationError) as e:
        c(torch.randn(D, D), torch.zeros(D, D))
    msg = str(e.value)
    assert "deadlock in mixed-kernel group 'grp'" in msg
    assert "AIC (cube) waits in tpop" in msg and "pipe v2c (vector -> cube) id 3" in msg
    line = next(i for i, t in enumerate(open(K.__file__).read().splitlines(), 1) if "WAITS FOREVER" in t)
    assert f"kernels_mixed.py:{line}" in msg
    assert "AIV0 (vec) has finished" in msg


def test_full_ring_never_freed_is_a_deadlock_at_the_push():
    c = ir.compile(K.RingNeverFreed, platform="a5sim")
    with pytest.raises(SimulationError) as e:
        c(torch.randn(D, D), torch.zeros(D, D))
    msg = str(e.value)
    assert "AIV0 (vec) waits in tpush (all 2 slots taken)" in msg
    line = next(i for i, t in enumerate(open(K.__file__).read().splitlines(), 1) if "THIRD PUSH WAITS" in t)
    assert f"kernels_mixed.py:{line}" in msg
    assert "AIC (cube) waits in tpop" in msg


def test_printed_mixed_program_reparses():
    text = K.TwoPipes.as_python()
    assert "attrs={'dual_aiv_dispatch': True}" in text and "pl.tile.tpop_from_aiv(" in text
    again = pl.parse(text)
    assert again.as_python() == text


def test_cross_core_op_in_an_incore_function_is_a_located_codegen_error():
    src = '''
import pypto.language as pl


@pl.program
class Bad:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        x = pl.load(a, [0, 0], [16, 16])
        pl.tpush_to_aic(x, split=0)
        out = pl.store(x, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = self.k(a, out)
        return out
'''
    prog = pl.parse(src, filename="<bad>")
    with pytest.raises(Exception) as e:
        ir.compile(prog, platform="a2a3sim")
    assert "belongs in an AIC or AIV function" in str(e.value)


def test_bad_split_code_is_rejected_at_parse():
    lines = K.TwoPipes.as_python().splitlines()
    i = next(i for i, t in enumerate(lines) if "tpush_to_aic(" in t)
    lines[i] = lines[i].replace("id=", "split=7, id=")
    src = "\n".join(lines)
    with pytest.raises(Exception) as e:
        pl.parse(src)
    assert "split must be one of" in str(e.value)
