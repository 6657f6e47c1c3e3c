"""Every example script under examples/ runs to completion (exit status 0).

Each script runs in a fresh interpreter, with its own directory as the working directory (the
examples import sibling helpers such as ``_check.py``) and compiled artifacts in a tmp dir.
Files whose name starts with ``_`` are helpers, not scripts.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(p for p in EXAMPLES.rglob("*.py") if not p.name.startswith("_"))


def test_examples_found():
    assert len(SCRIPTS) >= 40, [str(p) for p in SCRIPTS]
    assert (EXAMPLES / "canonical" / "_check.py").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=[str(p.relative_to(EXAMPLES)) for p in SCRIPTS])
def test_example_runs(script, tmp_path):
    env = dict(os.environ, PYPTO_PROG_BUILD_DIR=str(tmp_path / "build"))
    proc = subprocess.run([sys.executable, script.name], cwd=script.parent, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (
        f"{script.relative_to(EXAMPLES)} exited {proc.returncode}\n"
        f"--- stdout (tail) ---\n{proc.stdout[-4000:]}\n--- stderr (tail) ---\n{proc.stderr[-4000:]}")
