"""The differential fuzzer (issue 13): a short campaign in CI — simulator vs torch_codegen vs
float64 over mutants of the examples and generated kernels, 0 unexplained disagreements, 0 internal
errors. The long campaign is ``python -m pypto.tools.difffuzz --mutants 10000``."""
from __future__ import annotations

import random

import torch

from pypto.tools import difffuzz
from pypto.tools.difffuzz import __main__ as cli
from pypto.tools.difffuzz.execute import Outcome, classify_error, same_bits
from pypto.tools.difffuzz.generate import generate, oracle_mismatch
from pypto.tools.difffuzz.mutate import example_files, mutate


def test_short_campaign_has_no_failures():
    report = difffuzz.campaign(mutants=120, generated=40, seed=7)
    assert report.ok, report.format()
    m, g = report.counts["mutant"], report.counts["generated"]
    # the campaign really runs kernels (not only rejections) from both sources
    assert m["agree"] >= 20 and m["rejected"] >= 10, report.format()
    assert g["agree"] >= 20, report.format()


def test_generated_cases_are_reproducible_and_have_a_float64_oracle():
    a, b = generate(11), generate(11)
    assert a.source == b.source and all(torch.equal(x, y) for x, y in zip(a.args, b.args))
    fl = next(generate(s) for s in range(100) if generate(s).expected is not None)
    got = fl.expected.to(fl.args[-1].dtype)
    assert oracle_mismatch(fl, got) == ""
    assert "off the float64 oracle" in oracle_mismatch(fl, got + 1000.0)   # the oracle can fail


def test_mutants_edit_the_examples():
    files = example_files(difffuzz.default_examples())
    assert len(files) >= 20
    m = mutate(files[0], 3)
    assert m is not None and m.edits and m.source != files[0].read_text()


def test_classification():
    from pypto.errors import InternalError, InvalidOperationError, Span

    span = Span("k.py", 3, 4, 3, 9)
    assert classify_error(InvalidOperationError("bad", span)).kind == "rejected"
    assert classify_error(InvalidOperationError("bad")).kind == "internal"        # unlocated
    assert classify_error(InternalError("bug", span)).kind == "internal"
    assert classify_error(KeyError("x")).kind == "internal"
    nan = torch.tensor([float("nan")])
    assert same_bits(nan, -nan) and not same_bits(torch.tensor([0.0]), torch.tensor([-0.0]))


def test_a_failing_case_fails_the_campaign(monkeypatch):
    monkeypatch.setattr(difffuzz, "run_case", lambda *a, **k: Outcome("disagree", "injected"))
    report = difffuzz.campaign(mutants=0, generated=1, seed=0)
    assert not report.ok and "injected" in report.format()


def test_the_time_limit_counts_cpu_time_not_waiting(monkeypatch):
    """A case that only waits (for a core, on a loaded machine) is not a timeout; one that burns
    CPU past the limit is; one that hangs is cut by the wall-clock backstop. Before this, the limit
    was wall-clock time and a loaded machine turned slow-but-correct cases into failures."""
    import time

    import pytest

    from pypto.tools.difffuzz import execute

    monkeypatch.setattr(execute, "WALL_FACTOR", 10_000)   # (this machine may be loaded too)
    with execute.time_limit(0.2):
        time.sleep(0.5)             # waiting, no CPU: within the limit
    with pytest.raises(execute._Timeout, match="CPU time"):
        with execute.time_limit(0.2):
            while True:
                sum(range(1000))
    monkeypatch.setattr(execute, "WALL_FACTOR", 2)
    with pytest.raises(execute._Timeout, match="wall-clock"):
        with execute.time_limit(0.2):
            time.sleep(5)


def test_cli_rejects_bad_arguments(capsys):
    import pytest

    with pytest.raises(SystemExit) as e:
        cli.main(["--mutants", "-1"])
    assert e.value.code == 2
    random.seed(0)
