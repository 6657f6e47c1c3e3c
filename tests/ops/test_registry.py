"""Every registered op is complete (type rule, reference, simulator or lowering) and tested.

``COVERED`` is the union of the module-level ``COVERED_OPS`` sets of the other test modules in
this directory; an op missing from it fails ``test_every_op_is_covered`` (a new op needs a test).
"""
from __future__ import annotations

import importlib
import os
import sys

import pytest

import pypto.ops
from pypto.ops.registry import OpDef, Param

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

TEST_MODULES = ("test_elementwise", "test_memory", "test_cast_ops")


def covered_ops() -> set[str]:
    """Union of the ``COVERED_OPS`` of the test modules (every ``test_*.py`` here but this one)."""
    names = {f[:-3] for f in os.listdir(_HERE) if f.startswith("test_") and f.endswith(".py")}
    names.discard("test_registry")
    assert set(TEST_MODULES) <= names, f"missing test modules: {set(TEST_MODULES) - names}"
    covered: set[str] = set()
    for name in sorted(names):
        mod = importlib.import_module(name)
        covered |= set(getattr(mod, "COVERED_OPS", ()))
    return covered


def completeness_problems(ops: dict[str, OpDef]) -> list[str]:
    """What is missing from the op definitions."""
    problems = []
    for name, op in sorted(ops.items()):
        if not callable(op.infer):
            problems.append(f"{name}: no type rule")
        if not callable(op.ref):
            problems.append(f"{name}: no ref")
        # array.*: on-core scalar arrays; dist.*: pld ops in kernels; prefetch.*: pl.prefetch (kernel ops)
        if name.startswith(("tile.", "array.", "dist.", "prefetch.")):
            if not callable(op.sim):
                problems.append(f"{name}: tile op without sim")
        elif name.startswith(("tensor.", "system.")):   # system.*: orchestration queries of the device
            lowered_ok = op.lowers_to is not None and op.lowers_to.startswith("tile.") and op.lowers_to in ops
            # system.*: or a synchronisation op of a kernel (pypto/ops/sync.py), which has a sim form
            kernel_ok = name.startswith("system.") and callable(op.sim)
            if not lowered_ok and not callable(op.orch) and not kernel_ok:
                problems.append(f"{name}: tensor op with neither a lowers_to naming a registered tile op "
                                f"(got {op.lowers_to!r}) nor an orch")
        else:
            problems.append(f"{name}: name is neither tile.*, array.*, dist.*, prefetch.*, tensor.* nor system.*")
    return problems


def coverage_problems(ops, covered: set[str]) -> list[str]:
    return [f"{name}: no test (not in any COVERED_OPS)" for name in sorted(ops) if name not in covered]


def test_registry_is_not_empty():
    ops = pypto.ops.all_ops()
    assert {"tile.load", "tile.store", "tensor.add", "tile.add", "tile.cast"} <= set(ops)


def test_every_op_is_complete():
    problems = completeness_problems(pypto.ops.all_ops())
    assert not problems, "\n".join(problems)


def test_every_op_is_covered():
    problems = coverage_problems(pypto.ops.all_ops(), covered_ops())
    assert not problems, "\n".join(problems)


def test_covered_names_are_registered():
    """No stale names in COVERED_OPS (a renamed op must be re-tested under its new name)."""
    stale = covered_ops() - set(pypto.ops.all_ops())
    assert not stale, f"COVERED_OPS name unregistered ops: {sorted(stale)}"


def test_checks_detect_incomplete_ops():
    """The checks above can fail: synthetic broken ops are reported."""
    ok = pypto.ops.all_ops()["tile.add"]
    params = (Param("x", "tile"),)
    ref = lambda a: "x"  # noqa: E731
    bad = {
        "tile.add": ok,
        "tile.nosim": OpDef(name="tile.nosim", params=params, infer=ok.infer, ref=ref),
        "tile.noref": OpDef(name="tile.noref", params=params, infer=ok.infer, ref=None, sim=ok.sim),
        "tile.norule": OpDef(name="tile.norule", params=params, infer=None, ref=ref, sim=ok.sim),
        "tensor.nolower": OpDef(name="tensor.nolower", params=params, infer=ok.infer, ref=ref),
        "tensor.badlower": OpDef(name="tensor.badlower", params=params, infer=ok.infer, ref=ref,
                                 lowers_to="tile.missing"),
        "tensor.orch": OpDef(name="tensor.orch", params=params, infer=ok.infer, ref=ref, orch=ref),
        "tensor.lowered": OpDef(name="tensor.lowered", params=params, infer=ok.infer, ref=ref,
                                lowers_to="tile.add"),
    }
    got = "\n".join(completeness_problems(bad))
    for name in ("tile.nosim", "tile.noref", "tile.norule", "tensor.nolower", "tensor.badlower"):
        assert name in got, got
    for name in ("tile.add", "tensor.orch", "tensor.lowered"):
        assert name not in got, got
    assert coverage_problems(bad, {"tile.add"}) and not coverage_problems({"tile.add": ok}, {"tile.add"})


@pytest.mark.slow  # a fresh interpreter (import order)
def test_the_registry_loads_when_imported_first():
    """A fresh interpreter importing pypto.ops before anything else (pypto.ops.rules imports
    pypto.ir, whose passes import pypto.ops.rules back: the cycle must not break the load)."""
    import subprocess

    code = "import pypto.ops\nfrom pypto.ops.registry import all_ops\nprint(len(all_ops()))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and int(r.stdout) > 100, r.stderr
