"""Every python block of docs/tutorials runs as written (in-process: written to a file, since kernels
need their source on disk, and run with runpy; each block asserts its own results)."""
import re
import runpy
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks():
    return [pytest.param(m.group(1), id=f"{page.stem}-{i}")
            for page in sorted((DOCS / "tutorials").glob("*.md"))
            for i, m in enumerate(_BLOCK.finditer(page.read_text(encoding="utf-8")))]


@pytest.mark.parametrize("code", _blocks())
def test_tutorial_block_runs(code, tmp_path, monkeypatch, capsys):
    script = tmp_path / "tutorial.py"
    script.write_text(code, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(script), run_name="__main__")
    assert "a5sim" in capsys.readouterr().out      # each tutorial reports both platforms


def test_every_tutorial_has_a_block_and_is_listed():
    pages = sorted(p.name for p in (DOCS / "tutorials").glob("[0-9]*.md"))
    assert len(pages) >= 3 and len(_blocks()) >= len(pages)
    index = (DOCS / "tutorials" / "index.md").read_text(encoding="utf-8")
    assert all(f"({p})" in index for p in pages)
    assert "tutorials/index.md" in (DOCS / "index.md").read_text(encoding="utf-8")
