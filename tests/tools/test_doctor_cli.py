"""``pypto doctor`` / ``pypto fuzz`` as commands: exit 0 clean / 1 a finding / 2 a usage error (never a
traceback), ``--json`` and ``to_dict()``, help text for every option; fuzz does not call a
deterministic race clean."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cli_cases import ADD_CASE
from inproc import run_main
from pypto.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
TRIAL = ROOT / "tests" / "precision" / "corpus" / "user_trial.py"


def _run(*args):
    """``pypto ARGS`` through ``pypto.cli.main`` in this process (see tests/inproc.py)."""
    return run_main(main, *args)


def _run_process(*args, timeout=600):
    """``python -m pypto ARGS`` in a fresh interpreter: the smoke test of the real command line."""
    return subprocess.run([sys.executable, "-m", "pypto", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


CLEAN = ADD_CASE + '''

def broken():
    return {"kernel": add, "inputs": {"a": torch.zeros(8, 8), "out": torch.zeros(32, 32)},
            "expected": {"out": torch.zeros(32, 32)}}


def not_a_dict():
    return 42


def raises():
    raise RuntimeError("the case builder failed")
'''


@pytest.fixture
def script(tmp_path):
    p = tmp_path / "cases.py"
    p.write_text(textwrap.dedent(CLEAN))
    return p


@pytest.mark.slow  # a fresh interpreter: the python -m pypto smoke test
def test_doctor_clean_case_exits_0_and_json(script, tmp_path):
    # a fresh interpreter: the one test of ``python -m pypto`` as a real command
    p = _run_process("doctor", script, "--seeds", "2", "--json", "--quiet", "--html", tmp_path / "r.html")
    assert p.returncode == 0, p.stderr[-2000:]
    d = json.loads(p.stdout)
    assert d["cause"] == "no_gap" and d["settled_step"] == 1 and d["html"].endswith("r.html")
    assert "step 1/5" not in p.stderr          # --quiet


@pytest.mark.parametrize("args, words", [
    (["doctor", "{dir}/missing.py"], "no such file"),
    (["doctor", "{script}", "--case", "nope"], "defines no function 'nope'"),
    (["doctor", "{script}", "--case", "not_a_dict"], "must return a dict"),
    (["doctor", "{script}", "--case", "raises"], "the case builder failed"),
    (["doctor", "{script}", "--seeds", "0"], "at least 1"),
    (["fuzz", "{script}", "--seeds", "1"], "at least 2 seeds"),
    (["fuzz", "{script}", "--jobs", "x"], "not a whole number"),
    (["doctor", "{script}", "--bogus"], "unrecognized arguments"),
])
def test_usage_errors_exit_2_without_traceback(script, args, words, capsys):
    from pypto.cli import main

    try:
        rc = main([a.format(dir=script.parent, script=script) for a in args])
    except SystemExit as e:        # argparse's own usage errors
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2, err
    assert words in err and "Traceback" not in err


def test_a_kernel_that_does_not_compile_is_a_usage_error_with_its_location(script):
    p = _run("doctor", script, "--case", "broken", "--quiet")
    assert p.returncode == 2, p.stderr[-2000:]
    assert "Traceback" not in p.stderr and "the kernel does not compile or run" in p.stderr


def test_every_option_has_help():
    ap = build_parser()
    subs = next(a for a in ap._actions if a.__class__.__name__ == "_SubParsersAction").choices
    for name in ("doctor", "fuzz"):
        for action in subs[name]._actions:
            assert action.help, f"pypto {name}: {action.option_strings or action.dest} has no help"
    help_text = _run("doctor", "--help").stdout
    assert "--json" in help_text and "Exit 0 when there is no gap" in help_text


def test_fuzz_deterministic_race_is_not_clean():
    """256/256 rows race, but every schedule loses the same way: bit-identical runs, not an all-clear."""
    p = _run("fuzz", TRIAL, "--case", "raw_parallel_case", "--seeds", "3", "--jobs", "1", "--json")
    assert p.returncode == 1, p.stderr[-2000:]
    d = json.loads(p.stdout)
    assert d["classification"] == "none" and d["clean"] is False
    assert d["races"] and d["races"][0]["kind"] == "RAW"
    assert d["golden_checked"] and len(d["golden_failures"]) == 3
    assert "pl.array.create" in d["races"][0]["fix"]    # the producer runs in a parallel loop


def test_fuzz_clean_case_exits_0(script):
    p = _run("fuzz", script, "--seeds", "2", "--jobs", "1")
    assert p.returncode == 0, p.stdout + p.stderr[-2000:]
    assert "verdict: clean" in p.stdout and "race detector: no unordered" in p.stdout


def test_main_leaves_the_callers_environment_alone(script, monkeypatch):
    # doctor / fuzz silence pl.debug_print for their own run only: main(argv) called in-process (a
    # notebook, a test) must not switch the caller's debug prints off afterwards
    from pypto.cli import main

    monkeypatch.delenv("PYPTO_DEBUG_PRINT", raising=False)
    assert main(["doctor", str(script), "--case", "nope"]) == 2
    assert "PYPTO_DEBUG_PRINT" not in os.environ
    monkeypatch.setenv("PYPTO_DEBUG_PRINT", "1")
    assert main(["doctor", str(script), "--case", "nope"]) == 2
    assert os.environ["PYPTO_DEBUG_PRINT"] == "1"
