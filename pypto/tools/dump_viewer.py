"""Inspect tensor dumps (``RunConfig.enable_dump_args``): ``python -m pypto.tools.dump_viewer DIR``.

``DIR`` is ``<output_dir>/dfx_outputs/args_dump`` (or the work dir / ``dfx_outputs`` above it).
Without ``--export`` it prints a table (``idx task task_id stage role arg dtype shape bytes``: ``task`` is
the ``r0t3`` label the race report, doctor and swimlane use too); the filters
``--task r0t3|HEX``, ``--stage before|after``, ``--role input|output|inout``, ``--arg N`` narrow it
(``Filtered: k/n args`` first). ``--export`` writes each selected tensor to
``DIR/txt/task_<task_id>_<before|after>_<in|out|inout><arg>.txt`` (``# key: value`` headers, an
``# Overview:`` grid and a ``# Detail:`` list); ``--index N`` exports entry N only.
``--compare ARG_INDEX REF.pt`` compares the selected dumped tensor(s) of that argument with a
reference tensor saved by ``torch.save`` (max abs / rel error, mismatches under ``--rtol`` /
``--atol``); exit status 1 on a mismatch (a finding). Bad input (no dump, a torn dump, a bad
argument) exits with status 2, as every pypto command.

A *torn* dump — ``args.bin`` not the payload ``args_dump.json`` indexes (a run killed while writing,
files copied from two runs) — is refused before anything is shown: the index's ``bin_bytes`` and
``bin_sha256`` must match the file (older dumps without them: the size must be exactly what the
records cover). Record fields that become file names (``task_id``) are checked too.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

import torch

from pypto.runtime.trace import parse_task, rxty
from pypto.safe_files import atomic_write_text

_FMT = {"float32": ".6g", "float16": ".4g", "bfloat16": ".3g", "float64": ".10g"}
_DT = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64,
       "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "int64": torch.int64, "uint8": torch.uint8,
       "bool": torch.bool}


class DumpError(Exception):
    pass


def find_dump_dir(path) -> Path:
    """The ``args_dump`` directory at or under ``path``."""
    p = Path(path)
    for cand in (p, p / "args_dump", p / "dfx_outputs" / "args_dump"):
        if (cand / "args_dump.json").is_file():
            return cand
    raise DumpError(f"no args_dump.json at {p} (expected <work_dir>/dfx_outputs/args_dump)")


_TASK_ID = re.compile(r"0x[0-9a-fA-F]{1,16}")


def load_manifest(d: Path) -> dict:
    """The index of the dump in ``d``, after checking that ``args.bin`` is the payload it describes."""
    try:
        manifest = json.loads((d / "args_dump.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DumpError(f"cannot read {d / 'args_dump.json'}: {e}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("args", []), list):
        raise DumpError(f"{d / 'args_dump.json'} is not a dump index")
    check_payload(d, manifest)
    return manifest


def _nat(x) -> bool:
    return type(x) is int and x >= 0


def _well_formed(r) -> bool:
    """A record as the runtime writes it (what the viewer indexes, slices and names files after)."""
    return (isinstance(r, dict) and _TASK_ID.fullmatch(str(r.get("task_id", ""))) is not None
            and _nat(r.get("arg_index")) and r.get("role") in ("input", "output", "inout")
            and r.get("stage") in ("before_dispatch", "after_completion") and r.get("kind") in ("tensor", "scalar")
            and (r["kind"] == "scalar" or (r.get("dtype") in _DT and isinstance(r.get("shape"), list)
                                            and all(_nat(n) for n in r["shape"])
                                            and _nat(r.get("bin_offset")) and _nat(r.get("bin_size")))))


def check_payload(d: Path, manifest: dict) -> None:
    """Refuse a torn dump: ``args.bin`` must be the file the index was written with."""
    name = manifest.get("bin_file") or "args.bin"
    if name != "args.bin":
        raise DumpError(f"{d / 'args_dump.json'} names payload {name!r}; only args.bin beside it is read")
    for r in manifest.get("args", []):
        # task_id and arg_index become export file names: only the forms the runtime writes
        if not _well_formed(r):
            raise DumpError(f"{d / 'args_dump.json'} has a malformed record ({str(r)[:120]})")
    path = d / name
    size = path.stat().st_size if path.is_file() else None
    torn = (f"torn dump in {d}: args.bin does not belong to args_dump.json ({{}}); the run that wrote it was "
            "interrupted or the files come from different runs. Run again to dump afresh")
    if "bin_bytes" in manifest:
        if size != manifest["bin_bytes"]:
            raise DumpError(torn.format(f"{size} bytes on disk, the index says {manifest['bin_bytes']}"))
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        if digest.hexdigest() != manifest.get("bin_sha256"):
            raise DumpError(torn.format("its SHA-256 differs from the one recorded"))
        return
    need = max((r.get("bin_offset", 0) + r.get("bin_size", 0) for r in manifest.get("args", [])
                if r.get("kind") == "tensor" and not r.get("truncated")), default=0)
    if (size or 0) != need:
        raise DumpError(torn.format(f"{size} bytes on disk, the records cover {need}"))


def load_tensor(d: Path, manifest: dict, rec: dict) -> torch.Tensor:
    """The payload of a tensor record as a tensor of its dtype and shape."""
    if rec.get("kind") != "tensor":
        raise DumpError(f"arg {rec['arg_index']} of task {rec['task_id']} is a scalar")
    if rec.get("truncated") or not rec.get("bin_size"):
        if rec.get("numel", 0) == 0:
            return torch.empty(rec["shape"], dtype=_DT[rec["dtype"]])
        raise DumpError(f"arg {rec['arg_index']} of task {rec['task_id']} has no payload (truncated)")
    with open(d / (manifest.get("bin_file") or "args.bin"), "rb") as f:
        f.seek(rec["bin_offset"])
        raw = f.read(rec["bin_size"])
    if len(raw) != rec["bin_size"]:
        raise DumpError(f"args.bin is shorter than the manifest says (task {rec['task_id']})")
    return torch.frombuffer(bytearray(raw), dtype=_DT[rec["dtype"]]).reshape(rec["shape"]).clone()


def _match_task(rec: dict, want: str) -> bool:
    """``--task`` as the label every report uses (``r0t3``) or the record's hex id."""
    try:
        wanted = parse_task(want) if not re.fullmatch(r"[0-9a-fA-F]+", want.strip()) else int(want, 16)
        return int(rec["task_id"], 16) == wanted
    except ValueError:
        return False


def select(records: list, args) -> list:
    out = []
    for i, r in enumerate(records):
        if args.task is not None and not _match_task(r, args.task):
            continue
        if args.stage is not None and not r["stage"].startswith(args.stage):
            continue
        if args.role is not None and r["role"] != args.role:
            continue
        if args.arg is not None and r["arg_index"] != args.arg:
            continue
        if args.index is not None and i != args.index:
            continue
        out.append((i, r))
    return out


def _fmt(v, dtype: str) -> str:
    if dtype in _FMT:
        return format(float(v), _FMT[dtype])
    return str(v.item() if hasattr(v, "item") else v)


def export(d: Path, manifest: dict, rec: dict) -> Path:
    stage = "before" if rec["stage"].startswith("before") else "after"
    role = {"input": "in", "output": "out", "inout": "inout"}[rec["role"]]
    txt = d / "txt"
    txt.mkdir(exist_ok=True)
    path = txt / f"task_{rec['task_id']}_{stage}_{role}{rec['arg_index']}.txt"
    lines = [f"# {k}: {rec.get(k)}" for k in ("task_id", "role", "stage", "arg_index", "dtype", "kind",
                                               "is_contiguous", "shape", "strides", "start_offset")]
    if rec["kind"] == "scalar":
        lines += ["# Overview:", str(rec.get("value")), "# Detail:", f"[] {rec.get('value')}"]
    else:
        t = load_tensor(d, manifest, rec)
        dt = rec["dtype"]
        vals = t.float() if dt in ("float16", "bfloat16") else t
        flat = vals.reshape(-1).tolist()
        last = t.shape[-1] if t.dim() else 1
        cells = [_fmt(x, dt) for x in flat]
        w = max((len(c) for c in cells), default=1)
        lines.append("# Overview:")
        for k in range(0, len(cells), max(last, 1)):
            lines.append(" ".join(c.rjust(w) for c in cells[k:k + last]))
        lines.append("# Detail:")
        shape = list(t.shape)
        for n, c in enumerate(cells):
            idx, rem = [], n
            for s in reversed(shape):
                idx.append(rem % s)
                rem //= s
            lines.append(f"[{', '.join(str(i) for i in reversed(idx))}] {c}")
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def compare(d: Path, manifest: dict, recs: list, ref_path: str, rtol: float, atol: float, out=None) -> bool:
    # ``out`` None: the current sys.stdout, looked up now (a default bound at import would write past a
    # caller's redirect_stdout)
    out = sys.stdout if out is None else out
    try:
        ref = torch.load(ref_path, weights_only=True)
    except Exception as e:  # noqa: BLE001 - any load failure is a user error here
        raise DumpError(f"cannot load reference {ref_path}: {e}") from None
    if not isinstance(ref, torch.Tensor):
        raise DumpError(f"{ref_path} does not hold a single tensor")
    if not recs:
        raise DumpError("no dumped tensor matches the selection")
    ok_all = True
    for i, r in recs:
        t = load_tensor(d, manifest, r)
        if t.numel() != ref.numel():
            raise DumpError(f"entry {i}: dumped shape {list(t.shape)} vs reference {list(ref.shape)}")
        a = t.double().reshape(ref.shape) if t.shape != ref.shape else t.double()
        e = ref.double()
        diff = (a - e).abs()
        rel = diff / e.abs().clamp_min(1e-30)
        bad = ~torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
        n_bad = int(bad.sum())
        ok_all &= n_bad == 0
        print(f"entry {i} task {r['task_id']} {r['stage']} {r['role']} arg {r['arg_index']}: "
              f"max_abs_err={float(diff.max()) if diff.numel() else 0.0:.6e} "
              f"max_rel_err={float(rel.max()) if rel.numel() else 0.0:.6e} "
              f"mismatches={n_bad}/{a.numel()} (rtol={rtol}, atol={atol})", file=out)
        for flat in bad.reshape(-1).nonzero().reshape(-1)[:10].tolist():
            print(f"    [{flat}] dumped={a.reshape(-1)[flat].item():.6g} reference={e.reshape(-1)[flat].item():.6g}",
                  file=out)
    return ok_all


def build_parser() -> argparse.ArgumentParser:
    """The command line of the dump viewer (every option with its help)."""
    ap = argparse.ArgumentParser(prog="dump_viewer", description=__doc__.split("\n\n")[0].replace("``", ""))
    ap.add_argument("dump_dir", help="a run's work directory, its dfx_outputs/ or its args_dump/ directory")
    ap.add_argument("--task", "-t", help="only this task: its label as reports print it (r0t3) or its hex id")
    ap.add_argument("--stage", "-s", choices=("before", "after"), help="only the dumps taken before or after the task ran")
    ap.add_argument("--role", "-r", choices=("input", "output", "inout"), help="only arguments of this direction")
    ap.add_argument("--arg", "-a", type=int, help="only the argument at this position of the task")
    ap.add_argument("--index", "-i", type=int, help="only the dump with this row number (the idx column), exported as text")
    ap.add_argument("--export", "-e", action="store_true", help="write the selected dumps as text files (under txt/) and print their paths")
    ap.add_argument("--compare", nargs=2, metavar=("ARG_INDEX", "REF"),
                    help="compare the dumped tensor(s) of that argument with REF (a torch.save file); exit 1 on a mismatch")
    ap.add_argument("--rtol", type=float, default=1e-5, help="relative tolerance of --compare (default 1e-5)")
    ap.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance of --compare (default 1e-5)")
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        d = find_dump_dir(args.dump_dir)
        manifest = load_manifest(d)
        records = manifest.get("args", [])
        if args.compare:
            try:
                args.arg = int(args.compare[0])
            except ValueError:
                raise DumpError(f"--compare ARG_INDEX must be an int, got {args.compare[0]!r}") from None
            recs = [(i, r) for i, r in select(records, args) if r["kind"] == "tensor"]
            return 0 if compare(d, manifest, recs, args.compare[1], args.rtol, args.atol) else 1
        sel = select(records, args)
        if args.export or args.index is not None:
            for _, r in sel:
                print(export(d, manifest, r))
            return 0
        if len(sel) != len(records):
            print(f"Filtered: {len(sel)}/{len(records)} args")
        rows = [("idx", "task", "task_id", "stage", "role", "arg", "dtype", "shape", "bytes")]
        for i, r in sel:
            rows.append((str(i), rxty(int(r["task_id"], 16)), r["task_id"], r["stage"], r["role"], str(r["arg_index"]), r["dtype"],
                         str(r["shape"]), str(r["bin_size"]) + (" (truncated)" if r.get("truncated") else "")))
        widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
        for n, row in enumerate(rows):
            print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
            if n == 0:
                print("-" * (sum(widths) + 2 * (len(widths) - 1)))
        return 0
    except (DumpError, OSError) as e:
        print(f"dump_viewer: error: {e}", file=sys.stderr)
        return 2   # bad input; 1 is a finding (--compare: the dump differs from REF)


if __name__ == "__main__":
    sys.exit(main())
