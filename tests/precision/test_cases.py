"""The five worked cases of docs/precision: each script's main() asserts its own conclusion."""
import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "precision"
CASES = ["case1_faulty_pass", "case2_a5_cast_chain", "case3_padding_row_max", "case4_split_k", "case5_war"]


@pytest.mark.parametrize("name", CASES)
def test_case_main(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    conclusion = mod.main()
    assert isinstance(conclusion, str) and conclusion.startswith("step")
