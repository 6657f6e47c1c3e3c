"""The IR trace page: built from pass dumps, self-contained, and it renders in headless Chromium."""
import os
import shutil
import subprocess

import pytest
import torch

from kernels_dbg import sub_scale
from pypto.runtime import RunConfig
from pypto.tools import ir_trace


def _dumps(tmp_path):
    args = (torch.zeros(64, 128), torch.zeros(64, 128), torch.zeros(64, 128))
    compiled = sub_scale.compile(*args, config=RunConfig(dump_passes=True, save_kernels_dir=str(tmp_path / "art")))
    return compiled.output_dir / "passes_dump"


def test_page_has_every_pass_and_marks_noops(tmp_path):
    dump = _dumps(tmp_path)
    stages = ir_trace.collect_stages(dump)
    assert stages[0][0] == "frontend" and len(stages) == len(list(dump.glob("*.py")))
    page = ir_trace.build_page(stages, "t")
    assert "<script" in page and "http" not in page.split("<script>")[1]  # self-contained
    import json

    data = json.loads(page.split("const STAGES = ", 1)[1].split(";\n", 1)[0])
    assert [d["name"] for d in data] == [n for n, _ in stages]
    for d in data[1:]:
        assert d["changed"] == bool(d["plus"] or d["minus"])
    assert any(d["changed"] for d in data[1:])  # the outliner at least rewrites the program


def test_cli_exit_codes(tmp_path):
    dump = _dumps(tmp_path)
    out = tmp_path / "trace.html"
    assert ir_trace.main([str(dump), "-o", str(out)]) == 0 and out.is_file()
    assert ir_trace.main([str(tmp_path / "nope"), "-o", str(out)]) == 2
    (dump / "07_after_Bogus.py").write_text("x")
    assert ir_trace.main([str(dump), "-o", str(out)]) == 2  # a gap in the numbering
    with pytest.raises(SystemExit) as e:
        ir_trace.main(["--bogus-flag"])
    assert e.value.code == 2


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(not _chromium() and not os.environ.get("CI"), reason="no chromium here (CI installs it)")
def test_page_renders_in_headless_chromium(tmp_path):
    dump = _dumps(tmp_path)
    out = ir_trace.write_page(dump, tmp_path / "trace.html")
    browser = _chromium()
    assert browser, "CI must provide chromium (see .ci/run)"
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", out.as_uri()],
        capture_output=True, text=True, timeout=120).stdout
    # the script ran: the sidebar lists the passes and a diff is shown
    assert 'class="pass' in dom and "OutlineIncoreScopes" in dom
    assert 'class="add"' in dom or 'class="del"' in dom


def test_placeholder_in_title_is_text_not_a_second_substitution():
    # issue 13 item 16: the JSON used to be substituted after the escaped title, so a dump path
    # containing "__DATA__" put the stage texts unescaped into the page's <title> and <h1>
    page = ir_trace.build_page([("frontend", "x = 1  # <img src=x onerror=alert(1)>")], "IR trace: /tmp/__DATA__/d")
    assert "<img" not in page
    assert page.count("IR trace: /tmp/__DATA__/d") == 2     # <title> and <h1>, escaped text
    assert page.count("const STAGES = [") == 1


def test_write_page_leaves_no_temporary_file(tmp_path):
    dump = _dumps(tmp_path)
    out = tmp_path / "o" / "trace.html"
    ir_trace.write_page(dump, out)
    assert [p.name for p in out.parent.iterdir()] == ["trace.html"]


def test_a_lambda_pass_stage_is_read(tmp_path):
    # a lambda is a legal pass; its dump NN_after_<lambda>.py used to make the trace tool refuse the directory
    (tmp_path / "00_frontend.py").write_text("a\n")
    (tmp_path / "01_after_<lambda>.py").write_text("b\n")
    assert [n for n, _ in ir_trace.collect_stages(tmp_path)] == ["frontend", "<lambda>"]
