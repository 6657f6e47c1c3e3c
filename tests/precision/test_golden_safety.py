"""Golden directories under concurrent writers, crashes and hostile paths (issue 13 items 6, 10)."""
import json
import threading
import time

import pytest
import torch

from pypto.runtime import GoldenFileError, TensorSpec, load_golden, write_golden
from pypto.runtime.golden import ScalarSpec


def _specs():
    return [TensorSpec("a", [32, 32], torch.float32, init_value=torch.randn),
            TensorSpec("b", [32, 32], torch.float32, init_value=torch.randn),
            TensorSpec("out", [32, 32], torch.float32, is_output=True)]


def test_three_concurrent_writers_record_one_consistent_golden(tmp_path):
    # Writer k starts at 0.1*k s and its golden function takes (0.5 - 0.2*k) s: unserialised, the last
    # inputs on disk were writer 2's while the last outputs and manifest were writer 0's, and the
    # manifest (hashing the files on disk) verified a golden with out != a + b.
    root = tmp_path / "golden"
    errors, calls = [], []

    def writer(k):
        def golden(tensors, params):
            calls.append(k)
            time.sleep(0.5 - 0.2 * k)
            tensors["out"][:] = tensors["a"] + tensors["b"]
        try:
            time.sleep(0.1 * k)
            write_golden(_specs(), golden, tmp_path / f"golden_{k}.py", data_dir=root)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    g = load_golden(root, _specs())
    assert torch.equal(g.outputs["out"], g.inputs["a"] + g.inputs["b"])
    assert len(calls) == 1      # recorded once; the other writers reused it
    assert not [p for p in root.parent.iterdir() if ".tmp" in p.name or ".staging" in p.name]


def test_a_crash_while_recording_leaves_a_golden_that_is_missing_not_wrong(tmp_path):
    root = tmp_path / "g"

    def golden(tensors, params):
        tensors["out"][:] = tensors["a"] + tensors["b"]
    write_golden(_specs(), golden, tmp_path / "golden.py", data_dir=root, seed=1)
    (root / "out" / "out.pt").unlink()     # a golden with a file missing is re-recorded ...

    def crashing(tensors, params):
        raise KeyboardInterrupt("killed while recording")
    with pytest.raises(KeyboardInterrupt):
        write_golden(_specs(), crashing, tmp_path / "golden.py", data_dir=root, seed=2)
    # ... the stale manifest went first, so the new inputs are never verified against it
    with pytest.raises(GoldenFileError, match="manifest .* is missing"):
        load_golden(root, _specs())
    write_golden(_specs(), golden, tmp_path / "golden.py", data_dir=root, seed=2)
    g = load_golden(root, _specs())
    assert torch.equal(g.outputs["out"], g.inputs["a"] + g.inputs["b"])


@pytest.mark.parametrize("name", ["../../x", "/tmp/x", "a/b", "", "..", "x.pt", "a-b"])
def test_spec_names_that_are_not_identifiers_are_refused(name):
    with pytest.raises(ValueError, match="must be a Python identifier"):
        TensorSpec(name, [4], torch.float32)
    with pytest.raises(ValueError, match="must be a Python identifier"):
        ScalarSpec(name, 1)


@pytest.mark.parametrize("entry", ["../victim.pt", "/etc/passwd", "in/../../victim.pt", "in/sub/a.pt", "a.pt",
                                   "in\\..\\a.pt"])
def test_manifest_entries_outside_the_directory_are_refused(tmp_path, entry):
    root = tmp_path / "g"

    def golden(tensors, params):
        tensors["out"][:] = tensors["a"] + tensors["b"]
    write_golden(_specs(), golden, tmp_path / "golden.py", data_dir=root, seed=0)
    victim = tmp_path / "victim.pt"
    torch.save(torch.zeros(2), victim)
    m = json.loads((root / "manifest.json").read_text())
    m["files"][entry] = {"sha256": None, "dtype": "float32", "shape": [2]}
    (root / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(GoldenFileError, match="entries must be in/<name>.pt or out/<name>.pt"):
        load_golden(root)


def test_manifest_entry_through_a_symlink_out_is_refused(tmp_path):
    root = tmp_path / "g"

    def golden(tensors, params):
        tensors["out"][:] = tensors["a"] + tensors["b"]
    write_golden(_specs(), golden, tmp_path / "golden.py", data_dir=root, seed=0)
    outside = tmp_path / "elsewhere"
    (root / "in").rename(outside)
    (root / "in").symlink_to(outside, target_is_directory=True)
    with pytest.raises(GoldenFileError, match="symbolic link"):
        load_golden(root)


_WRITER = r"""
import sys, time, torch
from pypto.runtime import TensorSpec, write_golden

k = int(sys.argv[2])
specs = [TensorSpec("a", [32, 32], torch.float32, init_value=torch.randn),
         TensorSpec("b", [32, 32], torch.float32, init_value=torch.randn),
         TensorSpec("out", [32, 32], torch.float32, is_output=True)]

def golden(tensors, params):
    time.sleep(0.6 - 0.25 * k)
    tensors["out"][:] = tensors["a"] + tensors["b"]

time.sleep(0.2 * k)
write_golden(specs, golden, sys.argv[1] + f"/golden_{k}.py", data_dir=sys.argv[1] + "/data")
"""


@pytest.mark.slow  # three fresh interpreters import torch
def test_three_writer_processes_share_one_golden_directory(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path), str(k)]) for k in range(3)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0]
    g = load_golden(tmp_path / "data", _specs())
    assert torch.equal(g.outputs["out"], g.inputs["a"] + g.inputs["b"])


def test_a_manifest_without_tolerances_is_refused_not_a_traceback(tmp_path):
    root = tmp_path / "g"

    def golden(tensors, params):
        tensors["out"][:] = tensors["a"] + tensors["b"]
    write_golden(_specs(), golden, tmp_path / "golden.py", data_dir=root, seed=0)
    m = json.loads((root / "manifest.json").read_text())
    del m["rtol"]
    (root / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(GoldenFileError, match="no valid rtol / atol"):
        load_golden(root)


def test_safe_files_primitives(tmp_path):
    from pypto.safe_files import atomic_write_text, contained, publish_dir, staging_dir

    p = atomic_write_text(tmp_path / "a" / "f.txt", "one")
    assert p.read_text() == "one" and [x.name for x in p.parent.iterdir()] == ["f.txt"]
    with pytest.raises(ValueError, match="relative path inside"):
        contained(tmp_path, "../x", "entry")
    with pytest.raises(ValueError, match="relative path inside"):
        contained(tmp_path, "/etc/passwd", "entry")
    assert contained(tmp_path, "a/f.txt", "entry") == tmp_path / "a" / "f.txt"
    dest = tmp_path / "d"
    for k in range(2):
        st = staging_dir(dest)
        (st / "v").write_text(str(k))
        publish_dir(st, dest)
        assert (dest / "v").read_text() == str(k)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a", "d"]     # nothing left beside
    (tmp_path / "file").write_text("mine")
    with pytest.raises(NotADirectoryError):
        publish_dir(staging_dir(tmp_path / "file"), tmp_path / "file")
    assert (tmp_path / "file").read_text() == "mine"
