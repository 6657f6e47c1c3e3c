"""Crash- and concurrency-safe writes of user-owned files (goldens, dumps, reports, DFX outputs).

Two primitives, both built on ``os.replace`` (atomic on POSIX and Windows within one file system):

* :func:`atomic_write_bytes` / :func:`atomic_write_text` — write a temporary file *with a name no other
  writer uses* (``tempfile.mkstemp`` in the destination directory), flush it, then rename it over the
  destination. A reader sees the old file or the new one, never a prefix; a crash leaves at most a
  stray ``.<name>.*.tmp`` file beside it; two writers never interleave inside one file.
* :func:`publish_dir` — for a *set* of files that must stay consistent with each other (a manifest and
  the files it hashes, a dump index and its payload): build them in a fresh temporary directory
  beside the destination, then swap it in with renames. Another writer's set is replaced whole, never
  mixed with ours.

:func:`dir_lock` is an advisory lock (``fcntl.flock`` on a lock file beside a directory) for the
read-check-write sequences that must not interleave across processes (recording one golden directory).
:func:`contained` checks that a path read from a file (a manifest entry) stays inside its directory.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterator


def _tmp_beside(path: Path, suffix: str = ".tmp") -> Path:
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    return Path(name)


def atomic_write(path, write: Callable[[Path], None]) -> Path:
    """Create ``path`` atomically: ``write(tmp)`` fills a private temporary file, which then replaces
    ``path``. On any error the temporary file is removed and ``path`` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_beside(path)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return path


def atomic_write_bytes(path, data: bytes, fsync: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_write`); with ``fsync`` the data
    reaches the disk before the rename (golden files: a power loss never leaves an empty one)."""
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
    return atomic_write(path, write)


def atomic_write_text(path, text: str, fsync: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write_bytes`)."""
    return atomic_write_bytes(path, text.encode("utf-8"), fsync)


STALE_SECONDS = 3600   # a staging / set-aside directory this old was left by a killed writer


def staging_dir(dest) -> Path:
    """A fresh, private, empty directory beside ``dest`` in which to build its new contents. Staging
    and set-aside directories of ``dest`` older than :data:`STALE_SECONDS` (left by a writer that was
    killed) are removed first; younger ones may belong to a writer still at work."""
    import time

    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for p in dest.parent.glob(f".{dest.name}.*"):
        if p.suffix in (".staging", ".old") and p.is_dir():
            with contextlib.suppress(OSError):
                if now - p.stat().st_mtime > STALE_SECONDS:
                    shutil.rmtree(p, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".staging", dir=dest.parent))


def publish_dir(staged, dest) -> Path:
    """Replace the directory ``dest`` by ``staged`` (made by :func:`staging_dir`) as a whole.

    POSIX has no atomic swap of two non-empty directories, so the old one is first renamed aside
    (a reader in that instant finds ``dest`` missing, never half of two versions), the new one is
    renamed into place, and the old one is deleted. If another writer publishes in between, the
    last rename wins and each published directory is one writer's complete set."""
    staged, dest = Path(staged), Path(dest)
    if dest.exists() and not dest.is_dir():
        # never replace a user's file that happens to sit where the directory goes
        raise NotADirectoryError(f"{dest} exists and is not a directory; move it away to write there")
    old = None
    for _ in range(100):
        if dest.exists() or dest.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".old", dir=dest.parent))
            try:
                os.replace(dest, old / "d")
            except FileNotFoundError:
                pass   # another writer moved it first
        try:
            os.rename(staged, dest)
            break
        except OSError:
            # ENOTEMPTY / EEXIST: a concurrent writer published between our two renames; retry
            if not dest.exists():
                raise
    else:
        raise OSError(f"could not publish {dest}: other writers keep replacing it")
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return dest


@contextlib.contextmanager
def dir_lock(directory) -> Iterator[None]:
    """Hold an exclusive advisory lock for ``directory`` (a ``.<name>.lock`` file beside it) for the
    duration of the block. Processes and threads that take the same lock run the block one at a
    time. Where ``fcntl`` does not exist (Windows) the block runs unlocked and the atomic renames
    alone keep each file whole."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        yield
        return
    lock = directory.parent / f".{directory.name}.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def contained(root, rel, what: str) -> Path:
    """``root / rel`` after checking that ``rel`` names a place *inside* ``root``: a relative path
    without ``..`` components, not absolute, and not escaping through a symbolic link. Raises
    :class:`ValueError` naming ``what`` (e.g. "golden manifest entry") and the offending path."""
    rel_s = str(rel)
    p = Path(rel_s)
    if not rel_s or p.is_absolute() or p.drive or ".." in p.parts or "\\" in rel_s or "\0" in rel_s:
        raise ValueError(f"{what} {rel_s!r} must be a relative path inside {root} (no '..', no absolute path, "
                         "no backslash)")
    root = Path(root)
    full = root / p
    base = root.resolve()
    try:
        full.resolve().relative_to(base)
    except ValueError:
        raise ValueError(f"{what} {rel_s!r} leaves {root} through a symbolic link") from None
    return full
