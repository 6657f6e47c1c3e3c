"""pl.system synchronisation ops on the simulators: values, deadlocks, and the races a missing wait,
a missing fence or a wrong pipe leaves (found by the race detector with both source lines)."""
import time

import pytest
import torch

import pypto.ir as ir
import pypto.language as pl
from pypto.debug.races import detect_races
from pypto.errors import InvalidOperationError, SimulationError

from kernel_templates import where
from tests.mixed import kernels_sync as K

D = K.D


def _line(prog: str, marker: str) -> str:
    """``FILE:LINE`` of program ``prog``'s line holding ``marker`` (its generated text's, for the
    programs kernels_sync builds from templates)."""
    return where(getattr(K, prog), marker)


def _args(prog=""):
    torch.manual_seed(0)
    sw = [torch.zeros(16, dtype=torch.int32)] if prog.startswith("Syncall") else []   # the soft syncall's workspace
    return [torch.randn(D, D), torch.randn(D, D), torch.zeros(D, D)] + sw + [torch.zeros(D, D)]


def _want(a, b):
    return (a.double() + 1) @ b.double()


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("prog", ["EventHandoff", "SyncallFence", "TokenLoadAfterPop"])
def test_correct_handoffs_compute_and_have_no_race(prog, platform):
    c = ir.compile(getattr(K, prog), platform=platform)
    args = _args(prog)
    a, b, ws, out = args[0], args[1], args[2], args[-1]
    c(*args)
    torch.testing.assert_close(out.double(), _want(a, b), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(ws, a + 1)
    report = detect_races(c, _args(prog), platform=platform)
    assert not report.cores and not report.races and not report.pipe, report.format()


@pytest.mark.parametrize("prog, marker, synced", [
    ("EventMissingWait", "EVENTMISSINGWAIT", False),      # no sync_wait on the cube
    ("EventWrongPipe", "EVENTWRONGPIPE", True),           # sync_set on V does not cover the MTE3 store
    ("SyncallNoFence", "SYNCALLNOFENCE", True),           # syncall publishes fenced writes only
    ("TokenLoadBeforePop", "TOKEN", False),               # the load comes before the tpop that orders it
])
def test_missing_wait_fence_or_pipe_is_a_race_naming_both_lines(prog, marker, synced):
    c = ir.compile(getattr(K, prog), platform="a2a3sim")
    report = detect_races(c, _args(prog))
    assert len(report.cores) == 1, report.format()
    r = report.cores[0]
    assert r.kind == "RAW" and r.group == "grp"
    assert (r.first_core, r.first_kernel, r.second_core, r.second_kernel) == ("AIV0", "vec", "AIC", "cube")
    store, load = _line(prog, f"{marker} STORE"), _line(prog, f"{marker} LOAD")
    assert r.first_where.endswith(store) and r.second_where.endswith(load)
    assert r.synced is synced
    text = report.format()
    assert store in text and load in text
    assert ("pl.system.fence()" in r.fix) if synced else ("sync_wait" in r.fix)
    if prog == "EventWrongPipe":
        assert "pl.PipeType.MTE3" in r.fix


def test_missing_wait_can_change_the_simulated_result():
    # the cube's load runs before the vector's store in simulated time: it reads the old ws (zeros)
    c = ir.compile(K.EventMissingWait, platform="a2a3sim")
    a, b, ws, out = _args()
    c(a, b, ws, out)
    assert torch.equal(out, torch.zeros(D, D))


def test_event_never_set_is_a_deadlock_naming_kernel_core_event_line_and_partner():
    c = ir.compile(K.EventNeverSet, platform="a2a3sim")
    t0 = time.perf_counter()
    with pytest.raises(SimulationError) as e:
        c(*_args())
    assert time.perf_counter() - t0 < 1.0
    msg = str(e.value)
    assert "deadlock in mixed-kernel group 'grp'" in msg
    assert "AIC (cube) waits in sync_wait(event 5, pipe MTE2) for a sync_set of AIV0" in msg
    assert "0 set(s) of event 5 so far" in msg and _line("EventNeverSet", "NEVER SET") in msg
    assert "AIV0 (vec) has finished" in msg


def test_flag_wait_without_set_is_a_located_deadlock():
    c = ir.compile(K.FlagNeverSet, platform="a2a3sim")
    t0 = time.perf_counter()
    with pytest.raises(SimulationError) as e:
        c(torch.randn(D, D), torch.zeros(D, D))
    assert time.perf_counter() - t0 < 1.0
    msg = str(e.value)
    assert _line("FlagNeverSet", "FLAG NEVER SET") in msg and "kernel 'k'" in msg
    assert "sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)" in msg
    assert "no sync_src set before it" in msg


def test_paired_flags_barriers_and_fence_leave_values_alone():
    c = ir.compile(K.FlagsPaired, platform="a2a3sim")
    a, out = torch.randn(D, D), torch.zeros(D, D)
    c(a, out)
    assert torch.equal(out, a + 1)


def test_sync_ops_print_and_reparse():
    text = K.FlagsPaired.as_python() + K.SyncallFence.as_python()
    for spelling in ("pl.system.sync_src(", "pl.system.sync_dst(", "pl.system.bar_v()", "pl.system.bar_all()",
                     "pl.system.fence()", "pl.system.cacheinvalid()", "pl.system.syncall("):
        assert spelling in text, spelling
    for prog in (K.FlagsPaired, K.SyncallFence, K.EventHandoff):
        again = pl.parse(prog.as_python())
        assert again.as_python() == prog.as_python()


_BAD = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 16], pl.FP32], w: pl.Tensor[[64], pl.INT64]):
        {stmt}

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 16], pl.FP32], w: pl.Tensor[[64], pl.INT64]):
        self.k(a, w)
'''


@pytest.mark.parametrize("stmt, words", [
    ("pl.system.sync_set(14, pipe=pl.PipeType.MTE3)", "user range [0, 13]"),
    ("pl.system.sync_wait(0, pipe=3)", "pl.PipeType"),
    ("pl.system.sync_set(0, pipe=pl.PipeType.MTE3, ffts_mode=3)", "ffts_mode must be 0, 1 or 2"),
    ("pl.system.set_ffts(w)", "at least 256 INT64 elements"),
    ("pl.system.syncall(core_type='all')", "core_type must be one of"),
    ("pl.system.syncall(gm_workspace=w)", "the hard form takes no gm_workspace"),
    ("pl.system.cacheinvalid(a, [16, 16], [0])", "offsets must match the tensor's rank 2"),
])
def test_bad_sync_arguments_are_located_errors(stmt, words):
    with pytest.raises(InvalidOperationError) as e:
        pl.parse(_BAD.replace("{stmt}", stmt))
    assert words in str(e.value)


def test_event_op_in_an_incore_kernel_is_a_located_codegen_error():
    from pypto.errors import CodegenError

    src = _BAD.replace("{stmt}", "pl.system.sync_set(1, pipe=pl.PipeType.MTE3)")
    with pytest.raises(CodegenError) as e:
        ir.compile(pl.parse(src), platform="a2a3sim")
    assert "AIC or AIV function of a Group" in str(e.value)


# ---------------------------------------------------------------------------- pypto doctor

def _doctor(prog, want):
    from pypto.debug.doctor import doctor

    args = _args(prog)
    return doctor(getattr(K, prog), args, expected={"out": want(args[0], args[1]).float()}, seeds=2,
                  rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("prog, first, second", [
    ("TokenLoadBeforePop", "TOKEN STORE", "TOKEN LOAD"),                  # a missing tpop wait
    ("SyncallNoFence", "SYNCALLNOFENCE STORE", "SYNCALLNOFENCE LOAD"),    # a missing fence
    ("SlotReuse", "SLOT RELEASED", "SLOT READ AFTER RELEASE"),            # slot reuse before release
])
def test_doctor_names_both_lines_of_a_planted_ordering_bug(prog, first, second):
    want = (lambda a, b: (a.double() + 1) @ (a.double() + 1)) if prog == "SlotReuse" else _want
    r = _doctor(prog, want)
    assert r.cause == "core_order", r.format()
    assert _line(prog, first) in r.conclusion and _line(prog, second) in r.conclusion
    text = r.format()
    assert _line(prog, first) in text and _line(prog, second) in text
    if prog == "SyncallNoFence":
        assert "pl.system.fence()" in r.fix
    if prog == "SlotReuse":
        assert "after the last use of 's'" in r.fix
        # the race detector reports it too, with the same two lines
        rep = detect_races(ir.compile(K.SlotReuse, platform="a2a3sim"), _args())
        assert [(h.kind, h.first.endswith(_line(prog, first)), h.second.endswith(_line(prog, second)))
                for h in rep.pipe] == [("read after tfree", True, True)]


def test_doctor_on_a_correct_mixed_program_finds_nothing():
    r = _doctor("EventHandoff", _want)
    assert r.cause == "no_gap", r.format()


# ---------------------------------------------------------------------------- review of the cluster runtime

@pytest.mark.parametrize("prog, marker, words", [
    ("PopWrongDtype", "WRONG DTYPE", "into a float16 tile, but the slot holds float32"),
    ("LanesDifferUnsplit", "LANES DIFFER", "the two vector lanes pushed different tiles"),
])
def test_pops_that_used_to_be_silently_wrong_are_errors(prog, marker, words):
    c = ir.compile(getattr(K, prog), platform="a2a3sim")
    with pytest.raises(SimulationError) as e:
        c(torch.randn(D, D), torch.zeros(D, D))
    assert words in str(e.value) and _line(prog, marker) in str(e.value)


# ---------------------------------------------------------------------------- syncall across the blocks of a task

_EXCHANGE = '''
import pypto.language as pl

NB = {nb}


@pl.program
class Exchange:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[NB * 8, 16], pl.FP32], ws: pl.InOut[pl.Tensor[[NB * 8, 16], pl.FP32]],
          sw: pl.InOut[pl.Tensor[[16], pl.INT32]],
          out: pl.Out[pl.Tensor[[NB * 8, 16], pl.FP32]]) -> pl.Tensor[[NB * 8, 16], pl.FP32]:
        i = pl.tile.get_block_idx()
        x = pl.load(a, [i * 8, 0], [8, 16])
        for r in pl.range((NB - i) * 2):   # block 0 works longest before its store
            x = pl.load(a, [i * 8, 0], [8, 16])
        pl.store(pl.add(x, 1.0), [i * 8, 0], ws)
        pl.system.fence()
        {barrier}
        j = (i + 1) % NB
        z = pl.load(ws, [j * 8, 0], [8, 16])
        out = pl.store(z, [i * 8, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[NB * 8, 16], pl.FP32], ws: pl.InOut[pl.Tensor[[NB * 8, 16], pl.FP32]],
             sw: pl.InOut[pl.Tensor[[16], pl.INT32]],
             out: pl.Out[pl.Tensor[[NB * 8, 16], pl.FP32]]) -> pl.Tensor[[NB * 8, 16], pl.FP32]:
        with pl.spmd(NB, sync_start=True):
            out = self.k(a, ws, sw, out)
        return out
'''


def _exchange(nb: int, barrier: str, seed: int = 0):
    from pypto.runtime.config import RunConfig

    c = ir.compile(pl.parse(_EXCHANGE.format(nb=nb, barrier=barrier)), platform="a2a3sim")
    a = torch.randn(nb * 8, 16)
    out = torch.zeros(nb * 8, 16)
    c(a, torch.zeros(nb * 8, 16), torch.zeros(16, dtype=torch.int32), out, config=RunConfig(sim_seed=seed))
    return a, out


@pytest.mark.parametrize("nb, barrier", [
    (48, 'pl.system.syncall(core_type="aiv_only")'),     # the hard form at full occupancy (48 AIV on a2a3)
    (4, 'pl.system.syncall(core_type="aiv_only", mode="soft", gm_workspace=sw, used_cores=4)'),
])
def test_syncall_holds_every_block_until_all_arrive(nb, barrier):
    # block i reads block i+1's row of ws after the barrier: right only if every block stored first
    for seed in range(3):
        a, out = _exchange(nb, barrier, seed)
        assert torch.equal(out, torch.roll(a, -8, dims=0) + 1)


def test_without_the_barrier_a_block_reads_a_row_not_yet_written():
    # the same kernel without the syncall: the last block reads block 0's row before block 0 stored it
    a, out = _exchange(4, "pass")
    assert torch.equal(out[24:], torch.zeros(8, 16))      # ws's initial zeros, not a[0:8] + 1
    assert torch.equal(out[:24], a[8:] + 1)


def test_the_race_detector_finds_the_exchange_without_its_barrier_and_not_with_it():
    # the blocks of one task: block i reads block i+1's row; only the fenced syncall orders them
    soft = 'pl.system.syncall(core_type="aiv_only", mode="soft", gm_workspace=sw, used_cores=4)'
    for barrier, n in (("pass", 1), (soft, 0)):
        c = ir.compile(pl.parse(_EXCHANGE.format(nb=4, barrier=barrier)), platform="a2a3sim")
        rep = detect_races(c, [torch.randn(32, 16), torch.zeros(32, 16), torch.zeros(16, dtype=torch.int32),
                               torch.zeros(32, 16)])
        assert len(rep.blocks) == n, rep.format()
        assert all(r.kind == "RAW" and r.blocks == 4 for r in rep.blocks)


@pytest.mark.parametrize("barrier, words", [
    ('pl.system.syncall(core_type="aiv_only")',
     "the hard syncall(core_type='aiv_only') waits for every one of the 48 such cores of the a2a3sim chip, "
     "but the task launches 4 block(s)"),
    ('pl.system.syncall(core_type="aiv_only", mode="soft", gm_workspace=sw, used_cores=5)',
     "deadlock: the soft syncall waits for used_cores=5 participants, but the task has 4 block(s)"),
])
def test_a_syncall_that_can_never_complete_is_an_error_at_once(barrier, words):
    t0 = time.perf_counter()
    with pytest.raises(SimulationError) as e:
        _exchange(4, barrier)
    assert time.perf_counter() - t0 < 1.0
    assert words in str(e.value) and "kernel 'k'" in str(e.value)


_MIX = '''
import pypto.language as pl


@pl.program
class MixSync:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[64, 32], pl.FP32],
             ws: pl.Tensor[[16], pl.INT32], out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        for ob in pl.spmd(2, name_hint="mix"):
            m0 = ob * 16
            x = pl.add(pl.slice(a, [16, 64], [m0, 0]), 1.0)
            pl.system.syncall(mode="soft", core_type="mix", gm_workspace=ws, used_cores={used})
            c = pl.matmul(x, b)
            out = pl.assemble(out, pl.add(c, 1.0), [m0, 0])
        return out
'''


def test_soft_mix_syncall_across_the_blocks_of_a_mixed_group():
    # 2 blocks x (1 cube + 2 vector subblocks) = 6 participants; each block's cluster meets the other
    # at the scheduler
    c = ir.compile(pl.parse(_MIX.format(used=6)), platform="a2a3sim")
    a, b = torch.randn(32, 64), torch.randn(64, 32)
    out = torch.zeros(32, 32)
    c(a, b, torch.zeros(16, dtype=torch.int32), out)
    torch.testing.assert_close(out.double(), (a.double() + 1) @ b.double() + 1, rtol=1e-5, atol=1e-4)
    with pytest.raises(SimulationError, match=r"used_cores=4\) waits for 4 participants; the 2 block\(s\) of the "
                                              r"group have 6 such cores \(3 per cluster\)"):
        ir.compile(pl.parse(_MIX.format(used=4)), platform="a2a3sim")(a, b, torch.zeros(16, dtype=torch.int32),
                                                                        torch.zeros(32, 32))
