"""The reference's work-directory files: kernel_config.py (the kernels of the build) and
debug/run.py (a self-contained re-runner with inline inputs)."""
import ast
import importlib.util
import os
import subprocess
import sys

import torch

from kernels_compat import NamedScope
from pypto import ir


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_kernel_config_lists_the_kernels_by_name(tmp_path):
    c = ir.compile(NamedScope, tmp_path / "w")
    cfg = _load(tmp_path / "w" / "kernel_config.py", "kernel_config")
    names = [k["name"] for k in cfg.KERNELS]
    assert any(n.startswith("ScaleRows") for n in names), names
    for k in cfg.KERNELS:
        assert (tmp_path / "w" / k["source"]).is_file()
    assert cfg.ORCHESTRATION["name"] == "main" and (tmp_path / "w" / cfg.ORCHESTRATION["source"]).is_file()
    assert "kernel_config.py" in c.meta["files"] and "debug/run.py" in c.meta["files"]


def test_debug_run_script_reruns_the_build(tmp_path):
    ir.compile(NamedScope, tmp_path / "w")
    script = tmp_path / "w" / "debug" / "run.py"
    text = script.read_text()
    ast.parse(text)
    assert "torch.randn((32, 64)" in text and "torch.zeros((32, 64)" in text and "_inline_inputs" in text
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    r = subprocess.run([sys.executable, str(script), "--seed", "3"], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    a, k, out = _load(script, "run_script")._inline_inputs(3)
    assert f"out: shape [32, 64] sum {(a * k).double().sum().item():.6g}" in r.stdout, r.stdout
    assert torch.count_nonzero(out) == 0   # the script's own inputs, untouched here
