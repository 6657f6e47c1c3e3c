"""The rules of the test tiers (CONTRIBUTING.md, "Test tiers") that a reader can check statically.

A fresh interpreter costs a torch import (seconds of CPU): a test file that starts one must be
listed here with the reason, i.e. the test is about processes, or it is the one smoke test of a
folder or command; everything else runs scripts and commands in the test process (tests/inproc.py).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# test file -> why it starts a Python interpreter (and whether that test is in the slow tier)
FRESH_INTERPRETERS = {
    "test_examples.py": "test_example_runs_as_a_command: the smoke test of the examples as commands "
                        "(fast tier: the shortest script's folder)",
    "tools/test_doctor_cli.py": "_run_process: the smoke test of the `pypto` command line",
    "runtime/test_dfx_io.py": "_viewer_process: the smoke test of the dump viewer's command line",
    "ops/test_debug_print.py": "`pypto doctor --json` keeps the process's stdout JSON while kernels print: "
                               "about the real file descriptors",
    "compat/test_workdir_files.py": "the generated run script runs as `python run_script.py` (its own "
                                    "sys.path and imports)",
    "test_import_graph.py": "importing pypto.ir loads no heavy layer: needs an interpreter that imported "
                            "nothing yet",
    "compat/test_platform_fallback.py": "slow: the fallback warning is once per process",
    "compat/test_runtime_surface.py": "slow: the work directory contract across processes",
    "ops/test_registry.py": "slow: import order of a fresh interpreter",
    "precision/test_golden_safety.py": "slow: three writer processes share one golden directory",
    "test_compile_cache.py": "slow: a build is reused by a new process",
    "runtime/test_concurrency.py": "slow: concurrent builds from processes, first use of the registry",
    "runtime/test_gang_matmul_bits.py": "MKL_VERBOSE is read once, when MKL first runs: the sgemm call "
                                        "trace needs a process that has not run a GEMM yet",
}

_SPAWNS = re.compile(r"\bsys\.executable\b")


def _spawning_files() -> set[str]:
    return {p.relative_to(TESTS).as_posix() for p in TESTS.rglob("*.py")
            if p.name != "inproc.py" and p.resolve() != Path(__file__).resolve()
            and _SPAWNS.search(p.read_text(encoding="utf-8"))}


def test_only_the_listed_test_files_start_a_python_interpreter():
    unlisted = sorted(_spawning_files() - set(FRESH_INTERPRETERS))
    assert not unlisted, (
        f"{unlisted} start a Python interpreter (sys.executable): run the script or command in the test "
        "process with tests/inproc.py (run_script / run_module / run_main), or, when the test is about "
        "processes or is the one smoke test of its folder or command, add the file to FRESH_INTERPRETERS "
        "with the reason (CONTRIBUTING.md, 'Test tiers')")


def test_every_listed_file_still_starts_one():
    stale = sorted(set(FRESH_INTERPRETERS) - _spawning_files())
    assert not stale, f"{stale} no longer start an interpreter: drop them from FRESH_INTERPRETERS"


def test_the_per_test_build_directory_is_named_not_made():
    """The autouse fixture (tests/conftest.py) names a fresh build directory per test without making
    it: a ``tmp_path`` per test cost ~3 ms of CPU and ~10 ms of wall time each, ~2900 times in the
    fast tier, and most tests build nothing on disk."""
    build = Path(os.environ["PYPTO_PROG_BUILD_DIR"])
    assert not build.exists()
    assert build.parent.is_dir()


def test_pytest_xdist_workers_share_the_cores():
    """Each pytest-xdist worker runs torch on its share of the cores (tests/conftest.py): two workers
    with every core each spent ~25% of the fast tier's CPU time in idle OpenMP threads."""
    import pytest
    import torch

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    if workers < 2:
        pytest.skip("not a pytest-xdist run with two or more workers (a serial run keeps torch's default)")
    assert torch.get_num_threads() == max(1, (os.cpu_count() or 1) // workers)
