"""Rank-reducing views: numpy-style subscripts and ``drop_dims``.

The reference's subscript rules (its language guide, "Subscript Indexing"), which we follow:

* a scalar index removes its axis, a slice keeps it; fewer indices than the rank imply trailing
  ``:``; chained subscripts compose (``C[i][j]``); an all-scalar full-rank index is an element read;
* ``pl.tensor.slice`` / ``pl.tile.slice`` / ``pl.slice`` take ``drop_dims``: axes of the full-rank
  ``shape`` (each a static unit extent) erased from the result;
* a tile is physically 2-D, so a tile result that would fall below rank 2 is promoted to 2-D
  (``[N]`` -> ``[1, N]``) with a warning at the source line;
* on the left of ``=`` the same window is written; the value has the reduced rank (or, for a tile,
  its 2-D promotion, or the window's full rank) and is reshaped back to the window.

Decision: the reduction is built as the full-rank slice followed by a ``reshape`` of it (a view in
orchestration, a tile reshape in a kernel), not as an attribute of the slice op. Every analysis
that reads a slice's region (task dependencies, batched orchestration, overlap checks) then sees the
same full-rank slice it always did, and the reshape is an op each executor already runs.
"""
from __future__ import annotations

import ast
import warnings

from pypto.errors import InvalidOperationError, ParserTypeError, Span, UnsupportedFeatureError
from pypto.ir.nodes import ConstInt, Expr
from pypto.ir.types import TileType
from pypto.frontend.parse_values import _describe_static
from pypto.ops.memory import clamped_valid


def _reduced_shape(full: list, drop: set, level: str, span: Span) -> list:
    """The result shape of a full-rank window ``full`` with the axes ``drop`` erased; a tile below
    rank 2 is promoted to 2-D (leading 1s), with a warning."""
    kept = [n for d, n in enumerate(full) if d not in drop]
    if level == "tile" and len(kept) < 2:
        promoted = [1] * (2 - len(kept)) + kept
        warnings.warn_explicit(
            f"a tile is 2-D: the rank-reduced tile {kept} is promoted to {promoted} (use pl.tile.reshape "
            "for another layout)", UserWarning, span.file or "<pypto>", span.line or 0)
        return promoted
    return kept


def reduce_rank(fp, sliced: Expr, full: list, drop: set, span: Span, node: ast.AST) -> Expr:
    """``sliced`` (a full-rank slice with extents ``full``) with the axes ``drop`` erased: the slice
    itself when the shape does not change, else a reshape of it."""
    if not drop:
        return sliced
    level = "tile" if isinstance(sliced.type, TileType) else "tensor"
    shape = _reduced_shape(full, drop, level, span)
    if tuple(shape) == tuple(sliced.type.shape):
        return sliced
    if level == "tile" and sliced.type.valid_shape is not None:
        raise UnsupportedFeatureError(
            "dropping an axis of a partial tile (one with a valid_shape narrower than its shape) is not "
            "supported: its valid region would have to be reshaped too", span,
            "keep the axis (use a slice 'i:i+1') or fill the padding first with pl.tile.fillpad")
    return fp.make_call(f"{level}.reshape", [sliced, shape], {}, span, node)


def drop_axes(op: str, drop, shape, span: Span) -> set:
    """The ``drop_dims`` argument of a slice as a set of axes, each a static unit extent of the
    full-rank ``shape``."""
    if drop is None:
        return set()
    if not isinstance(drop, (list, tuple)):
        raise InvalidOperationError(f"pl.{op}: drop_dims must be a list of axes, got {_describe_static(drop)}", span,
                                    "drop_dims=[0]")
    rank = len(shape) if isinstance(shape, (list, tuple)) else None
    axes = set()
    for d in drop:
        if isinstance(d, ConstInt):
            d = d.value
        if not isinstance(d, int) or isinstance(d, bool) or rank is None or not 0 <= d < rank:
            raise InvalidOperationError(f"pl.{op}: drop_dims entries must be constant axes in 0..{(rank or 1) - 1}, "
                                        f"got {_describe_static(d)}", span)
        n = shape[d]
        if isinstance(n, ConstInt):
            n = n.value
        if n != 1:
            raise InvalidOperationError(f"pl.{op}: drop_dims axis {d} must have extent 1 in shape, got "
                                        f"{_describe_static(n)}", span, "a dropped axis is a scalar-indexed one")
        axes.add(d)
    return axes


def split_slice_args(op: str, args: list, kwargs: dict, span: Span):
    """Take the reference's extra slice arguments out of a ``pl.<level>.slice`` call:
    ``(x, shape, offset, valid_shape=None, drop_dims=None, pad_value=None, clamp=False)`` (no
    ``clamp`` on a tile). Returns ``(args, kwargs, drop_dims)``; ``clamp=True`` becomes the explicit
    ``valid_shape`` that cuts the window back to the tensor's edge (as ``pl.load(clamp=True)``)."""
    args, kwargs = list(args), dict(kwargs)
    names = ("x", "shape", "offset", "valid_shape", "drop_dims", "pad_value", "clamp")
    if op == "tile.slice":
        names = names[:-1]
    if len(args) > len(names):
        raise InvalidOperationError(f"pl.{op} takes at most {len(names)} arguments, got {len(args)}", span)
    extra = {n: args[i] for i, n in enumerate(names) if i >= 4 and i < len(args)}
    args = args[:4]
    for n in names[4:]:
        if n in kwargs:
            if n in extra:
                raise InvalidOperationError(f"pl.{op} got multiple values for '{n}'", span)
            extra[n] = kwargs.pop(n)
    pad = extra.get("pad_value")
    if pad is not None and getattr(pad, "name", None) != "null":
        raise UnsupportedFeatureError(
            f"pl.{op}(..., pad_value=...) is not supported: a window's padding is not painted here", span,
            "slice with valid_shape=..., then fill the padding with pl.fillpad(x, pad_value)")
    clamp = extra.get("clamp", False)
    if not isinstance(clamp, bool):
        raise InvalidOperationError(f"pl.{op}: clamp must be True or False, got {_describe_static(clamp)}", span)
    if clamp:
        args, kwargs = _clamped(op, args, kwargs, span)
    return args, kwargs, extra.get("drop_dims")


def _clamped(op: str, args: list, kwargs: dict, span: Span):
    """``clamp=True``: the valid shape cut back to the tensor's edge (as ``pl.load(clamp=True)``)."""
    names = ("x", "shape", "offset", "valid_shape")
    bound = dict(zip(names, args))
    bound.update({k: v for k, v in kwargs.items() if k in names})
    valid = clamped_valid(op, bound.get("x"), bound.get("offset"), bound.get("shape"), bound.get("valid_shape"),
                          span)
    rest = {k: v for k, v in kwargs.items() if k not in names}
    return [bound["x"], bound["shape"], bound["offset"]], {**rest, "valid_shape": valid}


def write_value(fp, value: Expr, extents: list | None, drop: set, span: Span, node: ast.AST) -> Expr:
    """The value of ``dst[window] = value`` in the window's shape: ``value`` has the window's full
    rank, or its reduced rank (a tile: or that rank promoted to 2-D, leading 1s); reshaped to the
    full-rank window unless the dropped axes are all leading (a store pads leading 1s itself, for a
    value of rank 2 or more)."""
    vshape = list(value.type.shape)
    if extents is None:
        return value
    if not drop:
        if vshape != list(extents):
            raise ParserTypeError(f"the written region has shape {list(extents)} but the value has shape "
                                  f"{vshape}", span)
        return value
    kept = [n for d, n in enumerate(extents) if d not in drop]
    ok = vshape == list(extents)
    if not ok:
        lead = len(vshape) - len(kept)
        ok = lead >= 0 and all(n == 1 for n in vshape[:lead]) and vshape[lead:] == kept
    if not ok:
        raise ParserTypeError(
            f"the written window has shape {kept} (the scalar-indexed axes dropped from {list(extents)}) but the "
            f"value has shape {vshape}", span, "a scalar index removes its axis: the value must have the "
            "window's shape without it")
    if vshape == list(extents) or (sorted(drop) == list(range(len(drop))) and len(vshape) >= 2):
        return value   # leading dropped axes: the store / assemble pads a (2-D or more) value with 1s
    if isinstance(value.type, TileType) and value.type.valid_shape is not None:
        raise UnsupportedFeatureError("writing a partial tile into a window with a dropped inner axis is not "
                                      "supported", span, "fill the padding first with pl.tile.fillpad")
    level = "tile" if isinstance(value.type, TileType) else "tensor"
    return fp.make_call(f"{level}.reshape", [value, list(extents)], {}, span, node)
