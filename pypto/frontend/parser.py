"""Python source -> IR. One parser for both inputs:

* ``@pl.jit`` kernels (parsed from their source file, never executed, specialised on the argument
  shapes and dtypes given by :mod:`pypto.frontend.specialize`), and
* the printed ``@pl.program`` / ``@pl.function`` form that :mod:`pypto.ir.printer` writes.

The parser emits *pre-SSA* IR with ordinary imperative semantics; the passes ConvertToSSA and
FlattenCallExpr (:mod:`pypto.passes`) turn it into SSA with one call per statement:

* A name re-assigned with the same type re-assigns the same :class:`Var` (a Var may be the target of
  several AssignStmts); a re-assignment with another type is a new Var. A loop written without
  ``init_values`` has no iter_args: its body re-assigns the outer Var. An ``if`` without
  ``pl.yield_`` has no return_vars: its branches assign the Vars (a name defined in both branches is
  one Var). ``y = x`` copies (``AssignStmt(y, x)``), so that re-assigning ``y`` never changes ``x``.
* A call used as an argument of another call (or inside a scalar expression) stays nested.
* The explicit SSA syntax the printer writes (``pl.range(..., init_values=...)`` with ``pl.yield_``,
  an ``if`` ending in ``pl.yield_``) parses to iter_args / return_vars as written, and a name assigned
  once is one Var, so an SSA pass dump parses back to the same SSA program.

The visibility rules are checked here, with spans: a name defined only inside a loop body is not
visible after the loop, one defined in only one branch of an ``if`` not after the ``if``, and a
value defined before a loop keeps its type through the loop. Every IR node gets the span of the
Python syntax it came from, and every error raised here renders that span with a caret.

Unknown syntax is rejected by name (``visit_*`` whitelist); an unexpected exception inside the
parser is turned into an :class:`InternalError` that still points at the offending line.
"""
from __future__ import annotations

import ast
from pypto import pyast  # ast.parse behind a lock (CPython 3.11 is not thread-safe there)
import enum
import types as pytypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pypto.errors import (
    InternalError,
    InvalidOperationError,
    ParserError,
    ParserSyntaxError,
    ParserTypeError,
    PyptoError,
    Span,
    UnsupportedFeatureError,
)
from pypto.ir.nodes import (
    AssignStmt,
    BinOp,
    Call,
    ConstBool,
    ConstFloat,
    ConstInt,
    EvalStmt,
    Expr,
    ForStmt,
    FuncCall,
    Function,
    IfStmt,
    ReturnStmt,
    ScopeStmt,
    Stmt,
    TupleGetItem,
    UnaryOp,
    Var,
    YieldStmt,
)
from pypto.ir.types import (
    DynDim,
    MemRef,
    RtDim,
    ScalarType,
    TensorType,
    TileType,
    TupleType,
    Type,
    describe,
)
from pypto.language import annotations as ann
from pypto.language.constructs import DslName, DslOp, OpNamespace
from pypto.language.dtypes import BOOL, FP32, INDEX, LOW_PRECISION, TASK_ID, DataType
from pypto.language.enums import (
    KERNEL_TYPES,
    CompactMode,
    PadValue,
    TensorLayout,
    ForKind,
    FunctionType,
    Level,
    MemorySpace,
    ParamDirection,
    Role,
)
from pypto.ops.memory import check_tile_layout
from pypto.ops.registry import write_target
from pypto.frontend import loop_exits, rank_views, slot_placements, while_loops
from pypto.frontend.dyn_values import dim_value, is_dyn_value
from pypto.frontend.arrays import (
    array_annotation, array_create, array_element, array_read, array_write,
)
from pypto.ir.types import ArrayType, HandleType
from pypto.ir.nodes import BINOPS, COMPARISONS, INT_BINOPS
# the parser's task features and op binding are mixins of FunctionParser in their own modules; the
# values they share with it live in parse_values (kind_of, to_expr, ... stay importable from here)
from pypto.frontend.parse_values import (  # noqa: F401
    _UNBOUND, _SelfMethod, _assigned_names, _describe_static, _is_construct_call, _is_static, kind_of, to_expr,
)
from pypto.frontend.op_binding import OpBinding
from pypto.frontend.parser_tasks import TaskParsing

# ----------------------------------------------------------------------------- context


@dataclass
class SourceInfo:
    """Where the parsed text came from: file name and the offsets of the snippet inside the file."""

    filename: str
    line_offset: int = 0
    col_offset: int = 0

    def span(self, node: ast.AST) -> Span:
        line = getattr(node, "lineno", None)
        if line is None:
            return Span.unknown()
        return Span(self.filename, line + self.line_offset, node.col_offset + self.col_offset,
                    (node.end_lineno or line) + self.line_offset, (node.end_col_offset or 0) + self.col_offset)


@dataclass
class ParamSpec:
    """A function parameter as the parser should see it: its IR type (None for a specialisation
    constant), direction, and for constants the Python value that replaces every use."""

    name: str
    type: Type | None
    direction: ParamDirection = ParamDirection.In
    const: Any = None
    span: Span = field(default_factory=Span.unknown)


@dataclass
class Callee:
    """What a call of another function needs: its IR name, parameter types, directions, returns."""

    name: str
    param_types: tuple
    return_types: tuple[Type, ...]
    # argument positions that are specialisation constants of the callee: compiled into it, not passed
    drop: tuple = ()


class Resolver:
    """Hooks the parser calls for things outside the function being parsed.

    ``globals`` resolves free names; ``call_function`` turns a call of a Python object (a
    ``@pl.jit.incore`` dependency) into a :class:`Callee`; ``self_function`` does the same for
    ``self.f(...)`` inside a ``@pl.program`` class.
    """

    def __init__(self, globals_: dict, call_function: Callable | None = None,
                 self_function: Callable | None = None):
        self.globals = globals_
        self.call_function = call_function
        self.self_function = self_function


_BUILTINS = {"min": min, "max": max, "abs": abs, "float": float, "int": int, "len": len, "range": range,
             "True": True, "False": False, "None": None}


class _Scope(dict):
    """Name -> binding (an IR Var or a static Python value) for one region of the function."""

    def child(self) -> _Scope:
        return _Scope(self)


def _check_static_rebinds(outer, inner, loop_name: str, span: Span) -> None:
    """In a loop with ``init_values`` only the names listed there are carried, and the body is parsed
    once: a name bound to a compile-time constant before the loop and re-assigned inside it would
    keep its first value in every iteration (``x = 1.5`` then ``x = x * 2``: each iteration sees
    1.5). Refuse it instead of computing that."""
    for n, before in outer.items():
        after = inner.get(n, _UNBOUND)
        if n == loop_name or isinstance(before, Var) or after is _UNBOUND or after is before:
            continue
        if _is_static(before) and _is_static(after) and type(after) is type(before) and after == before:
            continue
        raise ParserError(f"'{n}' is a compile-time constant ({_describe_static(before)}) re-assigned inside a "
                          "loop with init_values: the body is parsed once, so every iteration would see the "
                          "value it had before the loop", span,
                          f"carry it: add it to init_values and pl.yield_ (or drop init_values and let the loop "
                          f"carry '{n}')")


def _type_detail(before: Any, after: Any) -> str:
    """When two tile types print alike (:func:`describe` omits them), what tells them apart: the
    memory space or the valid shape, e.g. `` (memory space Acc vs unset)``; else ``""``."""
    a, b = getattr(before, "type", None), getattr(after, "type", None)
    if not (isinstance(a, TileType) and isinstance(b, TileType)) or describe(a) != describe(b):
        return ""
    parts = []
    if a.memory_space != b.memory_space:
        parts.append(f"memory space {getattr(a.memory_space, 'name', 'unset')} vs "
                     f"{getattr(b.memory_space, 'name', 'unset')}")
    if a.valid_shape != b.valid_shape:
        parts.append(f"valid shape {list(a.valid_shape) if a.valid_shape else 'full'} vs "
                     f"{list(b.valid_shape) if b.valid_shape else 'full'}")
    return f" ({'; '.join(parts)})" if parts else ""


# ----------------------------------------------------------------------------- annotations


def parse_annotation(node: ast.AST, resolve: Callable[[ast.AST], Any], src: SourceInfo,
                     what: str) -> tuple[Type | None, ParamDirection, bool]:
    """Read a type annotation from source.

    Returns ``(type, direction, is_scalar_param)``; ``type`` is None for a bare ``pl.Tensor``.
    ``what`` names the thing annotated, for messages (``Parameter 'a'``).
    """
    span = src.span(node)
    head = node.value if isinstance(node, ast.Subscript) else node
    if isinstance(head, ast.Name) and head.id == "tuple" and isinstance(node, ast.Subscript):
        obj = ann.Tuple  # `-> tuple[pl.Tensor[...], ...]`: the builtin spelling of pl.Tuple[...]
    else:
        obj = resolve(head)
    if isinstance(obj, ann.Annotation):
        raise ParserTypeError(f"{what} missing type annotation", span,
                              "write the annotation in place, e.g. x: pl.Tensor[[64], pl.FP32] "
                              "(annotations are read from source, so an alias is not seen)")
    if obj in (ann.Out, ann.InOut):
        if not isinstance(node, ast.Subscript):
            raise ParserTypeError(f"{what}: pl.{obj.kind} needs a type, e.g. pl.{obj.kind}[pl.Tensor[...]]", span)
        inner, _, scalar = parse_annotation(node.slice, resolve, src, what)
        if scalar:
            raise ParserTypeError(f"{what}: a scalar parameter cannot be pl.{obj.kind}", span)
        return inner, ParamDirection.Out if obj is ann.Out else ParamDirection.InOut, False
    if isinstance(obj, DataType):
        if isinstance(node, ast.Subscript):
            raise ParserTypeError(f"{what}: a dtype is not subscriptable", span)
        if obj.name in LOW_PRECISION:   # the scalar unit has no low-precision registers
            raise ParserTypeError(f"{what}: a scalar cannot be {obj.name}; low-precision types exist only as "
                                  "tensor / tile elements (pass the value as pl.FP32 and cast a tile)", span)
        return ScalarType(obj), ParamDirection.In, True
    if obj is ann.Tensor:
        if not isinstance(node, ast.Subscript):
            return None, ParamDirection.In, False
        items = _slice_items(node.slice)
        if len(items) < 2:
            raise ParserTypeError(f"{what}: pl.Tensor needs [[shape], dtype]", span)
        shape = _shape(items[0], resolve, src, what)
        dtype = _dtype(items[1], resolve, src, what)
        layout = None
        for extra in items[2:]:
            v = resolve(extra)
            if isinstance(v, TensorLayout) and v != TensorLayout.ND:
                layout = _bare_layout(v, shape, dtype, what, src.span(extra), ast.unparse(extra))
                continue
            if isinstance(v, TensorLayout):
                continue
            if not isinstance(v, ann.TensorView):
                raise UnsupportedFeatureError(f"{what}: tensor layouts/memrefs in annotations are not supported yet",
                                              src.span(extra))
            layout = _check_tensor_view(v, shape, what, src.span(extra)) or layout
        return TensorType(shape, dtype, layout), ParamDirection.In, False
    if getattr(obj, "pypto_window", False) and isinstance(node, ast.Subscript):
        # pld.DistributedTensor[[shape], dtype]: a window view, a GM tensor any rank may write (InOut)
        items = _slice_items(node.slice)
        if len(items) != 2:
            raise ParserTypeError(f"{what}: pld.DistributedTensor needs [[shape], dtype]", span)
        return TensorType(_shape(items[0], resolve, src, what), _dtype(items[1], resolve, src, what), window=True), \
            ParamDirection.InOut, False
    if obj is ann.Tile:
        items = _slice_items(node.slice) if isinstance(node, ast.Subscript) else []
        if len(items) < 2:
            raise ParserTypeError(f"{what}: pl.Tile needs [[shape], dtype, ...]", span)
        shape = _shape(items[0], resolve, src, what)
        dtype = _dtype(items[1], resolve, src, what)
        space = valid = memref = view = None
        for extra in items[2:]:
            if _slot_memref(extra, resolve, src, what):
                continue
            v = resolve(extra)
            if isinstance(v, MemorySpace):
                space = v
            elif isinstance(v, ann.TileView):
                valid = _tile_view_valid(v.valid_shape, shape, what, src.span(extra))
                view = (v, src.span(extra))
            elif isinstance(v, ann.MemRef):
                memref = _memref(v, what, src.span(extra))
            else:
                raise ParserTypeError(f"{what}: unexpected tile attribute {_describe_static(v)}", src.span(extra))
        if view is not None:
            _check_tile_view_layout(view[0], space, what, view[1])
        return TileType(shape, dtype, space, valid, memref), ParamDirection.In, False
    if obj is ann.Scalar:
        items = _slice_items(node.slice) if isinstance(node, ast.Subscript) else []
        if len(items) != 1:
            raise ParserTypeError(f"{what}: pl.Scalar needs [dtype]", span)
        return ScalarType(_dtype(items[0], resolve, src, what)), ParamDirection.In, True
    if obj in ann.HANDLES:   # pl.PrefetchAsyncContext / AsyncEvent / AsyncSession (pypto.ops.prefetch)
        return HandleType(obj.kind), ParamDirection.In, False
    if obj is ann.Array:
        return array_annotation(node, resolve, src, what, _slice_items, _dtype), ParamDirection.In, False
    if obj is ann.Tuple:
        items = _slice_items(node.slice) if isinstance(node, ast.Subscript) else []
        return TupleType(tuple(parse_annotation(i, resolve, src, what)[0] for i in items)), ParamDirection.In, False
    raise ParserTypeError(f"{what} missing type annotation", span, "annotate it, e.g. x: pl.Tensor[[64], pl.FP32]")


def _bare_layout(layout, shape, dtype, what: str, span: Span, spelling: str = ""):
    """A bare layout item of a tensor annotation: ``MX_A_ZZ`` / ``MX_B_NN`` (the packed GM layouts of
    MX scale tensors, unpacked by ``tile.load``) on a 2-D FP8E8M0 tensor whose shape the packing
    tiles (16 x 2 blocks). ``DN`` is refused as the reference refuses it (the bare marker would make
    the annotation's shape ambiguous: a view states the layout), ``NZ`` because it is a tile layout."""
    if layout == TensorLayout.DN:
        raise ParserTypeError(
            f"{what}: pl.Tensor[..., {spelling or 'pl.DN'}] is not supported: the DN layout-only shorthand "
            "leaves open whether the shape is the stored or the logical one", span,
            "write the tensor's row-major shape with no marker and derive the column-major view where it is used: "
            "xt = pl.transpose(x, -2, -1), pl.matmul(a, b, b_trans=True) or pl.tensor.view(x, layout=pl.DN); "
            "a column-major parameter is pl.Tensor[[M, N], dtype, pl.TensorView(layout=pl.TensorLayout.DN)]")
    if layout not in (TensorLayout.MX_A_ZZ, TensorLayout.MX_B_NN):
        raise ParserTypeError(f"{what}: tensor layout {layout!r} is a tile layout (the fractal NZ of Mat / Left / "
                              "Right / Acc tiles), not a global tensor's", span,
                              "omit the layout: a tensor is ND (or a DN view); the tiles a pl.load makes get "
                              "their layout from their memory space")
    if dtype.name != "FP8E8M0" or len(shape) != 2:
        raise ParserTypeError(f"{what}: layout {layout.name} is the packed layout of a 2-D FP8E8M0 MX scale tensor, "
                              f"got {len(shape)}-D {dtype.name}", span)
    rows, cols = shape
    need = (16, 2) if layout == TensorLayout.MX_A_ZZ else (2, 16)
    if any(isinstance(d, int) and d % n for d, n in zip(shape, need)) or not all(isinstance(d, int) for d in shape):
        raise ParserTypeError(f"{what}: an {layout.name} scale tensor packs [{need[0]}, {need[1]}] blocks: its static "
                              f"shape must be multiples of them, got {list(shape)}", span)
    return layout


def _layout_strides(shape, dn: bool) -> list:
    """The packed strides of ``shape`` in the ND (row-major) or DN layout (the trailing pair
    column-major: ``stride[-2] = 1``, ``stride[-1] = shape[-2]``, the leading axes row-major over
    whole pages); None for an extent that is not a static int."""
    shape = list(shape)
    out: list = [None] * len(shape)
    order = list(range(len(shape)))
    if dn:
        order[-2], order[-1] = order[-1], order[-2]
    acc = 1
    for axis in reversed(order):
        out[axis] = acc
        acc = acc * shape[axis] if isinstance(acc, int) and isinstance(shape[axis], int) else None
    return out


def _check_tile_view_layout(v, space, what: str, span: Span) -> None:
    """The layout attributes of a ``pl.TileView(...)`` (see :class:`pypto.language.annotations.TileView`):
    ``blayout`` / ``slayout`` TileLayouts (a scale buffer's fixed ones), ``fractal`` a positive int;
    ``pad`` / ``compact`` / ``stride`` / ``start_offset`` only at their defaults."""
    try:
        check_tile_layout("pl.TileView", space, v.blayout, v.slayout, span)
    except PyptoError as e:
        raise ParserTypeError(f"{what}: {getattr(e, 'message', e)}", span, getattr(e, 'hint', None)) from None
    if v.fractal is not None and not (isinstance(v.fractal, int) and not isinstance(v.fractal, bool)
                                      and v.fractal > 0):
        raise ParserTypeError(f"{what}: pl.TileView fractal must be a positive integer (the box size in bytes), "
                              f"got {v.fractal!r}", span)
    for name, default in (("pad", PadValue.null), ("compact", CompactMode.null)):
        val = getattr(v, name)
        if val is not None and val != default:
            raise UnsupportedFeatureError(f"{what}: pl.TileView({name}={val!r}) is not supported", span,
                                          "pad a tile's invalid region with pl.tile.fillpad" if name == "pad" else
                                          f"omit {name}= (the simulators hold a tile as its logical matrix)")
    if (v.stride is not None and list(v.stride)) or v.start_offset is not None:
        raise UnsupportedFeatureError(f"{what}: pl.TileView(stride=..., start_offset=...) is not supported: a tile "
                                      "is one packed buffer", span, "take a region with pl.tile.slice")


def _check_tensor_view(v, shape, what: str, span: Span):
    """``pl.TensorView(...)`` on a tensor annotation: the packed ND view (the default) or the packed DN
    view (``layout=pl.TensorLayout.DN``, rank >= 2), see
    :class:`pypto.language.annotations.TensorView`. Returns the layout (None for ND)."""
    from pypto.language.enums import TensorLayout

    if v.layout not in (None, TensorLayout.ND, TensorLayout.DN):
        raise UnsupportedFeatureError(f"{what}: pl.TensorView(layout={v.layout!r}): a tensor view is ND or DN "
                                      f"({v.layout!r} is {'a tile layout' if v.layout == TensorLayout.NZ else 'the packed layout of an MX scale tensor, written as a bare marker'})",
                                      span, "pass layout=pl.TensorLayout.ND or pl.TensorLayout.DN")
    dn = v.layout == TensorLayout.DN
    if dn and len(shape) < 2:
        raise ParserTypeError(f"{what}: a DN view needs rank >= 2 (its last two axes are column-major), got "
                              f"shape {list(shape)}", span)
    if v.pad is not None and getattr(v.pad, "name", None) not in ("null", "zero"):
        raise UnsupportedFeatureError(f"{what}: pl.TensorView(pad={v.pad!r}) is not supported", span)
    if v.stride is not None and list(v.stride):
        want = _layout_strides(shape, dn)
        if list(v.stride) != want:
            raise UnsupportedFeatureError(f"{what}: pl.TensorView(stride={list(v.stride)}): only the packed "
                                          f"{'DN' if dn else 'row-major'} strides {want} of shape {list(shape)} are "
                                          "supported (a strided window of a larger tensor is a pl.slice of it)",
                                          span)
    if v.valid_shape is not None:
        vs = list(v.valid_shape)
        if len(vs) != len(shape) or any(isinstance(x, int) and isinstance(d, int) and not 0 < x <= d
                                        for x, d in zip(vs, shape)):
            raise ParserTypeError(f"{what}: pl.TensorView valid_shape {vs} must have one extent per dimension "
                                  f"of {list(shape)}, each at most the dimension", span)
    return TensorLayout.DN if dn else None


_UNRESOLVED = object()


def _slot_memref(node: ast.AST, resolve, src: SourceInfo, what: str) -> bool:
    """Whether ``node`` is the reference's slot placement ``pl.MemRef([name,] slots=N)[index]`` (N
    equally sized slots of one on-chip allocation, ``index`` picking one per use; the MemRef may be
    a module-level variable), after checking it. It is a placement hint for the device's memory
    planner, which removes a same-buffer hazard between iterations; the simulators' planner places
    tiles itself and runs a kernel's statements in program order, so there is no such hazard and
    the hint changes nothing (docs/compatibility.md)."""
    base = node.value if isinstance(node, ast.Subscript) else node
    try:
        ref = resolve(base)
    except PyptoError:
        return False
    if not (isinstance(ref, ann.MemRef) and ref.slots is not None):
        return False
    span = src.span(node)
    n = ref.slots
    if not isinstance(n, int) or isinstance(n, bool) or n < 1 or ref.offset is not None or ref.size is not None:
        raise ParserTypeError(f"{what}: a slot placement is pl.MemRef([\"name\",] slots=N)[index] with N a "
                              f"positive integer, got slots={n!r}", span)
    if not isinstance(node, ast.Subscript):
        raise ParserTypeError(f"{what}: pl.MemRef(slots={n}) needs the slot a tile uses: "
                              f"pl.MemRef(slots={n})[i % {n}]", span)
    idx = resolve(node.slice)   # checked like any index: its names must exist, it must be an integer
    if isinstance(idx, bool) or not (isinstance(idx, int) or (
            isinstance(idx, Expr) and isinstance(idx.type, ScalarType) and not idx.type.dtype.is_float()
            and idx.type.dtype != BOOL)):
        raise ParserTypeError(f"{what}: the slot index of pl.MemRef(slots={n})[...] must be an integer, "
                              f"got {_describe_static(idx)}", src.span(node.slice))
    if isinstance(idx, int) and not 0 <= idx < n:
        raise ParserTypeError(f"{what}: slot {idx} of pl.MemRef(slots={n}) does not exist (0..{n - 1})",
                              src.span(node.slice))
    return True


def _slice_items(node: ast.AST) -> list[ast.AST]:
    return list(node.elts) if isinstance(node, ast.Tuple) else [node]


def _tile_view_valid(valid, shape, what: str, span: Span):
    """``pl.TileView(valid_shape=[...])`` of a tile annotation: one extent per dimension, each an int
    or an integer scalar of the kernel (a run-time valid shape, as ``pl.load(..., valid_shape=)``
    gives). Anything else is a located error, not a failure inside the parser."""
    if valid is None:
        return None
    if not isinstance(valid, (list, tuple)) or len(valid) != len(shape):
        raise ParserTypeError(f"{what}: pl.TileView valid_shape must list one extent per dimension of {list(shape)}, "
                              f"got {_describe_static(valid)}", span)
    out = []
    for x in valid:
        if isinstance(x, bool) or not isinstance(x, (int, Expr)) or (
                isinstance(x, Expr) and not (isinstance(x.type, ScalarType) and x.type.dtype.is_int())):
            raise ParserTypeError(f"{what}: a pl.TileView valid_shape extent must be an int or an integer scalar, "
                                  f"got {_describe_static(x)}", span)
        out.append(x)
    return tuple(out)


def _shape(node: ast.AST, resolve, src: SourceInfo, what: str) -> tuple[int, ...]:
    if not isinstance(node, (ast.List, ast.Tuple)):
        # a shape given by a name (`pl.Tensor[shape, dtype]`, shape a module-level or closure
        # list): its value at parse time
        try:
            value = resolve(node)
        except PyptoError:
            value = None
        if not isinstance(value, (list, tuple)):
            raise ParserTypeError(f"{what}: the shape must be a list like [64, 128], got "
                                  f"{_describe_static(value) if value is not None else ast.unparse(node)}",
                                  src.span(node))
        elts = [(x, node) for x in value]
    else:
        elts = [(_UNRESOLVED, e) for e in node.elts]
    dims = []
    for pre, e in elts:
        v = resolve(e) if pre is _UNRESOLVED else pre
        if isinstance(v, DynDim):
            dims.append(v)
            continue
        if isinstance(v, Var) and isinstance(v.type, ScalarType) and v.type.dtype.is_int():
            dims.append(RtDim(v.name))   # a local's run-time extent, as printed (`buf: pl.Tensor[[rows, 32], ..]`)
            continue
        if isinstance(v, bool) or not isinstance(v, int):
            raise UnsupportedFeatureError(f"{what}: dimension must be a constant int, got {_describe_static(v)}",
                                          src.span(e))
        if v < 1:
            raise ParserTypeError(f"{what}: dimension must be >= 1, got {v} (there are no empty tensors or tiles)",
                                  src.span(e))
        dims.append(v)
    return tuple(dims)


def _dtype(node: ast.AST, resolve, src: SourceInfo, what: str) -> DataType:
    v = resolve(node)
    if not isinstance(v, DataType):
        raise ParserTypeError(f"{what}: expected a dtype like pl.FP32, got {_describe_static(v)}", src.span(node))
    if v.torch is None and v.name in LOW_PRECISION:   # INT4 / UINT4 / HF4: nothing can hold them
        raise UnsupportedFeatureError(f"{what}: {v.name} tensors and tiles are not supported: the reference has no "
                                      "4-bit storage but FP4 (see docs/compatibility.md, low-precision types)",
                                      src.span(node))
    return v


# ----------------------------------------------------------------------------- function parser


class FunctionParser(TaskParsing, OpBinding):
    """Parses one function body into IR statements."""

    def __init__(self, src: SourceInfo, resolver: Resolver, name: str, func_type: FunctionType,
                 level: Level | None = None):
        self.src = src
        self.resolver = resolver
        self.name = name
        self.func_type = func_type
        self.level = level
        self.scope = _Scope()
        self.block: list[Stmt] = []
        self.loop_locals: dict[str, Span] = {}
        self.scope_locals: dict[str, Span] = {}   # tiles / scalars of a finished pl.at scope
        self.returns: list[ReturnStmt] = []
        self.declared: dict[str, Type] = {}   # `x: T` declarations awaiting a yield target
        self.scope_depth = 0                  # nesting of pl.at scopes
        self.split_aiv_modes: list = []      # modes of the open pl.split_aiv regions (pl.aiv_shard takes it)
        self.last_bound: dict[str, Var] = {}  # name -> the Var it was last bound to (any block)
        self.hoist_to: tuple | None = None    # (block before the pl.at scope, the scope's body block)
        self.fdef: ast.FunctionDef | None = None  # the function being parsed (look-ahead of loops)
        self.last_value: dict[int, Any] = {}  # id(Var) -> the value last assigned to it
        self.manual_depth = 0                 # nesting of pl.manual_scope()
        # one entry per enclosing loop body / if branch: the scopes whose Vars a re-assignment in it
        # may target (the bindings at its entry; for an else branch also the then branch's result),
        # so that `x = <other type>; x = <x's type>` inside a loop re-assigns the carried Var again
        self.frames: list[tuple[dict, ...]] = []

    # -------------------------------------------------------------- entry
    def parse(self, fdef: ast.FunctionDef, params: list[ParamSpec],
              return_types: tuple[Type, ...] | None = None) -> Function:
        self.fdef = fdef
        pvars, dirs = [], []
        for p in params:
            if p.type is None:
                self.scope[p.name] = p.const
                continue
            if isinstance(p.type, ArrayType):   # (pypto.ops.array_ops: one kernel's stack)
                raise ParserTypeError(f"parameter '{p.name}': a pl.Array cannot be a parameter, an on-core array "
                                      "lives in one kernel", p.span, "create it with pl.array.create in the kernel")
            if isinstance(p.type, HandleType):   # (pypto.ops.prefetch: kernel-local handles)
                raise ParserTypeError(f"parameter '{p.name}': a pl.{p.type.kind} cannot be a parameter, a prefetch "
                                      "handle lives in one kernel", p.span,
                                      "make it in the kernel: pl.prefetch.make_context() / async_prefetch / session")
            v = Var(p.name, p.type, p.span)
            self.scope[p.name] = v
            pvars.append(v)
            dirs.append(p.direction)
        # (pypto.frontend.dyn_values: the tensors a dynamic dim is read from; dyn_value_error names them)
        self.param_vars = tuple(pvars)
        body = list(fdef.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # docstring
        stmts = self.parse_block(body)
        if self.func_type == FunctionType.InCore and not self.returns and not return_types:
            # the reference's form without a return: a kernel with no return annotation that writes
            # its Out / InOut parameters (``stage = pl.store(chunk, [0, 0], stage)``) returns their
            # final values, as if it ended with ``return stage``
            implicit = [self.scope.get(v.name) for v, d in zip(pvars, dirs) if d != ParamDirection.In]
            if implicit and all(isinstance(x, Var) for x in implicit):
                r = ReturnStmt(tuple(implicit), self.src.span(fdef))
                self.returns.append(r)
                stmts = [*stmts, r]
        if self.func_type == FunctionType.InCore and not self.returns:
            outs = [v.name for v, d in zip(pvars, dirs) if d != ParamDirection.In]
            if outs or return_types:
                raise ParserSyntaxError(
                    f"InCore function '{self.name}' has no return statement: a kernel hands its results back "
                    f"by returning its Out/InOut parameters ({', '.join(outs) or 'none declared'})",
                    self.src.span(fdef), f"end it with 'return {', '.join(outs) or '...'}'")
        if return_types is None:
            return_types = tuple(v.type for v in self.returns[-1].values) if self.returns else ()
        return Function(self.name, tuple(pvars), tuple(dirs), tuple(return_types), tuple(stmts),
                        self.func_type, self.level, self.src.span(fdef),
                        ptoas_refusals=slot_placements.ptoas_refusals(fdef, self.resolve_static, self.span))

    # -------------------------------------------------------------- helpers
    def span(self, node: ast.AST) -> Span:
        return self.src.span(node)

    def emit(self, s: Stmt) -> None:
        self.block.append(s)

    def parse_block(self, stmts: list[ast.stmt]) -> list[Stmt]:
        saved, self.block = self.block, []
        try:
            for s in stmts:
                self.stmt(s)
            return self.block
        finally:
            self.block = saved

    def stmt(self, node: ast.stmt) -> None:
        method = getattr(self, f"stmt_{type(node).__name__}", None)
        if method is None:
            raise ParserSyntaxError(f"'{type(node).__name__}' statements are not supported in a kernel",
                                    self.span(node))
        try:
            method(node)
        except PyptoError:
            raise
        except Exception as e:  # a bug in the parser: still point at the user's line
            raise InternalError(f"parser failed on this statement: {type(e).__name__}: {e}",
                                self.span(node)) from e

    def bind(self, name: str, value: Any, node: ast.AST) -> None:
        self.scope[name] = value
        self.loop_locals.pop(name, None)
        self.scope_locals.pop(name, None)
        if isinstance(value, Var):
            self.last_bound[name] = value

    def assignable(self, name: str, t: Type) -> Var | None:
        """The Var an assignment of a ``t`` value to ``name`` re-assigns, or None for a new Var.

        Pre-SSA form: the Var ``name`` is bound to, else the one it was bound to on entry of an
        enclosing loop body / if branch (innermost first), else — in an else branch — the Var the
        then branch left it bound to; the first of these with exactly type ``t``."""
        cands = [self.scope.get(name, _UNBOUND)]
        for frame in reversed(self.frames):
            cands.extend(sc.get(name, _UNBOUND) for sc in frame)
        from pypto.ir.scalar_compat import same_representation

        for c in cands:
            if isinstance(c, Var) and (c.type == t or same_representation(c.type, t)):
                return c   # an INDEX value re-assigns an INT64 Var and back: one representation
        return None

    def target_var(self, name: str, t: Type, span: Span) -> Var:
        """The Var to assign for ``name = <t value>``: an existing one (:meth:`assignable`) or a new one."""
        return self.assignable(name, t) or Var(name, t, span)

    def define(self, name: str, value: Any, node: ast.AST, ann_type: Type | None = None) -> Any:
        """``name = value``: an IR value is assigned to the name's Var (:meth:`target_var`); a static
        Python value is bound as is."""
        span = self.span(node)
        cur = self.scope.get(name, _UNBOUND)
        if not isinstance(value, Expr) and isinstance(value, (bool, int, float)) and self.frames \
                and isinstance(cur, Var) and isinstance(cur.type, ScalarType) and cur.type.dtype != TASK_ID:
            value = self._scalar_const(value, cur, node)  # `s = 5` in a loop carrying s: a runtime assignment
        if not isinstance(value, Expr):
            self.bind(name, value, node)
            return value
        t = value.type
        if ann_type is not None and not isinstance(value, Var):
            self._check_annotation(t, ann_type, name, span)
            t = _narrowed(ann_type, t)
            if isinstance(value, Call) and isinstance(t, ScalarType) and isinstance(value.type, ScalarType) \
                    and t.dtype != value.type.dtype:
                # `m: pl.Scalar[pl.INT64] = pl.tensor.dim(a, 0)`: an integer annotation of an INDEX
                # result (or the reverse) is accepted, as the reference does, and the op keeps the
                # type its rule gives (re-typing the call would contradict the rule: the verifier
                # rejects it); INT64 and INDEX share one representation
                t = value.type
            if isinstance(value, ConstInt) and isinstance(t, ScalarType) and t.dtype != value.dtype:
                value = ConstInt(value.value, t.dtype, value.span)  # `n: pl.Scalar[pl.INT64] = 0`
            if hasattr(value, "type") and not isinstance(value, (ConstInt, ConstFloat, ConstBool)):
                # printed IR annotates what passes decided (memory space, address): the value
                # carries the same type as its Var, as the passes build it
                value = value.replace(type=t)
        var = self.target_var(name, t, span)
        self.last_value[id(var)] = value
        if var is not value:
            # `y = x` too: a copy, so that a later re-assignment of y leaves x alone (ConvertToSSA
            # drops the copy again)
            self.emit(AssignStmt(var, value, span))
        self.bind(name, var, node)
        return var

    def bind_result(self, name: str, var: Var, node: ast.AST) -> None:
        """Bind ``name`` to ``var``, a Var a statement just defined (a loop or if result): if the name
        has a Var of that type to re-assign, copy into it (pre-SSA), else the name is ``var``."""
        target = self.assignable(name, var.type)
        if target is not None and target is not var:
            self.emit(AssignStmt(target, var, self.span(node)))
            var = target
        self.bind(name, var, node)

    def _check_annotation(self, inferred: Type, annotated: Type, name: str, span: Span) -> None:
        same = type(inferred) is type(annotated)
        if same and isinstance(inferred, (TensorType, TileType)):
            same = _dims_agree(inferred.shape, annotated.shape) and inferred.dtype == annotated.dtype
        elif same and isinstance(inferred, ScalarType):
            from pypto.ir.scalar_compat import dtypes_compatible

            same = dtypes_compatible(annotated.dtype, inferred.dtype)
        if not same:
            raise ParserTypeError(f"annotation of '{name}' is {describe(annotated)} but the value is "
                                  f"{describe(inferred)}", span)

    # -------------------------------------------------------------- statements
    def stmt_While(self, node: ast.While) -> None:
        while_loops.parse_while(self, node)

    def stmt_Pass(self, node: ast.Pass) -> None:
        pass

    def stmt_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a string statement is a comment
        if _is_construct_call(node.value, self.resolve_static, "yield_"):
            raise ParserSyntaxError("pl.yield_ must be the last statement of a loop body or if branch",
                                    self.span(node))
        if _is_construct_call(node.value, self.resolve_static, "cond"):
            while_loops.refuse_stray_cond(self, node)
        for directive in ("static_print", "static_assert"):
            if _is_construct_call(node.value, self.resolve_static, directive):
                getattr(self, f"directive_{directive}")(node.value)
                return
        if bind_dynamic_call(node.value) is not None:
            self.bind_dynamic(node.value)
            return
        v = self.expr(node.value)
        name = self._written_name(v)
        if name is not None:
            # `pl.store(t, offs, out)` as a statement writes `out` all the same: rebind the name to
            # the store's result, so that the write is a new version of `out` (an EvalStmt would
            # leave the pl.at scope reading `out` only: its task an INPUT of `out`, its readers
            # unordered after it)
            self.define(name, v, node)
            return
        if isinstance(v, Expr) and not isinstance(v, Var):
            self.emit(EvalStmt(v, self.span(node)))

    def bind_dynamic(self, call: ast.Call) -> None:
        """``t.bind_dynamic(dim, M)``: a declaration the ``@pl.jit`` specializer already applied to
        the parameter's type (:func:`pypto.frontend.specialize`); here it is only checked."""
        span = self.span(call)
        t = self.expr(call.func.value)
        if len(call.args) != 2 or call.keywords:
            raise ParserTypeError("bind_dynamic takes (dim, pl.dynamic(...))", span, "a.bind_dynamic(0, M)")
        dim, var = self.expr(call.args[0]), self.expr(call.args[1])
        if not (isinstance(t, Var) and isinstance(t.type, TensorType)):
            raise ParserTypeError(f"bind_dynamic is a method of a tensor parameter, not of {_describe_static(t)}",
                                  span)
        if type(dim) is not int or not isinstance(var, DynDim):
            raise ParserTypeError("bind_dynamic takes a constant dimension and a pl.dynamic(...) variable", span,
                                  "M = pl.dynamic(\"M\"); a.bind_dynamic(0, M)")
        rank = len(t.type.shape)
        if not -rank <= dim < rank or t.type.shape[dim] != var:
            raise ParserTypeError(
                f"'{t.name}'.bind_dynamic({dim}, {var.name}): dimension {dim} of {describe(t.type)} is not "
                f"'{var.name}'", span, "bind_dynamic applies to a bare pl.Tensor parameter of a @pl.jit kernel; "
                "with an annotated shape, write the pl.dynamic variable in the annotation")

    def _written_name(self, v: Any) -> str | None:
        """The name bound to the tensor a write op (``OpDef.writes``) call ``v`` writes into."""
        if not isinstance(v, Call):
            return None
        idx = write_target(v.op, updates=True)
        if idx is None or idx >= len(v.args) or not isinstance(v.args[idx], Var):
            return None
        tgt = v.args[idx]
        for name, bound in self.scope.items():
            if bound is tgt:
                return name
        return None

    def stmt_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            raise ParserSyntaxError("chained assignment is not supported", self.span(node))
        self.assign(node.targets[0], node.value, node)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise ParserSyntaxError("only a plain name can be annotated", self.span(node.target))
        if node.value is None:
            # `x: T` declares the type of a loop/if result bound by the pl.yield_ that follows
            t, _, _ = parse_annotation(node.annotation, self.resolve_static, self.src, f"Variable '{node.target.id}'")
            self.declared[node.target.id] = t
            return
        t, _, _ = parse_annotation(node.annotation, self.resolve_static, self.src,
                                   f"Variable '{node.target.id}'")
        value = self.expr(self._typed_by_annotation(node.value, t, _tile_view_valid_node(node.annotation)))
        if isinstance(t, ScalarType) and isinstance(value, (bool, int, float)) and t.dtype != TASK_ID:
            # `s: pl.Scalar[pl.INDEX] = 0` declares a scalar variable (the printed form of an
            # assignment of a constant; typically a loop-carried accumulator), not a constant
            value = self._scalar_const(value, Var(node.target.id, t, self.span(node)), node)
        if t is not None and isinstance(value, Var):
            self._check_annotation(value.type, t, node.target.id, self.span(node))
        self.define(node.target.id, value, node, t)

    def _typed_by_annotation(self, value: ast.expr, t, valid_node=None) -> ast.expr:
        """``x: pl.Tile[[16, 16], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0)``: an op whose result
        type only the annotation tells (a cross-core pop) gets ``shape`` / ``dtype`` /
        ``target_memory`` from it, unless the call passes them."""
        if not (isinstance(value, ast.Call) and isinstance(t, TileType)):
            return value
        try:
            fn = self.resolve_static(value.func)
        except ParserError:
            return value
        name = getattr(fn, "name", None)
        if not (isinstance(name, str) and name.rsplit(".", 1)[-1] in ("tpop_from_aic", "tpop_from_aiv")):
            return value
        given = {k.arg for k in value.keywords}
        extra = [ast.keyword(k, ast.copy_location(ast.Constant(v), value)) for k, v in
                 (("shape", list(t.shape)), ("dtype", t.dtype), ("target_memory", t.memory_space))
                 if k not in given and v is not None]
        if t.valid_shape is not None and "valid_shape" not in given and valid_node is not None:
            # the annotation's pl.TileView(valid_shape=[...]) (ints or scalars of the kernel)
            extra.append(ast.keyword("valid_shape", valid_node))
        return ast.copy_location(ast.Call(value.func, value.args, value.keywords + extra), value)

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise ParserSyntaxError("augmented assignment needs a plain name", self.span(node))
        fake = ast.BinOp(left=ast.Name(node.target.id, ast.Load()), op=node.op, right=node.value)
        ast.copy_location(fake, node)
        ast.fix_missing_locations(fake)
        self.define(node.target.id, self.expr(fake), node)

    def assign(self, target: ast.expr, value_node: ast.expr, node: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            self.define(target.id, self.expr(value_node), node)
        elif isinstance(target, ast.Subscript):
            self.subscript_assign(target, value_node, node)
        elif isinstance(target, ast.Tuple) and (_is_construct_call(value_node, self.resolve_static, "submit")
                                                or _is_construct_call(value_node, self.resolve_static, "spmd_submit")):
            if len(target.elts) != 2 or not all(isinstance(t, ast.Name) for t in target.elts):
                raise ParserSyntaxError("write 'res, tid = pl.submit(...)'", self.span(target))
            call = self.submit_call(value_node)
            tid_name = target.elts[1].id
            tid = self.target_var(tid_name, ScalarType(TASK_ID), self.span(target.elts[1]))
            self.define(target.elts[0].id, call.replace(task_id_var=tid), node)
            self.bind(tid_name, tid, target.elts[1])
        elif isinstance(target, ast.Tuple):
            value = self.expr(value_node)
            names = [t.id if isinstance(t, ast.Name) else None for t in target.elts]
            if None in names:
                raise ParserSyntaxError("tuple targets must be plain names", self.span(target))
            if isinstance(value, Expr) and isinstance(value.type, TupleType):
                if len(value.type.types) != len(names):
                    raise ParserTypeError(f"cannot unpack {len(value.type.types)} values into {len(names)} names",
                                          self.span(node))
                parts = _result_parts(value)
                if parts is not None:
                    # an op with several results (gather_compare): one call per result, ``part=...``
                    for n, part in zip(names, parts):
                        self.define(n, parts[part], node)
                    return
                holder = value
                if not isinstance(value, Var):
                    holder = Var("ret", value.type, self.span(node))
                    self.emit(AssignStmt(holder, value, self.span(node)))
                for i, (n, t) in enumerate(zip(names, value.type.types)):
                    self.define(n, TupleGetItem(holder, i, t, self.span(node)), node)
            elif isinstance(value, (tuple, list)) and len(value) == len(names):
                for n, v in zip(names, value):
                    self.define(n, v, node)
            elif isinstance(value_node, ast.Tuple) and len(value_node.elts) == len(names):
                vals = [self.expr(e) for e in value_node.elts]
                for n, v in zip(names, vals):
                    self.define(n, v, node)
            else:
                raise ParserTypeError(f"cannot unpack {_describe_static(value)} into {len(names)} names",
                                      self.span(node))
        else:
            raise ParserSyntaxError(f"cannot assign to {type(target).__name__}", self.span(target))

    def subscript_assign(self, target: ast.Subscript, value_node: ast.expr, node: ast.stmt) -> None:
        """``out[...] = e``: write ``e`` into the tensor ``out`` (``pl.assemble`` / ``pl.store``) or the tile
        ``out`` (``tile.assemble``); scalar indices write a window with those axes dropped."""
        if not isinstance(target.value, ast.Name):
            raise ParserSyntaxError("the written tensor must be a plain name", self.span(target))
        name = target.value.id
        dst = self.lookup(name, target.value)
        span = self.span(node)
        if isinstance(dst, Expr) and isinstance(dst.type, ArrayType):   # arr[i] = v (pl.Array)
            self.define(name, array_write(self, dst, target, value_node, node), node)
            return
        if not (isinstance(dst, Expr) and isinstance(dst.type, (TensorType, TileType))):
            raise ParserTypeError(f"'{name}[...] = ...' needs '{name}' to be a Tensor or Tile, got "
                                  f"{_describe_static(dst)}", self.span(target.value))
        if dst.type.dtype == TASK_ID:  # tids[i] = tid (a TaskId array)
            idx = self.expr(target.slice)
            if kind_of(idx) != "scalar":
                raise ParserTypeError(f"a TaskId array takes one scalar index, got {_describe_static(idx)}",
                                      self.span(target.slice))
            value = self.expr(value_node)
            if not (isinstance(value, Expr) and value.type == ScalarType(TASK_ID)):
                raise ParserTypeError(f"'{name}[i] = ...' stores a TaskId, got {_describe_static(value)}",
                                      self.span(value_node))
            self.define(name, self.make_call("tensor.task_id_set", [dst, idx, value], {}, span, node), node)
            return
        level = "tile" if isinstance(dst.type, TileType) else "tensor"
        offsets, extent, drop = self.slice_region(target.slice, dst.type.shape, target, level)
        value = self.expr(value_node)
        if not isinstance(value, Expr) or not isinstance(value.type, (TensorType, TileType)):
            raise ParserTypeError(f"'{name}[...] = value' needs a Tensor or Tile value, got {_describe_static(value)}",
                                  self.span(value_node), "use pl.full(...) for a constant tensor")
        value = rank_views.write_value(self, value, extent, drop, span, node)
        if isinstance(dst.type, TileType):   # tile[...] = t: the reference's tile.assemble
            if not isinstance(value.type, TileType):
                raise ParserTypeError(f"'{name}[...] = value' writes a Tile: the value must be a Tile, got "
                                      f"{_describe_static(value)}", self.span(value_node))
            result = self.make_call("tile.assemble", [dst, value, offsets], {}, span, node)
        elif isinstance(value.type, TileType):
            result = self.make_call("tile.store", [value, offsets, dst], {}, span, node)
        else:
            result = self.make_call("tensor.assemble", [dst, value, offsets], {}, span, node)
        self.define(name, result, node)

    def axis_index(self, it: ast.expr, level: str):
        """A scalar index of a view or written window (``C[i]``): an integer scalar, not negative, and
        static on a tile (a tile's windows are fixed at compile time)."""
        i = self.expr(it)
        if kind_of(i) != "scalar" or isinstance(i, (float, bool)):
            raise ParserTypeError(f"an index must be an integer scalar or a slice, got {_describe_static(i)}",
                                  self.span(it))
        if isinstance(i, int) and i < 0:
            raise UnsupportedFeatureError("negative indices are not supported", self.span(it))
        if level == "tile" and not _is_static(i):
            raise ParserTypeError("tile indices must be static", self.span(it))
        return i

    def slice_region(self, sl: ast.expr, shape: tuple, node: ast.AST, level: str = "tensor"):
        """Offsets (list), extent (list, or None when not static) and dropped axes (the scalar-indexed
        ones, each a unit extent) of a written subscript region; missing trailing indices are ':'."""
        items = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        if len(items) > len(shape):
            raise ParserTypeError(f"subscript has {len(items)} indices, the tensor has rank {len(shape)}",
                                  self.span(node))
        if len(items) == len(shape) and not any(isinstance(it, ast.Slice) for it in items):
            raise UnsupportedFeatureError("writing one element with 't[i, j] = v' is not supported", self.span(node),
                                          "write a region: t[i:i+1, j:j+1] = tile, or use pl.tensor.write(t, [i, j], v)")
        items = items + [ast.Slice(None, None, None)] * (len(shape) - len(items))
        offsets, extent, drop = [], [], set()
        for axis, (it, n) in enumerate(zip(items, shape)):
            if not isinstance(it, ast.Slice):
                offsets.append(self.axis_index(it, level))
                drop.add(axis)
                if extent is not None:
                    extent.append(1)
                continue
            if it.step is not None:
                raise UnsupportedFeatureError("only 'lo:hi' slices are supported in a written region",
                                              self.span(it))
            lo = self.expr(it.lower) if it.lower is not None else 0
            hi = self.expr(it.upper) if it.upper is not None else n
            offsets.append(lo)
            if extent is not None and _is_static(lo) and _is_static(hi):
                extent.append(hi - lo)
            else:
                extent = None  # a runtime bound: the op's type rule checks what it can
        return offsets, extent, drop

    def stmt_Return(self, node: ast.Return) -> None:
        vals: list = []
        if node.value is not None:
            items = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for it in items:
                v = self.expr(it)
                vals.append(to_expr(v, self.span(it)))
        r = ReturnStmt(tuple(vals), self.span(node))
        self.returns.append(r)
        self.emit(r)

    def stmt_With(self, node: ast.With) -> None:
        if len(node.items) != 1:
            raise ParserSyntaxError("one context manager per 'with'", self.span(node))
        item = node.items[0]
        call = item.context_expr
        fn = self.resolve_static(call.func) if isinstance(call, ast.Call) else None
        if isinstance(fn, DslName) and fn.name == "manual_scope":
            self.manual_scope(node, call)
            return
        if isinstance(fn, DslName) and fn.name == "scope":
            self.runtime_scope(node, call)
            return
        if isinstance(fn, DslName) and fn.name == "spmd":
            self.spmd_with(node, call)
            return
        if isinstance(fn, DslName) and fn.name == "cluster":
            self.cluster_scope(node, call)
            return
        if not (isinstance(fn, DslName) and fn.name == "at"):
            raise UnsupportedFeatureError("only 'with pl.at(...)', 'with pl.spmd(...)', 'with pl.cluster()', "
                                          "'with pl.scope()' and 'with pl.manual_scope()' scopes are supported",
                                          self.span(call))
        kw = {k.arg: k.value for k in call.keywords}
        if len(call.args) > 2:
            raise ParserTypeError("pl.at takes (level, role=None) positionally; the rest by keyword", self.span(call))
        if len(call.args) == 2:
            kw.setdefault("role", call.args[1])
        level_node = kw.pop("level", call.args[0] if call.args else None)
        level = self.resolve_static(level_node) if level_node is not None else None
        split = self.scheduling_hints(kw, "pl.at")
        slot_num = self.last_slot_num
        role = self.resolve_static(kw.pop("role")) if "role" in kw else None
        if role is not None and not isinstance(role, Role):
            raise ParserTypeError(f"pl.at: role must be a pl.Role, got {_describe_static(role)}", self.span(call))
        if not isinstance(level, Level):
            raise ParserTypeError("pl.at needs level=pl.Level.<X>", self.span(call))
        if item.optional_vars is not None and level != Level.CORE_GROUP:
            raise ParserTypeError(f"'with pl.at(...) as tid' binds a TaskId only for level=pl.Level.CORE_GROUP, "
                                  f"not {level!r}", self.span(item.optional_vars))
        if level != Level.CORE_GROUP:
            raise UnsupportedFeatureError(f"pl.at(level={level!r}) (hierarchy scopes) is not supported; "
                                          "use pl.Level.CORE_GROUP", self.span(level_node))
        if item.optional_vars is not None and not isinstance(item.optional_vars, ast.Name):
            raise ParserSyntaxError("'with pl.at(...) as tid' needs a plain name", self.span(item.optional_vars))
        name_hint = ""
        if "name_hint" in kw:
            name_hint = self.resolve_static(kw.pop("name_hint"))
            if not isinstance(name_hint, str) or (name_hint and not name_hint.isidentifier()):
                raise ParserTypeError("name_hint must be an identifier string", self.span(call))
        deps = self.task_deps(kw.pop("deps")) if "deps" in kw else ()
        no_dep = self.tensor_list(kw.pop("no_dep_args"), "no_dep_args") if "no_dep_args" in kw else ()
        dumps = self.tensor_list(kw.pop("dumps"), "dumps") if "dumps" in kw else ()
        if kw:
            raise UnsupportedFeatureError(f"pl.at keyword(s) not supported yet: {', '.join(kw)}", self.span(call))
        if self.func_type not in (FunctionType.Orchestration, FunctionType.Opaque, FunctionType.Inline):
            raise ParserError("pl.at(level=CORE_GROUP) is only allowed in an orchestration function",
                              self.span(node), "a @pl.jit.incore body is already on the core; drop the 'with'")
        self.scope_depth += 1
        saved, saved_hoist = self.block, self.hoist_to
        self.block = []
        self.hoist_to = (saved, self.block)   # where a top-level pl.create_tensor of the scope goes
        unbound_before = [n for n in _assigned_names(node.body) if n not in self.scope]
        try:
            for s in node.body:
                self.stmt(s)
            body = self.block
        finally:
            self.block, self.hoist_to = saved, saved_hoist
            self.scope_depth -= 1
        self._end_task_scope(unbound_before, node)
        tid = None
        if item.optional_vars is not None:
            tid = self.target_var(item.optional_vars.id, ScalarType(TASK_ID), self.span(item.optional_vars))
        self.emit(ScopeStmt(level, name_hint, tuple(body), self.span(node), tid, deps, no_dep, dumps,
                            self.manual_depth > 0, split=split, slot_num=slot_num))
        if tid is not None:
            self.bind(item.optional_vars.id, tid, item.optional_vars)

    # -------------------------------------------------------------- loops
    def stmt_For(self, node: ast.For) -> None:
        span = self.span(node)
        call = node.iter
        fn = self.resolve_static(call.func) if isinstance(call, ast.Call) else None
        kinds = {"range": ForKind.Sequential, "parallel": ForKind.Parallel, "unroll": ForKind.Unroll,
                 "pipeline": ForKind.Pipeline, "spmd": ForKind.Parallel}
        if isinstance(fn, DslName) and fn.name == "while_":
            while_loops.parse_while_iter(self, node, call)
            return
        if isinstance(fn, DslName) and fn.name == "split_aiv":
            self.split_aiv_for(node, call)
            return
        if not (isinstance(fn, DslName) and fn.name in kinds):
            raise ParserSyntaxError(
                "a kernel loop must iterate over pl.range / pl.parallel / pl.unroll / pl.pipeline / pl.spmd",
                self.span(node.iter), "a plain Python 'range' is not a kernel loop")
        kind = kinds[fn.name]
        exit_stmt = loop_exits.find_exit(node.body)
        if exit_stmt is not None:
            word = "break" if isinstance(exit_stmt, ast.Break) else "continue"
            if fn.name != "range":
                raise InvalidOperationError(f"'{word}' is not supported in a pl.{fn.name} loop", self.span(exit_stmt),
                                            f"'{word}' can only be used in a sequential loop (pl.range)")
            if any(k.arg == "init_values" for k in call.keywords):
                raise UnsupportedFeatureError(f"'{word}' in a loop with init_values is not supported",
                                              self.span(exit_stmt), "carry the values by re-assignment instead "
                                              "(the implicit form), or restructure with an if")
            # rewrite the exits away (pypto.frontend.loop_exits); the break flag is carried
            if loop_exits.has_break(node.body):
                self.define(loop_exits.BRK, ConstBool(False, span), node)
            node = ast.copy_location(ast.For(target=node.target, iter=node.iter,
                                             body=loop_exits.rewrite_body(node.body, node), orelse=[]), node)
            node.end_lineno = getattr(node, "end_lineno", None)
        if fn.name == "spmd":
            self.spmd_for(node, call)
            return
        kw = {k.arg: k.value for k in call.keywords}
        init_node = kw.pop("init_values", None)
        stage_node = kw.pop("stage", None) if kind == ForKind.Pipeline else None
        attrs = self._loop_attrs(kw.pop("attrs"), fn.name) if "attrs" in kw else ()
        if kw:
            raise UnsupportedFeatureError(f"pl.{fn.name} keyword(s) not supported: {', '.join(kw)}", span)
        # a pl.dynamic dim as a bound is the run-time extent of the parameter carrying it
        bounds = [dim_value(self, b, span, call) if is_dyn_value(b) else b for b in map(self.expr, call.args)]
        if not 1 <= len(bounds) <= 3:
            raise ParserTypeError(f"pl.{fn.name} takes (stop), (start, stop) or (start, stop, step)", span)
        start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (*bounds, 1)[:3]
        for b, what in ((start, "start"), (stop, "stop"), (step, "step")):
            self.dyn_value_error(b, span)
            if kind_of(b) != "scalar":
                raise ParserTypeError(f"pl.{fn.name} {what} must be a scalar, got {_describe_static(b)}", span)
        for b, what in ((start, "start"), (stop, "stop"), (step, "step")):
            dt = getattr(getattr(b, "type", None), "dtype", None)
            if isinstance(b, float) or (dt is not None and not isinstance(b, (int, bool)) and dt.is_float()):
                raise ParserTypeError(f"pl.{fn.name} {what} must be an integer, got {_describe_static(b)}", span,
                                      "loop bounds count iterations: convert with int(...) at compile time")
        if _is_static(step) and step == 0:
            raise ParserTypeError(f"pl.{fn.name} step must not be 0", span)
        if init_node is not None and kind == ForKind.Unroll and self.resolver.self_function is None:
            # (printed IR writes the carried values of a not-yet-expanded unroll loop this way)
            raise ParserTypeError("pl.unroll() cannot be combined with init_values", span)
        if kind == ForKind.Unroll:
            for b, what in ((start, "start"), (stop, "stop"), (step, "step")):
                if not (isinstance(b, int) and not isinstance(b, bool)):
                    raise ParserTypeError(f"pl.unroll {what} must be a compile-time int, got {_describe_static(b)}",
                                          span, "pl.unroll copies the body once per iteration at compile time")

        stage = 1
        if kind == ForKind.Pipeline:
            if stage_node is None:
                raise ParserTypeError("pl.pipeline needs stage=F (a literal int >= 1: how many copies of the body "
                                      "one iteration runs)", span, "for i in pl.pipeline(n, stage=2):")
            stage = self.expr(stage_node)
            if type(stage) is not int or stage < 1:
                raise ParserTypeError(f"pl.pipeline stage must be a literal int >= 1, got {_describe_static(stage)}",
                                      self.span(stage_node))
            if type(step) is not int or step <= 0:
                raise ParserTypeError(f"pl.pipeline step must be a literal int > 0, got {_describe_static(step)}",
                                      span, "the lowered loop's stride is stage * step")
        self._pending_loop_attrs = attrs
        if init_node is not None:
            self._explicit_for(node, kind, start, stop, step, init_node, stage)
        else:
            self._implicit_for(node, kind, start, stop, step, stage)

    def _take_loop_attrs(self) -> tuple:
        """The attrs= of the loop header being built (read once: a nested loop sets its own)."""
        attrs, self._pending_loop_attrs = getattr(self, "_pending_loop_attrs", ()), ()
        return attrs

    def _loop_attrs(self, node: ast.expr, fn: str) -> tuple:
        """``attrs={"key": value, ...}`` of a loop header (printed IR carries the loop attributes this
        way): a dict literal of string keys and bool / int / float / str constants, as sorted pairs."""
        hint = 'attrs={"pipeline_double_buffer_c": True}'
        if not isinstance(node, ast.Dict):
            raise ParserTypeError(f"pl.{fn} attrs= must be a dict literal", self.span(node), hint)
        out = {}
        for k, v in zip(node.keys, node.values):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                raise ParserTypeError(f"pl.{fn} attrs= keys must be string literals", self.span(k or node), hint)
            if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub) and isinstance(v.operand, ast.Constant) \
                    and type(v.operand.value) in (int, float):
                val = -v.operand.value
            elif isinstance(v, ast.Constant) and type(v.value) in (bool, int, float, str):
                val = v.value
            else:
                raise ParserTypeError(f"pl.{fn} attrs['{k.value}'] must be a bool, int, float or str literal",
                                      self.span(v), hint)
            out[k.value] = val
        return tuple(sorted(out.items()))

    def _loop_var(self, target: ast.expr) -> tuple[str, Var]:
        if not isinstance(target, ast.Name):
            raise ParserSyntaxError("the loop target must be a name (or 'i, (a, b)' with init_values)",
                                    self.span(target))
        return target.id, Var(target.id, ScalarType(INDEX), self.span(target))

    def _implicit_for(self, node: ast.For, kind, start, stop, step, stage: int = 1, spmd_span=None,
                      retry: bool = True) -> None:
        """A loop without ``init_values``, pre-SSA: the body re-assigns the Vars of names bound
        before the loop (ConvertToSSA makes them carried values). A name first bound in the body
        and read after the loop (as the reference allows) becomes carried too: it is given an
        unspecified initial value of its type before the loop (an uninitialised tile, a fresh
        tensor, zero), and after the loop holds the last iteration's value (on a zero-trip loop
        the initial one, as unspecified as the device's). Other names first bound in the body are
        not visible after it."""
        loop_attrs = self._take_loop_attrs()  # before the body: its loops take their own
        span = self.span(node)
        name, loop_var = self._loop_var(node.target)
        outer = self.scope
        self.scope = outer.child()
        self.scope[name] = loop_var
        self.frames.append((outer,))
        try:
            body = self.parse_block(node.body)
        finally:
            self.frames.pop()
        inner = self.scope
        self.scope = outer
        if retry:
            # names first bound in the body (at any depth: also inside an if of the body) and read
            # after the loop
            escaping = [n for n in _assigned_names(node.body)
                        if n not in outer and n != name and isinstance(self.last_bound.get(n), Var)
                        and self._read_after(n, node)]
            # a Python constant re-bound in the body (`s = 0` before, `s = i * 2` inside) is a
            # runtime value after the loop: it becomes a carried scalar (it used to keep the
            # constant after the loop: a silently wrong value)
            demoted = [n for n, before in outer.items()
                       if n != name and isinstance(before, (bool, int, float)) and n in inner
                       and (inner[n] is not before) and (isinstance(inner[n], Var) or inner[n] != before)]
            # a name whose type has no initial value (a TaskId, a tensor inside a task scope) is
            # not carried: it stays loop-local, and a read after the loop that is not preceded by
            # a new binding (the textual test above cannot tell) is the located "defined inside
            # the loop body only" error
            inits = {}
            for n in escaping:
                try:
                    inits[n] = self._undefined_value(n, self.last_bound[n], outer, node)
                except ParserError:
                    continue
            if inits or demoted:
                for n, v in inits.items():
                    self.define(n, v, node)
                for n in demoted:
                    self.define(n, self._scalar_const(outer[n], inner[n], node), node)
                self._pending_loop_attrs = loop_attrs  # the re-parse takes them again
                self._implicit_for(node, kind, start, stop, step, stage, spmd_span, retry=False)
                return
        for n, before in outer.items():
            after = inner.get(n, _UNBOUND)
            if n == name or not isinstance(before, Var) or after is before:
                continue
            # a re-assignment with the carried Var's type re-assigns that Var (see assignable), so a
            # name left bound to anything else holds a value of another type
            if isinstance(after, Var) and after.type == before.type:
                raise InternalError(f"the parser lost track of the loop-carried value '{n}'", span)
            raise ParserTypeError(f"Cannot reassign '{n}' with a different type: was {describe(before.type)}, "
                                  f"got {_describe_static(after)}{_type_detail(before, after)}", span,
                                  "a loop-carried value keeps its type; use a new name")
        for n in inner:
            if n not in outer and n != name:
                self.loop_locals[n] = span
        if spmd_span is not None:   # pl.spmd: the body is one block's kernel
            sp, hint, deps = spmd_span
            body = [ScopeStmt(Level.CORE_GROUP, hint, tuple(body), sp, None, deps, (), (), self.manual_depth > 0)]
        self.emit(ForStmt(loop_var, to_expr(start, span), to_expr(stop, span), to_expr(step, span),
                          (), (), tuple(body), (), kind, span, stage, loop_attrs))

    def _scalar_const(self, value, later, node: ast.AST) -> Expr:
        """Python constant ``value`` as a scalar of the type the loop body gives the name."""
        span = self.span(node)
        dtype = later.type.dtype if isinstance(later, Var) and isinstance(later.type, ScalarType) else None
        if dtype is None:
            dtype = BOOL if isinstance(value, bool) else (FP32 if isinstance(value, float) else INDEX)
        if isinstance(value, bool) and dtype == BOOL:
            return ConstBool(value, span)
        if dtype.is_float():
            return ConstFloat(float(value), dtype, span)
        if isinstance(value, float):
            raise ParserTypeError(f"a float constant cannot become a loop-carried {dtype.name} scalar", span,
                                  "give the variable its integer value before the loop")
        return ConstInt(int(value), dtype, span)

    def _read_after(self, name: str, loop: ast.For) -> bool:
        """Whether the function reads ``name`` anywhere after the loop's last line."""
        end = getattr(loop, "end_lineno", None) or loop.lineno
        fdef = self.fdef
        if fdef is None:
            return False
        cache = getattr(self, "_last_loads", None)
        if cache is None or cache[0] is not fdef:
            # name -> the last line that reads it: one walk of the function, not one per name and loop
            last: dict = {}
            for n in ast.walk(fdef):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.lineno > last.get(n.id, 0):
                    last[n.id] = n.lineno
            cache = self._last_loads = (fdef, last)
        return cache[1].get(name, 0) > end

    def _undefined_value(self, name: str, var: Var, outer: dict, node: ast.AST) -> Expr:
        """The initial value of a loop-local name read after the loop (see :meth:`_implicit_for`).
        A tensor the body binds to a write into a tensor of the enclosing code (``out = pl.store(t,
        offs, c)``) starts as that tensor (``c``, unwritten): it is a version of it."""
        span = self.span(node)
        t = var.type
        value = self.last_value.get(id(var))
        if isinstance(t, TensorType) and isinstance(value, Call):
            idx = write_target(value.op, updates=True)
            tgt = value.args[idx] if idx is not None and idx < len(value.args) else None
            if isinstance(tgt, Var) and tgt.type == t and any(v is tgt for v in outer.values()):
                return tgt
        if isinstance(t, TileType) and t.valid_shape is None:
            return self.make_call("tile.create", [list(t.shape), t.dtype],
                                  {"target_memory": t.memory_space} if t.memory_space else {}, span, node)
        if isinstance(t, ScalarType) and t.dtype != TASK_ID:
            return ConstFloat(0.0, t.dtype, span) if t.dtype.is_float() else ConstInt(0, t.dtype, span)
        if isinstance(t, TensorType) and not self.scope_depth and self.func_type not in KERNEL_TYPES \
                and all(isinstance(d, int) for d in t.shape):
            return self.make_call("tensor.create", [list(t.shape), t.dtype], {}, span, node)
        raise ParserError(f"'{name}' is first bound inside the loop and read after it, but a "
                          f"{describe(t)} cannot be given an initial value before the loop here", span,
                          f"assign '{name}' before the loop so that it becomes loop-carried")

    def _explicit_for(self, node: ast.For, kind, start, stop, step, init_node: ast.expr, stage: int = 1) -> None:
        loop_attrs = self._take_loop_attrs()  # before the body: its loops take their own
        span = self.span(node)
        t = node.target
        if not (isinstance(t, ast.Tuple) and len(t.elts) == 2 and isinstance(t.elts[1], ast.Tuple)):
            raise ParserSyntaxError("For loop target must be a tuple when init_values is provided: "
                                    "for i, (a, b) in pl.range(..., init_values=(x, y))", self.span(t))
        name, loop_var = self._loop_var(t.elts[0])
        inits = [self.expr(e) for e in (init_node.elts if isinstance(init_node, (ast.Tuple, ast.List)) else [init_node])]
        names = [e.id for e in t.elts[1].elts if isinstance(e, ast.Name)]
        if len(names) != len(t.elts[1].elts) or len(names) != len(inits):
            raise ParserTypeError(f"{len(names)} carried names for {len(inits)} init_values", self.span(t))
        inits = [to_expr(v, span) for v in inits]
        outer = self.scope
        # a name of the enclosing code re-bound in the body (not in init_values) is carried
        # implicitly, after the explicit ones, as in a loop without init_values (the reference
        # allows mixing: ConvertToSSA appends it to the iter_args)
        self.scope = outer.child()
        iter_args = [Var(n, self.declared.pop(n, v.type), span) for n, v in zip(names, inits)]
        for n, it in zip(names, iter_args):
            self.scope[n] = it
        self.scope[name] = loop_var
        body_nodes = list(node.body)
        last = body_nodes[-1] if body_nodes else None
        targets, yield_call = _yield_parts(last, self.resolve_static)
        if yield_call is None:
            raise ParserSyntaxError("a loop with init_values must end with 'x = pl.yield_(...)'", span)
        self.frames.append((outer,))
        try:
            body = self.parse_block(body_nodes[:-1])
            saved, self.block = self.block, body
            values = [self.yield_value(self.expr(a), self.span(a)) for a in yield_call.args]
            self.block = saved
        finally:
            self.frames.pop()
        _check_static_rebinds(outer, self.scope, name, span)
        inner = self.scope
        self.scope = outer
        for n, before in outer.items():
            after = inner.get(n, _UNBOUND)
            if n == name or n in names or not isinstance(before, Var) or after is _UNBOUND or after is before:
                continue
            raise ParserTypeError(f"Cannot reassign '{n}' with a different type: was {describe(before.type)}, "
                                  f"got {_describe_static(after)}{_type_detail(before, after)}", span,
                                  "a loop-carried value keeps its type; use a new name")
        for n in inner:
            if n not in outer and n != name and n not in names:
                self.loop_locals[n] = span
        if len(values) != len(iter_args):
            raise ParserTypeError(f"pl.yield_ gives {len(values)} values for {len(iter_args)} carried values",
                                  self.span(last))
        for it, v in zip(iter_args, values):
            if _strip_memref(v.type) != _strip_memref(it.type):
                raise ParserTypeError(f"Cannot reassign '{it.name}' with a different type: was "
                                      f"{describe(it.type)}, got {describe(v.type)}{_type_detail(it, v)}",
                                      self.span(last))
        if targets and len(targets) != len(values):
            raise ParserTypeError("pl.yield_ targets and values differ in number", self.span(last))
        rv_names = targets or [f"{n}_rv" for n in names]
        rvs = tuple(Var(n, self.declared.pop(n, it.type), self.span(last)) for n, it in zip(rv_names, iter_args))
        body.append(YieldStmt(tuple(values), self.span(last)))
        self.emit(ForStmt(loop_var, to_expr(start, span), to_expr(stop, span), to_expr(step, span),
                          tuple(iter_args), tuple(inits), tuple(body), rvs, kind, span, stage, loop_attrs))
        if targets:
            for n, rv in zip(targets, rvs):
                self.bind_result(n, rv, last)

    # -------------------------------------------------------------- if
    def stmt_If(self, node: ast.If, retry: bool = True) -> None:
        span = self.span(node)
        cond = self.expr(node.test)
        if _is_static(cond):
            # folded at specialisation: only the taken branch exists; its yield just binds names
            taken = list(node.body if cond else node.orelse)
            targets, ycall = _yield_parts(taken[-1] if taken else None, self.resolve_static)
            for s in taken[:-1] if ycall is not None else taken:
                self.stmt(s)
            if ycall is not None:
                vals = [self.yield_value(self.expr(a), self.span(a)) for a in ycall.args]
                if targets and len(targets) != len(vals):
                    raise ParserTypeError("pl.yield_ targets and values differ in number", span)
                for n, v in zip(targets, vals):
                    if isinstance(v, Var):
                        self.define(n, v, node)
                    else:
                        self.bind(n, v, node)  # a literal: uses read it directly
            return
        if kind_of(cond) != "scalar":
            raise ParserTypeError(f"an if condition must be a scalar, got {_describe_static(cond)}",
                                  self.span(node.test))
        outer = self.scope
        branches = []
        explicit = None
        for stmts in (node.body, node.orelse):
            # the else branch may re-assign the Vars the then branch left its names bound to: a name
            # defined in both branches is one Var
            self.frames.append((outer,) if not branches else (outer, branches[0][1]))
            self.scope = outer.child()
            try:
                targets, ycall = _yield_parts(stmts[-1] if stmts else None, self.resolve_static)
                if ycall is not None:
                    body = self.parse_block(stmts[:-1])
                    saved, self.block = self.block, body
                    vals = [self.yield_value(self.expr(a), self.span(a)) for a in ycall.args]
                    self.block = saved
                    explicit = (targets, stmts[-1])
                    branches.append((body, self.scope, vals))
                else:
                    branches.append((self.parse_block(stmts), self.scope, None))
            finally:
                self.frames.pop()
        self.scope = outer
        (tb, ts, tv), (eb, es, ev) = branches
        if retry:
            # a Python constant bound before the if and re-bound in a branch taken at run time
            # (`x = 0.0; if i == 2: x = 5.0`) is a runtime value after it: it becomes a scalar
            # variable assigned in the branches (the branch's constant used to be dropped: x stayed
            # 0.0 whichever branch ran, a silently wrong value)
            demoted = []
            for n in dict.fromkeys([*ts, *es]):
                before = outer.get(n, _UNBOUND)
                if not isinstance(before, (bool, int, float)):
                    continue
                sides = [ts.get(n, before), es.get(n, before)]
                if all(x is before for x in sides) or all(not isinstance(x, Var) and x == before for x in sides):
                    continue
                demoted.append((n, next((x for x in sides if isinstance(x, Var)), None)))
            if demoted:
                for n, later in demoted:
                    self.define(n, self._scalar_const(outer[n], later, node), node)
                self.stmt_If(node, retry=False)
                return
        rvs: tuple = ()
        if explicit is not None:
            if tv is None or ev is None or len(tv) != len(ev):
                raise ParserSyntaxError("both branches must end with pl.yield_ of the same number of values", span)
            targets = explicit[0] or [f"phi{i}" for i in range(len(tv))]
            for a, b in zip(tv, ev):
                if _strip_memref(a.type) != _strip_memref(b.type):
                    raise ParserTypeError(f"branches yield different types: {describe(a.type)} vs {describe(b.type)}",
                                          span)
            rvs = tuple(Var(n, self.declared.pop(n, v.type), span) for n, v in zip(targets, tv))
            tb.append(YieldStmt(tuple(tv), span))
            eb.append(YieldStmt(tuple(ev), span))
        # pre-SSA join: a name both branches leave bound to one Var (assigned in a branch and bound
        # before, or assigned in both) is that Var after the if; ConvertToSSA makes it a phi
        joined = []
        for n in dict.fromkeys([*ts, *es]):
            a, b = ts.get(n, _UNBOUND), es.get(n, _UNBOUND)
            before = outer.get(n, _UNBOUND)
            if a is before and b is before:
                continue
            if isinstance(a, Var) and isinstance(b, Var):
                if a.type != b.type:
                    raise ParserTypeError(f"Cannot reassign '{n}' with a different type: was {describe(a.type)}, "
                                          f"got {describe(b.type)}{_type_detail(a, b)}", span)
                if a is not b:
                    # (assignable prefers the then branch's Var, so this is only a safety net)
                    eb.insert(len(eb) - (explicit is not None), AssignStmt(a, b, span))
                joined.append((n, a))
        self.emit(IfStmt(cond, tuple(tb), tuple(eb), rvs, span))
        for n, a in joined:
            self.bind(n, a, node)
        if explicit is not None:
            for n, rv in zip(targets, rvs):
                self.bind_result(n, rv, node)

    # -------------------------------------------------------------- expressions
    def lookup(self, name: str, node: ast.AST) -> Any:
        if name in self.scope:
            return self.scope[name]
        if name in self.scope_locals:
            raise UnsupportedFeatureError(
                f"'{name}' is computed inside a pl.at scope and used after it; only tensors can flow out "
                "of a scope", self.span(node),
                f"store it into a tensor inside the scope (pl.store / pl.assemble) and read that tensor after it")
        if name in self.loop_locals:
            raise ParserError(f"'{name}' is defined inside the loop body only and is not visible after it",
                              self.span(node), f"assign '{name}' before the loop so that it becomes loop-carried")
        g = self.resolver.globals
        if name in g:
            return g[name]
        if name in _BUILTINS:
            return _BUILTINS[name]
        raise ParserError(f"name '{name}' is not defined", self.span(node))

    def resolve_static(self, node: ast.AST) -> Any:
        """Evaluate a node that must be static (annotation parts, enum values, op names)."""
        v = self.expr(node)
        return v

    def expr(self, node: ast.expr) -> Any:
        method = getattr(self, f"expr_{type(node).__name__}", None)
        if method is None:
            raise ParserSyntaxError(f"'{type(node).__name__}' expressions are not supported in a kernel",
                                    self.span(node))
        return method(node)

    def expr_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def expr_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id, node)

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        if isinstance(node.value, ast.Name) and node.value.id == "self" and "self" not in self.scope \
                and self.resolver.self_function is not None:
            return _SelfMethod(node.attr)
        base = self.expr(node.value)
        if isinstance(base, Expr):
            t = base.type
            if node.attr == "shape" and isinstance(t, (TensorType, TileType)):
                return tuple(t.shape)
            if node.attr == "dtype" and isinstance(t, (TensorType, TileType, ScalarType)):
                return t.dtype
            raise ParserTypeError(f"{describe(t)} has no attribute '{node.attr}' in a kernel", self.span(node))
        if isinstance(base, (pytypes.ModuleType, type, OpNamespace, enum.EnumMeta)) or isinstance(base, enum.Enum):
            try:
                return getattr(base, node.attr)
            except AttributeError:
                raise ParserError(f"{_describe_static(base)} has no attribute '{node.attr}'", self.span(node)) from None
        raise ParserTypeError(f"cannot take attribute '{node.attr}' of {_describe_static(base)} in a kernel",
                              self.span(node))

    def expr_Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self.expr(e) for e in node.elts)

    def expr_List(self, node: ast.List) -> Any:
        return [self.expr(e) for e in node.elts]

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        if isinstance(base, Expr) and isinstance(base.type, ArrayType):   # arr[i] (pl.Array)
            return array_read(self, base, node)
        if isinstance(base, Expr) and isinstance(base.type, (TensorType, TileType)):
            return self.subscript_read(base, node)
        idx = self.expr(node.slice) if not isinstance(node.slice, ast.Slice) else None
        if isinstance(idx, int) and ((_is_static(base) and isinstance(base, (tuple, list)))
                                     or (isinstance(base, Expr) and isinstance(base.type, TupleType))):
            n = len(base) if isinstance(base, (tuple, list)) else len(base.type.types)
            if not -n <= idx < n:
                raise ParserTypeError(f"index {idx} is out of range for {_describe_static(base)} of {n} "
                                      "element(s)", self.span(node))
        if _is_static(base) and isinstance(base, (tuple, list)) and isinstance(idx, int):
            return base[idx]
        if isinstance(base, Expr) and isinstance(base.type, TupleType) and isinstance(idx, int):
            return TupleGetItem(base, idx, base.type.types[idx], self.span(node))
        if isinstance(base, Expr) and isinstance(base.type, (TensorType, TileType)):
            return self.subscript_read(base, node)
        raise ParserTypeError(f"cannot subscript {_describe_static(base)}", self.span(node))

    def array_element_call(self, which: str, node: ast.Call, span: Span) -> Expr:
        """``pl.array.get_element(arr, i)`` / ``pl.array.update_element(arr, i, v)`` (the reference's
        functional forms of ``arr[i]`` and ``arr[i] = v``; arrays here hold TaskIds)."""
        n = 2 if which == "array_get_element" else 3
        if node.args and isinstance(getattr(self.expr(node.args[0]), "type", None), ArrayType):
            return array_element(self, which, node, span)
        if len(node.args) != n or node.keywords:
            raise ParserTypeError(f"pl.array.{which[6:]} takes {n} positional arguments", span,
                                  "pl.array.update_element(tids, i, tid)" if n == 3 else "pl.array.get_element(tids, i)")
        args = [self.expr(a) for a in node.args]
        arr = args[0]
        if not (isinstance(arr, Expr) and isinstance(arr.type, TensorType) and arr.type.dtype == TASK_ID):
            raise ParserTypeError(f"pl.array.{which[6:]} needs an array made by pl.array.create(n, pl.TASK_ID), got "
                                  f"{_describe_static(arr)}", self.span(node.args[0]))
        if kind_of(args[1]) != "scalar":
            raise ParserTypeError(f"the index must be a scalar, got {_describe_static(args[1])}", self.span(node.args[1]))
        if n == 2:
            return self.make_call("tensor.task_id_get", args, {}, span, node)
        if not (isinstance(args[2], Expr) and args[2].type == ScalarType(TASK_ID)):
            raise ParserTypeError(f"a TaskId array stores TaskIds, got {_describe_static(args[2])}",
                                  self.span(node.args[2]))
        return self.make_call("tensor.task_id_set", args, {}, span, node)

    def subscript_read(self, base: Expr, node: ast.Subscript) -> Expr:
        """``A[0:16, :]`` -> ``<level>.slice``; ``A[i, j]`` (all scalars, full rank) -> ``<level>.read``;
        ``C[i]``, ``C[i:i+8, j]`` -> a slice with the scalar-indexed axes dropped (numpy rules)."""
        span = self.span(node)
        level = "tensor" if isinstance(base.type, TensorType) else "tile"
        shape = tuple(base.type.shape)
        items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(items) > len(shape):
            raise ParserTypeError(f"subscript has {len(items)} indices, the {level} has rank {len(shape)}", span)
        if level == "tensor" and base.type.dtype == TASK_ID:   # tids[i]: a TaskId array's slot
            if len(items) != 1 or isinstance(items[0], ast.Slice):
                raise ParserTypeError("a TaskId array takes one scalar index: tids[i]", span)
            return self.make_call("tensor.task_id_get", [base, self.expr(items[0])], {}, span, node)
        if len(items) == len(shape) and not any(isinstance(it, ast.Slice) for it in items):
            idx = [self.expr(it) for it in items]
            for it, v in zip(items, idx):
                if kind_of(v) != "scalar":
                    raise ParserTypeError(f"an index must be a scalar, got {_describe_static(v)}", self.span(it))
            return self.make_call(f"{level}.read", [base, list(idx)], {}, span, node)
        # a view: fewer indices imply trailing ':'; a scalar index keeps a unit window on its axis
        # and drops the axis afterwards (pypto.frontend.rank_views)
        items = items + [ast.Slice(None, None, None)] * (len(shape) - len(items))
        offsets, sizes, drop = [], [], set()
        for axis, (it, n) in enumerate(zip(items, shape)):
            if not isinstance(it, ast.Slice):
                offsets.append(self.axis_index(it, level))
                sizes.append(1)
                drop.add(axis)
                continue
            if it.step is not None:
                raise UnsupportedFeatureError("slice steps are not supported", self.span(it))
            lo = self.expr(it.lower) if it.lower is not None else 0
            hi = self.expr(it.upper) if it.upper is not None else n
            if level == "tile" and not _is_static(lo):
                raise ParserTypeError("tile slice lower bounds must be static", self.span(it))
            if isinstance(lo, int) and lo < 0 or isinstance(hi, int) and hi < 0:
                raise UnsupportedFeatureError("negative indices are not supported", self.span(it))
            ext = self._extent(lo, hi, it)
            offsets.append(lo)
            sizes.append(ext)
        sliced = self.make_call(f"{level}.slice", [base, sizes, offsets], {}, span, node)
        return rank_views.reduce_rank(self, sliced, sizes, drop, span, node)

    def _extent(self, lo, hi, it: ast.Slice):
        """The static extent of ``lo:hi``; ``i:i+16`` has extent 16 even when ``i`` is a runtime value."""
        if _is_static(lo) and _is_static(hi):
            if any(isinstance(x, DynDim) for x in (lo, hi)):
                raise UnsupportedFeatureError("slicing a dynamic dimension needs explicit static bounds",
                                              self.span(it))
            return hi - lo
        if it.lower is not None and it.upper is not None and isinstance(it.upper, ast.BinOp) \
                and isinstance(it.upper.op, ast.Add) and ast.dump(it.upper.left) == ast.dump(it.lower):
            ext = self.expr(it.upper.right)   # ``i:i+16`` (any static expression after the +)
            if isinstance(ext, int):
                return ext
        if it.lower is not None and it.upper is not None:
            # ``r+1:r+2``, ``i-1:i+3``: the same run-time base plus int constants on both
            # sides, so the extent is the constants' difference (compared on the source's AST)
            (base_lo, c_lo), (base_hi, c_hi) = self._offset_form(it.lower), self._offset_form(it.upper)
            if base_lo == base_hi and isinstance(c_lo, int) and isinstance(c_hi, int):
                return c_hi - c_lo
        raise UnsupportedFeatureError("a slice extent must be static", self.span(it), _static_slice_hint(it))

    def _offset_form(self, node: ast.expr):
        """``(terms, c)`` with ``node`` = the sum of the signed run-time ``terms`` (``ast.dump`` text,
        sorted) plus the int ``c``, through ``+`` / ``-`` chains; constants are int literals or names
        bound to ints. Only literals and names are evaluated (no code is emitted)."""
        terms: list = []
        const = 0

        def walk(n: ast.expr, sign: int) -> None:
            nonlocal const
            if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub)):
                walk(n.left, sign)
                walk(n.right, sign if isinstance(n.op, ast.Add) else -sign)
                return
            if isinstance(n, (ast.Constant, ast.Name)):
                v = self.expr(n)
                if isinstance(v, int) and not isinstance(v, bool):
                    const += sign * v
                    return
            terms.append((sign, ast.dump(n)))

        walk(node, 1)
        return tuple(sorted(terms)), const

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = self.expr(node.operand)
        span = self.span(node)
        if _is_static(v):
            try:
                return {ast.USub: lambda x: -x, ast.UAdd: lambda x: +x, ast.Not: lambda x: not x,
                        ast.Invert: lambda x: ~x}[type(node.op)](v)
            except (TypeError, KeyError):
                raise ParserTypeError(f"bad operand for unary operator: {_describe_static(v)}", span) from None
        if kind_of(v) != "scalar":
            raise ParserTypeError(f"operators on {describe(v.type)} are not supported; use pl.neg(...)", span)
        if isinstance(node.op, ast.UAdd):
            return v
        op = {ast.USub: "neg", ast.Not: "not"}.get(type(node.op))
        if op is None:
            raise UnsupportedFeatureError("'~' on scalars is not supported", span)
        return UnaryOp(op, v, ScalarType(BOOL) if op == "not" else v.type, span)

    _BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
               ast.Mod: "mod", ast.LShift: "lshift", ast.RShift: "rshift", ast.BitAnd: "bitand",
               ast.BitOr: "bitor", ast.BitXor: "bitxor"}
    _CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
    _PYOPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
              "truediv": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
              "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
              "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
              "and": lambda a, b: a and b, "or": lambda a, b: a or b, "min": min, "max": max,
              "lshift": lambda a, b: a << b, "rshift": lambda a, b: a >> b, "bitand": lambda a, b: a & b,
              "bitor": lambda a, b: a | b, "bitxor": lambda a, b: a ^ b}

    def scalar_binop(self, op: str, a: Any, b: Any, span: Span) -> Any:
        if _is_static(a) and _is_static(b):
            try:
                return self._PYOPS[op](a, b)
            except Exception as e:
                for v in (a, b):   # `M * 1.0`, `M < 4`: a dim is not a number (M * 2 is a composite dim)
                    self.dyn_value_error(v, span)
                raise ParserTypeError(f"cannot fold constant expression: {e}", span) from None
        # a pl.dynamic dim met with a run-time scalar (``i < NR``): its run-time value
        a, b = (dim_value(self, x, span, None) if is_dyn_value(x) else x for x in (a, b))
        for v in (a, b):
            self.dyn_value_error(v, span)
            if kind_of(v) != "scalar":
                raise ParserTypeError(
                    f"Python operators work on scalars only, got {_describe_static(v)}", span,
                    "use pl.add / pl.sub / pl.mul / pl.div for tensors and tiles")
        ea, eb = to_expr(a, span), to_expr(b, span)

        if op in INT_BINOPS:
            if not all(isinstance(x.type, ScalarType) and not x.type.dtype.is_float() and x.type.dtype != BOOL
                       for x in (ea, eb)):
                raise ParserTypeError(f"operator '{BINOPS[op]}' needs integer scalars, got "
                                      f"{describe(ea.type)} and {describe(eb.type)}", span,
                                      "cast the operands to an integer type first")
            if op in ("lshift", "rshift") and isinstance(eb, ConstInt) and eb.value < 0:
                raise ParserTypeError(f"negative shift count {eb.value}", span)
        if op in COMPARISONS:
            t = ScalarType(BOOL)
        elif op == "truediv":
            t = ScalarType(FP32)
        else:
            da, db = ea.type.dtype, eb.type.dtype
            t = ScalarType(FP32 if (da.is_float() or db.is_float()) else (da if da == db else INDEX))
        return BinOp(op, ea, eb, t, span)

    def expr_BinOp(self, node: ast.BinOp) -> Any:
        op = self._BINOPS.get(type(node.op))
        if op is None:
            raise UnsupportedFeatureError(f"operator {type(node.op).__name__} is not supported", self.span(node))
        return self.scalar_binop(op, self.expr(node.left), self.expr(node.right), self.span(node))

    def expr_Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1:
            raise UnsupportedFeatureError("chained comparisons are not supported; use 'and'", self.span(node))
        op = self._CMPOPS.get(type(node.ops[0]))
        if op is None:
            raise UnsupportedFeatureError("this comparison is not supported", self.span(node))
        return self.scalar_binop(op, self.expr(node.left), self.expr(node.comparators[0]), self.span(node))

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        op = "and" if isinstance(node.op, ast.And) else "or"
        vals = [self.expr(v) for v in node.values]
        acc = vals[0]
        for v in vals[1:]:
            acc = self.scalar_binop(op, acc, v, self.span(node))
        return acc

    def expr_Call(self, node: ast.Call) -> Any:
        span = self.span(node)
        fn = self.expr(node.func)
        if isinstance(fn, DslOp):
            args = [self.expr(a) for a in node.args]
            kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
            return self.op_call(fn, args, kwargs, span, node)
        if isinstance(fn, DslName):
            return self.construct_call(fn, node)
        if isinstance(fn, _SelfMethod):
            callee = self.resolver.self_function(fn.name, span)
            return self.function_call(callee, node)
        if fn in (ann.MemRef, ann.TileView, ann.TensorView):  # attribute values inside tile / tensor annotations
            args = [self.expr(a) for a in node.args]
            kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
            if not all(_is_static(v) for v in [*args, *kwargs.values()]):
                raise ParserTypeError(f"{fn.__name__}(...) takes constants only", span)
            return fn(*args, **kwargs)
        if getattr(fn, "__module__", None) == "pypto.language" and getattr(fn, "__name__", "") == "dynamic":
            # M = pl.dynamic("M") inside a kernel body (for bind_dynamic): a compile-time value
            args = [self.expr(a) for a in node.args]
            if len(args) != 1 or node.keywords or not isinstance(args[0], str):
                raise ParserTypeError('pl.dynamic takes one name: M = pl.dynamic("M")', span)
            return fn(args[0])
        if fn in (min, max, abs, float, int):
            args = [self.expr(a) for a in node.args]
            if all(_is_static(a) for a in args):
                return fn(*args)
            if fn in (min, max) and len(args) == 2:
                return self.scalar_binop(fn.__name__, args[0], args[1], span)
            if fn is abs and len(args) == 1 and kind_of(args[0]) == "scalar":
                return UnaryOp("abs", args[0], args[0].type, span)
            raise UnsupportedFeatureError(f"{fn.__name__}() on runtime values is not supported", span)
        if self.resolver.call_function is not None:
            callee = self.resolver.call_function(fn, [self.expr(a) for a in node.args], span)
            if callee is not None:
                return self.function_call(callee, node)
        raise ParserError(f"cannot call {_describe_static(fn)} inside a kernel", span,
                          "kernel bodies are parsed, not executed: use pl.* ops and @pl.jit.incore functions")

    def function_call(self, callee: Callee, node: ast.Call, args_nodes=None, kw_nodes=None) -> Any:
        span = self.span(node)
        args_nodes = node.args if args_nodes is None else args_nodes
        attrs_node = next((k.value for k in node.keywords if k.arg == "attrs"), None)
        if kw_nodes is None and any(k.arg != "attrs" for k in node.keywords):
            raise UnsupportedFeatureError("keyword arguments in calls of kernel functions are not supported",
                                          span, "use pl.submit(...) for deps= / dumps=")
        args, no_dep = [], []
        args_nodes = [a for i, a in enumerate(args_nodes) if i not in callee.drop]
        for i, a in enumerate(args_nodes):
            if kw_nodes is not None and isinstance(a, ast.Call) and _is_construct_call(a, self.resolve_static, "no_dep"):
                if len(a.args) != 1 or a.keywords:
                    raise ParserTypeError("pl.no_dep(t) takes one tensor", self.span(a))
                no_dep.append(i)
                a = a.args[0]
            args.append(self.operand(self.expr(a), self.span(a)))
        if len(args) != len(callee.param_types):
            raise ParserTypeError(f"{callee.name}() takes {len(callee.param_types)} arguments, got {len(args)}", span)
        from pypto.frontend.dyn_bind import bind_call, bound_type
        from pypto.ir.scalar_compat import coerce_call_arg

        args = [coerce_call_arg(a, t) for a, t in zip(args, callee.param_types)]
        dims = bind_call(callee.name, callee.param_types, args, [self.span(n) for n in args_nodes])
        deps, dumps, predicate = (), (), ()
        for k in kw_nodes or ():
            if k.arg == "deps":
                deps = self.task_deps(k.value)
            elif k.arg == "dumps":
                dumps = tuple(sorted({i for t in self.tensor_list(k.value, "dumps")
                                      for i in _arg_indices(args, t, "dumps", self.span(k.value))}))
            elif k.arg == "attrs":
                continue
            elif k.arg == "allow_early_resolve":
                # a pure scheduling hint of the device runtime (docs/language.md, "Task dependencies"): accepted and
                # checked, with no effect on results; the simulator's schedule ignores it
                if not (isinstance(k.value, ast.Constant) and isinstance(k.value.value, bool)):
                    raise ParserTypeError("allow_early_resolve must be True or False", self.span(k.value))
            elif k.arg == "predicate":
                predicate = self.task_predicate(k.value)
            else:
                raise UnsupportedFeatureError(f"pl.submit keyword '{k.arg}' is not supported", self.span(k.value))
        rts = [bound_type(t, dims) for t in callee.return_types]   # the call's extents of a dynamic callee
        rtype = rts[0] if len(rts) == 1 else TupleType(tuple(rts))
        attrs = self.call_attrs(attrs_node, len(args)) if attrs_node is not None else {}
        if predicate and not deps:
            raise ParserTypeError(
                "pl.submit(predicate=...) needs deps= naming the task that produces the predicate's tensor",
                self.span(next(k.value for k in kw_nodes if k.arg == "predicate")),
                "res, tid = pl.submit(self.producer, ...); pl.submit(self.k, ..., deps=[tid], predicate=(t[0] == 1))")
        return FuncCall(callee.name, tuple(args), rtype, span, deps, tuple(no_dep), dumps, self.manual_depth > 0,
                        predicate=predicate, **attrs)

    def directive_static_print(self, call: ast.Call) -> None:
        """``pl.static_print(*args)``: print values / types at parse time (f-strings with ``{x}``)."""
        parts = []
        for a in call.args:
            if isinstance(a, ast.JoinedStr):
                text = ""
                for v in a.values:
                    if isinstance(v, ast.Constant):
                        text += str(v.value)
                    else:
                        text += self._static_repr(self.expr(v.value))
                parts.append(text)
            elif isinstance(a, ast.Constant) and isinstance(a.value, str):
                parts.append(a.value)
            else:
                parts.append(self._static_repr(self.expr(a)))
        print(f"{self.span(call)}: static_print: {' '.join(parts)}")

    @staticmethod
    def _static_repr(v: Any) -> str:
        if isinstance(v, Var):
            return f"{v.name}: {describe(v.type)}"
        if isinstance(v, Expr):
            return describe(v.type)
        return repr(v)

    def directive_static_assert(self, call: ast.Call) -> None:
        """``pl.static_assert(cond, "msg")``: a ParserError with ``msg`` when ``cond`` folds to False."""
        span = self.span(call)
        if not 1 <= len(call.args) <= 2 or call.keywords:
            raise ParserTypeError('pl.static_assert(cond, "message") takes a condition and a message', span)
        msg = "static assertion failed"
        if len(call.args) == 2:
            m = call.args[1]
            if not (isinstance(m, ast.Constant) and isinstance(m.value, str)):
                raise ParserTypeError("pl.static_assert: the message must be a string literal", self.span(m))
            msg = m.value
        cond = self.expr(call.args[0])
        if not _is_static(cond):
            raise ParserTypeError("pl.static_assert needs a condition known at compile time, got "
                                  f"{_describe_static(cond)}", self.span(call.args[0]))
        if not cond:
            raise ParserError(f"static_assert failed: {msg}", span)

    def construct_call(self, fn: DslName, node: ast.Call) -> Any:
        span = self.span(node)
        if fn.name == "const":
            args = [self.expr(a) for a in node.args]
            if len(args) != 2 or not isinstance(args[1], DataType) or not isinstance(args[0], (int, float)):
                raise ParserTypeError("pl.const(value, dtype) needs a number and a dtype", span)
            value, dtype = args
            if dtype.is_float():
                return ConstFloat(float(value), dtype, span)
            if isinstance(value, float) and not value.is_integer():
                raise ParserTypeError(f"pl.const: {value} is not an integer for {dtype!r}", span)
            return ConstInt(int(value), dtype, span)
        if fn.name in ("submit", "spmd_submit"):
            return self.submit_call(node)
        if fn.name == "array_create" and not (len(node.args) == 2 and self.expr(node.args[1]) == TASK_ID):
            return array_create(self, node, span)
        if fn.name == "array_create":
            args = [self.expr(a) for a in node.args]
            if len(args) != 2 or node.keywords or not isinstance(args[0], int) or args[1] != TASK_ID:
                raise ParserTypeError("pl.array.create(n, pl.TASK_ID) needs a constant size and pl.TASK_ID", span)
            return self.make_call("tensor.task_id_array", [[args[0]], args[1]], {}, span, node)
        if fn.name in ("array_get_element", "array_update_element"):
            return self.array_element_call(fn.name, node, span)
        if fn.name == "task_dummy":
            if node.args or [k.arg for k in node.keywords] != ["deps"]:
                raise ParserTypeError("pl.system.task_dummy takes one keyword: deps=[...]", span,
                                      "join = pl.system.task_dummy(deps=[tid_a, tid_b])")
            # deps= is checked as on pl.at (a span per entry); the op's task_ids kind checks the printed form
            return self.make_call("tensor.task_dummy", [], {"deps": list(self.task_deps(node.keywords[0].value))},
                                  span, node)
        if fn.name == "no_dep":
            raise ParserSyntaxError("pl.no_dep(t) marks an argument of pl.submit(...); use no_dep_args=[t] "
                                    "on pl.at", span)
        if fn.name == "yield_":
            raise ParserSyntaxError("pl.yield_ must be the last statement of a loop body or if branch", span)
        if fn.name in ("static_print", "static_assert"):
            raise ParserSyntaxError(f"pl.{fn.name}(...) is a statement, not a value", span)
        raise ParserSyntaxError(f"pl.{fn.name}(...) cannot be used as a value", span)


def _arg_indices(args, t, what: str, span: Span) -> list[int]:
    idx = [i for i, a in enumerate(args) if a is t]
    if not idx:
        raise ParserTypeError(f"{what}=: '{t.name}' is not an argument of this call", span)
    return idx


def _memref(v: "ann.MemRef", what: str, span) -> MemRef:
    """The IR MemRef of a printed ``pl.MemRef("base", offset, size[, addr=N])`` tile attribute."""
    def nat(x) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and x >= 0

    if not (isinstance(v.base, str) and v.base.isidentifier() and nat(v.offset) and nat(v.size)
            and (v.addr is None or nat(v.addr))):
        got = ", ".join(repr(x) for x in (v.base, v.offset, v.size) if x is not None)
        if v.addr is not None:
            got += f", addr={v.addr!r}"
        raise ParserTypeError(
            f"{what}: pl.MemRef takes (\"buffer_name\", offset, size) and optionally addr=N, with "
            f"non-negative integers; got pl.MemRef({got})", span)
    return MemRef(v.base, v.offset, v.size, v.addr)


def _dims_agree(inferred, annotated) -> bool:
    """An annotation's shape agrees with the value's: equal, but for dimensions the value has only at
    run time (``M``), which a constant or another name in the annotation may restate
    (``a_t: pl.Tensor[[cols, rows], ...] = pl.transpose(a)`` with ``a: [M, N]``, as the reference
    accepts). The binding keeps the value's run-time dimensions (:func:`_narrowed`): the annotation
    is not a promise the compiler could check."""
    if len(inferred) != len(annotated):
        return False
    return all(i == a or not isinstance(i, int) for i, a in zip(inferred, annotated))


def _narrowed(annotated: Type, inferred: Type) -> Type:
    """The type a ``name: <annotation> = value`` binding gets: the annotation, with the tile
    attributes it leaves unsaid (memory space, valid shape, MemRef) taken from the value.

    A user's ``t: pl.Tile[[32, 64], pl.FP32] = pl.load(x, ..., valid_shape=[20, 64])`` states shape
    and dtype only; dropping the load's valid shape would make the tile look whole and a later
    store write its invalid rows too (the reference keeps the valid shape). Printed IR states every
    attribute the passes decided, so it is unaffected."""
    if isinstance(annotated, TileType) and isinstance(inferred, TileType):
        return annotated.with_(
            memory_space=annotated.memory_space if annotated.memory_space is not None else inferred.memory_space,
            valid_shape=annotated.valid_shape if annotated.valid_shape is not None else inferred.valid_shape,
            memref=annotated.memref if annotated.memref is not None else inferred.memref)
    if isinstance(annotated, TensorType) and isinstance(inferred, TensorType) \
            and any(not isinstance(d, int) for d in inferred.shape) and annotated.shape != inferred.shape:
        return inferred   # (see _dims_agree: the run-time dimensions stay)
    return annotated


def _strip_memref(t: Type) -> Type:
    """A type without its address: branches of an if may yield values in different buffers."""
    return t.with_(memref=None) if isinstance(t, TileType) else t


def _tile_view_valid_node(annotation: ast.expr):
    """The ``valid_shape=[...]`` expression of a ``pl.TileView(...)`` inside a tile annotation, or None."""
    for n in ast.walk(annotation):
        if isinstance(n, ast.Call):
            for k in n.keywords:
                if k.arg == "valid_shape":
                    return k.value
    return None




def _result_parts(value) -> dict | None:
    """For a call of a multi-result op (one with a ``part`` attribute, e.g. ``tile.gather_compare``)
    that names no part: ``{part: call of that part}`` in result order; else None."""
    from pypto.ops.registry import get_op

    if not isinstance(value, Call):
        return None
    op = get_op(value.op)
    names = [p.name for p in op.params]
    if "part" not in names or value.args[names.index("part")] is not None:
        return None
    from pypto.ops.index import PARTS

    i = names.index("part")
    out = {}
    for part in PARTS:
        args = value.args[:i] + (part,) + value.args[i + 1:]
        out[part] = Call(value.op, args, op.infer_type(args, value.span), value.span)
    return out


def bind_dynamic_call(node: ast.AST):
    """``(param name, dim node, var node)`` when ``node`` is ``<name>.bind_dynamic(dim, var)``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "bind_dynamic" \
            and isinstance(node.func.value, ast.Name) and len(node.args) == 2:
        return node.func.value.id, node.args[0], node.args[1]
    return None


def _yield_parts(stmt: ast.stmt | None, resolve) -> tuple[list[str], ast.Call | None]:
    """If ``stmt`` is ``[a, b =] pl.yield_(...)`` or ``a: T = pl.yield_(...)``: (target names, the
    call); else ([], None)."""
    if stmt is None:
        return [], None
    if isinstance(stmt, ast.Expr) and _is_construct_call(stmt.value, resolve, "yield_"):
        return [], stmt.value
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and _is_construct_call(stmt.value, resolve, "yield_"):
        t = stmt.targets[0]
        elts = t.elts if isinstance(t, ast.Tuple) else [t]
        if not all(isinstance(e, ast.Name) for e in elts):
            raise ParserSyntaxError("pl.yield_ targets must be names", Span.unknown())
        return [e.id for e in elts], stmt.value
    if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None
            and _is_construct_call(stmt.value, resolve, "yield_")):
        # `x: pl.Scalar[pl.INDEX] = pl.yield_(v)` (the reference's annotated form): the annotation
        # only restates the result's type, which the yielded value already fixes
        return [stmt.target.id], stmt.value
    return [], None


def _static_slice_hint(it: ast.Slice) -> str:
    """The fix for a slice whose extent is not static, in the user's own terms: ``lo:lo + N``, with
    N the extent ``hi - lo`` takes when it is one constant over sample values of the names in it
    (``i*32:(i+1)*32`` -> ``i*32:i*32 + 32``); the sample only words the hint, never the program."""
    lo = ast.unparse(it.lower) if it.lower is not None else "0"
    n = "N"
    if it.lower is not None and it.upper is not None:
        diff = pyast.parse(f"({ast.unparse(it.upper)}) - ({lo})", mode="eval")
        names = sorted({x.id for x in ast.walk(diff) if isinstance(x, ast.Name)})
        expr = compile(diff, "<slice>", "eval")
        try:
            seen = {eval(expr, {"__builtins__": {}}, dict(zip(names, (k, k + 3, 2 * k + 1) * len(names))))
                    for k in (0, 1, 5, 12)}
        except Exception:  # noqa: BLE001 - anything else (calls, attributes) just gets the generic hint
            seen = set()
        if len(seen) == 1 and isinstance(next(iter(seen)), int) and next(iter(seen)) > 0:
            n = str(next(iter(seen)))
    return f"write the upper bound as the lower one plus a constant extent: '{lo}:{lo} + {n}'"

