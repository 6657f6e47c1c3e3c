"""The runs of a task that runs as several (pypto.runtime.simulator._Run): every Task field reads as a
fully initialised run's would, and the fields no run owns cannot be written (shared class values)."""
import types

import pytest

from pypto.runtime import simulator as S
from pypto.runtime.task_graph import Task

# what a run held when every field was set per run (the form before _Run)
FRESH = dict(views=types.MappingProxyType({}), fanin=frozenset(), edges=(), dependents=(), waiting=0, start=0.0,
             end=0.0, core=-1, dump_sel=None, func_ids=(-1,), kernel_ids=(-1, -1, -1), snap=-1, pred=None,
             skipped=False, done=False, scope=None, registered=None, left=0, runs=None, members=None,
             batched=None, footprint=None)


def _parent():
    p = Task(7, (1 << 32) | 3, "k", "kernel", [1, 2.0], ["INPUT", "SCALAR"], False)
    p.members = [(i, 2.0) for i in range(5)]
    return p


def test_member_and_block_runs_read_like_fresh_runs():
    p = _parent()
    runs = S._member_runs(p)
    assert [r.block for r in runs] == list(range(5))
    for i, r in enumerate(runs + [S._run_of(p, "block", p.args, 2, 4, True)]):
        assert set(Task.__slots__) == set(FRESH) | {"index", "task_id", "kernel", "kind", "args", "tags", "manual",
                                                    "blocks", "block", "parent"}
        for name, want in FRESH.items():
            got = getattr(r, name)
            assert got == want and type(got) is type(want), name
        assert (r.index, r.task_id, r.kernel, r.tags, r.parent) == (7, (1 << 32) | 3, "k", p.tags, p)
        if r.kind == "member":
            assert (r.args, r.manual, r.blocks) == (p.members[i], False, 1)
        else:
            assert (r.kind, r.args, r.manual, r.blocks, r.block) == ("block", p.args, True, 4, 2)
    assert isinstance(runs[0], Task)


@pytest.mark.parametrize("name", sorted(set(FRESH) - {"start", "end", "core"}))
def test_a_shared_field_of_a_run_cannot_be_written(name):
    r = S._member_runs(_parent())[0]
    with pytest.raises(AttributeError):
        setattr(r, name, 1)


def test_the_scheduler_fields_of_a_run_are_its_own():
    a, b = S._member_runs(_parent())[:2]
    a.core, a.start, a.end = 3, 1.5, 2.5
    assert (b.core, b.start, b.end) == (-1, 0.0, 0.0)
