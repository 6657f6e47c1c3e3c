"""Comparing a result with its golden, and saying *where* and *why* it differs.

:func:`compare` returns a :class:`ComparisonReport`: mismatches / total, max abs and rel error,
max ULP distance (in the output dtype), the worst elements with their index, NaN / Inf accounting
(a NaN in the golden means "don't care", as in the reference harness), and per-tile mismatch
counts, so a padded edge or one task's region stands out. When the output or the inputs are
FP16/BF16 and the tolerance is tighter than the format can meet, the report says so and suggests a
tolerance for the dtype. :func:`assert_close` raises with the report.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch

# Tolerances a correct kernel meets, per output precision (rtol = atol): about 8 units in the
# last place of the format, enough for a short chain of correctly rounded ops.
SUGGESTED_TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 5e-2, torch.float32: 1e-5}
_EPS = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7, torch.float32: 2.0 ** -23}
_INT_VIEW = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


@dataclass
class Element:
    """One compared element."""

    index: tuple
    actual: float
    expected: float
    abs_err: float


@dataclass
class ComparisonReport:
    """Everything :func:`compare` measured. ``str()`` is the human report."""

    name: str
    shape: tuple
    dtype: torch.dtype
    rtol: float
    atol: float
    total: int
    compared: int
    mismatches: int
    dont_care: int
    max_abs: float
    max_rel: float
    max_ulp: Optional[int]
    nan_actual: int
    inf_actual: int
    nan_unexpected: int
    worst: list[Element] = field(default_factory=list)
    tile_shape: Optional[tuple] = None
    tile_mismatches: Optional[torch.Tensor] = None
    dtype_hint: Optional[str] = None

    @property
    def passed(self) -> bool:
        """True when every compared element is within tolerance."""
        return self.mismatches == 0

    def to_dict(self) -> dict:
        """JSON-ready form (the per-tile mismatch counts as nested lists), with ``passed``."""
        from pypto.debug.jsonable import jsonable

        return jsonable(self, extra=("passed",))

    def format(self, max_rows: int = 10) -> str:
        """The multi-line report."""
        status = "matches" if self.passed else "does not match"
        out = [f"Output '{self.name}' {status} the golden ({_dt(self.dtype)}{list(self.shape)}, "
               f"rtol={self.rtol:g}, atol={self.atol:g})"]
        skipped = f" ({self.dont_care} don't-care skipped)" if self.dont_care else ""
        out.append(f"  mismatched elements: {self.mismatches}/{self.compared}{skipped}")
        ulp = f", max ULP distance {self.max_ulp}" if self.max_ulp is not None else ""
        out.append(f"  max abs error {self.max_abs:.6g}, max rel error {self.max_rel:.6g}{ulp}")
        if self.nan_actual or self.inf_actual or self.nan_unexpected:
            out.append(f"  NaN in result: {self.nan_actual} ({self.nan_unexpected} where the golden is a number), "
                       f"Inf in result: {self.inf_actual}")
        if self.worst:
            out.append(f"  worst elements (of {self.mismatches or self.compared}):")
            for e in self.worst[:max_rows]:
                out.append(f"    {list(e.index)}  actual={e.actual:.8g}  expected={e.expected:.8g}  "
                           f"abs err={e.abs_err:.3g}")
        if self.tile_mismatches is not None and self.mismatches:
            out.append(f"  mismatches per {list(self.tile_shape)} tile (rows x cols of tiles):")
            for row in self.tile_mismatches.tolist():
                out.append("    " + " ".join(f"{int(v):>6}" for v in row))
        if self.dtype_hint:
            out.append(f"  note: {self.dtype_hint}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.format()


def _dt(d: torch.dtype) -> str:
    return str(d).replace("torch.", "")


def ulp_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Units in the last place between two float tensors of one dtype: the bit patterns mapped to
    integers whose order is the float order (+0 and -0 are 0 apart), then subtracted."""
    it = _INT_VIEW[a.dtype]
    mag = (1 << (torch.iinfo(it).bits - 1)) - 1

    def ordered(x: torch.Tensor) -> torch.Tensor:
        i = x.contiguous().view(it).to(torch.int64)
        return torch.where(i < 0, -(i & mag), i)  # sign-magnitude -> two's complement order
    return (ordered(a) - ordered(b)).abs()


def _default_tiles(shape: Sequence[int]) -> Optional[tuple]:
    if len(shape) < 2:
        return None
    rows, cols = shape[-2], shape[-1]
    return (max(1, -(-rows // 8)), max(1, -(-cols // 8)))


def compare(actual: torch.Tensor, expected: torch.Tensor, rtol: float = 1e-5, atol: float = 1e-5, *,
            name: str = "out", tile_shape: Optional[Sequence[int]] = None, input_dtypes: Sequence = (),
            worst: int = 10) -> ComparisonReport:
    """Compare ``actual`` with ``expected`` (NaN in ``expected`` = don't care)."""
    if not isinstance(actual, torch.Tensor) or not isinstance(expected, torch.Tensor):
        raise TypeError("compare expects two torch tensors")
    if tuple(actual.shape) != tuple(expected.shape):
        raise ValueError(f"shape mismatch for '{name}': actual {list(actual.shape)} vs expected {list(expected.shape)}")
    a = actual.detach().to(torch.float64) if actual.dtype != torch.bool else actual.detach().double()
    e = expected.detach().to(torch.float64)
    care = ~torch.isnan(e)
    ok = torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=False) | ~care
    bad = ~ok
    diff = (a - e).abs()
    same_inf = torch.isinf(a) & torch.isinf(e) & (a == e)
    diff = torch.where(same_inf | ~care, torch.zeros_like(diff), diff)
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff)
    rel = torch.where(diff == 0, torch.zeros_like(diff), diff / e.abs().clamp_min(1e-300))
    max_ulp = None
    if actual.dtype in _INT_VIEW and expected.dtype == actual.dtype:
        u = ulp_distance(actual.detach(), expected.detach())
        fin = care & torch.isfinite(a) & torch.isfinite(e)
        max_ulp = int(u[fin].max()) if bool(fin.any()) else 0
    flat_bad = bad.flatten().nonzero().flatten()
    order = diff.flatten()[flat_bad].argsort(descending=True)[:worst] if flat_bad.numel() else torch.tensor([], dtype=torch.long)
    elements = []
    for k in flat_bad[order].tolist():
        idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(k), tuple(actual.shape))) if actual.dim() else ()
        elements.append(Element(idx, float(a.flatten()[k]), float(e.flatten()[k]), float(diff.flatten()[k])))
    tiles = tuple(tile_shape) if tile_shape is not None else _default_tiles(actual.shape)
    tile_counts = None
    if tiles is not None and actual.dim() >= 2:
        b2 = bad.reshape(-1, actual.shape[-2], actual.shape[-1]).sum(0)
        tr, tc = tiles
        nr, nc = -(-b2.shape[0] // tr), -(-b2.shape[1] // tc)
        pad = torch.zeros(nr * tr, nc * tc, dtype=torch.long)
        pad[: b2.shape[0], : b2.shape[1]] = b2
        tile_counts = pad.reshape(nr, tr, nc, tc).sum((1, 3))
    rep = ComparisonReport(
        name=name, shape=tuple(actual.shape), dtype=actual.dtype, rtol=rtol, atol=atol, total=actual.numel(),
        compared=int(care.sum()), mismatches=int(bad.sum()), dont_care=int((~care).sum()),
        max_abs=float(diff.max()) if diff.numel() else 0.0, max_rel=float(rel.max()) if rel.numel() else 0.0,
        max_ulp=max_ulp, nan_actual=int(torch.isnan(a).sum()), inf_actual=int(torch.isinf(a).sum()),
        nan_unexpected=int((torch.isnan(a) & care).sum()), worst=elements, tile_shape=tiles,
        tile_mismatches=tile_counts,
    )
    if rep.mismatches:
        rep.dtype_hint = _dtype_hint(actual.dtype, list(input_dtypes), rtol, atol, rep, e[care])
    return rep


def _dtype_hint(out_dtype, input_dtypes, rtol, atol, rep: ComparisonReport, golden=None) -> Optional[str]:
    """Why a correct low-precision kernel fails a tight tolerance, and what to use instead. The flat
    suggestion (``rtol=atol=eps``-sized) is only made when an all-zeros output would still fail it;
    for small data (a softmax over 1024 columns peaks near 0.004) ``atol`` is scaled to a few ULPs at
    the golden's typical magnitude instead (the doctor's rule, :mod:`pypto.debug.tolerance`)."""
    low = [d for d in [out_dtype, *input_dtypes] if d in (torch.float16, torch.bfloat16)]
    if not low:
        return None
    d = low[0]
    eps = _EPS[d]
    if rtol >= eps and atol >= eps:
        return None
    where = "the output is" if out_dtype == d else "an input is"
    sug = SUGGESTED_TOLERANCE[d]
    tol_text = f"rtol=atol={sug:g}"
    if golden is not None and golden.numel() and bool((golden.abs() * (1 - sug) <= sug).all()):
        # every golden value is within atol of zero: an all-zeros output would pass rtol=atol=sug
        from pypto.debug.tolerance import ULP_BUDGET, typical_magnitude, ulp_at

        mag = typical_magnitude({"g": golden})
        small = ULP_BUDGET * ulp_at(mag, d) if mag > 0 else sug
        tol_text = (f"rtol={sug:g}, atol={small:.3g} ({ULP_BUDGET} ULPs at the data's typical magnitude "
                    f"{mag:.3g}; rtol=atol={sug:g} would accept an all-zeros output here)")
    verdict = ("the mismatches are within what the format itself can represent, so the kernel may well be right"
               if rep.max_rel <= 16 * eps or (rep.max_ulp is not None and rep.max_ulp <= 16) else
               "the errors are larger than the format alone explains; look further (seed steps 2-5)")
    return (f"{where} {_dt(d)}, which carries about {round(-math.log10(eps))} decimal digits (eps {eps:.2g}); "
            f"rtol={rtol:g}/atol={atol:g} is tighter than that, so a correct {_dt(d)} kernel fails it. "
            f"Suggested tolerance for {_dt(d)}: {tol_text}. Here {verdict}.")


def assert_close(actual: torch.Tensor, expected: torch.Tensor, rtol: float = 1e-5, atol: float = 1e-5, *,
                 name: str = "out", tile_shape: Optional[Sequence[int]] = None, input_dtypes: Sequence = ()) -> ComparisonReport:
    """Raise ``AssertionError`` with the full :class:`ComparisonReport` unless all elements match."""
    rep = compare(actual, expected, rtol, atol, name=name, tile_shape=tile_shape, input_dtypes=input_dtypes)
    if not rep.passed:
        raise AssertionError(rep.format())
    return rep
