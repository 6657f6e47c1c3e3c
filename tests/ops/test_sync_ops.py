"""pl.system synchronisation ops (pypto/ops/sync.py) and pl.system.task_invalid: their reference
executor forms and orchestration form. Their simulator semantics (flags, events, syncall, fences,
deadlocks, the races a missing one leaves) are tested end to end in tests/mixed/test_sync_ops.py."""
import pytest
import torch

import pypto.ir as ir
import pypto.language as pl
from pypto.debug.torch_codegen import torch_codegen
from pypto.errors import SimulationError
from pypto.ops.registry import get_op

COVERED_OPS = {"system.sync_src", "system.sync_dst", "system.sync_set", "system.sync_wait", "system.bar_v",
               "system.bar_m", "system.bar_all", "system.fence", "system.set_ffts", "system.cacheinvalid",
               "system.syncall", "system.task_invalid"}

D = 16


def _reference(prog):
    ns: dict = {}
    exec(compile(torch_codegen(prog), "<ref>", "exec"), ns)
    return ns["main"]


def test_reference_executor_orders_a_handoff_by_its_event():
    from tests.mixed import kernels_sync as K

    torch.manual_seed(0)
    a, b = torch.randn(D, D), torch.randn(D, D)
    ws, out = torch.zeros(D, D), torch.zeros(D, D)
    _reference(K.EventHandoff)(a, b, ws, out)
    sim = torch.zeros(D, D)
    ir.compile(K.EventHandoff, platform="a2a3sim")(a, b, torch.zeros(D, D), sim)
    assert torch.equal(out, sim)
    torch.testing.assert_close(out.double(), (a.double() + 1) @ b.double(), rtol=1e-5, atol=1e-4)


def test_reference_executor_reports_an_event_never_set():
    from tests.mixed import kernels_sync as K

    with pytest.raises(SimulationError, match=r"deadlock in the reference executor: sync_wait\(event 5\)"):
        _reference(K.EventNeverSet)(*[torch.zeros(D, D) for _ in range(4)])


def test_flag_barrier_and_fence_ops_leave_reference_values_alone():
    from tests.mixed import kernels_sync as K

    a, out = torch.randn(D, D), torch.zeros(D, D)
    _reference(K.FlagsPaired)(a, out)
    assert torch.equal(out, a + 1)


def test_simulator_forms_call_the_kernels_sync_link():
    def sim(name, *vals):
        op = get_op(name)
        return op.sim(op.args(vals), None, where="k.py:3")

    assert sim("system.sync_src", "pl.PipeType.MTE2", "pl.PipeType.V", "0") == "_cc.flag_set('MTE2', 'V', 0, 'k.py:3')"
    assert sim("system.sync_wait", "4", "pl.PipeType.MTE2", "None") == (
        "yield from _cc.event_wait(4, 'MTE2', None, 'k.py:3')")
    assert sim("system.fence") == "_cc.fence('k.py:3')" and sim("system.bar_all") == "_cc.barrier('ALL', 'k.py:3')"
    assert sim("system.syncall", "'mix'", "'hard'", "None", "None") == "yield from _cc.syncall('mix', 'hard', None, 'k.py:3')"


def test_task_invalid_is_no_dependency():
    @pl.jit
    def k(a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        none = pl.system.task_invalid()
        with pl.at(level=pl.Level.CORE_GROUP, deps=[none]):
            out[:] = pl.add(a, 1.0)
        return out

    a = torch.randn(D, D)
    out = torch.zeros(D, D)
    k(a, out)
    assert torch.equal(out, a + 1)
    op = get_op("system.task_invalid")
    assert op.orch(op.args(())) == "None" and op.ref(op.args(())) == "None"


def test_reference_executor_syncall_joins_a_groups_threads():
    from tests.mixed import kernels_sync as K

    torch.manual_seed(0)
    a, b = torch.randn(D, D), torch.randn(D, D)
    ws, sw, out = torch.zeros(D, D), torch.zeros(16, dtype=torch.int32), torch.zeros(D, D)
    _reference(K.SyncallFence)(a, b, ws, sw, out)
    torch.testing.assert_close(out.double(), (a.double() + 1) @ b.double(), rtol=1e-5, atol=1e-4)


def test_reference_executor_refuses_a_syncall_across_blocks():
    # it runs blocks one after another: block 0 could never see the others arrive (silently wrong before)
    @pl.jit
    def k(a: pl.Tensor[[64, 16], pl.FP32], sw: pl.Tensor[[16], pl.INT32], out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]):
        for i in pl.spmd(4):
            x = pl.load(a, [i * 16, 0], [16, 16])
            pl.system.syncall(core_type="aiv_only", mode="soft", gm_workspace=sw, used_cores=4)
            out = pl.store(pl.add(x, 1.0), [i * 16, 0], out)
        return out

    a, sw = torch.randn(64, 16), torch.zeros(16, dtype=torch.int32)
    out = torch.zeros(64, 16)
    k(a, sw, out)
    assert torch.equal(out, a + 1)   # the simulator holds the 4 blocks at the barrier
    c = k.compile(a, sw, out)
    ns: dict = {}
    exec(compile(torch_codegen(c.lowered), "<ref>", "exec"), ns)
    with pytest.raises(SimulationError, match="runs the 4 blocks of a task one after another"):
        ns["k"](a, sw, torch.zeros(64, 16))
