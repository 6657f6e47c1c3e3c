"""validate_ir (seed step 4): the first diverging pass is named; tolerance matters; scalars work."""
import pytest
import torch

from kernels_dbg import scaled, sub_scale
from pypto.ir.nodes import ConstFloat
from pypto.ir.visit import Mutator
from pypto.passes.pipeline import Pipeline
from pypto.runtime import RunConfig


class _SwapSub(Mutator):
    def visit_Call(self, c):
        c = self.rebuild(c)
        return c.replace(args=(c.args[1], c.args[0])) if c.op == "tile.sub" else c


def SwapSubOperands(program):
    """A planted semantic bug: swaps the operands of every tile.sub."""
    return _SwapSub().program(program)


def _scaler(factor):
    class _Scale(Mutator):
        def visit_Call(self, c):
            c = self.rebuild(c)
            if c.op == "tile.muls":
                return c.replace(args=(c.args[0], ConstFloat(c.args[1].value * factor)))
            return c

    def PerturbScale(program):
        """A planted small error: scales the scalar of every tile.muls."""
        return _Scale().program(program)
    return PerturbScale


def _inputs():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 128, generator=g), torch.randn(64, 128, generator=g)
    return a, b, torch.zeros(64, 128)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_planted_fault_is_named(platform, capsys):
    a, b, out = _inputs()
    pipe = Pipeline.default().insert_after("ConvertTensorToTileOps", SwapSubOperands)
    compiled = sub_scale.compile(a, b, out, config=RunConfig(platform=platform, passes=pipe, dump_passes=True))
    with pytest.raises(AssertionError) as e:
        compiled.validate_ir({"a": a, "b": b, "out": out}, {"out": (a - b) * 2}, rtol=1e-5, atol=1e-5)
    assert "first diverging pass: SwapSubOperands" in str(e.value)
    assert "after_SwapSubOperands.py" in str(e.value)
    assert "-        sub_t" in str(e.value) or "pl.tile.sub(b_tile, a_tile)" in str(e.value)  # the IR diff


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_default_pipeline_matches_at_every_pass(platform):
    a, b, out = _inputs()
    compiled = sub_scale.compile(a, b, out, config=RunConfig(platform=platform, dump_passes=True))
    report = compiled.validate_ir({"a": a, "b": b, "out": out}, {"out": (a - b) * 2}, rtol=1e-6, atol=1e-6,
                                  verbose=False)
    assert report.passed and len(report.stages) == len(list((compiled.output_dir / "passes_dump").glob("*.py")))
    assert all(not s.changed for s in report.stages[1:])


def test_small_error_missed_by_loose_default_caught_by_tight_tolerance():
    a, b, out = _inputs()
    pipe = Pipeline.default().insert_after("ConvertTensorToTileOps", _scaler(1 + 1e-3))
    compiled = sub_scale.compile(a, b, out, config=RunConfig(passes=pipe, dump_passes=True))
    tensors, expected = {"a": a, "b": b, "out": out}, {"out": (a - b) * 2}
    with pytest.warns(UserWarning, match="loose default tolerance"):
        report = compiled.validate_ir(tensors, expected, verbose=False)
    assert report.passed  # the 1e-3 relative error hides under 5e-2
    with pytest.raises(AssertionError, match=r"rtol=1e-05, atol=1e-05.*first diverging pass: PerturbScale"):
        compiled.validate_ir(tensors, expected, rtol=1e-5, atol=1e-5, verbose=False)


def test_report_says_which_tolerance_was_used(capsys):
    a, b, out = _inputs()
    compiled = sub_scale.compile(a, b, out, config=RunConfig(dump_passes=True))
    compiled.validate_ir({"a": a, "b": b, "out": out}, {"out": (a - b) * 2}, rtol=1e-4, atol=1e-6)
    assert "rtol=0.0001, atol=1e-06" in capsys.readouterr().err


def test_scalar_parameters_are_supported():
    import pypto.language as pl

    a = torch.randn(64, 128)
    compiled = scaled.compile(a, pl.RUNTIME, torch.zeros(64, 128), config=RunConfig(dump_passes=True))
    tensors = {"a": a, "s": 1.5, "out": torch.zeros(64, 128)}
    assert compiled.validate_ir(tensors, {"out": a * 1.5}, rtol=1e-6, atol=1e-6, verbose=False).passed
    with pytest.raises(AssertionError):
        compiled.validate_ir({**tensors, "s": 2.5}, {"out": a * 1.5}, rtol=1e-6, atol=1e-6, verbose=False)


def test_validate_ir_needs_dumps():
    a, b, out = _inputs()
    compiled = sub_scale.compile(a, b, out, config=RunConfig(dump_passes=False))
    with pytest.raises(FileNotFoundError, match="dump_passes=True"):
        compiled.validate_ir({"a": a, "b": b, "out": out}, {"out": (a - b) * 2}, rtol=1e-5, atol=1e-5)


def test_bad_arguments_are_rejected():
    a, b, out = _inputs()
    compiled = sub_scale.compile(a, b, out, config=RunConfig(dump_passes=True))
    with pytest.raises(ValueError, match="rtol"):
        compiled.validate_ir({"a": a, "b": b, "out": out}, {"out": a}, rtol=-1.0, atol=0.0)
    with pytest.raises(TypeError):
        compiled.validate_ir([a, b, out], {"out": a}, rtol=1e-5, atol=1e-5)


def test_unparsable_dump_is_reported_as_such_not_as_a_tolerance_failure():
    # issue 13 item 16: a dump the parser rejects was reported as "... exceeds tolerance"
    a, b, out = _inputs()
    compiled = sub_scale.compile(a, b, out, config=RunConfig(dump_passes=True))
    dump = compiled.output_dir / "passes_dump"
    victim = sorted(dump.glob("*_after_*.py"))[2]
    victim.write_text(victim.read_text(encoding="utf-8").replace("def ", "def def ", 1), encoding="utf-8")
    with pytest.raises(AssertionError) as e:
        compiled.validate_ir({"a": a, "b": b, "out": out}, {"out": (a - b) * 2}, rtol=1e-5, atol=1e-5, verbose=False)
    msg = str(e.value)
    assert "exceeds tolerance" not in msg
    assert f"cannot parse the dump {victim.name}" in msg and "first stage that did not run" in msg
