"""sync_set FFTS modes 0 and 1 (barriers of an event among the cores of one kind) on the simulators:
the two vector lanes of a cluster hand each other their halves through global memory."""
import pytest
import torch

import pypto.ir as ir
import pypto.language as pl
from pypto.debug.races import detect_races
from pypto.errors import SimulationError

D, H = 16, 8
SLOT = D * D * 4

_SRC = '''
import pypto.language as pl

@pl.program
class Swap:
    """Each vector lane stores its half of a + 1 to ws, raises the event, waits, then reads the
    other lane's half: out = the halves of a + 1 swapped."""

    @pl.function(type=pl.FunctionType.AIV, attrs={{"dual_aiv_dispatch": True}})
    def vec(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
            ws: pl.InOut[pl.Tensor[[16, 16], pl.FP32]], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
            mm: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        lane = pl.tile.get_subblock_idx()
        x: pl.Tile[[8, 16], pl.FP32, pl.Mem.Vec] = pl.load(a, [lane * 8, 0], [8, 16])
        pl.store(pl.add(x, 1.0), [lane * 8, 0], ws)  # LANE STORE
        {vec_sync}
        y: pl.Tile[[8, 16], pl.FP32, pl.Mem.Vec] = pl.load(ws, [(1 - lane) * 8, 0], [8, 16])  # LANE LOAD
        pl.store(y, [lane * 8, 0], out)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
             ws: pl.Tensor[[16, 16], pl.FP32], out: pl.Tensor[[16, 16], pl.FP32],
             mm: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        {cube_sync}
        s = pl.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
        w = pl.load(b, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
        r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), pl.move(w, target_memory=pl.Mem.Right))
        return pl.store(r, [0, 0], mm)

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
            ws: pl.InOut[pl.Tensor[[16, 16], pl.FP32]], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
            mm: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        self.vec(a, b, ws, out, mm)
        r = self.cube(a, b, ws, out, mm)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
             ws: pl.InOut[pl.Tensor[[16, 16], pl.FP32]], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
             mm: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        mm = self.grp(a, b, ws, out, mm)
        return mm
'''

SET = "pl.system.sync_set(5, pipe=pl.PipeType.MTE3, ffts_mode={m})"
WAIT = "pl.system.sync_wait(5, pipe=pl.PipeType.MTE2)"


def _prog(vec_sync: str, cube_sync: str = "pass", platform: str = "a2a3sim"):
    return ir.compile(pl.parse(_SRC.format(vec_sync=vec_sync, cube_sync=cube_sync)), platform=platform)


def _args():
    torch.manual_seed(1)
    return [torch.randn(D, D), torch.randn(D, D), torch.zeros(D, D), torch.zeros(D, D), torch.zeros(D, D)]


def _line(marker: str) -> str:
    n = next(i for i, t in enumerate(_SRC.splitlines(), 1) if marker in t)
    return f":{n}"


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("mode", [0, 1])
def test_vector_lanes_swap_halves_through_a_mode_0_or_1_event(mode, platform):
    c = _prog(f"{SET.format(m=mode)}\n        {WAIT}", platform=platform)
    args = _args()
    c(*args)
    a, b, ws, out, mm = args
    assert torch.equal(ws, a + 1)
    assert torch.equal(out, torch.cat([a[H:], a[:H]]) + 1)     # each lane read the other's half
    torch.testing.assert_close(mm.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-4)
    report = detect_races(c, _args(), platform=platform)
    assert not report.cores and not report.blocks, report.format()


def test_without_the_event_the_lanes_race_and_the_detector_names_both_lines():
    c = _prog("pass")
    report = detect_races(c, _args())
    assert report.cores, report.format()
    r = report.cores[0]
    assert {r.first_core, r.second_core} == {"AIV0", "AIV1"}
    assert r.first_where.endswith(_line("LANE STORE")) and r.second_where.endswith(_line("LANE LOAD"))


def test_a_mode_1_event_whose_partner_never_sets_it_is_a_deadlock():
    # lane 1 skips the set: lane 0's barrier never completes, and neither does its wait
    src = f"if lane == 0:\n            {SET.format(m=1)}\n        {WAIT}"
    with pytest.raises(SimulationError) as e:
        _prog(src)(*_args())
    assert "deadlock" in str(e.value).lower() or "never" in str(e.value).lower()
    assert "sync_wait(event 5" in str(e.value)


def test_mode_0_on_the_cube_raises_its_own_event():
    # the only cube of a one-block launch: a mode-0 set completes its own barrier at once
    c = _prog("pass", f"{SET.format(m=0)}\n        {WAIT}")
    args = _args()
    c(*args)
    torch.testing.assert_close(args[4].double(), args[0].double() @ args[1].double(), rtol=1e-5, atol=1e-4)


def test_mode_1_on_the_cube_is_refused_with_the_line():
    with pytest.raises(SimulationError) as e:
        _prog("pass", SET.format(m=1))(*_args())
    assert "mode 1 synchronises the vector cores of a cluster" in str(e.value)
    assert "ffts_mode=2" in e.value.hint


def test_a_member_with_an_out_parameter_it_does_not_write_compiles():
    # the cube declares `out` pl.Out (only the vector lanes write it): the cube then returns two values
    # and the group picks one (`r = r_ret[1]`); group codegen used to refuse that with a wrong message
    # ("may only call its AIC and AIV functions")
    src = _SRC.format(vec_sync=f"{SET.format(m=1)}\n        {WAIT}", cube_sync="pass").replace(
        "ws: pl.Tensor[[16, 16], pl.FP32], out: pl.Tensor[[16, 16], pl.FP32],",
        "ws: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]],")
    assert src.count("out: pl.Out[") == 4
    c = ir.compile(pl.parse(src), platform="a2a3sim")
    a, b, ws, out, mm = _args()
    c(a, b, ws, out, mm)
    assert torch.equal(out, torch.cat([a[H:], a[:H]]) + 1)
    torch.testing.assert_close(mm.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-4)
