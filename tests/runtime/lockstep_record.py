"""The record of which ops ran in a lockstep gang during this test session.

Every test that bit-compares a run with ``sim_lockstep`` on against one with it off calls
:func:`record` with the finished runtime; ``tests/runtime/test_lockstep_coverage.py`` then checks
that every op with a lockstep form (``OpDef.batch``) appears here. Why a module of its own: the
recording tests live in several modules (test_lockstep_bits, test_lockstep_bits_mm,
test_blocks_and_dyn), and a record held by one of them could only be found through
``sys.modules`` by name (a renamed module silently dropped out of the record).

The ops of a gang are read from the lowered IR of the kernel that ran: that of the compiled build
whose artifact directory the gang's kernel module was loaded from, found among the builds of the
``pl.jit`` kernels of a namespace (a test module's globals) or given directly (the
``CompiledProgram`` that ``run(program, ...)`` returns).
"""
from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import pytest

from pypto.driver.compiled import CompiledProgram
from pypto.ir.visit import iter_calls
from pypto.language.jit import JITFunction

# op -> the tests (pytest node ids) in which it ran in a lockstep gang
GANGED: dict[str, set[str]] = defaultdict(set)
# node ids of the tests of the recording modules that ran in this process (under pytest-xdist a
# worker runs only its share of the session's items, and not necessarily in file order)
RAN: set[str] = set()


@pytest.fixture(autouse=True)
def lockstep_recorder_ran(request):
    """Autouse in the recording modules (they import it): notes the test in :data:`RAN`."""
    RAN.add(request.node.nodeid)
    yield


def _current_test() -> str:
    """The node id of the running test (pytest sets it), or ``?`` outside pytest."""
    return os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]


def _function(name: str, out_dir: Path, namespace: dict):
    """The IR function ``name`` whose build wrote ``out_dir``, found among the kernels of ``namespace``."""
    for obj in list(namespace.values()):
        builds = list(obj._cache.values()) if isinstance(obj, JITFunction) else [obj]
        for c in builds:
            if isinstance(c, CompiledProgram) and c.output_dir.resolve() == out_dir and name in c.lowered.functions:
                return c.lowered.functions[name]
    return None


def ganged_ops(rt, namespace: dict) -> set[str]:
    """The ops of every kernel that ``rt`` (a finished simulator run) ran as a lockstep gang.
    ``namespace``: where its builds are found (a test module's globals: its ``pl.jit`` kernels, or a
    dict holding ``CompiledProgram`` objects)."""
    by_index = {t.index: t for t in rt.tasks}
    ops: set[str] = set()
    for name in sorted({by_index[i].kernel for g in rt.gangs for i in g}):
        mod = rt.kernels[name]
        out_dir = Path(mod.__file__).resolve().parents[2]   # <out>/kernels/aiv/<name>.py
        # a mixed-kernel group's gang runs its member functions' lockstep forms (pypto.runtime.cross_core)
        group = getattr(mod, "GROUP", None)
        for fname in [name] + ([m[0] for m in group["members"]] if group is not None else []):
            fn = _function(fname, out_dir, namespace)
            assert fn is not None, f"kernel {fname} (built in {out_dir}) is not defined in the namespace given"
            ops |= {c.op for _, c in iter_calls(fn.body)}
    return ops


def record(rt, namespace: dict) -> set[str]:
    """Add the ops of ``rt``'s gangs to :data:`GANGED` under the running test; returns them. Call it
    only after the lockstep-on run was compared bit for bit with the lockstep-off one."""
    assert rt.gangs, "no gang formed: nothing to record"
    ops = ganged_ops(rt, namespace)
    test = _current_test()
    for op in ops:
        GANGED[op].add(test)
    return ops
