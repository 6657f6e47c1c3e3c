"""pypto doctor settles each worked case at the step the seed page gives, with the right fix, from
nothing but the kernel, its inputs and the golden; pypto fuzz classifies split-K and the WAR race."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "examples" / "precision" / "doctor_cases.py"
sys.path.insert(0, str(CASES.parent))

import doctor_cases  # noqa: E402

from inproc import run_main  # noqa: E402
from pypto.cli import main  # noqa: E402
from pypto.debug.doctor import doctor  # noqa: E402
from pypto.debug.fuzz import fuzz  # noqa: E402

EXPECTED = {  # case -> (settled step, words the fix must contain)
    "case1": (4, ["SwapSubOperands"]),
    "case2": (2, ["mode='rint'"]),
    "case3": (2, ["pl.fillpad", "PadValue.min"]),
    "case4": (2, ["K-block"]),
    "case5": (5, ["deps=[reader_tid]"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_doctor_settles_each_case(name, tmp_path, monkeypatch):
    import tempfile

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    case = getattr(doctor_cases, name)()
    kernel, inputs = case.pop("kernel"), case.pop("inputs")
    report = doctor(kernel, inputs, html=tmp_path / "r.html", **case)
    step, words = EXPECTED[name]
    assert report.settled_step == step, report.format()
    for w in words:
        assert w in report.fix, report.format()
    # the step-3 pass dumps stay only when the verdict cites them (a faulty pass), else are removed
    # (the fix copies' directory, pypto-doctor-fix-*, is one per process, removed at exit)
    kept = [d for d in tmp.glob("pypto-doctor-*") if not d.name.startswith("pypto-doctor-fix-")]
    if report.cause == "faulty_pass":
        assert len(kept) == 1 and str(kept[0]) in report.fix
    else:
        assert kept == []
    page = (tmp_path / "r.html").read_text()
    assert "<img" in page and f"SETTLED at step {step}" in page
    # the heatmap's grid is the kernel's own store tiles (e.g. case3 stores [32, 1] row maxima)
    grid = {"case1": "64x128", "case3": "32x1", "case4": "32x48", "case5": "64x64"}.get(name)
    if grid:
        assert f"({grid} tiles: the kernel's stores)" in page.replace("&#x27;", "'")


def _chromium():
    import shutil

    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def test_case5_report_has_the_race_timeline(tmp_path):
    """Settled on a race: the page holds the task timeline of a failing seed with the racing pair
    highlighted, next to the heatmap, ULP histogram and per-pass chart; it renders in headless Chromium
    with every image decoded."""
    import os

    case = doctor_cases.case5()
    kernel, inputs = case.pop("kernel"), case.pop("inputs")
    report = doctor(kernel, inputs, html=tmp_path / "r.html", **case)
    assert report.settled_step == 5, report.format()
    titles = [t for t, _ in report.figures]
    (timeline,) = [t for t in titles if t.startswith("task timeline (seed")]
    fig = dict(report.figures)[timeline]
    assert isinstance(fig, bytes) and fig.startswith(b"\x89PNG")
    assert "racing pair r" in timeline
    page = (tmp_path / "r.html").read_text()
    for heading in ("mismatches per tile: out (64x64 tiles: the kernel's stores)", "ULP distance: out",
                    "error per pass", timeline):
        assert f"<h2>{heading}</h2>" in page.replace("&#x27;", "'"), heading
    assert page.count("<img") >= 4
    assert "poison check" in report.format()      # step 5 also ran the uninitialized-read check
    browser = _chromium()
    if not browser:
        if os.environ.get("CI"):
            pytest.fail("CI must provide chromium (see .ci/run)")
        pytest.skip("no chromium here (CI installs it)")
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom",
         (tmp_path / "r.html").as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert f'data-images="{page.count("<img")}"' in dom and 'data-images-ok="yes"' in dom, dom[:500]


def test_doctor_cli(tmp_path):
    p = run_main(main, "doctor", CASES, "--case", "case3", "--html", tmp_path / "d.html")
    assert p.returncode == 1, p.stderr[-2000:]      # a finding
    assert "SETTLED at step 2" in p.stdout and "pl.fillpad" in p.stdout
    assert "fix check: verified" in p.stdout
    # the steps as they go, on stderr
    assert "step 1/5: golden and tolerance" in p.stderr and "step 2/5: expected differences" in p.stderr


def test_fuzz_split_k_is_last_bits_only():
    case = doctor_cases.case4()
    inputs = case["inputs"]
    r = fuzz(case["kernel"], [inputs["a"], inputs["b"], inputs["c"]], seeds=8, jobs=1)
    assert r.classification == "last_bits", r.format()


def test_fuzz_war_is_larger_and_names_the_pair():
    case = doctor_cases.war_fuzz()
    i = case["inputs"]
    r = fuzz(case["kernel"], [i["a"], i["b"], i["buf"], i["out"]], seeds=16, jobs=1)
    assert r.classification == "larger", r.format()
    assert r.races and r.races[0].kind == "WAR"
    assert {r.races[0].first_kernel, r.races[0].second_kernel} == {"reader", "writer"}
    assert "deps=[reader_tid]" in r.races[0].fix


@pytest.mark.slow
def test_fuzz_cli_runs_in_parallel_processes():
    # in this process; --jobs 2 still fans the seeds out to two spawned worker processes
    p = run_main(main, "fuzz", CASES, "--case", "war_fuzz", "--seeds", "8", "--jobs", "2")
    assert p.returncode == 1, p.stderr[-2000:]        # "larger" exits 1
    assert "LARGER than last bits" in p.stdout and "reader" in p.stdout and "writer" in p.stdout
