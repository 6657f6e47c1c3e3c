"""Visual reports: pictures of where and how a result is wrong, in one self-contained HTML page.

* :func:`error_heatmap` — mismatches (or max abs error) per tile over the output;
* :func:`ulp_histogram` — distribution of the distance in units in the last place;
* :func:`pass_error_chart` — max error against the golden and against the previous pass, per pass of
  a :class:`pypto.debug.validate_ir.ValidationReport`;
* :func:`task_timeline` — the simulated task spans per core (from a swimlane document), with the
  tasks of a racing pair highlighted;
* :func:`html_page` — sections of text and PNGs (inlined as data URIs: no file or network access
  needed to view the page).

Matplotlib renders the PNGs with its non-interactive Agg backend.
"""
from __future__ import annotations

import base64
import html
import textwrap
import io
from typing import Iterable, Optional, Sequence

import torch
from pypto.testing.compare import ulp_distance


def _figure(w: float = 6.0, h: float = 4.0):
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(w, h), dpi=100)
    return plt, fig, ax


def _png(plt, fig) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def _per_tile(values: torch.Tensor, tile_shape: Sequence[int], reduce: str) -> torch.Tensor:
    v2 = values.reshape(-1, values.shape[-2], values.shape[-1])
    v2 = v2.sum(0) if reduce == "sum" else v2.amax(0)
    tr, tc = tile_shape
    nr, nc = -(-v2.shape[0] // tr), -(-v2.shape[1] // tc)
    pad = torch.zeros(nr * tr, nc * tc, dtype=torch.float64)
    pad[: v2.shape[0], : v2.shape[1]] = v2.double()
    blocks = pad.reshape(nr, tr, nc, tc)
    return blocks.sum((1, 3)) if reduce == "sum" else blocks.amax((1, 3))


def error_heatmap(actual: torch.Tensor, expected: torch.Tensor, rtol: float = 1e-5, atol: float = 1e-5,
                  tile_shape: Optional[Sequence[int]] = None, title: str = "mismatches per tile") -> bytes:
    """PNG heatmap of mismatch counts per tile (2-D or more; leading dims are summed)."""
    a, e = actual.detach().double(), expected.detach().double()
    if a.dim() == 1:
        a, e = a[None], e[None]
    bad = (~(torch.isclose(a, e, rtol=rtol, atol=atol) | torch.isnan(e))).double()
    rows, cols = a.shape[-2], a.shape[-1]
    tiles = tuple(tile_shape) if tile_shape else (max(1, -(-rows // 16)), max(1, -(-cols // 16)))
    grid = _per_tile(bad, tiles, "sum")
    plt, fig, ax = _figure(6.4, 4.8)
    # counts start at 0 (a uniform grid is not drawn as mid-scale)
    im = ax.imshow(grid.numpy(), cmap="magma_r", interpolation="nearest", aspect="auto", vmin=0,
                   vmax=max(1.0, float(grid.max())))
    fig.colorbar(im, ax=ax, label="mismatched elements")
    ax.set_title(f"{title} ({tiles[0]}x{tiles[1]} tiles)")
    ax.set_xlabel("tile column")
    ax.set_ylabel("tile row")
    # one tick per tile (tile indices are integers), thinned to at most ~16 per axis
    nr, nc = grid.shape
    ax.set_xticks(range(0, nc, max(1, -(-nc // 16))))
    ax.set_yticks(range(0, nr, max(1, -(-nr // 16))))
    return _png(plt, fig)


def ulp_histogram(actual: torch.Tensor, expected: torch.Tensor, title: str = "ULP distance") -> bytes:
    """PNG histogram of the ULP distance between two float tensors of one dtype (log count)."""
    if actual.dtype != expected.dtype or not actual.dtype.is_floating_point:
        expected = expected.to(actual.dtype)
    finite = torch.isfinite(actual) & torch.isfinite(expected)
    d = ulp_distance(actual[finite], expected[finite]).double()
    plt, fig, ax = _figure()
    if d.numel():
        top = max(1.0, float(d.max()))
        bins = torch.logspace(0, torch.log10(torch.tensor(top + 1)).item(), 30) - 1 if top > 64 else \
            torch.arange(0, top + 2) - 0.5
        ax.hist(d.numpy(), bins=bins.numpy(), color="#4a7ab5")
        ax.set_yscale("log")
    ax.set_title(f"{title} ({str(actual.dtype).replace('torch.', '')}, {d.numel()} finite elements)")
    ax.set_xlabel("ULP distance")
    ax.set_ylabel("elements")
    return _png(plt, fig)


def exact_floor(values) -> float:
    """Where a log-scale error chart draws an exact (zero) difference: a decade below the smallest
    positive value shown (NaN and zeros ignored); 1e-12 when nothing is positive."""
    shown = [v for v in values if v == v and v > 0]
    return min(shown) / 10 if shown else 1e-12


def pass_error_chart(report, title: str = "error per pass") -> bytes:
    """PNG: max abs error vs the golden and vs the previous pass, for each stage of a ValidationReport."""
    names = [s.stage for s in report.stages]
    gold = [max((d.max_abs for d in s.vs_golden), default=float("nan")) for s in report.stages]
    prev = [max((d.max_abs for d in s.vs_previous), default=0.0) for s in report.stages]
    # a log axis has no 0: exact stages (difference 0) sit on an "exact" floor a decade below the
    # smallest real value drawn, marked as such, instead of at 1e-300 squashing every real bar flat
    floor = exact_floor((*gold, *prev, report.atol))
    plt, fig, ax = _figure(max(6.0, 0.55 * len(names)), 4.2)
    x = list(range(len(names)))
    ax.plot(x, [g if g > 0 else floor for g in gold], "-", color="#4a7ab5", zorder=2)
    ax.plot([i for i, g in zip(x, gold) if g > 0], [g for g in gold if g > 0], "o", color="#4a7ab5",
            label="vs golden", zorder=3)
    exact = [i for i, g in zip(x, gold) if g == 0]
    if exact:
        ax.plot(exact, [floor] * len(exact), "o", mfc="white", color="#4a7ab5", label="vs golden: exact (0)",
                zorder=3)
    bars = [(i, p) for i, p in zip(x, prev) if p > 0]
    if bars:
        ax.bar([i for i, _ in bars], [p - floor for _, p in bars], bottom=floor, alpha=0.35, color="#c44",
               label="vs previous pass")
    ax.axhline(floor, ls=":", color="#999", lw=1)
    ax.text(-0.45, floor * 1.15, "exact (0)", va="bottom", ha="left", fontsize=7, color="#666")
    ax.axhline(report.atol, ls="--", color="gray", lw=1, label=f"atol={report.atol:g}")
    first = report.first_divergence
    if first is not None:
        ax.axvline(names.index(first.stage), color="#c00", lw=2, label=f"first divergence: {first.stage}")
    ax.set_yscale("log")
    ax.set_ylim(bottom=floor / 3)
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("max abs error")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _png(plt, fig)


def task_timeline(swimlane: dict, highlight: Iterable[str] = (), title: str = "simulated task timeline") -> bytes:
    """PNG of the tasks per core from a swimlane document; tasks whose ``rXtY`` id is in
    ``highlight`` (e.g. a racing pair) are drawn in red and labelled."""
    marked = set(highlight)
    spans = [e for e in swimlane.get("traceEvents", []) if e.get("ph") == "X"]
    plt, fig, ax = _figure(8.0, max(2.5, 0.3 * len({e["tid"] for e in spans}) + 1.5))
    lanes = sorted({e["tid"] for e in spans})
    for e in spans:
        y = lanes.index(e["tid"])
        task = e.get("args", {}).get("task", "")
        hot = task in marked
        ax.barh(y, max(e["dur"], 1e-3), left=e["ts"], height=0.8, color="#d22" if hot else "#7aa6d6",
                edgecolor="black" if hot else "none")
        if hot:
            ax.text(e["ts"], y, f" {task} {e['name']}", va="center", fontsize=7, color="black")
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([f"core {t}" for t in lanes], fontsize=7)
    ax.set_xlabel("simulated time (us)")
    # a long title (a race's two task names) wraps instead of running off the figure
    ax.set_title("\n".join(textwrap.wrap(title, 80)) or title)
    return _png(plt, fig)


def html_page(title: str, sections: Sequence[tuple[str, object]]) -> str:
    """A self-contained page: each section is (heading, content) where content is text (shown as
    preformatted), a PNG (bytes), or a list of those."""
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             "<style>body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:24px auto;padding:0 16px;"
             "color:#222}h1{font-size:22px}h2{font-size:17px;border-bottom:1px solid #ddd;padding-bottom:4px}"
             "pre{background:#f6f6f6;padding:10px;overflow:auto;font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}img{max-width:100%;"
             "border:1px solid #eee;margin:6px 0}.ok{color:#080}.bad{color:#b00}</style></head>",
             f"<body><h1>{html.escape(title)}</h1>"]
    for heading, content in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        for item in content if isinstance(content, list) else [content]:
            if isinstance(item, (bytes, bytearray)):
                data = base64.b64encode(bytes(item)).decode("ascii")
                parts.append(f"<img class='plot' alt='{html.escape(heading)}' src='data:image/png;base64,{data}'>")
            elif item is not None:
                parts.append(f"<pre>{html.escape(str(item))}</pre>")
    # a marker set once every image decoded, so a headless browser test can check the page rendered
    parts.append("<script>window.addEventListener('load',()=>{const im=[...document.images];"
                 "document.body.dataset.images=im.length;document.body.dataset.imagesOk="
                 "im.every(i=>i.complete&&i.naturalWidth>0)?'yes':'no';});</script>")
    parts.append("</body></html>")
    return "\n".join(parts)
