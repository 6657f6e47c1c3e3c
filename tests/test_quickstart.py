"""Quickstart kernels on both simulators and under torch_codegen, against torch."""
import json

import pytest
import torch

import pypto.debug
import kernels as K
from pypto.ir import CompiledProgram
from pypto.runtime import RunConfig

PLATFORMS = ["a2a3sim", "a5sim"]


def _inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    a128, b128 = torch.randn(128, 128, generator=g), torch.randn(128, 128, generator=g)
    a64, b64 = torch.randn(64, 128, generator=g), torch.randn(64, 128, generator=g)
    return a128, b128, a64, b64


def _cases():
    a128, b128, a64, b64 = _inputs()
    return {
        "add": (K.add, (a128, b128), (128, 128), torch.float32, a128 + b128),
        "add_then_square": (K.add_then_square, (a128, b128), (128, 128), torch.float32, (a128 + b128) ** 2),
        "accumulate": (K.accumulate, (a64,), (64, 128), torch.float32, (5 * a64) ** 2),
        "fused": (K.fused, (a64, b64), (64, 128), torch.float32, (a64 + b64) * 2.0),
        "bare_add": (K.bare_add, (a64, b64), (64, 128), torch.float32, a64 + b64),
        "tile_exp": (K.tile_exp, (a64,), (64, 128), torch.float32, torch.exp(a64)),
        "add_fp16": (K.add_fp16, (a128.half(), b128.half()), (128, 128), torch.float16,
                     a128.half() + b128.half()),
    }


CASES = list(_cases())


def run_torch_codegen(kernel, inputs, out_shape, dtype):
    src = pypto.debug.torch_codegen(kernel.lower(*inputs, torch.zeros(out_shape, dtype=dtype)))
    ns = {}
    exec(compile(src, f"<torch_codegen {kernel.__name__}>", "exec"), ns)
    out = torch.zeros(out_shape, dtype=dtype)
    ns[kernel.__name__](*inputs, out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", CASES)
def test_simulator_matches_torch(name, platform):
    kernel, inputs, shape, dtype, expected = _cases()[name]
    out = torch.zeros(shape, dtype=dtype)
    kernel(*inputs, out, config=RunConfig(platform=platform))
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("name", CASES)
def test_torch_codegen_matches_torch(name):
    kernel, inputs, shape, dtype, expected = _cases()[name]
    out = run_torch_codegen(kernel, inputs, shape, dtype)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fp16_add_bit_equal_sim_vs_torch_codegen(platform):
    kernel, inputs, shape, dtype, expected = _cases()["add_fp16"]
    sim = torch.zeros(shape, dtype=dtype)
    kernel(*inputs, sim, config=RunConfig(platform=platform))
    ref = run_torch_codegen(kernel, inputs, shape, dtype)
    assert torch.equal(sim.view(torch.int16), ref.view(torch.int16))
    assert torch.equal(sim.view(torch.int16), expected.view(torch.int16))


def test_outputs_start_zero_and_are_written():
    """Guard against a vacuous pass: the output really changes."""
    kernel, inputs, shape, dtype, expected = _cases()["add"]
    out = torch.zeros(shape, dtype=dtype)
    kernel(*inputs, out)
    assert out.abs().sum() > 0


@pytest.mark.parametrize("platform", PLATFORMS)
def test_add_compile_signature_mode(platform):
    compiled = K.add.compile(config=RunConfig(platform=platform))
    assert isinstance(compiled, CompiledProgram)
    d = compiled.output_dir
    meta = json.loads((d / "compiled_meta.json").read_text())
    assert meta["platform"] == platform
    assert list((d / "kernels" / "aiv").glob("*.py"))
    assert list((d / "orchestration").glob("*.py"))
    a, b = torch.full((128, 128), 2.0), torch.full((128, 128), 3.0)
    out = torch.zeros(128, 128)
    compiled(a, b, out)
    torch.testing.assert_close(out, torch.full((128, 128), 5.0), rtol=1e-5, atol=1e-5)


def test_add_compile_no_args_default():
    compiled = K.add.compile()
    assert isinstance(compiled, CompiledProgram)
    assert (compiled.output_dir / "compiled_meta.json").is_file()


def test_bare_tensor_specialises_per_shape():
    a, b = torch.randn(32, 64), torch.randn(32, 64)
    out = torch.zeros(32, 64)
    K.bare_add(a, b, out)
    torch.testing.assert_close(out, a + b)
    lowered = K.bare_add.lower(a, b, out)
    assert "[32, 64]" in lowered.as_python()


def test_tile_exp_lowered_ir_keeps_explicit_tile_ops():
    a = torch.randn(64, 128)
    text = K.tile_exp.lower(a, torch.zeros(64, 128)).as_python()
    assert "tile.load" in text and "tile.exp" in text and "tile.store" in text


# ---------------------------------------------------------------- LegalizeTileCast
CAST_VALUES = [0, 1, 2048, 65504, 65505, 65519, 65520, 70000, 2 ** 20, 2 ** 24, 2 ** 24 + 1, 2 ** 25]


def _cast_input():
    vals = CAST_VALUES + [-v for v in CAST_VALUES if v] + [0] * 9
    assert len(vals) == 32
    return torch.tensor(vals, dtype=torch.int32).reshape(1, 32)


@pytest.mark.parametrize("platform,n_casts", [("a5sim", 2), ("a2a3sim", 1)])
def test_legalize_tile_cast_chain(platform, n_casts):
    v = _cast_input()
    text = K.cast_i32_f16.lower(v, torch.zeros(1, 32, dtype=torch.float16),
                                config=RunConfig(platform=platform)).as_python()
    assert text.count("tile.cast") == n_casts, text
    if n_casts == 2:
        assert "FP32" in text  # INT32 -> FP32 -> FP16


@pytest.mark.parametrize("platform", PLATFORMS)
def test_cast_i32_f16_bit_identical(platform):
    v = _cast_input()
    expected = v.to(torch.float16)
    out = torch.zeros(1, 32, dtype=torch.float16)
    K.cast_i32_f16(v, out, config=RunConfig(platform=platform))
    assert torch.equal(out.view(torch.int16), expected.view(torch.int16)), (out, expected)
    src = pypto.debug.torch_codegen(K.cast_i32_f16.lower(v, out, config=RunConfig(platform=platform)))
    ns = {}
    exec(src, ns)
    ref = torch.zeros(1, 32, dtype=torch.float16)
    ns["cast_i32_f16"](v, ref)
    assert torch.equal(ref.view(torch.int16), expected.view(torch.int16)), (ref, expected)


# ---------------------------------------------------------------- examples run as scripts
EXAMPLES = ["add", "add_then_square", "accumulate", "scalar_rhs", "bare_tensor", "tile_ops", "fp16_add",
            "cast_chain"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_script(name):
    """Each quickstart script exits 0 and reports OK (its one run, shared with tests/test_examples.py)."""
    from pathlib import Path

    from inproc import run_example

    r = run_example(Path(__file__).resolve().parent.parent / "examples" / "quickstart" / f"{name}.py")
    assert r.returncode == 0, r.stdout + r.stderr
