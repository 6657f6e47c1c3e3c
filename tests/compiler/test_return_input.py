"""An InCore function that returns one of its In parameters unchanged (``return src``, which the
reference accepts): NormalizeReturnOrder drops it from the kernel's results and every call site
takes the argument it passed instead. Bit-exact results and the rewritten kernel."""
import torch

import pypto.language as pl
from pypto.ir import compile as ir_compile
from pypto.runtime import run


@pl.program
class PassAlone:
    """``scale`` writes ``c`` (never returned) and returns its input ``a``; the caller stores the
    returned tensor's value once more into ``d``."""

    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[[16, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        pl.store(pl.mul(pl.load(a, [0, 0], [16, 32]), 3.0), [0, 0], c)
        return a

    @pl.function(type=pl.FunctionType.InCore)
    def copy(self, x: pl.Tensor[[16, 32], pl.FP32], d: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        return pl.store(pl.load(x, [0, 0], [16, 32]), [0, 0], d)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
             d: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        same = self.scale(a, c)
        d = self.copy(same, d)
        return d


@pl.program
class PassMixed:
    """``both`` returns ``(a, c)``: an input passed through before an output."""

    @pl.function(type=pl.FunctionType.InCore)
    def both(self, a: pl.Tensor[[16, 32], pl.FP32],
             c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> tuple[pl.Tensor[[16, 32], pl.FP32], pl.Tensor[[16, 32], pl.FP32]]:
        c = pl.store(pl.add(pl.load(a, [0, 0], [16, 32]), 1.0), [0, 0], c)
        return a, c

    @pl.function(type=pl.FunctionType.InCore)
    def add(self, x: pl.Tensor[[16, 32], pl.FP32], y: pl.Tensor[[16, 32], pl.FP32],
            d: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        return pl.store(pl.add(pl.load(x, [0, 0], [16, 32]), pl.load(y, [0, 0], [16, 32])), [0, 0], d)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
             d: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        a2, c = self.both(a, c)
        d = self.add(a2, c, d)
        return d


def test_an_input_returned_alone_is_the_callers_argument():
    a = torch.randn(16, 32)
    c, d = torch.zeros(16, 32), torch.zeros(16, 32)
    run(PassAlone, a, c, d)
    assert torch.equal(c, a * 3.0) and torch.equal(d, a)
    text = ir_compile(PassAlone).lowered.as_python()
    assert "return a\n" not in text   # the kernel no longer returns its input


def test_an_input_returned_with_an_output_keeps_both_results():
    a = torch.randn(16, 32)
    c, d = torch.zeros(16, 32), torch.zeros(16, 32)
    run(PassMixed, a, c, d)
    assert torch.equal(c, a + 1.0) and torch.equal(d, a + (a + 1.0))


@pl.program
class ReturnsAView:
    """``k`` returns a reshape of its input: a new tensor no parameter holds."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 32], pl.FP32]) -> pl.Tensor[[32, 16], pl.FP32]:
        return pl.reshape(a, [32, 16])

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP32],
             out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]) -> pl.Tensor[[32, 16], pl.FP32]:
        r = self.k(a)
        out = pl.assemble(out, r, [0, 0])
        return out


def test_a_kernel_returning_a_tensor_no_parameter_holds_is_a_located_error(tmp_path):
    # a user program, not a compiler fault: a PassError at the return naming the fix (it was an
    # InternalError)
    import pytest

    from pypto.errors import PassError

    with pytest.raises(PassError) as e:
        ir_compile(ReturnsAView, tmp_path, dump_passes=False)
    msg = str(e.value)
    assert "test_return_input.py" in msg and "return pl.reshape(a, [32, 16])" in msg and "^" in msg, msg
    assert "returns 'reshape" in msg and "pl.Out[" in e.value.hint
