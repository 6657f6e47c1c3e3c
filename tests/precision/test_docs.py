"""Every python code block in docs/precision/*.md runs as written (from a scratch directory: kernels need
their source on disk, so each block is written to a file and run there as ``python block.py`` would, in
this process through ``inproc.run_script``; the fresh-interpreter path of the example scripts is covered
by tests/test_examples.py)."""
import re
from pathlib import Path

import pytest

from inproc import run_script

DOCS = Path(__file__).resolve().parents[2] / "docs" / "precision"
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks():
    out = []
    for page in sorted(DOCS.glob("*.md")):
        for i, m in enumerate(_BLOCK.finditer(page.read_text(encoding="utf-8"))):
            out.append(pytest.param(m.group(1), id=f"{page.stem}-{i}"))
    return out


@pytest.mark.parametrize("code", _blocks())
def test_block_runs(code, tmp_path):
    script = tmp_path / "block.py"
    script.write_text(code, encoding="utf-8")
    proc = run_script(script, cwd=tmp_path, build_dir=tmp_path / "build")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]


def test_there_are_blocks():
    assert len(_blocks()) >= 5
