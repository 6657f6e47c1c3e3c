"""Binding the dynamic dimensions of a callee at a call (``pl.dynamic`` dims bound at an incore call).

A parameter ``a: pl.Tensor[[M, N], pl.FP32]`` accepts a tensor of any extent in each dynamic dim.
When the arguments that use ``M`` agree on its extent, ``M`` is bound to it. A composite dim
(``M * 2``) is solved for its one unbound dim when it is linear in it (a 32-row argument binds
``M = 16``), and checked once its dims are bound (a 31-row argument is an error: no integer ``M``).
The callee's return types are the declared ones with the bound dims substituted, so a static caller
keeps static types and a dynamic caller (its own tensors ``[K, 128]``) passes its dims on.

When the arguments disagree (``M`` is 256 from ``a`` and 16 from ``c``; or the caller's ``N`` from
one argument and its ``M`` from another, as after a ``pl.transpose``), this is not an error: as in
the reference, each parameter's extent is what its tensor has, read at run time, and the kernel's
loads and stores are bounds-checked against the actual tensors. ``M`` then has no one value: it is
left unbound, so a return type that uses it keeps the symbolic ``M`` (a run-time extent that
``pl.tensor.dim`` reads from the tensor, never a number folded from one of the arguments), and a
composite dim that uses it is not checked. A dim's value is never read in a body (extents come from
``pl.tensor.dim(t, axis)``), so no result can depend on which argument's extent ``M`` "is".

The callee itself is compiled once for every extent (its dims stay symbolic); a kernel reads an
extent at run time with ``pl.tensor.dim(t, axis)``.
"""
from __future__ import annotations

from pypto.errors import ParserTypeError
from pypto.ir.scalar_compat import scalar_arg_fits
from pypto.ir.types import DynDim, DynExpr, RtDim, TensorType, TupleType, describe, eval_dim, solve_dim, substitute_dims


def _same_layout(at, t):
    """``at`` with the layout of ``t`` where both are ND / DN tensors: a tensor argument carries its
    strides into the kernel, which reads its logical elements whatever the parameter's layout (the
    reference passes a pl.transpose view to an ND-annotated kernel parameter, its dyn_orch_shape
    tests); only the host boundary reads bytes in the parameter's layout. MX packing must match."""
    if isinstance(at, TensorType) and isinstance(t, TensorType) and at.layout != t.layout and all(
            getattr(x, "name", "DN") == "DN" for x in (at.layout, t.layout)):
        return TensorType(at.shape, at.dtype, t.layout)
    return at


def bind_call(name: str, param_types, args, spans) -> dict:
    """Check ``args`` against ``param_types`` (``None``: not checked) and return the binding
    ``dim name -> int | DynDim``. Raises a located ParserTypeError at the first argument that does
    not fit."""
    env: dict = {}
    seen: dict = {}            # dim name -> the extents its bare occurrences get
    deferred = []
    for i, (a, t) in enumerate(zip(args, param_types)):
        if t is None:
            continue
        at = _same_layout(a.type, t)
        if isinstance(t, TensorType) and isinstance(at, TensorType) and not _dynamic(t) and _dynamic(at) \
                and at.dtype == t.dtype and len(at.shape) == len(t.shape) \
                and all(isinstance(g, RtDim) or g == p for p, g in zip(t.shape, at.shape)):
            continue   # a run-time extent (RtDim) for a static one: the kernel's accesses are bounds-checked at run time
        if not (isinstance(t, TensorType) and isinstance(at, TensorType) and _dynamic(t)):
            if at != t and not scalar_arg_fits(t, at):
                raise ParserTypeError(f"{name}() argument {i}: expected {describe(t)}, got {describe(at)}", spans[i])
            continue
        if at.dtype != t.dtype or len(at.shape) != len(t.shape):
            raise ParserTypeError(f"{name}() argument {i}: expected {describe(t)}, got {describe(at)}", spans[i])
        for axis, (p, g) in enumerate(zip(t.shape, at.shape)):
            if isinstance(p, DynExpr):
                deferred.append((i, axis, p, g))
            elif isinstance(p, DynDim):
                extents = seen.setdefault(p.name, [])
                if g not in extents:
                    extents.append(g)
            elif p != g:
                why = f"got {describe(at)}" if not isinstance(g, DynDim) else \
                    f"got the dynamic extent '{g.name}' for the static extent {p}"
                raise ParserTypeError(f"{name}() argument {i}: expected {describe(t)}, {why}", spans[i],
                                      None if not isinstance(g, DynDim) else
                                      "declare the parameter's dimension dynamic too (pl.dynamic)")
    for dim, extents in seen.items():
        if len(extents) == 1:
            env[dim] = extents[0]
        # else: the arguments disagree, each parameter keeps its own extent and ``dim`` stays
        # unbound (the module docstring): binding one of them would type the results with an
        # extent some argument does not have (a pl.tensor.dim folded to the wrong number)
    ints = {k: v for k, v in env.items() if isinstance(v, int)}
    ambiguous = {k for k, v in seen.items() if len(v) > 1}
    for i, axis, p, g in deferred:
        if isinstance(g, DynDim) or _names(p) & ambiguous:
            continue   # a dynamic caller, or a dim with no one value: the extents meet at run time
        if not solve_dim(p, g, ints):
            have = ", ".join(f"{k} = {v}" for k, v in sorted(ints.items()) if k in _names(p))
            raise ParserTypeError(
                f"{name}() argument {i}: dimension {axis} is {g}, which the dynamic dimension '{p.name}' cannot "
                f"be{' with ' + have if have else ''}", spans[i])
        env.update({k: v for k, v in ints.items() if k not in env})
    return env


def bound_type(t, env: dict):
    """``t`` with the dims ``env`` binds substituted (tensors, and tensors inside tuples)."""
    if isinstance(t, TensorType) and _dynamic(t):
        return t.with_(shape=substitute_dims(t.shape, env))
    if isinstance(t, TupleType):
        return TupleType(tuple(bound_type(x, env) for x in t.types))
    return t


def _dynamic(t: TensorType) -> bool:
    return any(isinstance(d, DynDim) for d in t.shape)


def _names(d) -> set:
    from pypto.ir.types import dim_names

    return dim_names(d)


__all__ = ["bind_call", "bound_type", "eval_dim"]
