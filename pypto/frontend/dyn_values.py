"""A ``pl.dynamic`` dimension used as a run-time value inside a function body.

``NR = pl.dynamic("world_size")`` names an extent that is known only when the program runs. A
function whose parameters carry it (``inp: pl.Tensor[[NR, 64], pl.FP32]``) may also use it as a
number: ``for r in pl.range(NR):`` or ``row = r * NR``. Its value is then the extent of that
parameter's tensor, so the parser turns it into ``pl.tensor.dim(inp, 0)`` (read from the global
tensor the task was given; no load) — one function is compiled for every extent, exactly as for
its shapes. A composite dim (``NR * 2``) becomes the same arithmetic over those reads.

The parameter read is the first one, in parameter order, that has the dim as an extent. Where
the arguments agree on the dim (the usual case) which one is read does not matter; the
arguments may also give it different extents (each parameter keeps its own: see
:func:`pypto.ir.types.bind_extents`, as in the reference), and then the value is that first
parameter's extent — a rule stated in docs/language.md, "Dynamic shapes". A dim that no tensor parameter carries has no value inside the
function: that is a located error naming the fix (pass it as a ``pl.Scalar`` parameter).
"""
from __future__ import annotations

from typing import Any

from pypto.errors import ParserTypeError, Span
from pypto.ir.types import DynDim, DynExpr, RtDim, TensorType

_OPS = {"*": "mul", "+": "add", "-": "sub", "//": "floordiv"}


def is_dyn_value(v: Any) -> bool:
    """True for a ``pl.dynamic`` dim (or a composite of them) met where a value is expected."""
    return isinstance(v, DynDim) and not isinstance(v, RtDim)


def _carrier(fp, d: DynDim):
    """A tensor parameter and axis whose extent is ``d`` (the same printed dim), or None."""
    for v in getattr(fp, "param_vars", ()):
        t = v.type
        if isinstance(t, TensorType):
            for axis, e in enumerate(t.shape):
                if isinstance(e, DynDim) and not isinstance(e, RtDim) and e.name == d.name:
                    return v, axis
    return None


def dim_value(fp, d: Any, span: Span, node) -> Any:
    """The run-time INDEX scalar of dynamic dim ``d`` in the function ``fp`` is parsing (ints pass
    through unchanged). A composite dim is read whole where a parameter has it as an extent
    (``M * 2`` of an ``[M * 2, C]`` tensor), else computed from its parts."""
    if not is_dyn_value(d):
        return d
    hit = _carrier(fp, d)
    if hit is not None:
        return fp.make_call("tensor.dim", list(hit), {}, span, node)
    if isinstance(d, DynExpr):
        return fp.scalar_binop(_OPS[d.op], dim_value(fp, d.lhs, span, node), dim_value(fp, d.rhs, span, node), span)
    raise ParserTypeError(
        f"the dynamic dimension '{d.name}' is used as a value, but no tensor parameter of "
        f"'{fp.name}' has it as an extent, so its run-time value is unknown here", span,
        f"pass it as a scalar parameter ('{d.name.lower()}: pl.Scalar[pl.INDEX]') or read it from a tensor "
        "with pl.tensor.dim(t, axis)")
