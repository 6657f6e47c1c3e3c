"""Is a multi-hop cast chain bit-identical to the direct cast it stands in for?

A chain ``S -> M1 -> ... -> D`` (every hop under the same rounding mode) equals the hypothetical
one-step ``S -> D`` when every intermediate holds *exactly* every source value that can land inside
D's range: then only the final hop rounds, and it rounds the same value the direct cast would. When
an intermediate must round, the chain double-rounds; that is harmless under the directed modes
(floor, ceil and trunc compose: rounding down twice is rounding down once) and can change results
under the nearest modes (rint, round, none) and round-to-odd.

This module decides that from the formats alone (the analysis behind the seed page's
INT32 -> FP32 -> FP16 argument), so it is cheap enough for a compile-time diagnostic; the
``cast-check`` tool backs each verdict by exhaustive or sampled evaluation.
"""
from __future__ import annotations

from dataclasses import dataclass

# (significand bits incl. the implicit one, max finite value, min exponent of a normal number)
_FLOATS = {
    "FP32": (24, 3.4028234663852886e38, -126),
    "FP16": (11, 65504.0, -14),
    "BF16": (8, 3.3895313892515355e38, -126),
}
_FLOATS.update({"FP4": (2, 6.0, 0), "FP8E4M3FN": (4, 448.0, -6), "FP8E5M2": (3, 57344.0, -14),
                # HF8's precision tapers (4 significand bits near 1, 2 in its outer binades): its
                # worst case is what "holds exactly" may rely on; FP8E8M0 holds powers of two only
                "HF8": (2, 32768.0, -15), "FP8E8M0": (1, 2.0 ** 127, -127)})
_INTS = {
    "BOOL": (0, 1), "INT4": (-8, 7), "UINT4": (0, 15), "INT8": (-128, 127), "UINT8": (0, 255), "INT16": (-32768, 32767), "UINT16": (0, 65535),
    "INT32": (-(2 ** 31), 2 ** 31 - 1), "UINT32": (0, 2 ** 32 - 1), "INT64": (-(2 ** 63), 2 ** 63 - 1),
}
_DIRECTED = {"floor", "ceil", "trunc"}


@dataclass(frozen=True)
class ChainVerdict:
    """Whether a chain is exact, and if not, at which hop and why."""

    exact: bool
    reason: str
    bad_hop: str | None = None


def _bound(name: str) -> float:
    """Largest magnitude a value of this type can have."""
    if name in _FLOATS:
        return _FLOATS[name][1]
    lo, hi = _INTS[name]
    return float(max(-lo, hi))


def _landing_bound(src: str, dst: str) -> float:
    """Largest source magnitude that can land inside the destination's range (for a float
    destination under round-to-nearest, up to max + half an ULP: FP16's overflow starts at 65520)."""
    if dst in _FLOATS:
        p, mx, _ = _FLOATS[dst]
        # one ULP of the largest binade is mx * 2^(1-p) / (2 - 2^(1-p)); half of it past max still rounds down
        edge = mx + mx / (2 ** p - 1) / 2
    else:
        lo, hi = _INTS[dst]
        edge = float(max(-lo, hi)) + 1.0
    return min(_bound(src), edge)


def _holds_exactly(src: str, mid: str, bound: float) -> tuple[bool, str]:
    """Does ``mid`` represent every value of ``src`` with magnitude <= ``bound`` exactly?"""
    if src in _INTS:
        if mid in _INTS:
            lo, hi = _INTS[mid]
            ok = lo <= -min(bound, -_INTS[src][0]) and hi >= min(bound, _INTS[src][1])
            return ok, "" if ok else f"{mid} cannot hold every {src} value up to {bound:g}"
        p = _FLOATS[mid][0]
        ok = bound <= 2.0 ** p
        return ok, "" if ok else f"{mid} holds integers exactly only up to 2^{p}, values reach {bound:.6g}"
    # float source
    if mid in _INTS:
        return False, f"{mid} cannot hold fractional {src} values"
    ps, _, es = _FLOATS[src]
    pm, mm, em = _FLOATS[mid]
    if pm < ps:
        return False, f"{mid} has {pm} significand bits, {src} has {ps}"
    if mm < bound:
        return False, f"{mid} overflows below {bound:.6g}"
    if em > es:
        return False, f"{mid} has fewer small exponents than {src} (subnormals round)"
    return True, ""


def classify_chain(types: list[str], mode: str = "round") -> ChainVerdict:
    """Classify the chain ``types[0] -> types[1] -> ... -> types[-1]`` under ``mode``."""
    if len(types) <= 2:
        return ChainVerdict(True, "a single native cast")
    src, dst = types[0], types[-1]
    unknown = [t for t in types if t not in _FLOATS and t not in _INTS]
    if unknown:
        return ChainVerdict(False, f"format of {', '.join(unknown)} not modelled; treat the chain as inexact")
    bound = _landing_bound(src, dst)
    for mid in types[1:-1]:
        ok, why = _holds_exactly(src, mid, bound)
        if not ok:
            if mode in _DIRECTED:
                return ChainVerdict(True, f"{why}, but directed rounding ({mode}) composes: rounding twice "
                                          "in one direction equals rounding once")
            return ChainVerdict(False, f"{why}: the hop rounds before the final one (double rounding under "
                                       f"'{mode}')", mid)
    return ChainVerdict(True, f"every intermediate holds each {src} value that lands in {dst}'s range exactly; "
                              "only the final hop rounds")
