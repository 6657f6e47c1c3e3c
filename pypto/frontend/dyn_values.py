"""A ``pl.dynamic`` dimension used as a run-time value inside a function body.

``NR = pl.dynamic("world_size")`` names an extent that is known only when the program runs. A
function whose parameters carry it (``inp: pl.Tensor[[NR, 64], pl.FP32]``) may also use it as a
number: ``for r in pl.range(NR):`` or ``row = r * NR``. Its value is then read from a parameter's
tensor, so the parser turns it into ``pl.tensor.dim(inp, 0)`` (read from the global tensor the task
was given; no load) — one function is compiled for every extent, exactly as for its shapes.

Which parameter is read matters only where the arguments give the dim different extents (each
parameter keeps its own: see :func:`pypto.ir.types.bind_extents`). The rule is the reference's
(checked against its code generators, which define the symbol once per function):

* **Orchestration** (and Opaque) functions: the first tensor parameter, in parameter order and then
  axis order, whose extent is the bare dim (the reference's orchestration codegen defines
  ``int64_t M = <shape of that argument's axis>``; a composite extent ``M * 2`` is skipped there).
* **Kernels** (InCore / AIC / AIV): the first tensor parameter and axis whose extent *uses* the dim in
  an invertible form — ``M``, ``M + c``, ``c + M``, ``M - c``, ``c - M``, ``M * c``, ``c * M``,
  ``M // c`` with ``c`` an int — inverted (``a: [M * 2]`` gives ``M = pl.tensor.dim(a, 0) // 2``), as
  the reference's kernel wrapper recovers its trailing dynamic-dim arguments.

Where an orchestration function has no bare carrier, the kernel rule is applied too (the reference
would emit an undefined symbol there: we give the value rather than a build failure). A composite
dim used as a value (``pl.range(0, M * 2, 2)``) is computed from its parts, each read by the rule
above (as the reference prints ``M * 2`` over the defined ``M``). A dim no tensor parameter carries
has no value inside the function: that is a located error naming the fix (pass it as a
``pl.Scalar`` parameter). docs/language.md, "Dynamic shapes", states the rule for users.

The reference also folds ``pl.tensor.dim(t, axis)`` in an Orchestration function whose ``t`` has a
parameter's bare dim at ``axis`` onto that dim (its parser's ``_fold_tensor_dim``: one name per
extent), so such a read is the dim's value — the first bare carrier's extent, whichever tensor is
named (outside ``pl.at`` scopes: inside one the dim is the outlined kernel's, read from the tensors
the kernel captures, so there the tensor named is read). :func:`orchestration_dim_read` does the same.
"""
from __future__ import annotations

from typing import Any

from pypto.errors import ParserTypeError, Span
from pypto.ir.nodes import ConstInt
from pypto.ir.types import DynDim, DynExpr, RtDim, TensorType
from pypto.language.enums import KERNEL_TYPES, FunctionType

_OPS = {"*": "mul", "+": "add", "-": "sub", "//": "floordiv"}


def is_dyn_value(v: Any) -> bool:
    """True for a ``pl.dynamic`` dim (or a composite of them) met where a value is expected."""
    return isinstance(v, DynDim) and not isinstance(v, RtDim)


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _bare(e, name: str) -> bool:
    return isinstance(e, DynDim) and not isinstance(e, (DynExpr, RtDim)) and e.name == name


def _inverse(e, name: str):
    """How extent ``e`` gives back the dim ``name``: a list of ``(op, const, swapped)`` steps applied
    to the extent (empty for the bare dim), or None when ``e`` is not one of the invertible forms."""
    if _bare(e, name):
        return []
    if not isinstance(e, DynExpr):
        return None
    l, r = e.lhs, e.rhs
    if e.op == "+":
        c = r if _bare(l, name) else l if _bare(r, name) else None
        return [("sub", c, False)] if _is_int(c) else None
    if e.op == "-":
        if _bare(l, name) and _is_int(r):
            return [("add", r, False)]
        if _bare(r, name) and _is_int(l):
            return [("sub", l, True)]          # M = c - extent
        return None
    if e.op == "*":
        c = r if _bare(l, name) else l if _bare(r, name) else None
        return [("floordiv", c, False)] if _is_int(c) and c != 0 else None
    if e.op == "//" and _bare(l, name) and _is_int(r) and r != 0:
        return [("mul", r, False)]
    return None


def _carrier(fp, name: str, invertible: bool):
    """``(param, axis, steps)`` of the first tensor parameter and axis that gives dim ``name``: its
    bare extent, or with ``invertible`` any extent :func:`_inverse` can solve; None when none does."""
    for v in getattr(fp, "param_vars", ()):
        t = v.type
        if isinstance(t, TensorType):
            for axis, e in enumerate(t.shape):
                steps = _inverse(e, name) if invertible else ([] if _bare(e, name) else None)
                if steps is not None:
                    return v, axis, steps
    return None


def orchestration_dim_read(fp, x, axis):
    """``(param, axis)`` that ``pl.tensor.dim(x, axis)`` reads in function ``fp``: in an Orchestration
    function, where ``x``'s extent at ``axis`` is a bare dim a tensor parameter carries, that dim's
    first bare carrier (the reference's fold); None where the read stays ``x``'s own."""
    if fp.func_type != FunctionType.Orchestration or not isinstance(getattr(x, "type", None), TensorType):
        return None
    if getattr(fp, "scope_depth", 0):
        # inside a pl.at scope the reference's folded dim becomes the outlined kernel's, recovered from
        # the kernel's own (captured) tensors: the tensor named is the nearest we can say
        return None
    if not isinstance(axis, ConstInt):
        return None
    shape = x.type.shape
    i = axis.value + len(shape) if axis.value < 0 else axis.value
    if not 0 <= i < len(shape):
        return None
    d = shape[i]
    if not (isinstance(d, DynDim) and _bare(d, d.name)):
        return None
    hit = _carrier(fp, d.name, invertible=False)
    if hit is None or (hit[0] is x and hit[1] == i):
        return None
    return hit[0], ConstInt(hit[1], span=axis.span)


def dim_value(fp, d: Any, span: Span, node) -> Any:
    """The run-time INDEX scalar of dynamic dim ``d`` in the function ``fp`` is parsing (ints pass
    through unchanged); the module docstring gives the rule."""
    if not is_dyn_value(d):
        return d
    if isinstance(d, DynExpr):
        return fp.scalar_binop(_OPS[d.op], dim_value(fp, d.lhs, span, node), dim_value(fp, d.rhs, span, node), span)
    hit = None
    if fp.func_type not in KERNEL_TYPES:
        hit = _carrier(fp, d.name, invertible=False)
    if hit is None:
        hit = _carrier(fp, d.name, invertible=True)
    if hit is not None:
        param, axis, steps = hit
        value = fp.make_call("tensor.dim", [param, axis], {}, span, node)
        for op, c, swapped in steps:
            value = fp.scalar_binop(op, c, value, span) if swapped else fp.scalar_binop(op, value, c, span)
        return value
    raise ParserTypeError(
        f"the dynamic dimension '{d.name}' is used as a value, but no tensor parameter of "
        f"'{fp.name}' has it as an extent, so its run-time value is unknown here", span,
        f"pass it as a scalar parameter ('{d.name.lower()}: pl.Scalar[pl.INDEX]') or read it from a tensor "
        "with pl.tensor.dim(t, axis)")
