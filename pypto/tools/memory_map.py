"""``python -m pypto.tools.memory_map DUMP.py [-o memory_map.html] [--platform a2a3sim]``

One self-contained HTML page (no network, no external files) showing where the memory planner put
every tile of a program: per InCore kernel and memory space, a chart with the statement index on
the x axis and the byte address on the y axis, one block per tile spanning its address range
(``addr + offset .. + size``) and the statements where it is live, coloured by buffer and labelled
with the tile's name; below it a table of the buffers and their tiles, and the numbered statements.

Input: a pass dump taken after AllocateMemoryAddr (``passes_dump/NN_after_AllocateMemoryAddr.py``,
or a ``passes_dump/`` directory, whose AllocateMemoryAddr stage is used). Lifetimes are computed
with the memory passes' own rules (:mod:`pypto.passes.memory_liveness`). ``--platform`` adds the
capacity of each space. A dump with MemRefs but no addresses (after InitMemRef or MemoryReuse: the
last stage of a compile AllocateMemoryAddr refused with a CapacityError, kept in
``failed-<build>/passes_dump``) is drawn with the addresses AllocateMemoryAddr's own placement
gives it without the capacity check (``--platform`` gives the alignment, default a2a3sim), so the
page shows how far past the capacity line the plan goes and which tiles are live there; a directory
without an AllocateMemoryAddr stage uses its latest such stage. Exit codes: 0 written, 2 bad input
(a missing or unusable dump, an unknown platform, an output path that cannot be written, a bad
command line); it has no findings, so never 1. The page is written atomically.
"""
from __future__ import annotations

import argparse
import html
import re
import sys
from pathlib import Path

_STAGE = re.compile(r"^\d\d_after_AllocateMemoryAddr\.py$")
_PLANNED = re.compile(r"^\d\d_after_(InitMemRef|MemoryReuse)\.py$")


class MapError(Exception):
    """The input is missing, does not parse, or was dumped before addresses were assigned."""


def resolve_input(path: Path) -> Path:
    """``path`` itself, or for a ``passes_dump/`` directory its AllocateMemoryAddr stage."""
    if path.is_dir():
        found = sorted(p for p in path.glob("*.py") if _STAGE.match(p.name))
        if not found:
            # a failed compile's dumps end before AllocateMemoryAddr: its latest stage with MemRefs
            found = sorted(p for p in path.glob("*.py") if _PLANNED.match(p.name))
        if not found:
            raise MapError(f"{path}: no NN_after_AllocateMemoryAddr.py (nor InitMemRef / MemoryReuse stage) in "
                           f"this directory (compile with dump_passes=True)")
        return found[-1]
    if not path.is_file():
        raise MapError(f"{path}: no such file")
    return path


def load_program(path: Path):
    """Parse the dump; a parse failure becomes a :class:`MapError` with the parser's message."""
    from pypto.errors import PyptoError
    from pypto.language.program import parse

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise MapError(f"{path}: cannot read: {e}") from None
    try:
        return parse(text, filename=str(path))
    except PyptoError as e:
        raise MapError(f"{path}: not a parseable pass dump: {e}") from None
    except SyntaxError as e:
        raise MapError(f"{path}: not a parseable pass dump: {e}") from None


def planned_addresses(f, live, platform) -> dict[str, int]:
    """Buffer name -> address as AllocateMemoryAddr places ``f``'s buffers, without its capacity
    check (a dump taken before it: the plan of a compile it refused)."""
    from pypto.passes.allocate_memory_addr import buffers_of, place

    buffers = buffers_of(f, live, platform)
    out: dict[str, int] = {}
    for space in {b.space for b in buffers.values()}:
        out.update(place([b for b in buffers.values() if b.space == space])[0])
    return out


def collect(program, source: str = "this dump", platform=None, plan: bool = False) -> list[dict]:
    """Per InCore kernel: its spaces, each with tiles ``(name, buffer, lo, hi, start, end, type)``,
    and the statement labels. Raises :class:`MapError` when the dump has no tiles with addresses;
    with ``plan``, tiles with MemRefs but no address are placed as AllocateMemoryAddr would place
    them (``platform``: the alignment; default a2a3sim) and each kernel says ``planned: True``."""
    from pypto.ir.types import TileType
    from pypto.language.enums import KERNEL_TYPES
    from pypto.passes.memory_liveness import Liveness

    kernels = []
    seen_memref = seen_tile = False
    for f in program.functions:
        if f.func_type not in KERNEL_TYPES:
            continue
        live = Liveness(f)
        spaces: dict[str, list] = {}
        planned = None
        for i in live.order:
            v = live.var[i]
            t: TileType = v.type
            seen_tile = True
            m = t.memref
            if m is None:
                continue
            seen_memref = True
            addr = m.addr
            if addr is None and plan:
                if planned is None:
                    from pypto.backend.platforms import get_platform

                    planned = planned_addresses(f, live, platform or get_platform("a2a3sim"))
                addr = planned.get(m.base)
            if addr is None:
                continue
            lo = addr + m.offset
            spaces.setdefault(t.memory_space.name, []).append({
                "name": v.name, "buffer": m.base, "lo": lo, "hi": lo + m.size, "start": live.start[i],
                "end": live.end[i], "type": f"{list(t.shape)} {t.dtype.name}"})
        if spaces:
            kernels.append({"name": f.name, "spaces": spaces, "sites": _labels(live), "npos": live.pos,
                            "planned": planned is not None})
    if not kernels:
        name = Path(source).name
        if seen_memref:
            raise MapError(f"{source}: no addresses in this dump (it was taken before AllocateMemoryAddr); "
                           f"use NN_after_AllocateMemoryAddr.py{_hint(name)}")
        if seen_tile:
            raise MapError(f"{source}: no MemRefs in this dump (it was taken before InitMemRef); "
                           f"use NN_after_AllocateMemoryAddr.py{_hint(name)}")
        raise MapError(f"{source}: no InCore kernel with tiles in this dump; use a dump of a lowered program "
                       f"(NN_after_AllocateMemoryAddr.py)")
    return kernels


def _hint(name: str) -> str:
    return f" instead of {name}" if re.match(r"^\d\d_", name) else ""


def _labels(live) -> dict[int, str]:
    from pypto.ir.nodes import (
        AssignStmt,
        Call,
        EvalStmt,
        ForStmt,
        FuncCall,
        IfStmt,
        ReturnStmt,
        WhileStmt,
        YieldStmt,
    )

    out = {}
    for pos, (kind, s) in live.sites.items():
        if kind == "end":
            out[pos] = f"end of loop over {s.loop_var.name}" if isinstance(s, ForStmt) else "end of while loop"
        elif isinstance(s, AssignStmt):
            v = s.value
            what = v.op if isinstance(v, Call) else v.func if isinstance(v, FuncCall) else type(v).__name__
            out[pos] = f"{s.var.name} = {what}"
        elif isinstance(s, EvalStmt):
            out[pos] = getattr(s.expr, "op", type(s.expr).__name__)
        elif isinstance(s, ForStmt):
            out[pos] = f"for {s.loop_var.name}"
        elif isinstance(s, WhileStmt):
            out[pos] = "while"
        elif isinstance(s, IfStmt):
            out[pos] = "if"
        elif isinstance(s, YieldStmt):
            out[pos] = "yield " + ", ".join(getattr(x, "name", "?") for x in s.values)
        elif isinstance(s, ReturnStmt):
            out[pos] = "return"
        else:
            out[pos] = type(s).__name__
    return out


# ----------------------------------------------------------------------------- rendering

_W, _H, _LEFT, _TOP, _BOTTOM = 900, 320, 90, 10, 40


def _colour(k: int) -> str:
    return f"hsl({(k * 137) % 360}, 65%, 72%)"


def _svg(tiles: list[dict], npos: int, cap: int | None, buffer_index: dict[str, int]) -> str:
    top = max(t["hi"] for t in tiles)
    span_y = max(top, cap or 0, 1)
    span_x = max(npos, 1)

    def x(p: float) -> float:
        """The centre of statement ``p``'s column."""
        return _LEFT + (p - 0.5) / span_x * _W

    def y(a: float) -> float:
        return _TOP + _H - a / span_y * _H

    e = html.escape
    out = [(f'<svg class="map" width="{_LEFT + _W + 20}" height="{_TOP + _H + _BOTTOM}" '
            f'xmlns="http://www.w3.org/2000/svg" role="img">')]
    out.append(f'<rect x="{_LEFT}" y="{_TOP}" width="{_W}" height="{_H}" class="frame"/>')
    step = max(1, -(-npos // 30))
    for p in range(1, npos + 1, step):
        out.append(f'<text x="{x(p):.1f}" y="{_TOP + _H + 14}" class="tick" text-anchor="middle">{p}</text>')
    out.append(f'<text x="{_LEFT + _W / 2}" y="{_TOP + _H + 32}" class="axis" text-anchor="middle">'
               f'statement</text>')
    for a in sorted({0, top, *((cap,) if cap else ())}):
        out.append(f'<text x="{_LEFT - 6}" y="{y(a) + 4:.1f}" class="tick" text-anchor="end">{a}</text>')
        out.append(f'<line x1="{_LEFT}" x2="{_LEFT + _W}" y1="{y(a):.1f}" y2="{y(a):.1f}" '
                   f'class="{"cap" if a == cap else "grid"}"/>')
    for t in tiles:
        # from the centre of the defining statement to the centre of the last reading one: a
        # statement reads its operands before it writes its result, so a tile handed over in place
        # (or to a loop) ends exactly where its successor in the buffer begins
        x0, x1 = x(t["start"]), max(x(t["end"]), x(t["start"] + 0.3))
        y0, y1 = y(t["hi"]), y(t["lo"])
        h = max(y1 - y0, 2.0)
        tip = (f'{t["name"]} {t["type"]} in {t["buffer"]}: bytes {t["lo"]}..{t["hi"]}, '
               f'live at statements {t["start"]}..{t["end"]}')
        out.append(f'<g class="tile" data-buffer="{e(t["buffer"])}"><title>{e(tip)}</title>'
                   f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" height="{h:.1f}" '
                   f'fill="{_colour(buffer_index[t["buffer"]])}"/>')
        if h >= 12 and x1 - x0 >= 7 * len(t["name"]):
            out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{y0 + h / 2 + 4:.1f}" class="label" '
                       f'text-anchor="middle">{e(t["name"])}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def build_page(kernels: list[dict], title: str, platform=None) -> str:
    """The HTML page for the kernels :func:`collect` returned."""
    from pypto.language.enums import MemorySpace

    e = html.escape
    body = []
    for k in kernels:
        body.append(f'<section class="kernel"><h2>kernel {e(k["name"])}</h2>')
        if k.get("planned"):
            body.append('<p class="planned"><b>Planned addresses:</b> this dump was taken before AllocateMemoryAddr '
                        '(a compile it refused, or an earlier stage); the tiles are placed as that pass places them, '
                        'without its capacity check.</p>')
        for space, tiles in sorted(k["spaces"].items()):
            tiles = sorted(tiles, key=lambda t: (t["lo"], t["start"]))
            cap = platform.capacity(MemorySpace[space]) if platform is not None else None
            buffers: dict[str, list] = {}
            for t in tiles:
                buffers.setdefault(t["buffer"], []).append(t)
            index = {b: n for n, b in enumerate(buffers)}
            top = max(t["hi"] for t in tiles)
            usage = f"{top} bytes used" + (f" of {cap} ({100 * top / cap:.0f}%)" if cap else "")
            if cap and top > cap:
                usage += f", {top - cap} bytes over the capacity"
            body.append(f'<h3>{e(space)}: {len(buffers)} buffer{"s" if len(buffers) != 1 else ""}, '
                        f'{len(tiles)} tile{"s" if len(tiles) != 1 else ""}, {e(usage)}</h3>')
            body.append(_svg(tiles, k["npos"], cap, index))
            rows = []
            for b, ts in buffers.items():
                lo, hi = min(t["lo"] for t in ts), max(t["hi"] for t in ts)
                names = "<br>".join(f'{e(t["name"])} {e(t["type"])}, live {t["start"]}..{t["end"]}' for t in ts)
                rows.append(f'<tr data-buffer="{e(b)}"><td><span class="swatch" style="background:'
                            f'{_colour(index[b])}"></span>{e(b)}</td><td>{lo}..{hi}</td><td>{hi - lo}</td>'
                            f'<td>{names}</td></tr>')
            body.append('<table class="buffers"><tr><th>buffer</th><th>bytes</th><th>size</th><th>tiles</th></tr>'
                        + "".join(rows) + "</table>")
        stmts = "".join(f"<li value=\"{p}\">{e(label)}</li>" for p, label in sorted(k["sites"].items()))
        body.append(f"<details><summary>statements</summary><ol>{stmts}</ol></details></section>")
    fill = {"__TITLE__": e(title), "__BODY__": "\n".join(body),
            "__PLATFORM__": e(platform.name) if platform else "no platform given (--platform shows capacities)"}
    # one pass: a title (a dump path) containing "__BODY__" stays text, never a second substitution
    return re.sub(r"__TITLE__|__PLATFORM__|__BODY__", lambda m: fill[m.group(0)], _TEMPLATE)


def write_page(source: Path, out: Path, platform=None) -> Path:
    """Build and atomically write the page for the dump ``source``; returns the page's path."""
    path = resolve_input(source)
    kernels = collect(load_program(path), str(path), platform, plan=True)
    page = build_page(kernels, f"Memory map: {path.name}", platform)
    from pypto.safe_files import atomic_write_text

    atomic_write_text(out, page)   # a private temp name: concurrent writers never share one
    return out


def build_parser() -> argparse.ArgumentParser:
    """The command line of the memory map (every option with its help)."""
    ap = argparse.ArgumentParser(prog="python -m pypto.tools.memory_map", description="Draw the memory plan of a pass dump (tile addresses against lifetimes) as one HTML page.")
    ap.add_argument("dump", type=Path, help="a pass dump with memory assignments (the AllocateMemoryAddr stage, or "
                                            "an earlier one of a compile that ran out of memory), or a passes_dump/ "
                                            "directory")
    ap.add_argument("-o", "--output", type=Path, default=Path("memory_map.html"),
                    help="where to write the page (default memory_map.html)")
    ap.add_argument("--platform", default=None, help="show each space's capacity on this platform")
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        platform = None
        if args.platform is not None:
            from pypto.backend.platforms import get_platform
            from pypto.errors import PlatformError

            try:
                platform = get_platform(args.platform)
            except PlatformError as err:
                raise MapError(str(err)) from None
        path = write_page(args.dump, args.output, platform)
    except (MapError, OSError) as err:
        print(f"memory_map: error: {err}", file=sys.stderr)
        return 2   # bad input (as every pypto command: 0 done, 1 a finding, 2 bad input)
    print(f"wrote {path}")
    return 0


_TEMPLATE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body{margin:16px;font:13px/1.4 system-ui,sans-serif;color:#222}
h1{font-size:17px}h2{font-size:15px;margin-top:28px;border-bottom:1px solid #ccc}h3{font-size:13px}
.map .frame{fill:#fafafa;stroke:#999}.map .grid{stroke:#ddd}.map .cap{stroke:#c00;stroke-dasharray:4 3}
.map .tick{font-size:10px;fill:#555}.map .axis{font-size:11px;fill:#333}
.map .label{font-size:10px;fill:#111;pointer-events:none}
.map .tile rect{stroke:#333;stroke-width:.5}
.map .tile.hl rect{stroke:#000;stroke-width:2}
table.buffers{border-collapse:collapse;margin:8px 0}
table.buffers td,table.buffers th{border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top}
table.buffers tr.hl{background:#ffd}
.swatch{display:inline-block;width:10px;height:10px;margin-right:6px;border:1px solid #333}
#info{position:sticky;top:0;background:#fff;padding:4px 0;min-height:18px;color:#333}
</style></head><body>
<h1>__TITLE__</h1>
<p>Platform: __PLATFORM__. Each block is a tile: its byte range (y) over the statements where it is
live (x); blocks of one colour are one buffer. Hover a block or a table row to highlight its buffer.</p>
<div id="info"></div>
__BODY__
<script>
function mark(section, buffer, on){
  for(const el of section.querySelectorAll('[data-buffer]')) el.classList.toggle('hl', on && el.dataset.buffer===buffer);
}
for(const section of document.querySelectorAll('section.kernel')){
  for(const el of section.querySelectorAll('[data-buffer]')){
    el.addEventListener('mouseenter',()=>{mark(section, el.dataset.buffer, true);
      const t=el.querySelector('title'); document.getElementById('info').textContent=t?t.textContent:el.dataset.buffer;});
    el.addEventListener('mouseleave',()=>mark(section, el.dataset.buffer, false));
  }
}
document.body.dataset.ready = String(document.querySelectorAll('g.tile').length);
</script></body></html>
"""

if __name__ == "__main__":
    sys.exit(main())
