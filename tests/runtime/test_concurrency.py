"""Concurrency: threads and processes compiling and running kernels at once, through one shared
``save_kernels_dir`` and through the default (content-keyed) build directory, must give 0 wrong
results and 0 errors; and the op registry's first use is thread-safe (issue 13, items 1 and 11)."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kernels_concurrency as KC

HERE = Path(__file__).resolve().parent


def _assert_clean(result: dict, runs: int) -> None:
    assert result["errors"] == [], "\n".join(result["errors"])
    assert result["wrong"] == [], "\n".join(result["wrong"])
    assert result["runs"] == runs


def test_eight_threads_shared_and_default_dirs(tmp_path):
    result = KC.run_threads(8, 6, str(tmp_path / "shared"))
    _assert_clean(result, 8 * 6 * 2)


@pytest.mark.slow  # ~30 s: four fresh interpreters import torch
def test_four_processes_shared_and_default_dirs(tmp_path):
    """Four fresh processes (each compiling from two threads at once: a fresh registry, a fresh
    module cache) share one explicit directory and one default build root."""
    env = dict(os.environ, PYPTO_PROG_BUILD_DIR=str(tmp_path / "build"))
    procs = [subprocess.Popen([sys.executable, str(HERE / "kernels_concurrency.py"), "2", "4",
                               str(tmp_path / "shared"), str(10 + 2 * i)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for i in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        _assert_clean(json.loads(out.strip().splitlines()[-1]), 2 * 4 * 2)
    # the identical jobs of the four processes were built once each and reused: every entry complete
    entries = [d for d in (tmp_path / "build").iterdir() if not d.name.startswith(".")]
    assert entries and all((d / "compiled_meta.json").is_file() for d in entries)
    assert not [d for d in (tmp_path / "build").iterdir() if d.name.startswith(".tmp-")]


_REGISTRY_RACE = textwrap.dedent("""
    import threading
    import pypto.language as pl
    names = ["add", "load", "exp", "mul", "row_max", "matmul", "store", "cast"]
    start, errors = threading.Barrier(len(names)), []
    def touch(n):
        start.wait()
        try:
            getattr(pl, n)
        except Exception as e:
            errors.append(repr(e))
    ts = [threading.Thread(target=touch, args=(n,)) for n in names]
    [t.start() for t in ts]
    [t.join() for t in ts]
    print(errors)
    raise SystemExit(1 if errors else 0)
""")


@pytest.mark.slow  # a fresh interpreter (first use of the registry)
def test_registry_first_use_from_eight_threads():
    """Before the fix every fresh process failed: ``_loaded`` was set before the op families were
    imported, so the other threads saw an empty registry ("no attribute 'load'")."""
    r = subprocess.run([sys.executable, "-c", _REGISTRY_RACE], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
