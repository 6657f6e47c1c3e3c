import itertools
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests/kernels.py

_TEST_NUMBER = itertools.count()


def pytest_configure(config):
    """Under pytest-xdist the workers share the machine's cores: each runs torch on its share of
    them (``cores // workers`` threads, at least one). With torch's default (every core) in every
    worker, two workers on two cores ran four OpenMP threads whose idle spin-waits cost ~25% of the
    fast tier's CPU time (tests/ops/test_compare.py + test_matmul.py: 23-26 CPU s -> 18-19 CPU s).
    Tests about torch's threading set the count they need (the ``threads`` fixtures of
    tests/runtime/test_lockstep*.py, test_gang_matmul_bits.py); a serial run keeps torch's default."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    if workers > 1 and os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))


@pytest.fixture(scope="session")
def _pypto_build_root(tmp_path_factory):
    """One directory per test process (each pytest-xdist worker has its own) for the builds."""
    return tmp_path_factory.mktemp("builds")


@pytest.fixture(autouse=True)
def _pypto_build_dir(_pypto_build_root, monkeypatch):
    """Compiled artifacts of each test go to a fresh directory of their own, never into the working
    tree. The directory is named, not made: the build makes it when the test compiles something.
    (A ``tmp_path`` per test cost ~3 ms of CPU and ~10 ms of wall time at load in mkdir / cleanup
    each, ~30 s over the ~2900 tests of the fast tier, most of which build nothing on disk.)"""
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(_pypto_build_root / f"t{next(_TEST_NUMBER)}"))
    yield
