"""``pl.MemRef(slots=N)[i]`` under ``memory_planner=PTOAS``: two slots of one allocation selected in
one loop body are refused at code generation (the reference's PartialCodegenError, located at the
first slotted tile); every other placement compiles, and under PYPTO / DSA_RP the refused program
runs with the right values (pypto.frontend.slot_placements)."""
import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend.pto_backend import PartialCodegenError
from pypto.errors import CodegenError
from pypto.passes import MemoryPlanner

R, C, STEPS = 32, 64, 4
PAIR = pl.MemRef(slots=2)
NAMED = pl.MemRef("ring", slots=2)


@pl.program
class CoLive:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[R * STEPS, C], pl.FP32], b: pl.Tensor[[R * STEPS, C], pl.FP32],
               out: pl.Out[pl.Tensor[[R * STEPS, C], pl.FP32]]) -> pl.Tensor[[R * STEPS, C], pl.FP32]:
        for i in pl.range(STEPS):
            x: pl.Tile[[R, C], pl.FP32, PAIR[i % 2], pl.Mem.Vec] = pl.load(a, [i * R, 0], [R, C])
            y: pl.Tile[[R, C], pl.FP32, PAIR[(i + 1) % 2], pl.Mem.Vec] = pl.load(b, [i * R, 0], [R, C])
            s = pl.add(x, y)
            out = pl.store(s, [i * R, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R * STEPS, C], pl.FP32], b: pl.Tensor[[R * STEPS, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R * STEPS, C], pl.FP32]]) -> pl.Tensor[[R * STEPS, C], pl.FP32]:
        out = self.kernel(a, b, out)
        return out


@pl.program
class CoLiveInBranch:
    """The second slot is selected inside an ``if`` of the same loop body: still one iteration."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[R * STEPS, C], pl.FP32],
               out: pl.Out[pl.Tensor[[R * STEPS, C], pl.FP32]]) -> pl.Tensor[[R * STEPS, C], pl.FP32]:
        for i in pl.range(STEPS):
            x: pl.Tile[[R, C], pl.FP32, NAMED[i % 2], pl.Mem.Vec] = pl.load(a, [i * R, 0], [R, C])
            if i > 0:
                y: pl.Tile[[R, C], pl.FP32, NAMED[(i + 1) % 2], pl.Mem.Vec] = pl.load(a, [i * R - R, 0], [R, C])
                out = pl.store(pl.add(x, y), [i * R, 0], out)
            else:
                out = pl.store(x, [i * R, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R * STEPS, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R * STEPS, C], pl.FP32]]) -> pl.Tensor[[R * STEPS, C], pl.FP32]:
        out = self.kernel(a, out)
        return out


@pl.program
class Accepted:
    """One slot per iteration (the ping-pong), one per sibling / nested loop body, and two co-live
    constant slots in straight-line code: nothing for the PTOAS planner to refuse."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[R * STEPS, C], pl.FP32],
               out: pl.Out[pl.Tensor[[R * STEPS, C], pl.FP32]]) -> pl.Tensor[[R * STEPS, C], pl.FP32]:
        p: pl.Tile[[R, C], pl.FP32, PAIR[0], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])
        q: pl.Tile[[R, C], pl.FP32, PAIR[1], pl.Mem.Vec] = pl.load(a, [R, 0], [R, C])
        out = pl.store(pl.sub(q, p), [0, 0], out)
        for i in pl.range(1, STEPS):
            t: pl.Tile[[R, C], pl.FP32, PAIR[i % 2], pl.Mem.Vec] = pl.load(a, [i * R, 0], [R, C])
            for j in pl.range(1):
                u: pl.Tile[[R, C], pl.FP32, PAIR[(i + 1) % 2], pl.Mem.Vec] = pl.load(a, [i * R, 0], [R, C])
                out = pl.store(pl.add(t, u), [i * R, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R * STEPS, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R * STEPS, C], pl.FP32]]) -> pl.Tensor[[R * STEPS, C], pl.FP32]:
        out = self.kernel(a, out)
        return out


def _data():
    g = torch.Generator().manual_seed(5)
    return torch.randn(R * STEPS, C, generator=g), torch.randn(R * STEPS, C, generator=g)


@pytest.mark.parametrize("prog", [CoLive, CoLiveInBranch], ids=["co_live", "co_live_in_branch"])
def test_co_live_slots_refused_under_ptoas(prog, tmp_path):
    with pytest.raises(PartialCodegenError) as info:
        ir.compile(prog, tmp_path, memory_planner=MemoryPlanner.PTOAS)
    e = info.value
    assert isinstance(e, CodegenError) and isinstance(e, RuntimeError)
    name = "PAIR" if prog is CoLive else "ring"
    assert f"pl.MemRef(\"{name}\", slots=2)" in e.message and "two of its slots are live at once inside a loop" \
        in e.message
    assert "MemoryPlanner.PYPTO" in e.hint
    # located at the first slotted tile of the loop body; the orchestration was generated
    text = open(e.span.file).read().splitlines()[e.span.line - 1]
    assert text.lstrip().startswith("x: pl.Tile") and e.files and all(p.startswith("orchestration/") for p in e.files)


@pytest.mark.parametrize("planner", [None, MemoryPlanner.PYPTO, MemoryPlanner.DSA_RP])
def test_co_live_slots_run_under_the_other_planners(planner, tmp_path):
    a, b = _data()
    out = torch.zeros_like(a)
    ir.compile(CoLive, tmp_path, memory_planner=planner)(a, b, out)
    assert torch.equal(out, a + b)
    out = torch.zeros_like(a)
    ir.compile(CoLiveInBranch, tmp_path / "branch", memory_planner=planner)(a, out)
    want = a.clone()
    want[R:] = a[R:] + a[:-R]
    assert torch.equal(out, want)


def test_other_slot_placements_compile_under_ptoas(tmp_path):
    a, _ = _data()
    out = torch.zeros_like(a)
    ir.compile(Accepted, tmp_path, memory_planner=MemoryPlanner.PTOAS)(a, out)
    want = a + a
    want[:R] = a[R:2 * R] - a[:R]
    assert torch.equal(out, want)
