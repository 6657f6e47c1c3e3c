"""Every example script under examples/ runs to completion (exit status 0).

Each script runs in this process through ``inproc.run_example`` (as ``__main__``, its own directory first
on ``sys.path``: the examples import sibling helpers such as ``_check.py``; a scratch working directory
and compiled artifacts in a fresh tmp dir), once per session: other test files check the same runs' output.
One script per folder also runs in a fresh interpreter (``python script.py``), so the real command line
stays covered. Files whose name starts with ``_`` are helpers, not scripts.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inproc import run_example

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# (build_output/: artifacts a script run from its own folder leaves behind, e.g. case5_war's)
SCRIPTS = sorted(p for p in EXAMPLES.rglob("*.py") if not p.name.startswith("_")
                 and "build_output" not in p.relative_to(EXAMPLES).parts)
FOLDERS = sorted({p.parent for p in SCRIPTS})
# the shortest script of each folder: the subprocess smoke test only proves the command line works
SMOKE = {d: min((p for p in SCRIPTS if p.parent == d), key=lambda p: (p.stat().st_size, p.name)) for d in FOLDERS}


def test_examples_found():
    assert len(SCRIPTS) >= 40, [str(p) for p in SCRIPTS]
    assert (EXAMPLES / "canonical" / "_check.py").is_file()
    assert len(FOLDERS) >= 7


def _report(script, r):
    return (f"{script.relative_to(EXAMPLES)} exited {r.returncode}\n"
            f"--- stdout (tail) ---\n{r.stdout[-4000:]}\n--- stderr (tail) ---\n{r.stderr[-4000:]}")


# the fast tier runs the shortest script of each folder (plus the scripts other fast tests check:
# test_quickstart, test_specialize, test_matmul, precision/test_cases run theirs through run_example);
# the rest are slow: CI runs every script
@pytest.mark.parametrize("script", [pytest.param(p, id=str(p.relative_to(EXAMPLES)),
                                                 marks=() if SMOKE[p.parent] == p else pytest.mark.slow)
                                    for p in SCRIPTS])
def test_example_runs(script):
    r = run_example(script)
    assert r.returncode == 0, _report(script, r)


# a fresh interpreter costs a torch import: the fast tier keeps the quickstart folder's, the rest are slow
@pytest.mark.parametrize("script", [pytest.param(SMOKE[d], id=d.name, marks=() if d.name == "quickstart"
                                                 else pytest.mark.slow) for d in FOLDERS])
def test_example_runs_as_a_command(script, tmp_path):
    env = dict(os.environ, PYPTO_PROG_BUILD_DIR=str(tmp_path / "build"))
    proc = subprocess.run([sys.executable, script.name], cwd=script.parent, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, _report(script, proc)
