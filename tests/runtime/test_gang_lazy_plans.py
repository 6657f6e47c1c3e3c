"""Gang plans built when first read (pypto/ops/support/gang_access.py ``LazyGangPlans``): only for a
``GANG_PLAN`` that cannot raise (pypto/codegen/gang.py ``plan_is_pure``), reading the first and last
members' builds only those two, anything else builds them all once and turns the object into a
plain ``GangPlans``; and the parameter path finds the same runs from lazy plans as from built ones."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from pypto.codegen.gang import plan_is_pure
from pypto.ops.support import gang_access as GA
from pypto.runtime.batch import Sliced, Stack

from test_gang_param_runs import _stack   # (a stacked buffer as create_batch makes it)


@pytest.mark.parametrize("body, pure", [
    (["    _E0 = (0, (x, _GANG_K0, None))", "    out_1 = out", "    return [_E0]"], True),
    (["    E = []", "    for c in range(1, 4, 1):", "        E.append((2, (x, [0, (c * 256)], None)))",
      "    E.append((4, (_GANG_K0, out, None)))", "    return E"], True),
    (["    _E0 = (0, (x, [-i + 3, 0], None))", "    return [_E0]"], True),
    (["    _E0 = (0, (x, [i // n, 0], None))", "    return [_E0]"], False),     # may divide by zero
    (["    _E0 = (0, (x, [_block[0] * 4, 0], None))", "    return [_E0]"], False),   # a subscript
    (["    E = []", "    for c in range(0, 4, 0):", "        E.append((0, (x, [c, 0], None)))",
      "    return E"], False),                                                        # range step 0
    (["    E = []", "    for c in range(n):", "        E.append((0, (x, [c, 0], None)))",
      "    return E"], False),                                                        # a bound not a literal
    (["    E = []", "    if n > 0:", "        E.append((0, (x, [0, 0], None)))", "    return E"], False),
    (["    _E0 = (0, (x, [f(i), 0], None))", "    return [_E0]"], False),            # a call
])
def test_plan_is_pure(body, pure):
    assert plan_is_pure(body) is pure


def _lazy(n):
    st = _stack(n, [4, 8])
    task = SimpleNamespace(args=(st,), batched=(True,), members=[(r,) for r in st], parent=None, kind="kernel")
    runs = [SimpleNamespace(parent=task, kind="member", block=b, args=task.members[b]) for b in range(n)]
    built = []

    def build(rs):
        built.append(len(rs))
        return [[(0, (r.args[0], [0, 0], None)), (1, ([0, 0], r.args[0], None))] for r in rs]
    return GA.gang_plans(None, runs, (Stack, Sliced), build), runs, built, build


def test_lazy_reads_ends_then_builds_all_once():
    P, runs, built, build = _lazy(5)
    assert type(P) is GA.LazyGangPlans and len(P) == 5 and built == []
    assert P[0][0][1][0] is runs[0].args[0] and P[-1][0][1][0] is runs[-1].args[0]
    assert P[4] is P[-1] and P[-5] is P[0]
    assert built == [2]                      # the first and last members' plans only, once
    assert P[2][1][1][1] is runs[2].args[0]  # another member: all of them built
    assert type(P) is GA.GangPlans and built == [2, 5]
    assert list(P) == build(runs) and len(P) == 5
    assert [p[0][1][0] for p in P] == [r.args[0] for r in runs] and built == [2, 5, 5]


def test_lazy_iteration_builds():
    P, runs, built, _ = _lazy(3)
    assert [p[0][1][0] for p in P] == [r.args[0] for r in runs]
    assert type(P) is GA.GangPlans and built == [3]


def test_param_runs_same_from_lazy_plans():
    P, runs, built, build = _lazy(6)
    E = GA.gang_plans(build(runs), runs, (Stack, Sliced))
    built.clear()
    a = GA.param_runs(P, 0, 0, 0, (4, 8), [0, 0], True)
    b = GA.param_runs(E, 0, 0, 0, (4, 8), [0, 0], True)
    assert a is not None and repr(a) == repr(b)
    assert built == [2] and type(P) is GA.LazyGangPlans   # the parameter path never built the rest
    dst = torch.empty([6, 4, 8])
    GA.gang_load_at(dst, P, 0, [0, 0], 0)
    assert torch.equal(dst, runs[0].parent.args[0].whole) and built == [2]
