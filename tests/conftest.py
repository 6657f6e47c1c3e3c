import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests/kernels.py


@pytest.fixture(autouse=True)
def _pypto_build_dir(tmp_path, monkeypatch):
    """Compiled artifacts of each test go to a fresh tmp dir, never into the working tree."""
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "build"))
    yield
