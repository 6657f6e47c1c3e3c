"""Reshape / transpose of run-time-shaped tensors in orchestration (tests/runtime/kernels_dyn_layout.py):
the element count of a reshape from ``[M]`` is checked at run time (a located error), and a static
annotation on a run-time-shaped result is accepted while the value keeps its run-time dimensions."""
import kernels_dyn_layout as K
import pytest
import torch

from pypto.errors import SimulationError
from pypto.ir.types import DynDim
from pypto.ir.visit import iter_stmts
from pypto.runtime import RunConfig, run


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_reshape_of_a_dynamic_vector(platform):
    a, b = torch.randn(256), torch.randn(256)
    c = torch.zeros(16, 16)
    run(K.DynReshape, a, b, c, config=RunConfig(platform=platform))
    assert torch.equal(c, (a + b).reshape(16, 16))


def test_reshape_with_the_wrong_run_time_count_is_located():
    with pytest.raises(SimulationError) as e:
        run(K.DynReshape, torch.randn(200), torch.randn(200), torch.zeros(16, 16))
    msg = str(e.value)
    assert "element count" in msg and "kernels_dyn_layout.py" in msg and "pl.reshape(a_flat" in msg


def test_transpose_annotation_keeps_the_run_time_dims():
    """``a_t: pl.Tensor[[32, 16], ...] = pl.transpose(a)`` with ``a: [M, N]`` parses (as in the
    reference) and ``a_t`` keeps the run-time dims ``[N, M]``: the constants are not a promise the
    compiler could check. (Transposing in orchestration itself is not simulated yet.)"""
    main = K.DynTranspose.get_function("main")
    (a_t,) = [s.var for s in iter_stmts(main.body) if getattr(getattr(s, "var", None), "name", "") == "a_t"]
    assert a_t.type.shape == (DynDim("N"), DynDim("M"))


def test_static_annotation_that_contradicts_a_static_value_is_still_an_error():
    from pypto.errors import ParserTypeError
    from pypto.language import parse

    src = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP32]) -> pl.Tensor[[32, 16], pl.FP32]:
        a_t: pl.Tensor[[16, 32], pl.FP32] = pl.transpose(a, axis1=0, axis2=1)
        return a_t
'''
    with pytest.raises(ParserTypeError, match="annotation of 'a_t'"):
        parse(src)
