"""A tolerance the doctor may suggest, and the checks it must pass before it is printed.

A tolerance is only worth suggesting when it is justified by the data type and still has teeth:

* **justified**: ``rtol`` is ``ULP_BUDGET`` units in the last place of the lowest-precision float
  type the kernel computes in (its outputs and every tile of the lowered program), and ``atol`` is
  the same number of ULPs at the data's typical magnitude (the median of the golden's nonzero
  magnitudes). A correct kernel rounds each op to half a ULP, so a handful of ops stay well inside
  ``ULP_BUDGET`` ULPs; an error of tens of ULPs is not rounding, it is a bug;
* **with teeth**: at that tolerance an all-zeros output and a shuffled copy of the golden must both
  fail. A tolerance that accepts zeros (``rtol=atol=0.01`` on a softmax whose largest value is 0.004)
  accepts anything, and suggesting it would hide the bug the user is chasing.

:func:`suggest` returns a :class:`Tolerance` with the verdict of each check; the doctor prints it only
when every check passes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

EPS = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7, torch.float32: 2.0 ** -23, torch.float64: 2.0 ** -52}
# Why 8: every op rounds to half a ULP, and kernels chain a few ops (exp, sub, div, a short tree
# reduction); 8 ULPs covers that with room, and stays far below the tens of ULPs a long
# low-precision accumulation or a wrong op produces.
ULP_BUDGET = 8
_NAMES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64"}


@dataclass
class Tolerance:
    """A candidate tolerance and the evidence for and against it."""

    dtype: torch.dtype       # the format whose ULP justifies it
    rtol: float
    atol: float
    magnitude: float         # the data's typical magnitude (atol is ULP_BUDGET ULPs there)
    accepts_result: bool     # the kernel's result passes at this tolerance
    rejects_zeros: bool      # an all-zeros output fails
    rejects_shuffled: bool   # a shuffled golden fails

    @property
    def usable(self) -> bool:
        """Every check passed: the tolerance may be suggested."""
        return self.accepts_result and self.rejects_zeros and self.rejects_shuffled

    def describe(self) -> str:
        """One line: the numbers and what justifies them."""
        return (f"rtol={self.rtol:.3g}, atol={self.atol:.3g} ({ULP_BUDGET} ULPs of {_NAMES[self.dtype]}, at the "
                f"data's typical magnitude {self.magnitude:.3g} for atol)")

    def evidence(self) -> str:
        """What the checks found, in words."""
        parts = [("the kernel's result passes" if self.accepts_result else "the kernel's result still fails"),
                 ("an all-zeros output fails" if self.rejects_zeros else "an all-zeros output would PASS"),
                 ("a shuffled golden fails" if self.rejects_shuffled else "a shuffled golden would PASS")]
        return ", ".join(parts)

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {"dtype": _NAMES[self.dtype], "rtol": self.rtol, "atol": self.atol, "magnitude": self.magnitude,
                "accepts_result": self.accepts_result, "rejects_zeros": self.rejects_zeros,
                "rejects_shuffled": self.rejects_shuffled, "usable": self.usable}


def dtype_name(d: torch.dtype) -> str:
    """``float16`` for ``torch.float16``."""
    return _NAMES.get(d, str(d).replace("torch.", ""))


def ulp_at(magnitude: float, dtype: torch.dtype) -> float:
    """The spacing of ``dtype`` values at ``magnitude`` (the smallest normal's spacing below it)."""
    eps = EPS[dtype]
    tiny = torch.finfo(dtype).tiny
    m = max(abs(magnitude), tiny)
    return eps * 2.0 ** math.floor(math.log2(m))


def typical_magnitude(expected: dict) -> float:
    """The median magnitude of the golden's finite nonzero values (0.0 when there are none)."""
    vals = [e.detach().double().abs().flatten() for e in expected.values() if e.dtype.is_floating_point]
    if not vals:
        return 0.0
    v = torch.cat(vals)
    v = v[torch.isfinite(v) & (v > 0)]
    return float(v.median()) if v.numel() else 0.0


def passes(actual: dict, expected: dict, rtol: float, atol: float) -> bool:
    """Every output within ``rtol``/``atol`` (NaN in the golden: don't care)."""
    for k, e in expected.items():
        a = actual[k].detach().double()
        ed = e.detach().double()
        care = ~torch.isnan(ed)
        ok = torch.isclose(a, ed, rtol=rtol, atol=atol) | ~care
        if not bool(ok.all()):
            return False
    return True


def _shuffled(expected: dict) -> dict:
    g = torch.Generator().manual_seed(1234)
    out = {}
    for k, e in expected.items():
        flat = e.detach().flatten()
        out[k] = flat[torch.randperm(flat.numel(), generator=g)].reshape(e.shape)
    return out


def suggest(actual: dict, expected: dict, dtype: torch.dtype) -> Tolerance:
    """The ULP-justified tolerance for ``dtype`` at the golden's magnitude, checked against the
    kernel's result, an all-zeros output and a shuffled golden."""
    mag = typical_magnitude(expected)
    eps = EPS[dtype]
    rtol = ULP_BUDGET * eps
    atol = ULP_BUDGET * ulp_at(mag, dtype) if mag > 0 else ULP_BUDGET * eps
    zeros = {k: torch.zeros_like(e) for k, e in expected.items()}
    return Tolerance(dtype, rtol, atol, mag, passes(actual, expected, rtol, atol),
                     not passes(zeros, expected, rtol, atol), not passes(_shuffled(expected), expected, rtol, atol))


def compute_dtype(out_dtypes, program=None) -> torch.dtype:
    """The lowest-precision float format the kernel computes in: its outputs, and every tile type of
    the lowered ``program`` (a kernel that computes in FP16 and stores FP32 is an FP16 kernel)."""
    order = [torch.bfloat16, torch.float16, torch.float32, torch.float64]
    seen = {d for d in out_dtypes if d in order}
    if program is not None:
        from pypto.ir.types import TileType
        from pypto.ir.visit import iter_stmts
        from pypto.ir.nodes import AssignStmt

        for f in program.functions:
            for s in iter_stmts(f.body):
                t = getattr(getattr(s, "var", None), "type", None) if isinstance(s, AssignStmt) else None
                if isinstance(t, TileType) and t.dtype.torch in order:
                    seen.add(t.dtype.torch)
    for d in order:
        if d in seen:
            return d
    return torch.float32
