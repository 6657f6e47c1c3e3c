"""The artifact store: where compiled programs live on disk, under what key, and how they are
written so that no reader ever sees another build's or half a build's modules.

**The cache key** (:func:`compile_key`) is a SHA-256 over everything that can change what a build
contains or how it behaves:

* the program as the compiler receives it: its printed form (which includes every constant a
  kernel captured from module globals or closures, every specialisation constant — floats by
  their exact text, so ``-0.0`` and ``0.0`` differ — shapes, dtypes and callee bodies) and every
  source span in it (diagnostics and runtime errors point at them);
* the compile options (platform, dump level, verification level, diagnostic phase and disabled
  checks, ``analyze_auto_scopes_for_deps``) and the environment variables that stand in for them
  (``PYPTO_VERIFY_LEVEL``, ``PYPTO_WARNING_LEVEL``);
* the package: its version and a hash of the text of every module of ``pypto`` (an edited
  compiler never serves artifacts built by the previous one), and the Python version.

A custom pass pipeline is user code the key cannot see into, so such a build gets a fresh key every
time (it is never reused from disk).

**Default location** (no ``output_dir`` / ``save_kernels_dir``): ``$PYPTO_PROG_BUILD_DIR`` (default
``./build_output``) ``/<program name>_<first 16 hex digits of the key>/``. A build is made in a
staging directory ``.tmp-*`` beside it and renamed into place whole, so an entry either does not
exist or is complete; a second process (or thread) that builds the same key finds the entry and
reuses it instead of compiling — a persistent compile cache across processes.

**Pruning**: after publishing an entry the root keeps the ``PYPTO_CACHE_MAX_ENTRIES`` (default
256) most recently used entries (an entry's directory mtime is refreshed on every reuse) and removes
the rest; staging directories older than an hour (a killed build) are removed too. A program whose
entry was pruned is rebuilt on its next call.

**An explicit directory** (``save_kernels_dir=D``) is the user's: it holds the last build written
there. Writers hold an exclusive ``flock`` on ``D/.pypto.lock`` (readers a shared one), write every
file through a unique temporary name and ``os.replace``, remove the files of the previous build
that the new one does not have, and write ``compiled_meta.json`` (with the key and a hash of every
module) last. A program compiled earlier into ``D`` checks the key before each run and recompiles
when another build replaced it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import uuid
import weakref
from pathlib import Path

import pypto
from pypto.errors import Span
from pypto.ir.printer import print_program
from pypto.passes.manager import resolve_dump_level

META = "compiled_meta.json"
LOCK = ".pypto.lock"
STAGING_PREFIX = ".tmp-"
DEFAULT_MAX_ENTRIES = 256
STALE_STAGING_S = 3600.0
# the pass dumps of a failed compile (``failed-<entry>/passes_dump``), kept for a day
FAILED_PREFIX = "failed-"
STALE_FAILED_S = 86400.0

_fp_lock = threading.Lock()
_fingerprint: list[str] = []


def build_root() -> Path:
    """``$PYPTO_PROG_BUILD_DIR`` or ``build_output`` (relative to the working directory)."""
    return Path(os.environ.get("PYPTO_PROG_BUILD_DIR") or "build_output")


def package_fingerprint() -> str:
    """Version of pypto + a hash of the text of all its modules + the Python version (once per process)."""
    with _fp_lock:
        if not _fingerprint:
            h = hashlib.sha256(f"pypto {pypto.__version__} python {sys.version_info[:2]}".encode())
            root = Path(pypto.__file__).resolve().parent
            for path in sorted(root.rglob("*.py")):
                h.update(str(path.relative_to(root)).encode() + b"\0")
                h.update(path.read_bytes() + b"\0")
            _fingerprint.append(h.hexdigest())
        return _fingerprint[0]


def _spans(program) -> list:
    """Every source span in the program, in a deterministic walk order (fields, then items)."""
    out: list = []
    seen: set[int] = set()
    stack = [program]
    while stack:
        x = stack.pop()
        if isinstance(x, Span):
            out.append((x.file, x.line, x.col, x.end_line, x.end_col))
        elif isinstance(x, (tuple, list)):
            stack.extend(reversed(x))
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            if id(x) in seen:
                continue
            seen.add(id(x))
            stack.extend(reversed([getattr(x, f.name) for f in dataclasses.fields(x)]))
    return out


# program object -> its digest. IR nodes are frozen, so a program's printed form and spans never
# change: compiling the same object again (a warm compile, e.g. a model program called in a loop)
# skips printing it (~10-20 ms for a paged-attention program). Keyed by identity, checked through a
# weak reference so that a recycled id() never returns another program's digest.
_DIGESTS: dict[int, tuple] = {}
_DIGESTS_LOCK = threading.Lock()


def program_digest(program) -> str:
    """SHA-256 of the program's printed form and its spans (see the module docstring)."""
    hit = _DIGESTS.get(id(program))
    if hit is not None and hit[0]() is program:
        return hit[1]
    h = hashlib.sha256(print_program(program).encode())
    h.update(json.dumps(_spans(program)).encode())
    digest = h.hexdigest()
    try:
        ref = weakref.ref(program)
    except TypeError:   # not weak-referenceable: not memoised
        return digest
    with _DIGESTS_LOCK:
        if len(_DIGESTS) > 256:
            for k in [k for k, (r, _) in _DIGESTS.items() if r() is None]:
                del _DIGESTS[k]
        _DIGESTS[id(program)] = (ref, digest)
    return digest


def _canon(v):
    """A deterministic JSON form of an option value (sets sorted: their order varies by process)."""
    if isinstance(v, (set, frozenset)):
        return sorted(str(x) for x in v)
    if isinstance(v, dict):
        return {str(k): _canon(x) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
    if isinstance(v, (list, tuple)):
        return [_canon(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    name = getattr(v, "name", None)
    return f"{type(v).__name__}.{name}" if isinstance(name, str) else repr(v)


def options_key(options: dict) -> dict:
    """The compile options that shape a build, normalised to JSON (the pipeline and the output
    directory excluded: see :func:`compile_key`), plus the environment that stands in for them."""
    doc = {k: _canon(v) for k, v in options.items() if k not in ("passes", "output_dir", "instruments")}
    doc["platform"] = options.get("platform") or "a2a3sim"
    doc["dump_passes"] = resolve_dump_level(options.get("dump_passes")).name
    doc["env"] = {k: os.environ.get(k, "") for k in ("PYPTO_VERIFY_LEVEL", "PYPTO_WARNING_LEVEL")}
    return doc


def compile_key(program, options: dict, custom_passes: bool = False, digest: str | None = None) -> str:
    """The cache key of a build (hex SHA-256); see the module docstring for what it covers."""
    doc = {"v": 1, "package": package_fingerprint(), "program": digest or program_digest(program),
           "options": options_key(options),
           # user passes are code we cannot hash: never share their builds
           "custom_passes": uuid.uuid4().hex if custom_passes else None}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def entry_name(program_name: str, key: str) -> str:
    """Directory name of a cache entry: ``<name>_<key[:16]>`` (name sanitised for the file system)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in program_name)[:64] or "program"
    return f"{safe}_{key[:16]}"


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a unique temporary file beside it, then ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class StagingWriter:
    """Writes the files of a build into its private staging directory (:func:`staging_dir`): nobody
    reads it before it is published or installed whole, so each file is written in place (no
    temporary name and rename per file) and each directory is made once. On this package's test
    machine a ``mkdir`` cost ~150 us and a temporary file + rename ~250 us: a build's five files
    spent 2-4 ms of a ~20 ms compile there."""

    def __init__(self, root: Path):
        self._made = {Path(root)}

    def mkdir(self, directory: Path) -> None:
        """Make ``directory`` (and its parents) unless this writer made or saw it already."""
        if directory not in self._made:
            directory.mkdir(parents=True, exist_ok=True)
            self._made.add(directory)

    def write(self, path: Path, text: str) -> None:
        """Write ``text`` (UTF-8) to ``path``, making its directory first if needed."""
        self.mkdir(path.parent)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)


def files_under(directory: Path) -> list[str]:
    """The relative POSIX paths of every file under ``directory`` (sorted), the lock file excluded."""
    out = []
    base = str(directory)
    for dirpath, _, names in os.walk(base):
        rel = os.path.relpath(dirpath, base)
        for name in names:
            if name != LOCK:
                out.append(name if rel == "." else f"{Path(rel).as_posix()}/{name}")
    return sorted(out)


def sha256_text(text: str) -> str:
    """Hex SHA-256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@contextlib.contextmanager
def dir_lock(directory: Path, exclusive: bool = True):
    """An advisory lock on ``directory`` (``flock`` on its ``.pypto.lock``) across threads and processes.

    Each call opens its own file description, so two threads of one process exclude each other too.
    Where ``fcntl`` is missing (Windows) the block runs unlocked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not a supported platform for concurrent builds
        yield
        return
    try:
        if exclusive:
            directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        if exclusive:
            raise
        yield  # a read-only or missing directory: nobody can be writing it through us
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def staging_dir(root: Path, name: str) -> Path:
    """A fresh private directory under ``root`` to build in (renamed into place by :func:`publish`)."""
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{name}-", dir=root))


def read_meta(directory: Path) -> dict | None:
    """``compiled_meta.json`` of ``directory``, or None when it is missing or unreadable."""
    try:
        meta = json.loads((directory / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def read_sources(directory: Path, meta: dict) -> dict[str, str] | None:
    """The generated modules of a build, read once and checked against the hashes in its meta;
    None when a file is missing or differs (another build replaced it, or it was damaged)."""
    hashes = meta.get("module_sha256")
    if not isinstance(hashes, dict):
        return None
    rels = list(meta.get("kernels", {}).values()) + ([meta["orchestration"]] if meta.get("orchestration") else [])
    sources = {}
    for rel in rels:
        try:
            text = (directory / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        if hashes.get(rel) != sha256_text(text):
            return None
        sources[rel] = text
    return sources


def publish(staging: Path, final: Path) -> Path:
    """Rename a finished staging directory to ``final``. When another builder got there first with a
    complete entry of the same key, ours is discarded and theirs used (same key, same content); an
    incomplete or damaged entry in the way is moved aside and removed."""
    for _ in range(3):
        try:
            os.rename(staging, final)
            return final
        except OSError:
            if not final.exists():
                continue
            meta = read_meta(final)
            if meta is not None and read_sources(final, meta) is not None:
                shutil.rmtree(staging, ignore_errors=True)
                return final
            trash = final.with_name(f"{STAGING_PREFIX}trash-{final.name}-{uuid.uuid4().hex[:8]}")
            with contextlib.suppress(OSError):
                os.rename(final, trash)
                shutil.rmtree(trash, ignore_errors=True)
    raise OSError(f"could not publish the build {staging} as {final}")


def touch(directory: Path) -> None:
    """Mark a cache entry as just used (its mtime orders pruning)."""
    with contextlib.suppress(OSError):
        os.utime(directory)


def max_entries() -> int:
    """``PYPTO_CACHE_MAX_ENTRIES`` (default 256; at least 1)."""
    try:
        return max(1, int(os.environ.get("PYPTO_CACHE_MAX_ENTRIES", DEFAULT_MAX_ENTRIES)))
    except ValueError:
        return DEFAULT_MAX_ENTRIES


# the name :func:`entry_name` gives a cache entry
_ENTRY_NAME = re.compile(r"_[0-9a-f]{16}$")


def prune(root: Path, keep: int | None = None, now: float | None = None) -> list[Path]:
    """Remove least recently used cache entries beyond ``keep`` and stale staging directories.
    Only directories this module made are touched: entries are the directories named as
    :func:`entry_name` names them, and one is removed only when its ``compiled_meta.json`` carries
    ``"cache_entry": true``. Returns what was removed."""
    keep = max_entries() if keep is None else keep
    now = time.time() if now is None else now
    removed: list[Path] = []
    entries = []
    try:
        children = list(os.scandir(root))
    except OSError:
        return removed
    named = [e for e in children
             if _ENTRY_NAME.search(e.name) and not e.name.startswith((STAGING_PREFIX, FAILED_PREFIX))]
    for e in children:
        if not (e.name.startswith(STAGING_PREFIX) or e.name.startswith(FAILED_PREFIX)):
            continue
        try:
            if not e.is_dir(follow_symlinks=False):
                continue
            mtime = e.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if now - mtime > (STALE_STAGING_S if e.name.startswith(STAGING_PREFIX) else STALE_FAILED_S):
            shutil.rmtree(e.path, ignore_errors=True)
            removed.append(Path(e.path))
    if len(named) <= keep:
        return removed   # the common case: the names alone say so (no stat of every entry)
    for e in named:
        try:
            if e.is_dir(follow_symlinks=False):
                entries.append((e.stat(follow_symlinks=False).st_mtime, e.path))
        except OSError:
            continue
    if len(entries) <= keep:
        return removed
    entries.sort(reverse=True)
    for _, path in entries[keep:]:
        # only the entries past the limit are opened (a full cache read all 256 metas per compile)
        if (read_meta(Path(path)) or {}).get("cache_entry") is not True:
            continue
        # move aside first so a concurrent reader sees the entry either whole or gone
        trash = Path(root, f"{STAGING_PREFIX}trash-{Path(path).name}-{uuid.uuid4().hex[:8]}")
        try:
            os.rename(path, trash)
        except OSError:
            continue
        shutil.rmtree(trash, ignore_errors=True)
        removed.append(Path(path))
    return removed
