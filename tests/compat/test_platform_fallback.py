"""A real device name on a machine without one runs on its simulator, with one line on stderr."""
import subprocess
import sys
import textwrap

import pytest

from pypto.errors import PlatformError
from pypto.runtime import RunConfig

SCRIPT = textwrap.dedent("""
    import torch
    import pypto.language as pl
    from pypto.runtime import RunConfig

    @pl.jit
    def double(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mul(a, 2.0)
        return out

    a, out = torch.randn(64, 64), torch.zeros(64, 64)
    for _ in range(3):  # several configs and runs: still one line
        double(a, out, config=RunConfig(platform="{platform}"))
    assert torch.equal(out, a * 2), "wrong result"
    print("ok", double.compile(a, out, config=RunConfig(platform="{platform}")).platform)
""")


@pytest.mark.slow  # a fresh interpreter per case (the warning is once per process)
@pytest.mark.parametrize("device,sim", [("a2a3", "a2a3sim"), ("a5", "a5sim")])
def test_real_device_runs_on_its_simulator_with_one_warning(device, sim, tmp_path):
    path = tmp_path / "script.py"
    path.write_text(SCRIPT.format(platform=device))
    p = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300,
                       env={**__import__("os").environ, "PYPTO_PROG_BUILD_DIR": str(tmp_path / "build")})
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["ok", sim]
    lines = [ln for ln in p.stderr.splitlines() if "device here" in ln]
    assert lines == [f"pypto: warning: no '{device}' device here; running on the simulator '{sim}' "
                     "(set PYPTO_STRICT_PLATFORM=1 to make this an error)"]


def test_strict_mode_refuses_a_real_device(monkeypatch):
    monkeypatch.setenv("PYPTO_STRICT_PLATFORM", "1")
    with pytest.raises(PlatformError, match="a5sim"):
        RunConfig(platform="a5")
    monkeypatch.setenv("PYPTO_STRICT_PLATFORM", "0")  # 0 / empty: the fallback again
    assert RunConfig(platform="a5").backend_type == "Ascend950"


def test_unknown_platform_is_still_an_error():
    with pytest.raises(PlatformError, match="unknown platform"):
        RunConfig(platform="a9")
