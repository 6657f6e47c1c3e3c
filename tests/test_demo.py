"""The main job (`python -m pypto.demo`) runs, passes its own checks and says what it shows.

It runs as ``python -m pypto.demo`` would, in this process (``inproc.run_module``); the fresh-interpreter
path of ``python -m`` is covered by the CLI smoke test of tests/tools/test_doctor_cli.py."""
import pytest

from inproc import run_module


@pytest.mark.slow
def test_demo_runs_and_passes(tmp_path):
    proc = run_module("pypto.demo", build_dir=tmp_path)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "[FAIL]" not in out
    assert "OK: all checks passed" in out
    # (a) the lowered cast chain per platform: one native hop on a2a3, INT32 -> FP32 -> FP16 on a5
    assert "a2a3sim: lowered cast chain INT32 -> FP16 (1 hop)" in out
    assert "a5sim: lowered cast chain INT32 -> FP32 -> FP16 (2 hops)" in out
    assert out.count("pl.tile.cast(") == 3
    for platform in ("a2a3sim", "a5sim"):
        assert f"[PASS] {platform}: to_fp16 bit-identical to torch's int32->fp16 (boundary block)" in out
    # the boundary rows of the table: 65519 rounds down to 65504, 65520 overflows
    rows = {ln.split()[0]: ln.split()[1:] for ln in out.splitlines() if ln.strip()[:1] in "-0123456789"
            and len(ln.split()) == 4}
    assert rows["65519"] == ["65504"] * 3
    assert rows["65520"] == ["inf"] * 3
    assert rows["-65520"] == ["-inf"] * 3
    assert rows["16777217"] == ["inf"] * 3
    # (b) torch_codegen source is printed, executed and matches; both simulators agree
    assert "def fused(a, b, out):" in out
    assert "torch.add(" in out and "torch.mul(" in out
    assert "[PASS] exec(torch_codegen(fused.lower(...)))" in out
    assert "[PASS] a5sim: fused == torch (a + b) * 2.0, exactly" in out
