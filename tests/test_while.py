"""while loops (WhileStmt): a plain ``while``, ``pl.while_`` / ``pl.cond``, break / continue in a
while, a run-time exit, while in orchestration code; the printer round trip at every pipeline stage;
the iteration cap (RunConfig.max_while_iterations) as a located error; located parse errors."""
import textwrap

import kernels_while as K
import pytest
import torch
from lang_harness import PLATFORMS, check_all, run_ref

from pypto.errors import ParserError, SimulationError
from pypto.ir import run_pipeline, structural_equal
from pypto.ir.nodes import WhileStmt
from pypto.ir.visit import iter_stmts
from pypto.language import parse
from pypto.runtime import RunConfig


def _whiles(prog):
    return [s for f in prog.functions for s in iter_stmts(f.body) if isinstance(s, WhileStmt)]


def test_plain_while_adds_chunks():
    a, b = torch.randn(256, 64), torch.randn(256, 64)
    check_all(K.while_rows, (a, b, torch.zeros(256, 64)), {2: a + b})
    lowered = K.while_rows.lower(a, b, torch.zeros(256, 64))
    (w,) = _whiles(lowered)
    assert len(w.iter_args) >= 1 and w.return_vars   # the index became a carried value (ConvertToSSA)


def test_while_iter_with_cond_carries_a_tile():
    a = torch.randn(64, 64)
    check_all(K.while_iter_acc, (a, torch.zeros(64, 64)), {1: a + a + a})


@pytest.mark.parametrize("n", [0, 1, 3])
def test_trip_count_read_at_run_time(n):
    a = torch.randn(64, 64)
    check_all(K.while_data_exit, (torch.tensor([n], dtype=torch.int32), a, torch.zeros(64, 64)),
              {2: a * 2 ** n})


def test_break_and_continue_in_while():
    a = torch.randn(256, 64)
    want = torch.zeros(256, 64)
    want[:64], want[128:192] = a[:64], a[128:192]
    check_all(K.while_break_continue, (a, torch.zeros(256, 64)), {1: want})


def test_while_in_orchestration_submits_a_task_per_iteration():
    a = torch.randn(64, 64)
    check_all(K.while_orch, (a, torch.ones(64, 64)), {1: 1 + 3 * a}, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kernel, args", [
    (K.while_rows, lambda: (torch.zeros(256, 64), torch.zeros(256, 64), torch.zeros(256, 64))),
    (K.while_iter_acc, lambda: (torch.zeros(64, 64), torch.zeros(64, 64))),
    (K.while_break_continue, lambda: (torch.zeros(256, 64), torch.zeros(256, 64))),
    (K.while_orch, lambda: (torch.zeros(64, 64), torch.zeros(64, 64))),
])
def test_every_stage_roundtrips(kernel, args):
    prog = kernel._specialize(args(), {}).program
    for stage, p in run_pipeline(prog, {"platform": "a2a3sim"}).stages:
        text = p.as_python()
        again = parse(text)
        assert structural_equal(p, again), f"after {stage}:\n{text}"
        assert again.as_python() == text
        assert _whiles(p), f"the while loop vanished after {stage}"


def test_ssa_form_prints_as_while_iter():
    prog = K.while_rows._specialize((torch.zeros(256, 64),) * 3, {}).program
    text = run_pipeline(prog, {"platform": "a2a3sim"}).stages[-1][1].as_python()
    assert "pl.while_(init_values=" in text and "pl.cond(" in text


@pytest.mark.parametrize("platform", PLATFORMS)
def test_endless_while_is_a_located_error(platform):
    a = torch.randn(64, 64)
    with pytest.raises(SimulationError) as e:
        K.while_forever(a, torch.zeros(64, 64), config=RunConfig(platform=platform, max_while_iterations=50))
    msg = str(e.value)
    assert "more than 50 iterations" in msg and "kernels_while.py" in msg and "while k >= 0" in msg


def test_endless_while_in_the_reference_executor():
    from pypto.ops.support.while_loops import while_limit

    with while_limit(20), pytest.raises(SimulationError, match="more than 20 iterations"):
        run_ref(K.while_forever, torch.randn(64, 64), torch.zeros(64, 64))


def test_iteration_cap_is_validated():
    with pytest.raises(ValueError, match="max_while_iterations"):
        RunConfig(max_while_iterations=0)


def _parse_error(body: str) -> ParserError:
    src = textwrap.dedent('''
        import pypto.language as pl

        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                i: pl.Scalar[pl.INDEX] = 0
    ''') + textwrap.indent(textwrap.dedent(body), " " * 8) + "        return o\n"
    with pytest.raises(ParserError) as e:
        parse(src)
    return e.value


def test_while_iter_without_cond_is_located():
    e = _parse_error("""
        for (j,) in pl.while_(init_values=(i,)):
            j2 = j + 1
            j_out = pl.yield_(j2)
    """)
    assert "must start with pl.cond" in str(e) and e.span.line > 0


def test_stray_cond_is_located():
    e = _parse_error("pl.cond(i < 3)\n")
    assert "pl.cond must be the first statement" in str(e)


def test_call_in_while_condition_is_refused():
    e = _parse_error("""
        while pl.tensor.read(a, [0, 0]) > 0.0:
            i = i + 1
    """)
    assert "cannot call" in str(e)


def test_break_in_while_iter_is_refused():
    e = _parse_error("""
        for (j,) in pl.while_(init_values=(i,)):
            pl.cond(j < 3)
            if j == 1:
                break
            j_out = pl.yield_(j + 1)
    """)
    assert "'break' in a pl.while_ loop" in str(e)


def test_while_else_is_refused():
    e = _parse_error("""
        while i < 3:
            i = i + 1
        else:
            i = 0
    """)
    assert "while ... else" in str(e)


def test_tasks_of_one_kernel_with_different_trip_counts():
    a = torch.randn(256, 64)
    want = torch.cat([a[i * 64:(i + 1) * 64] * 2 ** (i + 1) for i in range(4)])
    check_all(K.while_per_task, (a, torch.zeros(256, 64)), {1: want})
    for lockstep in (True, False):
        out = torch.zeros(256, 64)
        K.while_per_task(a, out, config=RunConfig(sim_lockstep=lockstep, sim_seed=1))
        assert torch.equal(out, want)


def test_nested_while_with_an_if():
    a = torch.randn(64, 64)
    check_all(K.while_nested, (a, torch.zeros(64, 64)), {1: a * 9})


def test_while_true_left_by_break_in_orchestration():
    a = torch.randn(64, 64)
    check_all(K.while_orch_break, (a, torch.ones(64, 64)), {1: 1 + 2 * a})


def test_store_through_a_while_is_not_a_dropped_out_write():
    """PTO-W001 (an Out parameter re-bound, never written) used to fire on ``c = pl.store(..., c)``
    inside a while: the diagnostic did not follow the carried value."""
    compiled = K.while_rows.compile(torch.zeros(256, 64), torch.zeros(256, 64), torch.zeros(256, 64),
                                    config=RunConfig())
    assert "PTO-W001" not in {d.code for d in compiled.diagnostics}


def test_ssa_verifier_checks_the_condition_with_the_iter_args_visible():
    """The condition may read the iter_args (defined by the loop) but not a Var defined nowhere."""
    from pypto.ir.nodes import BinOp, ConstInt, Function, Program, ReturnStmt, Var, WhileStmt, YieldStmt
    from pypto.ir.types import ScalarType
    from pypto.ir.verifier import PROPERTIES
    from pypto.language.dtypes import BOOL, INDEX

    s = ScalarType(INDEX)
    it, rv, stray, nxt = Var("k", s), Var("k_rv", s), Var("stray", s), Var("k2", s)

    def prog(cond_lhs):
        from pypto.ir.nodes import AssignStmt

        body = (AssignStmt(nxt, BinOp("add", it, ConstInt(1), s)), YieldStmt((nxt,)))
        loop = WhileStmt(BinOp("lt", cond_lhs, ConstInt(3), ScalarType(BOOL)), (it,), (ConstInt(0),), body, (rv,))
        return Program("p", (Function("f", (), (), (s,), (loop, ReturnStmt((rv,)))),))

    assert PROPERTIES["SSA"](prog(it), None) == []
    bad = PROPERTIES["SSA"](prog(stray), None)
    assert any("'stray' is used before it is defined" in msg for _, _, msg in bad)
