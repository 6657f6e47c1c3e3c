"""A run's debug outputs (DFX, docs/simulator.md, "Debug outputs (DFX)"): deps.json, the tensor dumps,
the scope statistics and the swimlane, written after the results are back in the caller's tensors.
"""
from __future__ import annotations

import contextlib
import contextvars
import warnings
from pathlib import Path

from pypto.runtime import scope_stats
from pypto.runtime.deps import write_deps
from pypto.runtime.trace import write_swimlane


class DfxWriteWarning(RuntimeWarning):
    """A DFX output (deps.json, tensor dumps, swimlane) could not be written; the run's results are
    unaffected (they were copied back before any DFX file was written)."""


# Where a run's DFX outputs go instead of ``<work_dir>/dfx_outputs`` (a context variable, so the
# ranks of a multi-rank run, each a thread, file their dispatches apart: ``dfx_outputs/rank{r}/d{k}``)
_DFX_DIR: "contextvars.ContextVar[Path | None]" = contextvars.ContextVar("pypto_dfx_dir", default=None)


@contextlib.contextmanager
def dfx_dir(path):
    """Within the block, the DFX outputs of a run are written to ``path`` (None: the default)."""
    token = _DFX_DIR.set(Path(path) if path is not None else None)
    try:
        yield
    finally:
        _DFX_DIR.reset(token)


def write_dfx(rt: "Runtime", cfg, work_dir: Path, kernel_ids: dict) -> None:
    """Write the DFX outputs the config asks for under ``<work_dir>/dfx_outputs/`` and print where.

    Each output is written atomically and on its own: one that fails with an ``OSError`` (disk full,
    no permission, a directory where the file goes) is a :class:`DfxWriteWarning` naming the file
    and the cause, and the others are still written. The run has succeeded by then; its results
    are already in the caller's tensors."""
    dfx = _DFX_DIR.get() or Path(work_dir) / "dfx_outputs"

    def attempt(what: str, write) -> None:
        try:
            write()
        except OSError as e:
            warnings.warn(f"{what} could not be written under {dfx}: {e}. The run's results are not affected; "
                          "free space or remove what is in the way to get the DFX output",
                          DfxWriteWarning, stacklevel=4)

    if cfg.enable_dep_gen:
        def deps():
            path = write_deps(rt.tasks, dfx, Path(work_dir), kernel_ids)
            print(f"deps.json written to {path} — inspect with:\n  python -m json.tool {path}")
        attempt("deps.json", deps)
    if cfg.enable_dump_args and rt.dump is not None:
        def dumps():
            d = rt.dump.write(dfx)
            if d is not None:
                print(f"args_dump written to {d} — inspect with: python -m simpler_setup.tools.dump_viewer {d}")
        attempt("the tensor dump (args_dump/)", dumps)
    if cfg.enable_scope_stats and rt.scope_stats is not None:
        def stats():
            path = scope_stats.write(rt, dfx)
            print(f"scope stats written to {path} (line 1: ring sizes; then one line per scope)")
        attempt("scope_stats.jsonl", stats)
    if cfg.enable_chip_swimlane:
        def swimlane():
            path = write_swimlane(rt, dfx, cfg.enable_chip_swimlane)
            print(f"swimlane written to {path} — open it in https://ui.perfetto.dev or chrome://tracing")
        attempt("swimlane.json", swimlane)
