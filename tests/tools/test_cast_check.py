"""Cast certification: the CLI verdicts of the issue, counterexamples, and the generated doc table."""
from pathlib import Path

import pytest
import torch

from inproc import run_main
from pypto.cli import main
from pypto.debug.cast_check import certify
from pypto.numerics.cast import cast_tensor

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args):
    """``pypto cast-check ARGS`` through ``pypto.cli.main`` in this process (see tests/inproc.py; the real
    command line has its smoke test in test_doctor_cli.py)."""
    return run_main(main, "cast-check", *args)


def test_int32_fp16_on_a5_is_exact():
    p = _cli("int32", "fp16", "--platform", "a5sim")
    assert p.returncode == 0, p.stderr
    assert "INT32 -> FP32 -> FP16" in p.stdout and "EXACT" in p.stdout


def test_int32_bf16_is_not_exact_with_a_value():
    p = _cli("int32", "bf16", "--platform", "a5sim")
    assert p.returncode == 1
    assert "NOT EXACT" in p.stdout and "counterexample: INT32" in p.stdout


def test_counterexample_is_real():
    c = certify("int32", "bf16", "a5sim", "round")
    x, direct, chained = c.counterexample
    t = torch.tensor([x], dtype=torch.int32)
    assert cast_tensor(t, torch.bfloat16, "round").item() == direct
    assert cast_tensor(cast_tensor(t, torch.float32, "round"), torch.bfloat16, "round").item() == chained
    assert direct != chained


def test_directed_modes_compose_and_nearest_modes_double_round():
    assert certify("fp32", "int8", "a2a3sim", "trunc").exact
    c = certify("fp32", "int8", "a2a3sim", "rint")
    assert c.exact is False and c.counterexample is not None
    c = certify("fp16", "fp4", "a5sim", "rint")  # fp16 -> fp32 -> bf16 -> fp4: the spec's double rounding
    assert c.exact is False and c.method.startswith("proven exhaustively")


def test_sixteen_bit_sources_are_exhaustive():
    c = certify("bf16", "fp16", "a2a3sim", "round")
    assert c.exact and c.checked == 65536


def test_rejected_pair_and_bad_input():
    assert certify("int8", "fp32", "a5sim").exact is None
    p = _cli("int32", "fp16", "--mode", "sideways")
    assert p.returncode == 2 and "mode" in p.stderr


@pytest.mark.slow
def test_docs_table_is_generated_and_current():
    from pypto.tools.cast_table import render

    page = (ROOT / "docs" / "cast-chains.md").read_text(encoding="utf-8")
    assert page == render(), "docs/cast-chains.md is stale: run python -m pypto.tools.cast_table -o docs/cast-chains.md"
    assert "| INT32 | BF16 | a5sim | round | INT32 → FP32 → BF16 | NOT exact |" in page


def test_unknown_dtype_is_a_usage_error():
    # issue 13 item 16: "cast-check int32 bogus" printed a REJECTED verdict and exited 0
    p = _cli("int32", "bogus")
    assert p.returncode == 2, (p.returncode, p.stdout)
    assert "usage: pypto cast-check" in p.stderr and "unknown destination dtype 'bogus'" in p.stderr
    assert p.stdout == ""
    p = _cli("int33", "fp16")
    assert p.returncode == 2 and "unknown source dtype 'int33'" in p.stderr
