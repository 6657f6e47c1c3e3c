"""passes.lower_composite_ops(): the device's FP32 sin/cos recipe, checked bit for bit against a
numpy float32 emulation written from the recipe's description, and against float64 sin/cos."""
import numpy as np
import torch

from kernels_ref_forms import sin_cos
from pypto import ir, passes
from pypto.ir.visit import iter_calls

f32 = np.float32


def _emulate(x: np.ndarray, cos: bool) -> np.ndarray:
    """The recipe in numpy float32, one rounding per step (rounding modes spelled out)."""
    x = x.astype(f32)
    q = x * f32(0.31830988732818603515625)
    if cos:
        k = np.rint(q + f32(0.5)).astype(f32)                       # ties to even
    else:
        k = (np.sign(q) * np.floor(np.abs(q) + f32(0.5))).astype(f32)  # ties away from zero
    t = x
    for part, half in ((3.140625, None), (0.0009670257568359375, 1.57079637050628662109375),
                       (6.2771141529083251953125e-7, None), (1.21644916362129151821e-10, None),
                       (-1.0290623200529979163e-13, -4.371139000189375e-8)):
        t = (t - k * f32(part)).astype(f32)
        if cos and half is not None:
            t = (t + f32(half)).astype(f32)
    sign = ((np.floor(k * f32(0.5)) * f32(4.0)) + k * f32(-2.0)).astype(f32) + f32(1.0)
    t2 = t * t
    p = t2 * f32(2.604926501e-6) + f32(-1.980894471e-4)
    for r in (8.333049340e-3, -1.666665792e-1, 1.0):
        p = (p * t2).astype(f32) + f32(r)
    return (sign * (t * p)).astype(f32)


def _lowered_run(x):
    pipeline = list(passes.PIPELINE)
    pipeline.insert(pipeline.index(passes.convert_tensor_to_tile_ops) + 1, passes.lower_composite_ops)
    c = ir.compile(_program(x), dump_passes=False, passes=pipeline)
    s, co = torch.zeros(32, 128), torch.zeros(32, 128)
    c(x, s, co)
    return c, s, co


def _program(x):
    return sin_cos._specialize((x, torch.zeros(32, 128), torch.zeros(32, 128)), {}).program


def test_the_recipe_replaces_sin_and_cos_and_matches_the_emulation_bit_for_bit():
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(32, 128, generator=g) * 2 - 1) * 2 * np.pi * 64
    x[0, :8] = torch.tensor([0.0, -0.0, 1e-30, np.pi / 2, np.pi, -np.pi, 1e4, -3e4])
    c, s, co = _lowered_run(x)
    ops = {call.op for f in c.lowered.functions for _, call in iter_calls(f.body)}
    assert "tile.sin" not in ops and "tile.cos" not in ops and "tile.cast" in ops
    xn = x.numpy()
    for got, cos in ((s, False), (co, True)):
        want = _emulate(xn, cos)
        assert np.array_equal(got.numpy().view(np.int32), want.view(np.int32)), cos
        exact = np.cos(xn.astype(np.float64)) if cos else np.sin(xn.astype(np.float64))
        assert np.abs(got.numpy() - exact)[np.abs(xn) <= 2 * np.pi * 64].max() <= 1e-5


def test_without_the_pass_sin_stays_a_primitive_and_the_factory_runs_ours():
    prog = _program(torch.zeros(32, 128))
    assert passes.lower_composite_ops().get_name() == "LowerCompositeOps"
    same = passes.lower_composite_ops()(prog)          # before tile conversion: nothing to lower
    ir.assert_structural_equal(same, prog)
    c = ir.compile(prog, dump_passes=False)
    assert "tile.sin" in {call.op for f in c.lowered.functions for _, call in iter_calls(f.body)}


def test_the_recipes_deliberate_int32_round_trips_are_not_reported_as_cast_chains():
    c, _, _ = _lowered_run(torch.zeros(32, 128))
    assert not [d for d in c.diagnostics if d.code == "PTO-P003"]
