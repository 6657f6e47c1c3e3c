"""``pl.matmul_acc`` into a column window of an Acc tile (``tile.matmul_acc_window``, built by the
AccWindows pass): the accumulator holds the accumulated windows, bit for bit what one accumulator
tile per window computes (the same cube products and FP32 sums), in the simulator and the torch
reference executor, within FP32 rounding of a float64 product; a window that is not whole columns
at a 16-column boundary is a located error.
"""
from __future__ import annotations

import importlib.util
import sys
import textwrap

import pytest
import torch

import kernels_acc_window as K
import pypto.runtime as prt
from pypto.debug.torch_codegen import torch_codegen
from pypto.errors import PyptoError
from pypto.ir import compile as ir_compile
from pypto.runtime import RunConfig

COVERED_OPS = {"tile.matmul_acc_window"}


def _run_both(program, args, platform):
    sim = [x.clone() for x in args]
    prt.run(program, *sim, config=RunConfig(platform=platform))
    ref = [x.clone() for x in args]
    ns: dict = {}
    exec(compile(torch_codegen(ir_compile(program, platform=platform).lowered), "<ref window>", "exec"), ns)
    ns["main"](*ref)
    return sim, ref


def _bits(t):
    return t.view(torch.int32)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_matmul_acc_into_column_windows(platform):
    g = torch.Generator().manual_seed(15)
    a, b = torch.randn(K.M, K.K, generator=g), torch.randn(K.K, K.N, generator=g)
    sim, ref = _run_both(K.Window, [a, b, torch.zeros(K.M, K.N), torch.zeros(K.M, K.NT)], platform)
    per = [a, b, torch.zeros(K.M, K.N)]
    prt.run(K.PerWindow, *per, config=RunConfig(platform=platform))
    assert torch.equal(_bits(sim[2]), _bits(per[2]))          # every window, accumulated in place
    assert torch.equal(_bits(sim[2]), _bits(ref[2]))
    assert torch.equal(_bits(sim[3]), _bits(per[2][:, -K.NT:]))  # the window read after its writes
    assert torch.equal(_bits(ref[3]), _bits(sim[3]))
    want = (a.double() @ b.double()).float()
    torch.testing.assert_close(sim[2], want, rtol=1e-5, atol=1e-5)
    only, only_ref = _run_both(K.WindowOnly, [a, b, torch.zeros(K.M, K.N)], platform)
    assert torch.equal(_bits(only[2]), _bits(per[2])) and torch.equal(_bits(only_ref[2]), _bits(per[2]))
    # no copy of a window is left: the accumulator is written in place
    lowered = ir_compile(K.WindowOnly, platform=platform).lowered.as_python()
    assert "tile.slice" not in lowered and lowered.count("tile.matmul_acc_window") == 1


def _module(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text("import pypto.language as pl\n\n" + textwrap.dedent(body))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules.pop(name, None)
    return mod


_BAD = """
@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[32, 32], pl.FP32], b: pl.Tensor[[32, 64], pl.FP32],
               c: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        acc = pl.tile.create([32, 64], pl.FP32, target_memory=pl.Mem.Acc)
        a_l0 = pl.move(pl.load(a, [0, 0], [ROWS, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        b_l0 = pl.move(pl.load(b, [0, 0], [32, COLS], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        win = pl.tile.slice(acc, [ROWS, COLS], OFFSET)
        win = pl.matmul_acc(win, a_l0, b_l0)
        c = pl.store(acc, [0, 0], c)
        return c
"""


@pytest.mark.parametrize("rows,cols,offset,words", [
    (16, 32, "[16, 0]", ["must span all its rows", "pl.tile.slice(acc, [32, 32], [0, col])"]),
    (32, 16, "[0, 8]", ["multiple of 16"]),
])
def test_bad_windows_are_located_errors(tmp_path, rows, cols, offset, words):
    src = _BAD.replace("ROWS", str(rows)).replace("COLS", str(cols)).replace("OFFSET", offset)
    mod = _module(tmp_path, "bad_window", src)
    with pytest.raises(PyptoError) as e:
        ir_compile(mod.P, platform="a2a3sim")
    msg = str(e.value)
    assert "bad_window.py:" in msg and "pl.matmul_acc(win" in msg, msg
    for w in words:
        assert w in msg, msg


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_window_sliced_outside_the_loop_that_accumulates(platform):
    """The slice above the K loop (or above an ``if`` in it), the matmul_acc inside: on the device
    the window is the same L0C bytes wherever it is written, so the accumulator holds the sums.
    Before AccWindows looked into nested blocks this was refused (the window, a copy, was placed in
    Vec, where a matmul_acc cannot write)."""
    g = torch.Generator().manual_seed(16)
    a, b = torch.randn(K.M, K.K, generator=g), torch.randn(K.K, K.N, generator=g)
    per = [a, b, torch.zeros(K.M, K.N)]
    prt.run(K.PerWindow, *per, config=RunConfig(platform=platform))
    sim, ref = _run_both(K.WindowBeforeLoop, [a, b, torch.zeros(K.M, K.N), torch.zeros(K.M, K.NT)], platform)
    for got in (sim, ref):
        assert torch.equal(_bits(got[2]), _bits(per[2]))
        assert torch.equal(_bits(got[3]), _bits(per[2][:, -K.NT:]))   # the window read after the loop
    sim, ref = _run_both(K.WindowInBranches, [a, b, torch.zeros(K.M, K.N)], platform)
    assert torch.equal(_bits(sim[2]), _bits(per[2])) and torch.equal(_bits(ref[2]), _bits(per[2]))
    # nothing copies the window: no slice is left, and the kernel stays a cube kernel (no AIV half)
    lowered = ir_compile(K.WindowInBranches, platform=platform).lowered.as_python()
    assert "tile.slice" not in lowered and lowered.count("tile.matmul_acc_window") == 2
    assert "FunctionType.AIV" not in lowered


def test_a_window_whose_offset_moves_in_the_loop_is_refused():
    """The offset's Var re-assigned in the accumulating loop: the pass leaves the pair alone and
    the compile fails (a located error), never a wrong sum."""
    with pytest.raises(PyptoError) as e:
        ir_compile(K.WindowMovedInLoop, platform="a2a3sim")
    msg = str(e.value)
    assert "kernels_acc_window.py:" in msg and "pl.matmul_acc(win" in msg and "^" in msg, msg
    assert "window of the Acc tile 'acc'" in msg and "re-assigns 'col'" in msg, msg
    assert "slice the window next to its matmul_acc" in msg, msg
