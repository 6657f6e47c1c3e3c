"""Golden files (seed step 1): record a reference once, compare later runs against the artefact.

Layout under ``data_dir`` (the reference's golden layout; docs/compile-cache.md says where it lives): ``in/<name>.pt`` for inputs (and the initial value of
in-out tensors), ``out/<name>.pt`` for the golden outputs, plus our ``manifest.json`` recording for
every file its SHA-256, dtype and shape, and for the whole set the tolerance, the dtype path, the
seed and a free-text rationale. ``golden.py`` beside it re-emits the golden function for people.

Safety and integrity, which the reference lacks:

* files are written atomically (temp file + rename), so an interrupted run never leaves half a golden;
* recording is serialised by a lock beside the directory (``.<dir>.lock``): writers racing on one
  golden directory (pytest-xdist workers, two platforms sharing it) record it once and the others
  reuse it; the old manifest is removed before any file is rewritten and the new one written last,
  hashing the bytes this writer wrote (never whatever another writer left on disk), so a crash or a
  race leaves a golden that is reported missing, never one that verifies and is wrong;
* paths stay inside the directory: tensor names are Python identifiers, and a manifest entry other
  than ``in/<name>.pt`` / ``out/<name>.pt`` (``..``, an absolute path, a symbolic link out) is refused;
* loading never executes code: tensors are read with ``torch.load(..., weights_only=True)`` and the
  manifest is JSON; a pickle carrying a payload is refused;
* every file is checked against its recorded SHA-256 before use, so a truncated or bit-flipped file
  is reported by name (:class:`GoldenFileError`) instead of silently compared against.
"""
from __future__ import annotations

import hashlib
import inspect
import io
import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import torch

from pypto.errors import PyptoError
from pypto.safe_files import atomic_write_bytes, contained, dir_lock

MANIFEST = "manifest.json"
# the only file names a manifest may list: one directory level, an identifier, ".pt"
_ENTRY = re.compile(r"(in|out)/([A-Za-z_][A-Za-z0-9_]*)\.pt")


class GoldenFileError(PyptoError):
    """A golden file is missing, corrupted, truncated, tampered with, or not a plain tensor file (a
    :class:`pypto.errors.PyptoError`, as every error a user can reach)."""


@dataclass
class TensorSpec:
    """A tensor argument of the harness: ``init_value`` may be None (zeros), a number (full), a tensor,
    ``torch.randn``/``rand``/``zeros``/``ones`` (called with the shape), or a no-argument callable.
    ``is_output`` marks tensors compared against the golden."""

    name: str
    shape: Sequence[int]
    dtype: torch.dtype
    init_value: Any = None
    is_output: bool = False

    def __post_init__(self):
        _check_spec_name(self.name, "TensorSpec")

    def materialize(self) -> torch.Tensor:
        """The initial tensor."""
        shape = list(self.shape)
        v = self.init_value
        if v is None:
            return torch.zeros(shape, dtype=self.dtype)
        if isinstance(v, torch.Tensor):
            return v.to(self.dtype).reshape(shape).clone()
        if isinstance(v, (int, float, bool)):
            return torch.full(shape, v, dtype=self.dtype)
        if v in (torch.randn, torch.rand, torch.zeros, torch.ones):
            return v(shape).to(self.dtype) if v in (torch.randn, torch.rand) else v(shape, dtype=self.dtype)
        if callable(v):
            return torch.as_tensor(v()).to(self.dtype).reshape(shape)
        raise TypeError(f"TensorSpec '{self.name}': unsupported init_value {type(v).__name__}")

    def create_tensor(self) -> torch.Tensor:
        """The reference's name of :meth:`materialize` (its examples build their inputs with it)."""
        return self.materialize()

    @property
    def is_pure_output(self) -> bool:
        """An output with no initial value: nothing to read before the kernel writes it."""
        return self.is_output and self.init_value is None


@dataclass
class ScalarSpec:
    """A scalar argument (after all tensors)."""

    name: str
    value: Any
    ctype: str = "int64"

    def __post_init__(self):
        _check_spec_name(self.name, "ScalarSpec")


def _check_spec_name(name, what: str) -> None:
    # the name is a kernel parameter, a key of golden.py's code and (tensors) the file name
    # in/<name>.pt / out/<name>.pt inside the golden directory: "../../x" would escape it
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"{what} name {name!r} must be a Python identifier (the kernel parameter it feeds; it also "
                         "names the golden files in/<name>.pt and out/<name>.pt)")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _save_tensor(t: torch.Tensor, path: Path) -> str:
    """Write ``t`` atomically; returns the SHA-256 of the bytes written (hashed here, not re-read
    from disk, so the manifest describes this writer's file whatever else happens to the path)."""
    buf = io.BytesIO()
    torch.save(t.detach().cpu().contiguous().clone(), buf)
    data = buf.getvalue()
    atomic_write_bytes(path, data, fsync=True)
    return hashlib.sha256(data).hexdigest()


def load_tensor(path: Path, sha256: Optional[str] = None) -> torch.Tensor:
    """Read one golden tensor safely: hash check (when recorded), then ``weights_only`` loading."""
    path = Path(path)
    if not path.is_file():
        raise GoldenFileError(f"golden file {path} is missing")
    if sha256 is not None and _sha256(path) != sha256:
        raise GoldenFileError(f"golden file {path} does not match its recorded SHA-256: it was truncated, "
                              "corrupted or modified after it was written; delete the golden directory to "
                              "regenerate it")
    try:
        t = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - every failure mode is a refusal with the file named
        raise GoldenFileError(f"golden file {path} cannot be read as a plain tensor file (refused, no code was run): "
                              f"{type(e).__name__}: {str(e).splitlines()[0][:200]}") from None
    if not isinstance(t, torch.Tensor):
        raise GoldenFileError(f"golden file {path} holds a {type(t).__name__}, not a tensor")
    return t


@dataclass
class Golden:
    """A loaded golden set: inputs, expected outputs, tolerance and provenance."""

    inputs: dict[str, torch.Tensor]
    outputs: dict[str, torch.Tensor]
    rtol: float
    atol: float
    manifest: dict
    reused: bool


def _source_of(fn: Callable) -> str:
    try:
        return textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return f"# source of {getattr(fn, '__name__', fn)!r} is not available\n"


def write_golden(tensor_specs: Sequence[TensorSpec], golden_fn: Callable, output_path, rtol: float = 1e-5,
                 atol: float = 1e-5, scalar_specs: Sequence[ScalarSpec] | None = None, data_dir=None, *,
                 seed: Optional[int] = None, rationale: str = "") -> Path:
    """Record inputs and golden outputs (or reuse them) and write ``golden.py``; returns its path.

    Reuse rule (as the reference): when every required file already exists and checks out, nothing
    is regenerated and ``golden_fn`` is not called — a nondeterministic reference is pinned. Otherwise
    the tensors are materialised (``torch.manual_seed(seed)`` first when given), inputs saved,
    ``golden_fn(tensors, params)`` called, outputs saved, and the manifest written last.
    """
    output_path = Path(output_path)
    root = Path(data_dir) if data_dir is not None else output_path.parent / "data"
    specs = list(tensor_specs)
    scalars = list(scalar_specs or ())
    # check-then-record under one lock: a second writer waits, then finds the golden complete and
    # reuses it (two writers must never mix inputs of one with outputs of the other)
    with dir_lock(root):
        try:
            load_golden(root, specs)
            reused = True
        except GoldenFileError as e:
            if (root / MANIFEST).exists() and "is missing" not in str(e):
                raise  # a corrupted existing golden is reported, never silently overwritten
            reused = False
        if not reused:
            _record(root, specs, scalars, golden_fn, rtol, atol, seed, rationale)
    _write_golden_py(output_path, specs, scalars, golden_fn, rtol, atol, root, data_dir is not None)
    return output_path


def _record(root: Path, specs, scalars, golden_fn, rtol, atol, seed, rationale) -> None:
    """Record a new golden set into ``root`` (the caller holds its lock). The stale manifest goes
    first and the new one last: until it exists the golden reads as missing, so a crash in between
    is regenerated next time instead of verifying a mix of old and new files."""
    (root / MANIFEST).unlink(missing_ok=True)
    if seed is not None:
        torch.manual_seed(seed)
    tensors = {s.name: s.materialize() for s in specs}
    files = {}
    for s in specs:
        if not s.is_pure_output:
            files[f"in/{s.name}.pt"] = (s.name, _save_tensor(tensors[s.name], root / "in" / f"{s.name}.pt"))
    params = {sc.name: sc.value for sc in scalars} or None
    golden_fn(tensors, params)
    for s in specs:
        if s.is_output:
            files[f"out/{s.name}.pt"] = (s.name, _save_tensor(tensors[s.name], root / "out" / f"{s.name}.pt"))
    manifest = {
        "schema": 1, "rtol": rtol, "atol": atol, "seed": seed, "rationale": rationale,
        "dtype_path": {s.name: str(s.dtype).replace("torch.", "") for s in specs},
        "outputs": [s.name for s in specs if s.is_output],
        "scalars": {sc.name: sc.value for sc in scalars},
        "golden_function": getattr(golden_fn, "__qualname__", repr(golden_fn)),
        "files": {rel: {"sha256": digest, "dtype": str(tensors[name].dtype).replace("torch.", ""),
                        "shape": list(tensors[name].shape)} for rel, (name, digest) in files.items()},
    }
    atomic_write_bytes(root / MANIFEST, json.dumps(manifest, indent=2).encode("utf-8"), fsync=True)


def load_golden(data_dir, tensor_specs: Sequence[TensorSpec] | None = None) -> Golden:
    """Load and verify a golden directory (manifest hashes, safe tensor loading, shapes/dtypes)."""
    root = Path(data_dir)
    mpath = root / MANIFEST
    if not mpath.is_file():
        raise GoldenFileError(f"golden manifest {mpath} is missing")
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise GoldenFileError(f"golden manifest {mpath} is corrupted: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != 1 or not isinstance(manifest.get("files"), dict):
        raise GoldenFileError(f"golden manifest {mpath} has an unknown layout")
    files = manifest["files"]
    if tensor_specs is not None:
        for s in tensor_specs:
            need = [] if s.is_pure_output else [f"in/{s.name}.pt"]
            need += [f"out/{s.name}.pt"] if s.is_output else []
            for rel in need:
                if rel not in files:
                    raise GoldenFileError(f"golden file {root / rel} is missing (not in {mpath.name})")
    inputs, outputs = {}, {}
    for rel, info in files.items():
        if not isinstance(rel, str) or not _ENTRY.fullmatch(rel) or not isinstance(info, dict):
            raise GoldenFileError(f"golden manifest {mpath} lists {rel!r}: entries must be in/<name>.pt or "
                                  "out/<name>.pt inside the golden directory (no '..', no absolute path); refused")
        try:
            path = contained(root, rel, "golden manifest entry")
        except ValueError as e:
            raise GoldenFileError(f"golden manifest {mpath}: {e}; refused") from None
        t = load_tensor(path, info.get("sha256"))
        if list(t.shape) != info.get("shape") or str(t.dtype).replace("torch.", "") != info.get("dtype"):
            raise GoldenFileError(f"golden file {root / rel} holds {list(t.shape)} {t.dtype}, the manifest "
                                  f"records {info.get('shape')} {info.get('dtype')}")
        (inputs if rel.startswith("in/") else outputs)[Path(rel).stem] = t
    try:
        rtol, atol = float(manifest["rtol"]), float(manifest["atol"])
    except (KeyError, TypeError, ValueError):
        raise GoldenFileError(f"golden manifest {mpath} has no valid rtol / atol") from None
    return Golden(inputs, outputs, rtol, atol, manifest, True)


def _write_golden_py(path: Path, specs, scalars, golden_fn, rtol, atol, root: Path, explicit_root: bool) -> None:
    data = f"Path({str(root.resolve())!r})" if explicit_root else 'Path(__file__).parent / "data"'
    lines = [
        '"""Golden reference written by pypto.runtime.write_golden. Inputs and outputs live in _DATA_DIR',
        '(in/*.pt, out/*.pt, manifest.json with SHA-256 per file); compute_golden is the golden function."""',
        "from pathlib import Path", "", "import torch", "",
        f"_DATA_DIR = {data}",
        f"__outputs__ = {[s.name for s in specs if s.is_output]!r}",
        f"RTOL = {rtol!r}", f"ATOL = {atol!r}", "", "",
        "def generate_inputs(params):",
        "    return [",
    ]
    for s in specs:
        if s.is_pure_output:
            lines.append(f"        ({s.name!r}, torch.zeros({list(s.shape)!r}, dtype={s.dtype})),")
        else:
            lines.append(f"        ({s.name!r}, torch.load(_DATA_DIR / 'in' / '{s.name}.pt', weights_only=True)),")
    for sc in scalars:
        lines.append(f"        ({sc.name!r}, {sc.value!r}),")
    lines += ["    ]", "", ""]
    src = _source_of(golden_fn)
    fname = getattr(golden_fn, "__name__", "golden")
    lines.append(src.rstrip())
    lines += ["", "", f"compute_golden = {fname}" if fname != "compute_golden" and fname.isidentifier() else ""]
    atomic_write_bytes(path, ("\n".join(lines) + "\n").encode("utf-8"))
