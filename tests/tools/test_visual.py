"""Visual reports: the PNGs are real images, and the HTML page renders in headless Chromium with
every image decoded."""
import os
import shutil
import subprocess

import pytest
import torch

from pypto.debug import visual

PNG = b"\x89PNG\r\n\x1a\n"


def _data():
    g = torch.Generator().manual_seed(0)
    e = torch.randn(64, 64, generator=g)
    a = e.clone()
    a[40:, 48:] += 1.0
    return a, e


def test_plots_are_pngs():
    a, e = _data()
    assert visual.error_heatmap(a, e, tile_shape=(16, 16)).startswith(PNG)
    h = e.half()
    assert visual.ulp_histogram((h.float() * 1.001).half(), h).startswith(PNG)
    doc = {"traceEvents": [{"name": "k", "ph": "X", "pid": 0, "tid": 0, "ts": 0.0, "dur": 1.0, "args": {"task": "r0t0"}},
                           {"name": "k", "ph": "X", "pid": 0, "tid": 1, "ts": 0.5, "dur": 1.0, "args": {"task": "r0t1"}}]}
    assert visual.task_timeline(doc, highlight={"r0t1"}).startswith(PNG)


def test_pass_chart_from_validate_ir():
    from pypto.debug.validate_ir import StageResult, TensorDiff, ValidationReport
    from pathlib import Path

    stages = [StageResult("frontend", Path("00_frontend.py"), [TensorDiff("out", 0.0, 0.0, 0, 4, True)], []),
              StageResult("Bad", Path("01_after_Bad.py"), [TensorDiff("out", 1.0, 1.0, 4, 4, False)],
                          [TensorDiff("out", 1.0, 1.0, 4, 4, False)])]
    assert visual.pass_error_chart(ValidationReport(stages, 1e-5, 1e-5)).startswith(PNG)


def test_exact_stages_sit_a_decade_below_the_smallest_error_not_at_1e_300():
    assert visual.exact_floor([0.0, 1e-3, 2.0, float("nan"), 1e-5]) == pytest.approx(1e-6)
    assert visual.exact_floor([0.0, 0.0]) == 1e-12


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(not _chromium() and not os.environ.get("CI"), reason="no chromium here (CI installs it)")
def test_page_renders_in_headless_chromium(tmp_path):
    a, e = _data()
    page = visual.html_page("report", [("heatmap", visual.error_heatmap(a, e)), ("text", "hello <world>"),
                                       ("ulps", [visual.ulp_histogram(a, e)])])
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    browser = _chromium()
    assert browser, "CI must provide chromium (see .ci/run)"
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120).stdout
    assert 'data-images="2"' in dom and 'data-images-ok="yes"' in dom, dom[:500]
    assert "hello &lt;world&gt;" in dom
