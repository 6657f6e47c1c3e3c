"""``python -m pypto.tools.ir_trace PASSES_DUMP [-o ir_trace.html] [--context 3]``

One self-contained HTML page (no network, no external files) showing, for every pass of a
``passes_dump/`` directory, the textual diff of the printed IR against the previous stage: a sidebar
of passes with +/- line counts, a Changed / No-op / All filter, and j/k (or arrow keys) to move
between passes. Input: ``00_frontend.py`` plus gapless ``NN_after_<Pass>.py`` files. Exit codes:
0 written, 2 bad input (a missing or gapped dump, an output that cannot be written, a bad command
line), as every pypto command (1 is a finding; this tool has none). The page is written atomically.
"""
from __future__ import annotations

import argparse
import difflib
import html
import json
import re
import sys
from pathlib import Path

_PLACEHOLDER = re.compile(r"__TITLE__|__DATA__")
_NAME = re.compile(r"^(\d\d)_after_([^/\\]+)\.py$")   # any pass name (a lambda's "<lambda>" too)


class TraceError(Exception):
    """The dump directory is missing, empty, or has malformed / duplicate / missing stages."""


def collect_stages(dump_dir: Path) -> list[tuple[str, str]]:
    """``[(stage name, text)]`` in order, checking the naming contract of pass dumps."""
    if not dump_dir.is_dir():
        raise TraceError(f"{dump_dir}: not a directory (compile with dump_passes=True to get passes_dump/)")
    first = dump_dir / "00_frontend.py"
    if not first.is_file():
        raise TraceError(f"{dump_dir}: 00_frontend.py is missing")
    stages = [("frontend", first.read_text(encoding="utf-8"))]
    numbered = {}
    for p in sorted(dump_dir.glob("*.py")):
        if p.name == "00_frontend.py":
            continue
        m = _NAME.match(p.name)
        if not m:
            raise TraceError(f"{p.name}: not a pass dump name (expected NN_after_<Pass>.py)")
        n = int(m.group(1))
        if n in numbered:
            raise TraceError(f"{p.name}: stage {n:02d} appears twice ({numbered[n][0]})")
        numbered[n] = (p.name, m.group(2), p)
    for i, n in enumerate(sorted(numbered), start=1):
        if n != i:
            raise TraceError(f"stage {i:02d} is missing (found {numbered[n][0]} next)")
        stages.append((numbered[n][1], numbered[n][2].read_text(encoding="utf-8")))
    return stages


def build_page(stages: list[tuple[str, str]], title: str, context: int = 3) -> str:
    """The HTML page for ``stages``."""
    entries = []
    prev = None
    for i, (name, text) in enumerate(stages):
        lines = text.splitlines()
        if prev is None:
            diff = [" " + line for line in lines]
            plus = minus = 0
        else:
            diff = list(difflib.unified_diff(prev, lines, n=context, lineterm=""))[2:]
            plus = sum(1 for d in diff if d.startswith("+"))
            minus = sum(1 for d in diff if d.startswith("-"))
        entries.append({"index": i, "name": name, "plus": plus, "minus": minus, "changed": bool(plus or minus) or i == 0,
                        "diff": diff, "full": lines})
        prev = lines
    # JSON inside <script>: escape every character HTML could read as markup (``</script>``, ``<!--``)
    data = json.dumps(entries).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    fill = {"__TITLE__": html.escape(title), "__DATA__": data}
    # one pass over the template: a title or dump path containing "__DATA__" (or "__TITLE__") is
    # text, never a placeholder substituted again with unescaped content
    return _PLACEHOLDER.sub(lambda m: fill[m.group(0)], _TEMPLATE)


def write_page(dump_dir: Path, out: Path, context: int = 3) -> Path:
    """Build and atomically write the page; returns its path."""
    stages = collect_stages(dump_dir)
    page = build_page(stages, f"IR trace: {dump_dir}", context)
    out.parent.mkdir(parents=True, exist_ok=True)
    from pypto.safe_files import atomic_write_text

    atomic_write_text(out, page)
    return out


def build_parser() -> argparse.ArgumentParser:
    """The command line of the IR trace page (every option with its help)."""
    ap = argparse.ArgumentParser(prog="python -m pypto.tools.ir_trace", description=__doc__.splitlines()[0].replace("``", ""))
    ap.add_argument("passes_dump", type=Path, help="a passes_dump/ directory written with dump_passes=True")
    ap.add_argument("-o", "--output", type=Path, default=Path("ir_trace.html"),
                    help="where to write the page (default ir_trace.html)")
    ap.add_argument("--context", type=int, default=3, help="lines of context around each change")
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        path = write_page(args.passes_dump, args.output, args.context)
    except (TraceError, OSError) as e:
        print(f"ir_trace: error: {e}", file=sys.stderr)
        return 2   # bad input (as every pypto command: 0 done, 1 a finding, 2 bad input)
    print(f"wrote {path}")
    return 0


_TEMPLATE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body{margin:0;font:13px/1.4 system-ui,sans-serif;display:flex;height:100vh;color:#222}
#side{width:300px;overflow:auto;border-right:1px solid #ccc;background:#f7f7f7}
#side h1{font-size:14px;margin:10px}
#filters{margin:0 10px 8px}
#filters button{margin-right:4px}
#filters button.on{font-weight:bold;background:#def}
.pass{padding:4px 10px;cursor:pointer;display:flex;justify-content:space-between}
.pass.sel{background:#cde}
.pass.noop{color:#888}
.cnt .p{color:#080}.cnt .m{color:#b00}
#main{flex:1;overflow:auto;padding:0 16px}
#main h2{font-size:15px}
pre{font:12px/1.35 ui-monospace,monospace;white-space:pre}
.add{background:#e6ffec}.del{background:#ffebe9}.hunk{color:#58a}
</style></head><body>
<div id="side"><h1>__TITLE__</h1>
<div id="filters"><button data-f="all" class="on">All</button><button data-f="changed">Changed</button><button data-f="noop">No-op</button></div>
<div id="list"></div></div>
<div id="main"><h2 id="head"></h2><pre id="diff"></pre></div>
<script>
const STAGES = __DATA__;
let filter = "all", current = 0;
function visible(s){return filter==="all"||(filter==="changed")===s.changed;}
function esc(t){return t.replace(/&/g,"&amp;").replace(/</g,"&lt;").replace(/>/g,"&gt;");}
function renderList(){
  const list=document.getElementById("list"); list.innerHTML="";
  for(const s of STAGES){ if(!visible(s)) continue;
    const d=document.createElement("div"); d.className="pass"+(s.changed?"":" noop")+(s.index===current?" sel":"");
    d.dataset.index=s.index;
    d.innerHTML=`<span>${String(s.index).padStart(2,"0")} ${esc(s.name)}</span><span class="cnt"><span class="p">+${s.plus}</span> <span class="m">-${s.minus}</span></span>`;
    d.onclick=()=>show(s.index); list.appendChild(d);}
}
function show(i){
  current=i; const s=STAGES[i];
  document.getElementById("head").textContent=`${String(i).padStart(2,"0")} ${s.name}`+(i===0?" (input program)":(s.changed?` (+${s.plus} -${s.minus})`:" (no change)"));
  const out=s.diff.map(l=>{const c=l.startsWith("+")?"add":l.startsWith("-")?"del":l.startsWith("@@")?"hunk":"";return `<span class="${c}">${esc(l)}</span>`;});
  document.getElementById("diff").innerHTML=(s.diff.length?out.join("\n"):"(no change against the previous stage)");
  renderList();
}
function step(d){const vis=STAGES.filter(visible).map(s=>s.index); if(!vis.length) return;
  let k=vis.indexOf(current); k=k<0?0:Math.min(vis.length-1,Math.max(0,k+d)); show(vis[k]);}
document.addEventListener("keydown",e=>{if(e.key==="j"||e.key==="ArrowDown")step(1);if(e.key==="k"||e.key==="ArrowUp")step(-1);});
for(const b of document.querySelectorAll("#filters button")) b.onclick=()=>{filter=b.dataset.f;
  for(const o of document.querySelectorAll("#filters button")) o.classList.toggle("on",o===b); renderList();};
show((STAGES.find(s=>s.index>0&&s.changed)||STAGES[STAGES.length>1?1:0]).index);  // first pass that changed the IR
</script></body></html>
"""

if __name__ == "__main__":
    sys.exit(main())
