"""The five worked cases of docs/precision: each script's main() asserts its own conclusion, which the
script prints as its last line (``step N ...``). Each script runs once per session, shared with
tests/test_examples.py (see ``inproc.run_example``)."""
from pathlib import Path

import pytest

from inproc import run_example

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "precision"
CASES = ["case1_faulty_pass", "case2_a5_cast_chain", "case3_padding_row_max", "case4_split_k", "case5_war",
         "case6_decode_attention"]


@pytest.mark.parametrize("name", CASES)
def test_case_main(name):
    r = run_example(EXAMPLES / f"{name}.py")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    conclusion = r.stdout.rstrip("\n").splitlines()[-1]
    assert conclusion.startswith("step"), r.stdout[-2000:]
