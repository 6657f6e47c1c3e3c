import itertools
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests/kernels.py

_TEST_NUMBER = itertools.count()


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
