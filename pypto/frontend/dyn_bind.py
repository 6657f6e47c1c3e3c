"""Binding the dynamic dimensions of a callee at a call (``pl.dynamic`` dims bound at an incore call).

A parameter ``a: pl.Tensor[[M, N], pl.FP32]`` accepts a tensor of any extent in each dynamic dim; the
dims of one call are bound together: every argument that uses ``M`` must give it the same extent
(``M`` is 64 from ``a`` and 48 from ``b`` is an error at the argument). A composite dim (``M * 2``)
is solved for its one unbound dim when it is linear in it (a 32-row argument binds ``M = 16``), and
checked once its dims are bound (a 31-row argument is an error: no integer ``M``). The callee's
return types are the declared ones with the bound dims substituted, so a static caller keeps static
types and a dynamic caller (its own tensors ``[K, 128]``) passes its dims on.

The callee itself is compiled once for every extent (its dims stay symbolic); a kernel reads an
extent at run time with ``pl.tensor.dim(t, axis)``.
"""
from __future__ import annotations

from pypto.errors import ParserTypeError
from pypto.ir.scalar_compat import scalar_arg_fits
from pypto.ir.types import DynDim, DynExpr, RtDim, TensorType, TupleType, describe, eval_dim, solve_dim, substitute_dims


def bind_call(name: str, param_types, args, spans) -> dict:
    """Check ``args`` against ``param_types`` (``None``: not checked) and return the binding
    ``dim name -> int | DynDim``. Raises a located ParserTypeError at the first argument that does
    not fit."""
    env: dict = {}
    source: dict = {}          # dim name -> index of the argument that bound it
    deferred = []
    for i, (a, t) in enumerate(zip(args, param_types)):
        if t is None:
            continue
        at = a.type
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
                have = env.get(p.name)
                if have is None:
                    env[p.name], source[p.name] = g, i
                elif have != g and _run_time(have, g):
                    # one argument gives a static extent, another the caller's run-time extent
                    # (``c: [M, N]`` of a dynamic orchestrator next to a ``[16, 32]`` reshape): they
                    # meet at run time, as in the reference, where the kernel's accesses are
                    # bounds-checked; the static extent is the binding (it types the results)
                    if isinstance(g, int):
                        env[p.name], source[p.name] = g, i
                elif have != g:
                    raise ParserTypeError(
                        f"{name}() argument {i}: dimension {axis} is {g} but the dynamic dimension '{p.name}' "
                        f"is {have} from argument {source[p.name]}", spans[i],
                        "every tensor that uses one pl.dynamic dimension must have the same extent there")
            elif p != g:
                why = f"got {describe(at)}" if not isinstance(g, DynDim) else \
                    f"got the dynamic extent '{g.name}' for the static extent {p}"
                raise ParserTypeError(f"{name}() argument {i}: expected {describe(t)}, {why}", spans[i],
                                      None if not isinstance(g, DynDim) else
                                      "declare the parameter's dimension dynamic too (pl.dynamic)")
    ints = {k: v for k, v in env.items() if isinstance(v, int)}
    for i, axis, p, g in deferred:
        if isinstance(g, DynDim):
            continue   # a dynamic caller: the extents meet at run time
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


def _run_time(a, b) -> bool:
    """Whether one of two extents is a run-time one (a caller's dynamic dim) and the other static."""
    return (isinstance(a, int) and isinstance(b, (DynDim, RtDim))) or (isinstance(b, int) and isinstance(a, (DynDim, RtDim)))


def _dynamic(t: TensorType) -> bool:
    return any(isinstance(d, DynDim) for d in t.shape)


def _names(d) -> set:
    from pypto.ir.types import dim_names

    return dim_names(d)


__all__ = ["bind_call", "bound_type", "eval_dim"]
