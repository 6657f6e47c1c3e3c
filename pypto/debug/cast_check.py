"""Cast certification: is the chain LegalizeTileCast uses bit-identical to the direct conversion?

For a ``(src, dst, platform, mode)`` pair, :func:`certify` finds the chain of native casts the
compiler will emit (:func:`pypto.backend.cast_table.cast_path`) and decides whether it equals the
hypothetical one-step cast under the same mode and overflow rules:

* sources of at most 16 bits: **proven exhaustively** — every bit pattern goes through the chain
  and through the direct cast (:func:`pypto.numerics.cast.cast_tensor`) and the results are compared
  bit for bit;
* 32-bit sources: **range analysis** (:func:`pypto.numerics.cast_exactness.classify_chain`) plus
  sampling — boundary values, the values next to every midpoint of the destination format, and a
  million random ones;
* a counterexample (input, direct result, chain result) whenever they differ.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from pypto.backend.cast_table import DTYPE_NAMES, CastPathError, cast_path
from pypto.progress import Progress, track
from pypto.numerics.cast import CARRIERS, cast_tensor, device_mode, normalize_mode
from pypto.numerics.formats import FORMAT_NAMES
from pypto.numerics.cast_exactness import classify_chain

# dtypes the numerics model covers (name -> the torch dtype a tensor of it has in pypto.numerics:
# the float8 formats, the FP4 / HF8 carriers, INT4 / UINT4 held as int8 / uint8 integers)
_TORCH = {"BOOL": torch.bool, "INT8": torch.int8, "UINT8": torch.uint8, "INT16": torch.int16,
          "UINT16": torch.uint16, "INT32": torch.int32, "UINT32": torch.uint32, "INT64": torch.int64,
          "FP16": torch.float16, "BF16": torch.bfloat16, "FP32": torch.float32,
          "INT4": torch.int8, "UINT4": torch.uint8, **{v: k for k, v in CARRIERS.items()}}
# source bits of the types whose torch dtype is wider than the type
_BITS = {"INT4": 4, "UINT4": 4, "FP4": 4}
_ALIASES = {"FLOAT16": "FP16", "HALF": "FP16", "BFLOAT16": "BF16", "FLOAT32": "FP32", "FLOAT": "FP32"}
_PLATFORM_ARCH = {"a2a3sim": "a2a3", "a5sim": "a5", "a2a3": "a2a3", "a5": "a5"}


@dataclass
class Certificate:
    """The verdict for one pair."""

    src: str
    dst: str
    arch: str
    mode: str
    chain: list[str]
    exact: Optional[bool]
    method: str
    reason: str
    counterexample: Optional[tuple] = None
    checked: int = 0

    def to_dict(self) -> dict:
        """JSON-ready form (``pypto cast-check --json``)."""
        from pypto.debug.jsonable import jsonable

        return jsonable(self)

    def format(self) -> str:
        """What ``pypto cast-check`` prints."""
        path = " -> ".join([self.src] + self.chain) if self.chain else f"{self.src} (no cast)"
        hops = len(self.chain)
        lines = [f"{self.src} -> {self.dst} on {self.arch} (mode '{self.mode}'): the compiler emits {path} "
                 f"({hops} native cast{'s' if hops != 1 else ''})"]
        if self.exact is None and not self.chain:
            lines.append(f"  verdict: REJECTED — {self.reason}")
        elif self.exact is None:
            lines.append(f"  verdict: unknown — {self.reason}")
        elif self.exact:
            lines.append(f"  verdict: EXACT — bit-identical to the direct conversion ({self.method}, "
                         f"{self.checked} values checked)")
            lines.append(f"  why: {self.reason}")
        else:
            lines.append(f"  verdict: NOT EXACT — differs from the direct conversion ({self.method})")
            lines.append(f"  why: {self.reason}")
        applied = device_mode(self.dst, self.mode) if self.chain else self.mode
        if applied != self.mode:
            lines.append(f"  note: the device rounds a cast into {self.dst} with '{applied}' whatever mode is asked "
                         "(pto-isa a5 TCVT); the simulators do the same")
        if self.counterexample is not None:
            x, direct, chained = self.counterexample
            lines.append(f"  counterexample: {self.src} {x!r} -> direct {direct!r}, chain {chained!r}")
        return "\n".join(lines)


def _name(d: str) -> str:
    d = d.strip().upper()
    return _ALIASES.get(d, d)


def _all_values(src: str) -> torch.Tensor:
    """Every value of ``src``: every bit pattern (every code of a small format)."""
    t = _TORCH[src]
    if t == torch.bool:
        return torch.tensor([False, True])
    if src == "INT4":
        return torch.arange(-8, 8, dtype=torch.int8)
    if src == "UINT4":
        return torch.arange(16, dtype=torch.uint8)
    if src in FORMAT_NAMES:
        return torch.arange(16 if src == "FP4" else 256, dtype=torch.int16).to(torch.uint8).view(t)
    bits = torch.iinfo(t).bits if not t.is_floating_point else torch.finfo(t).bits
    if bits == 8:
        return torch.arange(256, dtype=torch.int16).to(torch.uint8).view(t) if t != torch.uint8 \
            else torch.arange(256, dtype=torch.int16).to(torch.uint8)
    raw = torch.arange(65536, dtype=torch.int32).to(torch.int16)
    if t == torch.uint16:
        return torch.arange(65536, dtype=torch.int32).to(torch.uint16)
    return raw.view(t)


def _samples(src: str, dst: str, n: int, seed: int = 0) -> torch.Tensor:
    t = _TORCH[src]
    g = torch.Generator().manual_seed(seed)
    if t == torch.float32:
        rnd = torch.randint(-(2 ** 31), 2 ** 31, (n,), generator=g, dtype=torch.int64).to(torch.int32).view(torch.float32)
        special = torch.tensor([0.0, -0.0, 1.0, -1.0, 65504.0, 65519.99, 65520.0, float("inf"), float("-inf"),
                                float("nan"), 1e-45, 3.4028235e38, 2.0 ** -24, 2.0 ** -25, -35.4878, 127.5, -128.5,
                                255.5, 32767.5], dtype=torch.float32)
        return torch.cat([special, rnd, _near_midpoints(dst, t)])
    info = torch.iinfo(t)
    lo, hi = info.min, info.max
    span = torch.randint(0, 63, (n,), generator=g)
    mag = (torch.rand(n, generator=g, dtype=torch.float64) * (2.0 ** span.double())).to(torch.int64)
    sign = torch.where(torch.rand(n, generator=g) < 0.5, -1, 1) if lo < 0 else torch.ones(n, dtype=torch.int64)
    vals = (mag * sign).clamp(lo, hi)
    edges = torch.tensor([0, 1, -1, lo, hi, 65504, 65505, 65519, 65520, 70000, 2 ** 24, 2 ** 24 + 1, 2 ** 25 + 1,
                          127, 128, 255, 256, 32767, 32768], dtype=torch.int64).clamp(lo, hi)
    mids = _near_midpoints(dst, torch.int64).clamp(lo, hi)
    return torch.cat([edges, vals, mids]).to(t)


def _near_midpoints(dst: str, src_dtype: torch.dtype) -> torch.Tensor:
    """Values next to the midpoints between consecutive destination values, where double rounding
    shows: each midpoint and its neighbours one source-ULP away, over every binade."""
    if dst not in ("FP16", "BF16", "FP32"):
        return torch.empty(0, dtype=src_dtype)
    p = {"FP16": 11, "BF16": 8, "FP32": 24}[dst]
    out = []
    for e in range(0, 31 if not src_dtype.is_floating_point else 40):
        q = 2.0 ** (e - p + 1)  # destination quantum in the binade [2^e, 2^(e+1))
        for k in (1, 3, 5, 2 ** (p - 1) - 1):
            mid = 2.0 ** e + (k + 0.5) * q
            out.extend([mid, -mid])
    mids = torch.tensor(out, dtype=torch.float64)
    if src_dtype.is_floating_point:
        base = mids.to(src_dtype)
        up = torch.nextafter(base, torch.full_like(base, float("inf")))
        down = torch.nextafter(base, torch.full_like(base, float("-inf")))
        return torch.cat([base, up, down])
    m = mids.clamp(-(2.0 ** 62), 2.0 ** 62).round().to(torch.int64)
    return torch.cat([m - 1, m, m + 1]).to(src_dtype)


def _cast_any(x: torch.Tensor, dst: str, mode: str) -> torch.Tensor:
    """One cast as the device does it: the numerics model under the device's rounding for ``dst``
    (FP8 / HF8 destinations round their own way whatever the mode, :func:`device_mode`)."""
    return cast_tensor(x, dst, device_mode(dst, mode))


def _run_chain(x: torch.Tensor, hops: list[str], mode: str) -> torch.Tensor:
    for h in hops:
        x = _cast_any(x, h, mode)
    return x


def _bits(t: torch.Tensor) -> torch.Tensor:
    if t.dtype in CARRIERS:   # codes: canonical NaNs make equal results equal codes
        return t.view(torch.uint8)
    if t.dtype == torch.float32:
        return t.view(torch.int32)
    if t.dtype in (torch.float16, torch.bfloat16):
        return t.view(torch.int16)
    return t


def _value(t: torch.Tensor):
    if t.dtype in CARRIERS:   # a code of a small format: show its value (and the code)
        from pypto.numerics.formats import decode

        code = int(t.view(torch.uint8))
        return f"{decode(torch.tensor([code]), CARRIERS[t.dtype]).item()!r} (code 0x{code:02x})"
    return t.item()


def certify(src: str, dst: str, platform: str = "a2a3sim", mode: str = "round", samples: int = 1_000_000) -> Certificate:
    """Certify the ``src -> dst`` chain of ``platform`` under ``mode`` (see the module docstring)."""
    src, dst = _name(src), _name(dst)
    for role, d in (("source", src), ("destination", dst)):
        # an unknown name is bad input (the CLI's exit 2), not a "no cast path" verdict about a real pair
        if d not in DTYPE_NAMES:
            raise ValueError(f"unknown {role} dtype {d.lower()!r}; expected one of "
                             f"{', '.join(n.lower() for n in DTYPE_NAMES)} (or float16/half, bfloat16, float32/float)")
    mode = normalize_mode(mode)
    arch = _PLATFORM_ARCH.get(platform)
    if arch is None:
        raise ValueError(f"unknown platform {platform!r}; use a2a3sim or a5sim")
    try:
        chain = cast_path(src, dst, arch)
    except CastPathError as e:
        return Certificate(src, dst, arch, mode, [], None, "no chain", str(e))
    analysis = classify_chain([src] + chain, mode)
    if len(chain) <= 1:
        return Certificate(src, dst, arch, mode, chain, True, "native", "a single native instruction: nothing to compare")
    missing = [d for d in [src] + chain if d not in _TORCH]
    if missing:
        return Certificate(src, dst, arch, mode, chain, None, "not evaluated",
                           f"{', '.join(missing)} has no numeric model here, so the chain cannot be evaluated; "
                           f"analysis says: {analysis.reason}")
    st = _TORCH[src]
    bits = _BITS.get(src) or (torch.finfo(st).bits if st.is_floating_point else
                              (1 if st == torch.bool else torch.iinfo(st).bits))
    with Progress(f"cast-check {src} -> {dst}", 2 + len(chain)) as bar:
        if bits <= 16:
            bar.detail = "enumerating every bit pattern"
            x = _all_values(src)
            method = "proven exhaustively over every input bit pattern"
        else:
            bar.detail = f"sampling {samples} values"
            x = _samples(src, dst, samples)
            method = "range analysis plus sampling"
        bar.update(detail="direct cast")
        direct = _cast_any(x, dst, mode)
        bar.update(detail="chain")
        chained = x
        for h in chain:
            chained = _cast_any(chained, h, mode)
            bar.update(detail=f"chain hop -> {h}")
    db, cb = _bits(direct), _bits(chained)
    same = db == cb
    if direct.dtype.is_floating_point and direct.dtype not in CARRIERS:
        same = same | (torch.isnan(direct) & torch.isnan(chained))
    bad = (~same).nonzero().flatten()
    if bad.numel():
        i = int(bad[0])
        ce = (_value(x[i]), _value(direct[i]), _value(chained[i]))
        reason = analysis.reason if not analysis.exact else "the sampled values show double rounding"
        return Certificate(src, dst, arch, mode, chain, False, method, reason, ce, x.numel())
    if bits > 16 and not analysis.exact:
        return Certificate(src, dst, arch, mode, chain, False, method,
                           f"{analysis.reason} (no sample hit it)", None, x.numel())
    return Certificate(src, dst, arch, mode, chain, True, method, analysis.reason, None, x.numel())


def all_pairs_table(modes=("round",), samples: int = 20_000) -> str:
    """Markdown table of every modelled pair on both platforms (what docs/cast-chains.md holds)."""
    from pypto.backend.cast_table import NATIVE_CASTS

    names = sorted({n for arch in NATIVE_CASTS.values() for s, ds in arch.items() for n in (s, *ds)})
    rows = ["| src | dst | platform | mode | chain | verdict | method | counterexample |",
            "|---|---|---|---|---|---|---|---|"]
    for platform in ("a2a3sim", "a5sim"):
        for s in track(names, f"cast table ({platform}): sources", detail=lambda n: n):
            for d in names:
                if s == d:
                    continue
                for m in modes:
                    c = certify(s, d, platform, m, samples)
                    if not c.chain and c.exact is None:
                        continue  # no path: the compiler rejects the cast
                    if len(c.chain) <= 1:
                        continue  # native: nothing to certify
                    verdict = "exact" if c.exact else ("NOT exact" if c.exact is False else "unknown")
                    ce = "" if c.counterexample is None else f"{c.counterexample[0]!r} → {c.counterexample[1]!r} vs {c.counterexample[2]!r}"
                    rows.append(f"| {s} | {d} | {platform} | {m} | {' → '.join([s] + c.chain)} | {verdict} | "
                                f"{c.method} | {ce} |")
    return "\n".join(rows)
