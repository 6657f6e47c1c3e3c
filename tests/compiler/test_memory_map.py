"""The memory-map page: built from the AllocateMemoryAddr pass dump, self-contained, clear errors for
the wrong input, and it renders in headless Chromium."""
import os
import re
import shutil
import subprocess
import time

import kernels_memory as K
import pytest
import torch

from pypto.runtime import RunConfig
from pypto.tools import memory_map


def _dump_dir(tmp_path):
    args = (torch.zeros(64, 128), torch.zeros(64, 128), torch.zeros(64, 128))
    compiled = K.overlapping.compile(*args, config=RunConfig(dump_passes=True, save_kernels_dir=str(tmp_path / "art")))
    return compiled.output_dir / "passes_dump"


def _stage(dump, name):
    (path,) = [p for p in dump.glob("*.py") if re.fullmatch(rf"\d\d_after_{name}\.py", p.name)]
    return path


def test_page_shows_every_tile_at_its_address(tmp_path):
    dump = _dump_dir(tmp_path)
    kernels = memory_map.collect(memory_map.load_program(_stage(dump, "AllocateMemoryAddr")))
    (k,) = kernels
    assert k["name"] == "overlapping_incore_0" and set(k["spaces"]) == {"Vec"}
    tiles = {t["name"]: t for t in k["spaces"]["Vec"]}
    assert tiles["t"]["buffer"] == tiles["s"]["buffer"] != tiles["u"]["buffer"]   # s is add(t, u), in place
    assert (tiles["t"]["lo"], tiles["t"]["hi"]) == (0, 32768) and tiles["u"]["lo"] == 32768
    assert tiles["t"]["end"] == tiles["s"]["start"] and tiles["u"]["start"] < tiles["t"]["end"]
    page = memory_map.build_page(kernels, "t")
    assert "http" not in page.split("<body>")[1].replace('xmlns="http://www.w3.org/2000/svg"', "")  # self-contained
    assert page.count('<g class="tile"') == len(tiles)
    assert 'data-buffer="mem_vec_0"' in page and 'data-buffer="mem_vec_1"' in page
    for name in ("t", "u", "s"):
        assert f"{name} [64, 128] FP32 in " in page


def test_cli_exit_codes_and_messages(tmp_path, capsys):
    dump = _dump_dir(tmp_path)
    out = tmp_path / "map.html"
    assert memory_map.main([str(_stage(dump, "AllocateMemoryAddr")), "-o", str(out), "--platform", "a2a3sim"]) == 0
    assert out.is_file() and "of 188416" in out.read_text()
    assert memory_map.main([str(dump), "-o", str(tmp_path / "dir.html")]) == 0      # a passes_dump/ directory
    capsys.readouterr()
    # a dump taken before AllocateMemoryAddr is drawn with planned addresses (tested below)
    assert memory_map.main([str(_stage(dump, "MemoryReuse")), "-o", str(out)]) == 0
    assert "Planned addresses" in out.read_text()
    assert memory_map.main([str(_stage(dump, "InferTileMemorySpace")), "-o", str(out)]) == 2
    assert "no MemRefs in this dump" in capsys.readouterr().err
    assert memory_map.main([str(tmp_path / "nope.py"), "-o", str(out)]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.py"
    bad.write_text("this is not IR(")
    assert memory_map.main([str(bad), "-o", str(out)]) == 2
    assert "not a parseable pass dump" in capsys.readouterr().err
    assert memory_map.main([str(_stage(dump, "AllocateMemoryAddr")), "--platform", "nosuch"]) == 2
    with pytest.raises(SystemExit) as e:
        memory_map.main(["--bogus-flag"])
    assert e.value.code == 2
    assert not list(tmp_path.glob("*.tmp"))       # written atomically, nothing left behind


def test_planned_addresses_are_the_allocators(tmp_path):
    """The MemoryReuse stage drawn with planned addresses: the very addresses AllocateMemoryAddr gave."""
    dump = _dump_dir(tmp_path)
    actual = memory_map.collect(memory_map.load_program(_stage(dump, "AllocateMemoryAddr")))
    planned = memory_map.collect(memory_map.load_program(_stage(dump, "MemoryReuse")), plan=True)
    assert planned[0]["planned"] and not actual[0]["planned"]
    assert planned[0]["spaces"] == actual[0]["spaces"]
    with pytest.raises(memory_map.MapError, match="no addresses in this dump"):
        memory_map.collect(memory_map.load_program(_stage(dump, "MemoryReuse")))


def test_a_failed_compile_keeps_its_dumps_and_the_map_shows_the_overflow(tmp_path, monkeypatch):
    """A CapacityError: the stages dumped before it are kept (failed-<build>/passes_dump, named in a
    note of the error), and memory_map draws them: the plan past the capacity line, the tiles live."""
    from pypto.errors import CapacityError

    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "cache"))
    a = torch.zeros(128, 256)
    with pytest.raises(CapacityError) as e:
        K.too_big.compile(a, a, a, config=RunConfig(dump_passes=True))
    d = e.value.dump_dir
    assert d.parent.name.startswith("failed-too_big_") and d.is_dir()
    assert any(str(d) in note for note in e.value.__notes__)
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(".tmp-")]   # staging removed
    out = tmp_path / "failed.html"
    assert memory_map.main([str(d), "-o", str(out), "--platform", "a2a3sim"]) == 0
    page = out.read_text()
    assert "Planned addresses" in page and "262144 bytes used of 188416 (139%), 73728 bytes over the capacity" in page
    assert "big_a [128, 256] FP32 in " in page and "big_b [128, 256] FP32 in " in page
    # kept a day, then pruned like a stale staging directory
    from pypto.ir import artifacts

    assert d.parent in artifacts.prune(tmp_path / "cache", now=time.time() + 2 * 86400)


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(not _chromium() and not os.environ.get("CI"), reason="no chromium here (CI installs it)")
def test_page_renders_in_headless_chromium(tmp_path):
    dump = _dump_dir(tmp_path)
    out = memory_map.write_page(_stage(dump, "AllocateMemoryAddr"), tmp_path / "map.html")
    browser = _chromium()
    assert browser, "CI must provide chromium (see .ci/run)"
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", out.as_uri()],
        capture_output=True, text=True, timeout=120, check=False).stdout
    # the script ran over the chart: it counted the tile blocks
    assert 'data-ready="4"' in dom, dom[:2000]          # t, u, s and the product
    assert "<svg" in dom and "overlapping_incore_0" in dom


def test_placeholders_in_the_title_are_text(tmp_path):
    # the template was filled by chained str.replace: a dump path containing "__BODY__" pulled the
    # whole page body into <title> and <h1>
    dump = _dump_dir(tmp_path)
    kernels = memory_map.collect(memory_map.load_program(_stage(dump, "AllocateMemoryAddr")))
    page = memory_map.build_page(kernels, "Memory map: /x/__BODY__/__PLATFORM__ <b>")
    assert page.count("Memory map: /x/__BODY__/__PLATFORM__ &lt;b&gt;") == 2
    assert page.count('<g class="tile"') == memory_map.build_page(kernels, "t").count('<g class="tile"')
