"""parse(print(p)) is structurally equal to p for every test kernel at every pipeline stage."""
import pytest
import torch

import kernels as K
import pypto.ir
from pypto.frontend.specialize import specialize
from pypto.ir import VerificationLevel, assert_structural_equal, run_pipeline, structural_equal
from pypto.language import parse

PLATFORMS = ["a2a3sim", "a5sim"]


def _args():
    f = torch.zeros
    return {
        "add": (K.add, (f(128, 128), f(128, 128), f(128, 128))),
        "add_then_square": (K.add_then_square, (f(128, 128), f(128, 128), f(128, 128))),
        "accumulate": (K.accumulate, (f(64, 128), f(64, 128))),
        "fused": (K.fused, (f(64, 128), f(64, 128), f(64, 128))),
        "bare_add": (K.bare_add, (f(32, 64), f(32, 64), f(32, 64))),
        "tile_exp": (K.tile_exp, (f(64, 128), f(64, 128))),
        "add_fp16": (K.add_fp16, tuple(f(128, 128, dtype=torch.float16) for _ in range(3))),
        "cast_i32_f16": (K.cast_i32_f16, (f(1, 32, dtype=torch.int32), f(1, 32, dtype=torch.float16))),
    }


KERNELS = list(_args())


def _frontend(name):
    kernel, args = _args()[name]
    return specialize(kernel, args, {}).program


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", KERNELS)
def test_every_stage_roundtrips(name, platform):
    result = run_pipeline(_frontend(name), {"platform": platform})
    names = [n for n, _ in result.stages]
    from pypto.passes import PIPELINE

    assert names[0] == "frontend" and len(names) == 1 + len(PIPELINE), names
    for stage, program in result.stages:
        text = program.as_python()
        reparsed = parse(text)
        assert structural_equal(program, reparsed), f"{name} after {stage} does not round-trip:\n{text}"
        assert_structural_equal(program, reparsed)
        assert reparsed.as_python() == text


def test_structural_equal_can_fail():
    """The comparison is not vacuous: different kernels / stages compare unequal."""
    a = _frontend("add")
    b = _frontend("add_fp16")
    assert not structural_equal(a, b)
    stages = run_pipeline(a, {"platform": "a2a3sim"}).stages
    assert not structural_equal(stages[0][1], stages[-1][1])


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", KERNELS)
def test_compile_with_roundtrip_verification(name, platform, tmp_path):
    compiled = pypto.ir.compile(_frontend(name), output_dir=tmp_path / "out",
                                verification_level=VerificationLevel.ROUNDTRIP, platform=platform)
    assert (compiled.output_dir / "compiled_meta.json").is_file()


def test_roundtrip_verification_detects_a_bad_printer(monkeypatch, tmp_path):
    """A pass whose printed form does not parse back is reported by ROUNDTRIP verification."""
    from pypto.errors import VerificationError
    from pypto.ir.nodes import Program

    program = _frontend("add")
    original = Program.as_python

    def broken(self):
        return original(self).replace("pl.FP32", "pl.FP16", 1)

    monkeypatch.setattr(Program, "as_python", broken)
    with pytest.raises(VerificationError, match="Roundtrip"):
        pypto.ir.compile(program, output_dir=tmp_path / "out", verification_level=VerificationLevel.ROUNDTRIP,
                         platform="a2a3sim")
