"""Every op with a lockstep form (``OpDef.batch``) ran in a lockstep gang, bit-compared with
lockstep off, somewhere in this session's tests (the record: tests/runtime/lockstep_record.py).

The recording tests are those of :data:`RECORDERS` whose body calls ``run_both`` or
``lockstep_record``; they are found by reading the modules' source, so a new one counts without an
entry here. This module sorts after all of them (pytest runs files in name order), so its check runs
last. It judges whenever every recording test ran at least once before it (the fast tier keeps one
case of each, so ``pytest -m "not slow"`` judges too), and skips, naming what is missing, when only
part of them was selected. Under pytest-xdist the recorders and this module are one
``xdist_group`` (one worker, in file order) under ``--dist loadgroup``; under another distribution
the recorders that ran in other workers are missing here, and the check skips.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import lockstep_record
from pypto.ops.registry import all_ops

# the gang record and its check run in one process (pytest-xdist: --dist loadgroup, scripts/test.sh)
pytestmark = pytest.mark.xdist_group("lockstep_record")

HERE = Path(__file__).parent
# the modules whose tests record gangs (each must import lockstep_record or use run_both)
RECORDERS = ("test_lockstep_bits.py", "test_lockstep_bits_mm.py", "test_blocks_and_dyn.py",
             "test_lockstep_bits_group.py")

# ops with a lockstep form that no gang can run today, and why
NEVER_GANGED = {
    "tile.tensor_dim": "a run-time extent is a per-task value: any use of it (a data operand, a loop bound) makes "
                       "the kernel's GANG_WHY refuse ganging, so the form exists for when that rule is relaxed",
}


def recording_tests(module: str) -> list[str]:
    """The test functions of ``module`` (a file name in this folder) that record gangs."""
    tree = ast.parse((HERE / module).read_text(encoding="utf-8"))
    out = []
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_"):
            names = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
            if names & {"run_both", "lockstep_record"}:
                out.append(fn.name)
    return out


def test_the_recording_tests_are_found():
    """The source scan sees the known recorders (a scan that finds nothing would make the check
    below skip forever)."""
    found = {m: recording_tests(m) for m in RECORDERS}
    assert "test_binary_array" in found["test_lockstep_bits.py"]
    assert found["test_lockstep_bits_mm.py"] == ["test_matmul_bias_and_gemv", "test_batch_matmul"]
    assert found["test_blocks_and_dyn.py"] == ["test_blocks_gang_in_lockstep_bit_identical_to_one_by_one"]
    assert "test_ping_pong_group_gangs_bit_identical" in found["test_lockstep_bits_group.py"]
    assert all(found.values())


def test_never_ganged_ops_have_a_lockstep_form():
    lockstep = {name for name, op in all_ops().items() if op.batch is not None}
    assert set(NEVER_GANGED) <= lockstep, set(NEVER_GANGED) - lockstep


def test_every_op_with_a_lockstep_form_ran_in_a_gang(request):
    # every selected case of every recording test must have run in this process already (not merely
    # sort before this one: a pytest-xdist worker runs only its share of the items, in its order)
    recorders = {(m, t) for m in RECORDERS for t in recording_tests(m)}
    selected = [((Path(i.path).name, getattr(i, "originalname", i.name)), i.nodeid) for i in request.session.items]
    missing_runs = [f"{m}::{t}" for m, t in sorted(recorders - {key for key, _ in selected})]
    missing_runs += [nodeid for key, nodeid in selected if key in recorders and nodeid not in lockstep_record.RAN]
    if missing_runs:
        pytest.skip(f"{len(missing_runs)} recording tests did not run before this one (e.g. {missing_runs[0]}): "
                    "the record of ganged ops is incomplete")
    lockstep = {name for name, op in all_ops().items() if op.batch is not None}
    ganged = set(lockstep_record.GANGED)
    stale = sorted(set(NEVER_GANGED) & ganged)
    assert not stale, f"listed in NEVER_GANGED but ran in a gang (remove the entry): {stale}"
    missing = sorted(lockstep - ganged - set(NEVER_GANGED))
    assert not missing, (f"ops with a lockstep form (OpDef.batch) that no test ran in a gang: {missing}; "
                         f"add them to a kernel of tests/runtime/test_lockstep_bits.py")
