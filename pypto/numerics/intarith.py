"""Integer arithmetic the vector unit does that torch's CPU kernels lack or leave undefined,
bit-exact; used verbatim by both executors (``_pto.wrap_binary``, ``_pto.int_div``).

* ``wrap_binary(kind, a, b)`` — ``add`` / ``sub`` / ``mul`` / ``maximum`` / ``minimum`` on the wide
  unsigned dtypes (UINT16 / UINT32 / UINT64), which torch does not implement. ``add`` / ``sub`` /
  ``mul`` wrap modulo ``2**w`` (computed on the signed views: two's complement gives the same low
  ``w`` bits); ``maximum`` / ``minimum`` compare as unsigned numbers (the signed views with the
  sign bit flipped order like the unsigned values).
* ``int_div(a, b)`` — signed integer division (TDIV on INT16 / INT32, A5), truncating toward zero
  (C semantics, what the reference's test expects). ``INT_MIN / -1`` wraps to ``INT_MIN`` (the
  two's-complement result, instead of the host's trap). A zero divisor inside the valid region is
  undefined on the device: it raises :class:`SimulationError` rather than giving a made-up value
  (outside it, where a load leaves zeros and nothing observes the lanes, the result is ``a``).
"""
from __future__ import annotations

import torch

from pypto.errors import SimulationError

_SIGNED = {2: torch.int16, 4: torch.int32, 8: torch.int64}
WIDE_UNSIGNED = (torch.uint16, torch.uint32, torch.uint64)
_ARITH = {"add": torch.add, "sub": torch.sub, "mul": torch.mul}


def wrap_binary(kind: str, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``kind`` on two tensors of one wide unsigned dtype (see the module docstring)."""
    dt = a.dtype
    sd = _SIGNED[a.element_size()]
    sa, sb = a.contiguous().view(sd), b.to(dt).contiguous().view(sd)
    if kind in _ARITH:
        r = _ARITH[kind](sa, sb)
    else:
        flip = torch.tensor(torch.iinfo(sd).min, dtype=sd)
        ka, kb = sa ^ flip, sb ^ flip          # unsigned order as signed order
        pick = (ka >= kb) if kind == "maximum" else (ka <= kb)
        r = torch.where(pick, sa, sb)
    r = r.view(dt)
    return r if out is None else out.copy_(r)


def int_div(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None, valid=None,
            what: str = "tile.div") -> torch.Tensor:
    """Signed integer ``a / b`` truncated toward zero, in the operands' dtype (see the module
    docstring). ``valid``: the operation's valid extent (a tile's), where a zero divisor is an error
    (None: the whole tile; ``()``: an extent known only at run time, not checked);
    lanes outside it are not observable (a load leaves zeros there), they get ``a``."""
    dt = a.dtype
    zero = b == 0
    if valid == ():                       # an extent known only at run time: not checked
        bad = torch.zeros_like(zero)
    elif valid is not None:
        inside = torch.zeros_like(zero)
        inside[tuple(slice(0, int(v)) for v in valid)] = True
        bad = zero & inside
    else:
        bad = zero
    if bool(bad.any()):
        idx = bad.nonzero()[0].tolist()
        raise SimulationError(f"{what}: integer division by zero at element {idx} (undefined on the device)")
    b64 = torch.where(zero, torch.ones((), dtype=torch.int64), b.to(torch.int64))
    q = torch.div(a.to(torch.int64), b64, rounding_mode="trunc")
    info = torch.iinfo(dt)
    q = torch.where(q > info.max, q - (1 << (8 * a.element_size())), q)   # INT_MIN / -1 wraps
    r = q.to(dt)
    return r if out is None else out.copy_(r)
