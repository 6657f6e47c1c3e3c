"""DFX outputs never cost a run its results, and tensor dumps are never torn (issue 13 items 8, 9)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from inproc import run_module
from kernels_io import add_one_inout
from pypto.runtime import RunConfig
from pypto.runtime.dumps import DumpCollector
from pypto.runtime.simulator import DfxWriteWarning
from pypto.tools import dump_viewer

REPO = Path(__file__).resolve().parents[2]


def _viewer(*args):
    """``python -m pypto.tools.dump_viewer ARGS``, in this process (see tests/inproc.py)."""
    return run_module("pypto.tools.dump_viewer", *args, cwd=REPO)


def _viewer_process(*args):
    """The same in a fresh interpreter: the one smoke test of the viewer's real command line."""
    return subprocess.run([sys.executable, "-m", "pypto.tools.dump_viewer", *map(str, args)], capture_output=True,
                          text=True, cwd=REPO, timeout=300)


@pytest.mark.parametrize("blocked", ["deps.json", "swimlane.json", "args_dump"])
def test_a_dfx_write_failure_is_a_warning_and_inout_results_are_copied_back(tmp_path, blocked):
    # a directory where deps.json / swimlane.json goes, a file where args_dump/ goes: used to raise a
    # raw OSError after the run, before the InOut results were copied back
    work = tmp_path / "w"
    dfx = work / "dfx_outputs"
    dfx.mkdir(parents=True)
    if blocked == "args_dump":
        (dfx / "args_dump").write_text("in the way")
    else:
        (dfx / blocked / "x").mkdir(parents=True)
    x = torch.randn(64, 64)
    want = x + 1.0
    cfg = RunConfig(enable_dep_gen=True, enable_chip_swimlane=1, enable_dump_args=2, sim_seed=0,
                    save_kernels_dir=str(work))
    with pytest.warns(DfxWriteWarning, match="could not be written.*results are not affected"):
        add_one_inout(x, config=cfg)
    assert torch.equal(x, want)
    # the outputs that could be written were
    for name in ("deps.json", "swimlane.json"):
        if name != blocked:
            json.loads((dfx / name).read_text())
    if blocked != "args_dump":
        assert dump_viewer.main([str(dfx / "args_dump")]) == 0


def _dump(tmp_path, value):
    x = torch.full((64, 64), float(value))
    add_one_inout(x, config=RunConfig(enable_dump_args=2, sim_seed=0, save_kernels_dir=str(tmp_path / "w")))
    return tmp_path / "w" / "dfx_outputs" / "args_dump"


def test_a_dump_interrupted_while_writing_leaves_the_previous_dump_intact(tmp_path, monkeypatch):
    # kill -9 between two payload writes used to leave a partial new args.bin under the old index
    d = _dump(tmp_path, 1.0)
    before = {p.name: p.read_bytes() for p in d.iterdir()}

    class Killed(BaseException):
        pass

    class DyingPayloads(list):
        def __iter__(self):
            yield list.__getitem__(self, 0)
            raise Killed()

    orig_write = DumpCollector.write

    def dying_write(self, dfx_dir):
        self.payloads = DyingPayloads(self.payloads)
        return orig_write(self, dfx_dir)

    monkeypatch.setattr(DumpCollector, "write", dying_write)
    with pytest.raises(Killed):
        _dump(tmp_path, 5.0)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before
    assert _viewer(d).returncode == 0
    assert not [p for p in d.parent.iterdir() if p.name.startswith(".")]   # no staging directory left behind


def test_the_viewer_refuses_a_torn_dump(tmp_path):
    d = _dump(tmp_path, 1.0)
    other = _dump(tmp_path / "b", 7.0)
    good = (d / "args.bin").read_bytes()
    (d / "args.bin").write_bytes(good[:len(good) // 2])          # a partial new payload ...
    r = _viewer_process(d)
    assert r.returncode == 2 and "torn dump" in r.stderr and "bytes on disk" in r.stderr
    assert "Traceback" not in r.stderr
    (d / "args.bin").write_bytes((other / "args.bin").read_bytes())   # ... or another run's, same size
    r = _viewer(d, "--export")
    assert r.returncode == 2 and "torn dump" in r.stderr and "SHA-256" in r.stderr
    (d / "args.bin").write_bytes(good)
    assert _viewer(d).returncode == 0


@pytest.mark.parametrize("field,value", [("task_id", "../../../escape"), ("arg_index", "0/../../escape"),
                                         ("dtype", "complex512"), ("shape", [-1, 4]), ("bin_offset", "x")])
def test_the_viewer_refuses_malformed_records_without_a_traceback(tmp_path, field, value):
    # task_id / arg_index become export file names (a hostile index wrote outside the dump); a bad
    # dtype or shape used to end in a KeyError / TypeError traceback
    d = _dump(tmp_path, 1.0)
    doc = json.loads((d / "args_dump.json").read_text())
    rec = next(r for r in doc["args"] if r["kind"] == "tensor")
    rec[field] = value
    (d / "args_dump.json").write_text(json.dumps(doc))
    assert dump_viewer.main([str(d), "--export"]) == 2
    assert not list(tmp_path.rglob("*escape*"))


def test_a_killed_writers_staging_directory_is_cleaned_up_later(tmp_path):
    import os

    d = _dump(tmp_path, 1.0)
    stale = d.parent / ".args_dump.abc123.staging"
    (stale / "x").mkdir(parents=True)
    young = d.parent / ".args_dump.def456.staging"
    young.mkdir()
    os.utime(stale, (0, 0))
    _dump(tmp_path, 2.0)
    assert not stale.exists() and young.exists()   # a young one may be another writer's, at work
