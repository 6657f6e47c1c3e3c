"""``pl.debug_print``: a run-time print inside a kernel, printed with the task (r<ring>t<index>), the
core and the simulated time; the reference executor prints the same values; printing leaves the
schedule and the results unchanged; only the valid region of a tile is printed."""
import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import kernels_debug_print as K  # noqa: E402
from ops_harness import run_ref  # noqa: E402

from pypto.errors import PyptoError  # noqa: E402
from pypto.runtime import RunConfig  # noqa: E402
from pypto.runtime.simulator import last_prints  # noqa: E402

COVERED_OPS = {"tensor.debug_print", "tile.debug_print"}


def test_prints_value_task_core_and_time(capsys):
    x, out = torch.randn(64, 32), torch.zeros(64, 32)
    K.row_sums(x, out, config=RunConfig(platform="a2a3sim", sim_seed=3))
    assert torch.equal(out, x * 2)
    recs = last_prints()
    tiles = [r for r in recs if r.label == "doubled"]
    scalars = [r for r in recs if r.label == "i"]
    assert len(tiles) == len(scalars) == 4
    # each task printed its own rows: the value of i says which, the tile holds 2 * x[i:i+16]
    by_task = {r.task: r.value for r in scalars}
    assert sorted(by_task.values()) == [0, 16, 32, 48]
    for r in tiles:
        i = by_task[r.task]
        assert torch.equal(r.value, x[i:i + 16] * 2), r.task
        assert r.where == "kernels_debug_print.py:11"
        assert r.core.startswith("core ") and r.time is not None and r.time > 0
    # the lines are printed as the simulated device reaches them: in simulated time order
    assert [r.time for r in recs] == sorted(r.time for r in recs)
    text = capsys.readouterr().out
    first = recs[0]
    assert f"[debug_print {first.task} {first.core} t={first.time:.0f}] kernels_debug_print.py:1" in text
    assert "doubled: FP32[16, 32] tensor(" in text and " i: " in text


def test_printing_does_not_change_the_schedule():
    """The print draws no random number and spends no time: the same seed runs the same tasks on the
    same cores at the same times, with the print and without (lockstep off: a kernel that prints
    runs task by task, never in a lockstep gang)."""
    from pypto.runtime.simulator import _LAST_RUNTIME

    def timeline(kernel):
        x, out = torch.randn(64, 32), torch.zeros(64, 32)
        kernel(x, out, config=RunConfig(platform="a2a3sim", sim_seed=11, sim_lockstep=False))
        rt = _LAST_RUNTIME[0]
        return [(t.core, t.start, t.end) for t in rt.tasks if t.kind == "kernel"]

    assert timeline(K.row_sums) == timeline(K.same_without_print)


def test_tensor_level_value_and_the_reference_prints_the_same(capsys, monkeypatch):
    x, out = torch.randn(16, 16).half(), torch.zeros(16, 16, dtype=torch.float16)
    K.tensor_level(x, out)
    (rec,) = last_prints()
    assert rec.label == "y" and torch.equal(rec.value, torch.exp(x)) and rec.value.dtype == torch.float16
    capsys.readouterr()
    run_ref(K.tensor_level, [x, out])
    line = capsys.readouterr().out
    assert line.startswith("[debug_print reference -] kernels_debug_print.py:21 y: FP16[16, 16]")


def test_only_the_valid_region_is_printed():
    x, out = torch.randn(16, 32), torch.zeros(16, 32)
    K.partial_tile(x, out)
    (rec,) = last_prints()
    assert rec.value.shape == (3, 5) and torch.equal(rec.value, x[:3, :5])


def test_quiet_keeps_the_records(capsys, monkeypatch):
    monkeypatch.setenv("PYPTO_DEBUG_PRINT", "0")
    x, out = torch.randn(16, 32), torch.zeros(16, 32)
    K.partial_tile(x, out)
    assert "[debug_print" not in capsys.readouterr().out and len(last_prints()) == 1


def test_print_in_orchestration_is_a_located_error():
    x, out = torch.randn(16, 16), torch.zeros(16, 16)
    with pytest.raises(PyptoError) as e:
        K.prints_a_tensor_in_orchestration(x, out)
    msg = str(e.value)
    assert "kernels_debug_print.py:47" in msg and "pl.at" in msg


def test_printed_form_round_trips():
    from pypto.language.program import parse

    lowered = K.tensor_level.lower(torch.randn(16, 16).half(), torch.zeros(16, 16, dtype=torch.float16))
    text = lowered.as_python()
    assert "pl.tile.debug_print(y, label='y', where='kernels_debug_print.py:21')" in text
    assert parse(text).as_python() == text


def test_the_doctor_command_keeps_stdout_json(tmp_path, monkeypatch):
    """pypto doctor --json on a kernel that prints: stdout is the JSON alone."""
    import json
    import subprocess
    import textwrap

    script = tmp_path / "case.py"
    script.write_text(textwrap.dedent(f'''
        import sys
        sys.path.insert(0, {str(HERE)!r})
        import torch
        import kernels_debug_print as K

        def case():
            x = torch.randn(16, 32)
            want = torch.zeros(16, 32)
            want[:3, :5] = x[:3, :5]
            return {{"kernel": K.partial_tile, "inputs": {{"x": x, "out": torch.zeros(16, 32)}},
                    "expected": {{"out": want}}}}
    '''))
    monkeypatch.delenv("PYPTO_DEBUG_PRINT", raising=False)
    p = subprocess.run([sys.executable, "-m", "pypto", "doctor", str(script), "--json", "--quiet", "--seeds", "2",
                        "--html", str(tmp_path / "r.html")], capture_output=True, text=True, timeout=900)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    assert "[debug_print" not in p.stdout
    json.loads(p.stdout)
