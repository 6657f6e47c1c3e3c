"""Loops: pl.parallel, pl.unroll (UnrollLoops), pl.range with index arithmetic, one task per
iteration in orchestration, several pl.at scopes."""
import kernels_lang as K
import pytest
import torch
from lang_harness import check_all

from pypto.ir.nodes import ForStmt, FuncCall
from pypto.ir.visit import iter_stmts
from pypto.language import ForKind, FunctionType
from pypto.language.program import parse


def _loops(prog):
    return [s for f in prog.functions for s in iter_stmts(f.body) if isinstance(s, ForStmt)]


def test_parallel_submits_one_task_per_iteration():
    a = torch.randn(256, 64)
    check_all(K.parallel_rows, (a, torch.zeros(256, 64)), {1: a * 2})
    lowered = K.parallel_rows.lower(a, torch.zeros(256, 64))
    loops = _loops(lowered)
    assert [l.kind for l in loops] == [ForKind.Parallel]
    assert any(isinstance(s, object) for s in loops[0].body)


def test_parallel_roundtrips_through_printer():
    prog = K.parallel_rows._specialize((torch.zeros(256, 64), torch.zeros(256, 64)), {}).program
    text = prog.as_python()
    assert "pl.parallel(" in text
    assert [l.kind for l in _loops(parse(text))] == [ForKind.Parallel]
    lowered = K.parallel_rows.lower(torch.zeros(256, 64), torch.zeros(256, 64))
    assert "pl.parallel(" in lowered.as_python()
    assert [l.kind for l in _loops(parse(lowered.as_python()))] == [ForKind.Parallel]


def test_range_start_stop_step_and_index_arithmetic():
    a = torch.randn(256, 64)
    want = torch.zeros(256, 64)
    for i in range(1, 4, 2):
        want[(i - 1) * 64 + 64:(i - 1) * 64 + 128] = a[i * 64 - 64:i * 64] + 1.0
    check_all(K.range_rows, (a, torch.zeros(256, 64)), {1: want})


def test_unroll_inside_kernel_carries_values():
    a = torch.randn(64, 64)
    check_all(K.unroll_acc, (a, torch.zeros(64, 64)), {1: a * 0.0 + a + a + a})
    lowered = K.unroll_acc.lower(a, torch.zeros(64, 64))
    assert not any(l.kind == ForKind.Unroll for l in _loops(lowered))


def test_unroll_in_orchestration_makes_one_kernel_per_copy():
    a = torch.randn(128, 64)
    check_all(K.unroll_tasks, (a, torch.zeros(128, 64)), {1: torch.exp(a)}, atol=1e-5, rtol=1e-5)
    lowered = K.unroll_tasks.lower(a, torch.zeros(128, 64))
    incore = [f for f in lowered.functions if f.func_type == FunctionType.InCore]
    assert len(incore) == 2
    assert not _loops(lowered)


def test_unroll_frontend_roundtrips():
    prog = K.unroll_acc._specialize((torch.zeros(64, 64), torch.zeros(64, 64)), {}).program
    assert "pl.unroll(" in prog.as_python()
    assert [l.kind for l in _loops(parse(prog.as_python()))] == [ForKind.Unroll]


def test_several_scopes_in_one_program():
    a = torch.randn(64, 64)
    check_all(K.two_scopes, (a, torch.zeros(64, 64), torch.zeros(64, 64)), {2: (a + a) * (a + a)})
    lowered = K.two_scopes.lower(a, torch.zeros(64, 64), torch.zeros(64, 64))
    names = {f.name for f in lowered.functions if f.func_type == FunctionType.InCore}
    assert names == {"stage1", "stage2"}
    calls = [s.value.func for s in iter_stmts(lowered.entry.body) if isinstance(getattr(s, "value", None), FuncCall)]
    assert calls == ["stage1", "stage2"]


_ROUNDTRIP = [
    (K.parallel_rows, (256, 64), (256, 64)), (K.unroll_acc, (64, 64), (64, 64)),
    (K.unroll_tasks, (128, 64), (128, 64)), (K.use_inline, (64, 64), (64, 64)),
    (K.drive, (96, 64), (96, 64)), (K.directives, (64, 64), (64, 64)), (K.two_scopes, (64, 64), (64, 64), (64, 64)),
]


@pytest.mark.parametrize("case", _ROUNDTRIP, ids=lambda c: c[0].__name__)
def test_every_stage_roundtrips(case, monkeypatch):
    """Each pass's output prints and parses back to a structurally equal program."""
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "roundtrip")
    kernel, *shapes = case
    kernel.lower(*[torch.zeros(*s) for s in shapes])


def test_unroll_folds_index_conditions():
    a = torch.randn(128, 64)
    want = torch.cat([a[:64] + a[:64], a[64:] * a[64:]])
    check_all(K.unroll_if, (a, torch.zeros(128, 64)), {1: want})
    from pypto.ir.nodes import IfStmt

    lowered = K.unroll_if.lower(a, torch.zeros(128, 64))
    assert not any(isinstance(s, IfStmt) for f in lowered.functions for s in iter_stmts(f.body))


def test_unroll_if_roundtrips(monkeypatch):
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "roundtrip")
    K.unroll_if.lower(torch.zeros(128, 64), torch.zeros(128, 64))


def test_unroll_needs_literal_bounds():
    import pypto.language as pl
    from pypto.errors import ParserTypeError

    @pl.jit
    def dyn_unroll(a: pl.Tensor[[64, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
                   out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        for i in pl.unroll(n):
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(a, a)
        return out

    with pytest.raises(ParserTypeError, match="compile-time int"):
        dyn_unroll.compile(n=pl.RUNTIME)
