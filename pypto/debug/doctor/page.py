"""The doctor's report page: the summary, the mismatch heatmaps and ULP histograms on the kernel's
own store tiles, and the figures the steps added, in one self-contained HTML file."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Optional

import torch

from pypto.debug.doctor.report import DoctorReport
from pypto.progress import clear


def _finish(report: DoctorReport, html, kernel, bound, platform, verbose, actual=None, expected=None,
            compiled=None) -> DoctorReport:
    from pypto.debug import visual

    sections = [("summary", report.format())]
    try:
        if actual is not None and expected is not None:
            for k, e in expected.items():
                a = actual[k]
                tiles = _stored_tile_shape(compiled, a) if compiled is not None else None
                grid = f" ({tiles[0]}x{tiles[1]} tiles: the kernel's stores)" if tiles else ""
                sections.append((f"mismatches per tile: {k}{grid}", visual.error_heatmap(a, e, tile_shape=tiles)))
                if a.dtype.is_floating_point and a.dtype == e.dtype:
                    sections.append((f"ULP distance: {k}", visual.ulp_histogram(a, e)))
        sections += list(report.figures)
    except Exception as err:  # noqa: BLE001 - pictures are a bonus; the diagnosis stands without them
        sections.append(("pictures unavailable", f"{type(err).__name__}: {err}"))
    path = Path(html) if html else Path(tempfile.mkdtemp(prefix="pypto-doctor-")) / f"doctor_{report.kernel}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(visual.html_page(f"pypto doctor: {report.kernel}", sections), encoding="utf-8")
    report.html_path = path
    if verbose:
        clear()
        print(report.format(), file=sys.stdout)
    return report


def _diagnostic_words(d) -> str:
    """A diagnostic in the summary: what it says (its first clause) and where, not just its code."""
    kind = "performance hint" if d.code.startswith("PH") else "warning"
    what = d.message.split(";")[0].split(" — ")[0].strip()
    return f"{kind} {d.code} at {d.span}: {what}"


def _golden_text(actual: dict, expected: dict, rtol, atol, input_dtypes, compiled) -> str:
    """The comparison reports of the report page, their per-tile tables on the kernel's own store
    tiles (the grid the heatmap draws) rather than the comparison's default grid."""
    from pypto.testing.compare import compare

    return "\n\n".join(compare(actual[k], expected[k], rtol, atol, name=k, input_dtypes=input_dtypes,
                                tile_shape=_stored_tile_shape(compiled, actual[k]) if compiled is not None else None)
                        .format() for k in expected)


def _stored_tile_shape(compiled, out: torch.Tensor) -> Optional[tuple[int, int]]:
    """The tile shape the kernel writes ``out``'s kind of tensor with (the most frequent
    ``tile.store`` tile over the kernels' stores into a tensor of ``out``'s shape and dtype), so the
    heatmap's grid is the kernel's own tiles; ``None`` when there is no such store (default grid)."""
    from collections import Counter

    from pypto.ir.nodes import Call
    from pypto.ir.types import TensorType, TileType
    from pypto.ir.visit import iter_calls
    from pypto.language.dtypes import dtype_from_torch

    try:
        lowered = compiled.lowered
        dt = dtype_from_torch(out.dtype)
    except Exception:  # noqa: BLE001 - a picture's grid must not fail the diagnosis
        return None
    seen: Counter = Counter()
    for f in lowered.functions:
        for _, c in iter_calls(f.body):
            if not (isinstance(c, Call) and c.op == "tile.store"):
                continue
            tile, target = c.args[0].type, c.args[2].type
            if isinstance(tile, TileType) and isinstance(target, TensorType) and target.dtype == dt \
                    and list(target.shape) == list(out.shape) and len(tile.shape) >= 2 \
                    and all(isinstance(d, int) for d in tile.shape[-2:]):
                seen[tuple(tile.shape[-2:])] += 1
    return seen.most_common(1)[0][0] if seen else None

