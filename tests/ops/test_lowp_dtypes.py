"""Low-precision dtypes end to end (issue 15): FP8E4M3FN / FP8E5M2 tensors in and out of a5sim
kernels, HF8 and FP4 inside a kernel, the device's rounding of FP8 / HF8 casts, and the refusals
(a2a3 has no FP8 conversion, INT4 has no storage, no arithmetic on FP8), simulator == reference ==
:func:`pypto.numerics.cast.cast_tensor` bit for bit."""
from __future__ import annotations

import pytest
import torch

import kernels_lowp as K
import ops_harness as H
from pypto.debug.torch_codegen import torch_codegen
from pypto.errors import PyptoError
from pypto.runtime import RunConfig
from pypto.numerics.cast import cast_tensor


def _special(shape=(16, 32), seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g) * 64
    flat = x.view(-1)
    flat[:12] = torch.tensor([0.0, -0.0, float("nan"), float("inf"), float("-inf"), 448.0, 464.0, 1e6,
                              1.0625, -1.0625, 2.0 ** -9, 2.0 ** -10])
    return x


def _bits8(t):
    return t.view(torch.uint8)


def _run_ref(kernel, args, platform):
    """The reference executor on the IR lowered for ``platform`` (the FP8 casts exist on a5 only)."""
    args = [a.clone() for a in args]
    ns: dict = {}
    src = torch_codegen(kernel.lower(*args, config=RunConfig(platform=platform)))
    exec(compile(src, f"<ref {kernel.__name__}>", "exec"), ns)
    ns[kernel.__name__](*args)
    return args


def _run_both(kernel, args, platform="a5sim"):
    return H.run_sim(kernel, args, platform), _run_ref(kernel, args, platform)


def test_fp32_to_fp8_out_tensor():
    x = _special()
    out = torch.zeros(16, 32, dtype=torch.float8_e4m3fn)
    sim, ref = _run_both(K.to_fp8, [x, out])
    want = cast_tensor(x, torch.float8_e4m3fn, "rint")
    assert torch.equal(_bits8(sim[1]), _bits8(want)) and torch.equal(_bits8(ref[1]), _bits8(want))
    assert sim[1].view(-1)[6].float().item() == 448.0   # 464 saturates (no inf in E4M3FN)


def test_fp8_casts_round_to_nearest_even_whatever_the_mode():
    """a5 rounds FP32 -> FP8E5M2 with ROUND_R even when floor is asked (pto-isa TCvt.hpp)."""
    x = torch.full((16, 32), 1.125)                     # between 1.0 and 1.25: RNE gives 1.0 ... tie -> even
    x.view(-1)[0] = 1.2                                 # floor would give 1.0, nearest 1.25
    out = torch.zeros(16, 32, dtype=torch.float8_e5m2)
    sim, ref = _run_both(K.to_e5m2_floor, [x, out])
    assert sim[1].view(-1)[0].float().item() == 1.25
    assert torch.equal(_bits8(sim[1]), _bits8(ref[1]))
    assert torch.equal(_bits8(sim[1]), _bits8(cast_tensor(x, torch.float8_e5m2, "rint")))


@pytest.mark.parametrize("dt", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_fp8_tensor_in(dt):
    codes = torch.arange(512, dtype=torch.int32).to(torch.uint8).view(dt).reshape(16, 32)
    out = torch.zeros(16, 32, dtype=torch.float16)
    sim, ref = _run_both(K.from_fp8, [codes, out])
    want = cast_tensor(codes, torch.float16, "rint")
    H.assert_same_bits(sim[1], want, "sim")
    H.assert_same_bits(ref[1], want, "ref")


def test_hf8_roundtrip_ties_away():
    x = _special()
    out = torch.zeros(16, 32)
    sim, ref = _run_both(K.hf8_roundtrip, [x, out])
    want = cast_tensor(cast_tensor(x, "HF8", "round"), torch.float32, "round")
    H.assert_same_bits(sim[1], want, "sim")
    H.assert_same_bits(ref[1], want, "ref")
    assert sim[1].view(-1)[8].item() == 1.125          # 1.0625 is a tie: away from zero


def test_fp4_roundtrip():
    x = _special().to(torch.bfloat16) / 16
    out = torch.zeros(16, 32, dtype=torch.bfloat16)
    sim, ref = _run_both(K.fp4_roundtrip, [x, out])
    want = cast_tensor(cast_tensor(x, "FP4", "rint"), torch.bfloat16, "rint")
    H.assert_same_bits(sim[1], want, "sim")
    H.assert_same_bits(ref[1], want, "ref")
    grid = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0}
    assert {abs(v) for v in sim[1].float().view(-1).tolist()} <= grid


def test_fp8_tile_load_cast_store():
    x = cast_tensor(_special(), torch.float8_e4m3fn, "rint")
    out = torch.zeros(16, 32, dtype=torch.float8_e4m3fn)
    sim, ref = _run_both(K.fp8_tile_moves, [x, out])
    # FP8 -> FP32 -> FP8 is the identity but for NaN, which becomes the canonical 0x7F
    assert torch.equal(_bits8(sim[1]), _bits8(ref[1]))
    assert torch.equal(_bits8(sim[1]), _bits8(cast_tensor(cast_tensor(x, torch.float32), torch.float8_e4m3fn)))


def _error(kernel, args, platform):
    with pytest.raises(PyptoError) as e:
        H.run_sim(kernel, args, platform)
    return str(e.value)


def test_a2a3_has_no_fp8_conversion():
    msg = _error(K.to_fp8, [_special(), torch.zeros(16, 32, dtype=torch.float8_e4m3fn)], "a2a3sim")
    assert "no native cast path from FP32 to FP8E4M3FN for arch a2a3" in msg
    assert "only a5 converts it" in msg and "kernels_lowp.py:" in msg


def test_int4_has_no_storage():
    msg = _error(K.to_int4, [_special().half(), torch.zeros(16, 32, dtype=torch.float16)], "a2a3sim")
    assert "INT4 data cannot be held on the device" in msg and "kernels_lowp.py:" in msg


def test_no_arithmetic_on_fp8():
    x = cast_tensor(_special(), torch.float8_e4m3fn, "rint")
    msg = _error(K.add_fp8, [x, torch.zeros(16, 32, dtype=torch.float8_e4m3fn)], "a5sim")
    assert "FP8E4M3FN operands are not supported" in msg and "pl.cast(x, pl.FP32)" in msg


# FP4 at the call boundary, as the reference takes it: float4_e2m1fn_x2, two codes per byte (element
# 2j in the low nibble), the IR counting codes. Decoded here independently, as the reference's
# matmul_mx test decodes its golden.
_E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
                     dtype=torch.float64)


def _packed_fp4(rows, cols, seed=3):
    codes = torch.randint(0, 16, (rows, cols), generator=torch.Generator().manual_seed(seed)).to(torch.uint8)
    codes.view(-1)[:16] = torch.arange(16, dtype=torch.uint8)
    packed = ((codes[:, 1::2] << 4) | codes[:, 0::2]).contiguous().view(torch.float4_e2m1fn_x2)
    return codes, packed


def test_packed_fp4_in():
    codes, packed = _packed_fp4(16, 64)
    out = torch.zeros(16, 64, dtype=torch.bfloat16)
    sim = H.run_sim(K.fp4_in, [packed, out], "a5sim")
    assert torch.equal(sim[1].double(), _E2M1[codes.long()])
    assert torch.equal(torch.signbit(sim[1]), torch.signbit(_E2M1[codes.long()]))   # -0 codes
    assert torch.equal(sim[0].view(torch.uint8), packed.view(torch.uint8))            # the input untouched
    # the reference executor takes FP4 parameters in the simulator's unpacked form
    from pypto.numerics.formats import fp4_unpack

    ns: dict = {}
    exec(compile(torch_codegen(K.fp4_in.lower(packed, out, config=RunConfig(platform="a5sim"))), "<ref>", "exec"), ns)
    ref_out = out.clone()
    ns["fp4_in"](fp4_unpack(packed), ref_out)
    H.assert_same_bits(ref_out, sim[1], "ref")


def test_packed_fp4_out_and_returned():
    x = (torch.randn(16, 64, generator=torch.Generator().manual_seed(4)) * 3).bfloat16()
    out = torch.zeros(16, 32, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    sim = H.run_sim(K.fp4_out, [x, out], "a5sim")
    b = sim[1].view(torch.uint8)
    codes = torch.stack([b & 0xF, b >> 4], -1).reshape(16, 64)
    want = cast_tensor(x, "FP4", "rint").view(torch.uint8)
    assert torch.equal(codes, want)
    # Out allocated by the call (not passed): returned packed
    cfg = RunConfig(platform="a5sim")
    alloc = K.fp4_out.compile(x, out, config=cfg)(x, config=cfg)
    assert alloc.dtype == torch.float4_e2m1fn_x2 and tuple(alloc.shape) == (16, 32)
    assert torch.equal(alloc.view(torch.uint8), b)


def test_fp4_tile_to_fp8_as_the_reference_mx_case():
    codes, packed = _packed_fp4(16, 64, seed=5)
    out = torch.zeros(16, 32, dtype=torch.float8_e4m3fn)
    sim = H.run_sim(K.fp4_to_fp8_tile, [packed, out], "a5sim")
    assert torch.equal(sim[1].double(), _E2M1[codes[:, 16:48].long()])   # every FP4 value is exact in E4M3


def test_packed_fp4_shape_mismatch_is_clear():
    from pypto.runtime.simulator import _unpack_fp4

    param = {"kind": "TensorType", "dtype": "FP4", "shape": [16, 64], "name": "x"}
    bad = [torch.zeros(16, 64, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)]
    with pytest.raises(TypeError, match="packed last dimension of 32"):
        _unpack_fp4([param], bad)
    # through the @pl.jit entry the new shape specialises anew and the mismatch is a located error
    with pytest.raises(PyptoError, match="the written region has shape"):
        H.run_sim(K.fp4_in, [torch.zeros(16, 64, dtype=torch.uint8).view(torch.float4_e2m1fn_x2),
                             torch.zeros(16, 64, dtype=torch.bfloat16)], "a5sim")


def test_no_storage_and_no_scalar_annotations():
    with pytest.raises(PyptoError, match="INT4 tensors and tiles are not supported"):
        K.int4_param.compile(torch.zeros(16, 32, dtype=torch.int8), torch.zeros(16, 32, dtype=torch.float16))
    with pytest.raises(PyptoError, match="a scalar cannot be FP8E4M3FN"):
        K.fp8_scalar.compile(torch.zeros(16, 32), 1.0, torch.zeros(16, 32))


@pytest.mark.parametrize("kernel,args", [
    (K.to_fp8, lambda: [_special(), torch.zeros(16, 32, dtype=torch.float8_e4m3fn)]),
    (K.hf8_roundtrip, lambda: [_special(), torch.zeros(16, 32)]),
    (K.fp4_roundtrip, lambda: [_special().bfloat16(), torch.zeros(16, 32, dtype=torch.bfloat16)]),
])
def test_printed_ir_parses_back_at_every_stage(kernel, args):
    """pl.FP8E4M3FN / pl.HF8 / pl.FP4 print and parse back (tile types, cast attributes, chains)."""
    from pypto.frontend.specialize import specialize
    from pypto.ir import run_pipeline, structural_equal
    from pypto.language import parse

    result = run_pipeline(specialize(kernel, args(), {}).program, {"platform": "a5sim"})
    for stage, program in result.stages:
        text = program.as_python()
        assert structural_equal(program, parse(text)), f"{stage}:\n{text}"
    assert "pl.FP32" in text or kernel is K.fp4_roundtrip   # FP8 / HF8 chains go through FP32
