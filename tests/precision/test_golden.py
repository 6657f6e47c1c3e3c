"""Golden files: recorded once, reused, verified; corrupted files are refused by name."""
import pickle

import pytest
import torch

from kernels_prec import fused, half_add
from pypto.runtime import GoldenFileError, RunConfig, TensorSpec, load_golden, run, write_golden

CALLS = []


def golden_fused(tensors, params):
    CALLS.append(1)
    tensors["out"][:] = (tensors["a"] + tensors["b"]) * 2.0


def golden_fp32_reference(tensors, params):
    tensors["out"][:] = (tensors["a"].float() + tensors["b"].float()).to(torch.float16)


def _specs():
    return [TensorSpec("a", [64, 128], torch.float32, init_value=torch.randn),
            TensorSpec("b", [64, 128], torch.float32, init_value=torch.randn),
            TensorSpec("out", [64, 128], torch.float32, is_output=True)]


def test_first_run_records_later_runs_reuse(tmp_path):
    CALLS.clear()
    cfg = RunConfig(golden_data_dir=str(tmp_path / "golden"))
    r1 = run(fused, _specs(), golden_fused, config=cfg)
    assert r1.passed, r1.error
    assert (tmp_path / "golden" / "in" / "a.pt").is_file() and (tmp_path / "golden" / "out" / "out.pt").is_file()
    assert len(CALLS) == 1
    r2 = run(fused, _specs(), golden_fused, config=cfg)
    assert r2.passed and len(CALLS) == 1  # reused: the golden function was not called again
    g = load_golden(tmp_path / "golden")
    assert g.manifest["dtype_path"] == {"a": "float32", "b": "float32", "out": "float32"}
    assert str(r2).startswith("PASS")


def test_wrong_kernel_fails_with_a_report(tmp_path):
    def golden_wrong(tensors, params):
        tensors["out"][:] = (tensors["a"] + tensors["b"]) * 2.0
        tensors["out"][:, 100:] += 1.0
    r = run(fused, _specs(), golden_wrong, config=RunConfig(golden_data_dir=str(tmp_path / "g")))
    assert not r.passed
    assert "mismatched elements: 1792/8192" in r.error and "mismatches per" in r.error
    assert str(r).startswith("FAIL")


def test_fp16_at_default_tolerance_names_the_dtype(tmp_path):
    specs = [TensorSpec("a", [64, 128], torch.float16, init_value=torch.randn),
             TensorSpec("b", [64, 128], torch.float16, init_value=torch.randn),
             TensorSpec("out", [64, 128], torch.float16, is_output=True)]

    def golden_wide(tensors, params):  # an FP32 reference of an FP16 kernel
        tensors["out"][:] = (tensors["a"].double() * 1.0004 + tensors["b"].double()).to(torch.float16)
    r = run(half_add, specs, golden_wide, config=RunConfig(golden_data_dir=str(tmp_path / "g")))
    assert not r.passed
    assert "float16" in r.error and "Suggested tolerance for float16: rtol=atol=0.01" in r.error
    r = run(half_add, specs, golden_wide, config=RunConfig(golden_data_dir=str(tmp_path / "g"), rtol=1e-2, atol=1e-2))
    assert r.passed, r.error


def _write(tmp_path):
    root = tmp_path / "golden"
    write_golden(_specs(), golden_fused, tmp_path / "golden.py", data_dir=root, seed=0, rationale="fp32 elementwise")
    return root


def test_truncated_file_is_refused_by_name(tmp_path):
    root = _write(tmp_path)
    p = root / "out" / "out.pt"
    p.write_bytes(p.read_bytes()[:100])
    with pytest.raises(GoldenFileError, match=r"out/out\.pt"):
        load_golden(root)


def test_bit_flip_is_refused_by_name(tmp_path):
    root = _write(tmp_path)
    p = root / "in" / "a.pt"
    data = bytearray(p.read_bytes())
    data[-200] ^= 0x01
    p.write_bytes(bytes(data))
    with pytest.raises(GoldenFileError, match=r"in/a\.pt.*SHA-256"):
        load_golden(root)


class _Payload:
    def __reduce__(self):
        return (exec, ("import pathlib; pathlib.Path('PWNED').write_text('x')",))


def test_pickle_payload_never_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = _write(tmp_path)
    p = root / "out" / "out.pt"
    with open(p, "wb") as fh:
        pickle.dump(_Payload(), fh)
    with pytest.raises(GoldenFileError, match=r"out/out\.pt"):
        load_golden(root)
    import json
    m = json.loads((root / "manifest.json").read_text())  # even with a matching hash it is refused
    import hashlib
    m["files"]["out/out.pt"]["sha256"] = hashlib.sha256(p.read_bytes()).hexdigest()
    (root / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(GoldenFileError, match=r"refused, no code was run"):
        load_golden(root)
    assert not (tmp_path / "PWNED").exists()


def test_corrupted_golden_is_not_overwritten(tmp_path):
    root = _write(tmp_path)
    p = root / "out" / "out.pt"
    p.write_bytes(b"garbage")
    r = run(fused, _specs(), golden_fused, config=RunConfig(golden_data_dir=str(root)))
    assert not r.passed and "out.pt" in r.error
    assert p.read_bytes() == b"garbage"


def test_golden_py_is_written(tmp_path):
    _write(tmp_path)
    text = (tmp_path / "golden.py").read_text()
    assert "def golden_fused" in text and "RTOL = 1e-05" in text and "weights_only=True" in text
