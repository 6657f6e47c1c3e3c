"""Every report has a ``to_dict()`` whose result ``json.dumps`` takes as it is (issue 19): the
comparison report, the race and poison reports, validate_ir's report and the cast-check certificate
(``pypto cast-check --json``); the doctor's and fuzz's are tested with their commands."""
import json
from pathlib import Path

import torch

from pypto.debug.races import Race, RaceReport, UninitRead, UninitReport
from pypto.debug.validate_ir import StageResult, TensorDiff, ValidationReport
from pypto.testing.compare import compare


def _round_trip(d):
    return json.loads(json.dumps(d))


def test_comparison_report():
    a = torch.zeros(16, 16)
    e = a.clone()
    e[3, 4] = float("inf")
    d = _round_trip(compare(a, e, 1e-5, 1e-5, name="out", tile_shape=(8, 8)).to_dict())
    assert d["name"] == "out" and d["passed"] is False and d["mismatches"] == 1
    assert d["tile_mismatches"] == [[1, 0], [0, 0]] and d["dtype"] == "float32"
    assert d["worst"][0]["index"] == [3, 4]


def test_race_and_poison_reports():
    r = RaceReport(races=[Race("RAW", "r0t0", "r0t1", "k0", "k1", "k.py:3:5", "k.py:7:5", 64, "add deps=[tid]")],
                   tasks=2)
    d = _round_trip(r.to_dict())
    assert d["tasks"] == 2 and d["races"][0]["kind"] == "RAW" and d["races"][0]["fix"] == "add deps=[tid]"
    u = UninitReport(tasks=3)
    assert _round_trip(u.to_dict()) == {"findings": [], "tasks": 3, "out_of_bounds": []}
    assert "UninitRead" not in json.dumps(u.to_dict())
    assert UninitRead.__dataclass_fields__  # a finding is a dataclass too: converted field by field


def test_validation_report():
    diff = TensorDiff("out", 0.5, 0.1, 3, 16, False)
    rep = ValidationReport([StageResult("frontend", Path("/d/00_frontend.py"), [diff], [])], 1e-5, 1e-5)
    d = _round_trip(rep.to_dict())
    assert d["passed"] is False and d["first_divergence"] == "frontend"
    assert d["stages"][0]["file"] == "/d/00_frontend.py" and d["stages"][0]["vs_golden"][0]["mismatches"] == 3


def test_cast_check_json(capsys):
    from pypto.cli import main

    assert main(["cast-check", "int32", "fp16", "--platform", "a5sim", "--samples", "2000", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["src"] == "INT32" and d["dst"] == "FP16" and d["exact"] is True and d["chain"]
