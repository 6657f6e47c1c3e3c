"""``pypto.ir.IRBuilder``: build a program statement by statement, without DSL source.

The reference's builder (its ``python/pypto/ir/builder.py``), over our IR: every method it has, with
its signature, producing :mod:`pypto.ir.nodes` — the nodes the parser produces, so a built program
prints, parses back, compiles (``ir.compile``) and runs on the simulators as a parsed one does::

    ib = IRBuilder()
    with ib.program("P") as p:
        with ib.function("kernel", type=ir.FunctionType.InCore) as f:
            a = f.param("a", ib.tensor_type([16, 16], pl.FP32))
            out = f.param("out", ib.tensor_type([16, 16], pl.FP32), direction=ir.ParamDirection.Out)
            f.return_type(out.type)
            t = ib.let("t", ib.call("tile.load", a, [0, 0], [16, 16]))
            ib.return_stmt(ib.let("out", ib.call("tile.store", t, [0, 0], out)))
        p.add_function(f.get_result())
        ...
    program = p.get_result()

Where we differ (docs/compatibility.md, "IRBuilder"):

* **Expressions** are our nodes: op calls are ``ib.call("tile.add", lhs, rhs)`` (our addition: the
  reference writes ``ir.op.tile.add(...)``, which we do not have; arguments bind to the op's schema
  by position or name, Python ints / floats / lists become constants, the type comes from the op's
  rule), calls of another function of the program are ``ib.call(gvar, *args)`` (the reference's
  ``ir.Call(gvar, args, span)``), scalar arithmetic is ``BinOp("add", x, y, type)`` (the reference's
  ``ir.Add(x, y, dtype, span)``) and loop yields are ``ib.emit(YieldStmt((v,)))``.
* **Loop-carried values**: ``iter_arg`` returns a plain :class:`~pypto.ir.nodes.Var` (our ForStmt
  keeps the initial values beside its iter_args; there is no ``IterArg`` node).
* **Scopes**: ``ScopeKind.InCore`` (and ``Hierarchy`` at ``Level.CORE_GROUP``) is ``with
  pl.at(level=pl.Level.CORE_GROUP)``; ``Spmd`` is ``with pl.spmd(core_num)``; ``Cluster`` and
  ``Runtime`` scopes put their body in place, as the parser does for ``pl.cluster()`` /
  ``pl.scope()`` (``manual=True``: the tasks inside are manual, as under ``pl.manual_scope()``);
  ``SplitAiv`` (``split=`` required) is ``for aiv_id in pl.split_aiv(2, mode=split)``: the region's
  head ``aiv_id = tile.split_aiv_lane(mode)`` (from the body's first statement when it binds
  ``tile.get_subblock_idx()``, as the reference's parser writes it), then the body in place, in its own
  CORE_GROUP scope when no task scope is open; ``tile.aiv_shard`` / ``tile.aic_gather`` calls inside
  take the region's mode when ``split`` is omitted. ``CommDomain`` is refused (the reference cannot
  build one either).
* Accepted with no effect (documented where they are): a function's ``role``, a scope's ``role`` /
  ``sync_start`` / ``attrs``, leading comments, and the layout parts of ``tile_view`` (our tiles are
  dense row-major; passes place them). ``break_stmt`` / ``continue_stmt`` / ``inline_stmt`` and
  ``requires_runtime_binding=True`` are located errors: our IR has no loop exits (the parser
  rewrites ``break`` away at the source level) and no SubWorker functions.

Misuse is an :class:`~pypto.errors.IRBuilderError` (a ``RuntimeError``) located at the builder
call in the user's file; a type that disagrees with the inferred one is an
:class:`~pypto.errors.IRBuilderTypeError` (a ``TypeError`` and a ``ValueError``).
"""
from __future__ import annotations

import enum
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from pypto.errors import InternalError, InvalidOperationError, IRBuilderError, IRBuilderTypeError, Span
from pypto.errors import UnsupportedFeatureError
from pypto.frontend.dyn_bind import bind_call, bound_type
from pypto.frontend.parse_values import _MODE_INT as _SPLIT_INT   # a SplitMode as the int its ops carry
from pypto.ir.nodes import (
    AssignStmt, Call, ConstBool, ConstFloat, ConstInt, EvalStmt, Expr, ForStmt, FuncCall, Function, IfStmt,
    MakeTuple, Program, ReturnStmt, ScopeStmt, Stmt, Var, WhileStmt, YieldStmt,
)
from pypto.ir.scalar_compat import coerce_call_arg, dtypes_compatible
from pypto.ir.types import DynDim, MemRef, ScalarType, TensorType, TileType, TupleType, Type, describe
from pypto.ir.visit import Mutator
from pypto.language.dtypes import BOOL, FP32, INDEX, DataType
from pypto.language.enums import (
    KERNEL_TYPES as _KERNEL_TYPES, CompactMode, ForKind, FunctionType, Level, MemorySpace, PadValue, ParamDirection,
    SplitMode, TensorLayout, TileLayout,
)
from pypto.ops.builder import bind as _bind_op
from pypto.ops.registry import OPS, _load as _load_ops

__all__ = ["IRBuilder", "FunctionBuilder", "ForLoopBuilder", "WhileLoopBuilder", "IfStmtBuilder", "ScopeBuilder",
           "ProgramBuilder", "GlobalVar", "ScopeKind", "TileView", "TensorView", "InlineLanguage"]

_THIS_FILE = __file__


class ScopeKind(enum.Enum):
    """The kinds of ``IRBuilder.scope`` (the reference's ``ir.ScopeKind``); see the module docstring
    for what each becomes here."""

    InCore = "incore"
    Cluster = "cluster"
    Hierarchy = "hierarchy"
    Spmd = "spmd"
    SplitAiv = "split_aiv"
    Runtime = "runtime"
    CommDomain = "comm_domain"


class InlineLanguage(enum.Enum):
    """The language of an ``inline_stmt`` body (the reference's ``ir.InlineLanguage``)."""

    Python = "python"


@dataclass(frozen=True)
class GlobalVar:
    """A function of the program being built, by name (``ProgramBuilder.declare_function``): the
    callee of ``IRBuilder.call(gvar, *args)``."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class TileView:
    """``IRBuilder.tile_view(...)``: the reference's tile view. ``valid_shape`` becomes the tile
    type's valid shape; the other fields are kept for inspection only (our tiles are dense and
    row-major, their placement is the memory passes')."""

    valid_shape: tuple
    stride: tuple
    start_offset: Any
    blayout: TileLayout
    slayout: TileLayout
    fractal: int
    pad: PadValue
    compact: CompactMode


@dataclass(frozen=True)
class TensorView:
    """``IRBuilder.tensor_view(stride, layout)``: the reference's tensor view. ``tensor_type`` takes a
    row-major (ND) view of contiguous strides, or an MX scale layout; anything else is refused there,
    since a tensor is read as dense row-major here."""

    stride: tuple
    layout: TensorLayout


# ----------------------------------------------------------------------------- spans and values


def _caller_span() -> Span:
    """The span of the user's call of a builder method: the first frame outside this module and
    contextlib (file, line and the call's columns, so an error's caret points at it)."""
    frame = inspect.currentframe()
    try:
        while frame is not None and (frame.f_code.co_filename == _THIS_FILE
                                     or frame.f_code.co_filename.endswith("contextlib.py")):
            frame = frame.f_back
        if frame is None:
            return Span.unknown()
        info = inspect.getframeinfo(frame, context=0)
        pos = getattr(info, "positions", None)
        if pos is not None and pos.col_offset is not None:
            return Span(info.filename, pos.lineno, pos.col_offset, pos.end_lineno or pos.lineno,
                        pos.end_col_offset if pos.end_col_offset is not None else pos.col_offset + 1)
        return Span(info.filename, info.lineno, 0, info.lineno, 0)
    finally:
        del frame


def _expr(value: Any, span: Span, what: str = "value") -> Expr:
    """A builder operand as IR: an Expr unchanged, a Python bool / int / float as a BOOL / INDEX /
    FP32 constant (the reference makes ints ``INDEX`` and floats ``FP32`` too)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return ConstBool(value, span)
    if isinstance(value, int):
        return ConstInt(value, INDEX, span)
    if isinstance(value, float):
        return ConstFloat(value, FP32, span)
    raise IRBuilderTypeError(f"cannot use {type(value).__name__} {value!r} as the {what}: expected an IR "
                             "expression, an int or a float", span)


def _cond(value: Any, span: Span) -> Expr:
    if isinstance(value, (bool, int)) and not isinstance(value, Expr):
        return ConstBool(bool(value), span)
    e = _expr(value, span, "condition")
    if not (isinstance(e.type, ScalarType) and e.type.dtype == BOOL):
        raise IRBuilderTypeError(f"a condition must be a BOOL scalar, got {describe(e.type)}", span,
                                 "compare it: BinOp('ne', x, ConstInt(0), ScalarType(BOOL))")
    return e


def _fits(want: Type, have: Type) -> bool:
    if want == have:
        return True
    return isinstance(want, ScalarType) and isinstance(have, ScalarType) and dtypes_compatible(want.dtype, have.dtype)


def _dim(d: Any, span: Span, tile: bool):
    """One extent of a ``tensor_type`` / ``tile_type`` shape: an int (a ``ConstInt`` is one); for a
    tensor also a ``pl.dynamic`` dim, or a scalar Var naming one (the reference's dynamic dims are
    Vars: ``ib.var("n", ...)`` in a shape is ``pl.dynamic("n")``)."""
    if isinstance(d, ConstInt):
        return d.value
    if isinstance(d, int) and not isinstance(d, bool):
        return d
    if not tile and isinstance(d, DynDim):
        return d
    if not tile and isinstance(d, Var) and isinstance(d.type, ScalarType) and d.type.dtype.is_int():
        return DynDim(d.name)
    what = "a tile extent must be a static int" if tile else \
        "a tensor extent must be an int, a pl.dynamic dim or an integer scalar Var naming one"
    raise IRBuilderTypeError(f"{what}, got {d!r}", span)


# ----------------------------------------------------------------------------- build contexts


class _Ctx:
    kind = "context"

    def __init__(self, span: Span):
        self.span = span
        self.stmts: list[Stmt] = []
        self.done = False

    def add(self, stmt: Stmt) -> None:
        self.stmts.append(stmt)

    def describe(self) -> str:
        return f"the {self.kind} begun at {self.span}"


class _FunctionCtx(_Ctx):
    kind = "function"

    def __init__(self, name, span, func_type, level, attrs):
        super().__init__(span)
        self.name, self.func_type, self.level = name, func_type, level
        self.params: list[Var] = []
        self.directions: list[ParamDirection] = []
        self.return_types: list[Type] = []
        self.attrs: list = list(attrs)

    def describe(self) -> str:
        return f"function '{self.name}' (begun at {self.span})"


class _LoopCtx(_Ctx):
    def __init__(self, span):
        super().__init__(span)
        self.iter_args: list[Var] = []
        self.init_values: list[Expr] = []
        self.return_vars: list[Var] = []


class _ForCtx(_LoopCtx):
    kind = "for loop"


class _WhileCtx(_LoopCtx):
    kind = "while loop"


class _IfCtx(_Ctx):
    kind = "if statement"

    def __init__(self, cond, span):
        super().__init__(span)
        self.cond = cond
        self.then: list[Stmt] = self.stmts
        self.else_: Optional[list[Stmt]] = None
        self.return_specs: list = []     # (name, type, span): the Vars are made at the end

    def add(self, stmt: Stmt) -> None:
        (self.else_ if self.else_ is not None else self.then).append(stmt)


class _ScopeCtx(_Ctx):
    kind = "scope"


class _ProgramCtx(_Ctx):
    kind = "program"

    def __init__(self, name, span):
        super().__init__(span)
        self.name = name
        self.declared: dict[str, GlobalVar] = {}
        self.functions: list[Function] = []

    def describe(self) -> str:
        return f"program '{self.name}' (begun at {self.span})"


class _Block:
    """The context manager of one ``with ib.<construct>(...)`` block: ends the construct on a normal
    exit; after an exception inside the block, drops it (and anything opened inside it and left
    open) so the original error is what the user sees."""

    def __init__(self, ib: "IRBuilder", ctx: _Ctx, helper, finish):
        self.ib, self.ctx, self.helper, self.finish = ib, ctx, helper, finish

    def __enter__(self):
        return self.helper

    def __exit__(self, exc_type, exc, tb):
        stack = self.ib._stack
        if exc_type is not None:
            if self.ctx in stack:
                del stack[stack.index(self.ctx):]
            return False
        if not stack or stack[-1] is not self.ctx:
            if self.ctx not in stack:
                raise IRBuilderError(f"{self.ctx.describe()} was already ended", self.ctx.span)
            inner = stack[-1]
            del stack[stack.index(self.ctx):]   # dropped (with what is open inside it): the builder stays usable
            raise IRBuilderError(f"cannot end {self.ctx.describe()}: {inner.describe()} inside it is still open",
                                 inner.span, "end the inner construct first (leave its 'with' block)")
        stack.pop()
        self.helper._result = self.finish(self.ctx)
        self.ctx.done = True
        return False


# ----------------------------------------------------------------------------- the builder


class IRBuilder:
    """Builds IR functions and programs with context managers (the reference's ``ir.IRBuilder``).

    Every method takes an optional ``span``; without one, the span is the caller's line (and
    columns), so errors about the built IR point at the builder call that made the node.
    """

    def __init__(self) -> None:
        self._stack: list[_Ctx] = []
        self._comments: list[list[str]] = []

    # ------------------------------------------------------------------ context helpers

    def _top(self) -> Optional[_Ctx]:
        return self._stack[-1] if self._stack else None

    def _find(self, cls):
        return next((c for c in reversed(self._stack) if isinstance(c, cls)), None)

    def _need_body(self, what: str, span: Span) -> _Ctx:
        """The context statements go into: inside a function (possibly nested constructs)."""
        top = self._top()
        if top is None or self._find(_FunctionCtx) is None or isinstance(top, _ProgramCtx):
            raise IRBuilderError(f"cannot {what}: not inside a function", span,
                                 "open one first: 'with ib.function(name) as f:'")
        return top

    def _need(self, cls, what: str, span: Span):
        top = self._top()
        if not isinstance(top, cls):
            where = "not inside any construct" if top is None else f"the innermost open construct is {top.describe()}"
            raise IRBuilderError(f"{what} can only be called directly inside a {cls.kind} context; {where}", span)
        return top

    def _open(self, ctx: _Ctx, helper, finish) -> _Block:
        self._stack.append(ctx)
        return _Block(self, ctx, helper, finish)

    # ------------------------------------------------------------------ multi-line constructs

    def function(self, name: str, span: Optional[Span] = None, type: FunctionType = FunctionType.Opaque,
                 level: Optional[Level] = None, role: Any = None, attrs: Optional[dict] = None,
                 requires_runtime_binding: bool = False) -> _Block:
        """``with ib.function(name, type=...) as f:`` builds a function; ``f.get_result()`` after the
        block. ``attrs`` are the ``@pl.function(attrs={...})`` pairs; ``role`` is accepted and not
        recorded (our functions have no role). ``requires_runtime_binding=True`` (an abstract
        SubWorker) is refused: there are no SubWorker functions here."""
        span = span or _caller_span()
        outer = self._find(_FunctionCtx)
        if outer is not None:
            raise IRBuilderError(f"cannot begin function '{name}': already inside {outer.describe()}", span,
                                 "end the outer function first; functions do not nest")
        if requires_runtime_binding:
            raise UnsupportedFeatureError("requires_runtime_binding=True (an abstract SubWorker bound at run time) "
                                          "is not supported: there are no SubWorker functions here", span)
        if not isinstance(type, FunctionType):
            raise IRBuilderTypeError(f"type must be an ir.FunctionType, got {type!r}", span)
        ctx = _FunctionCtx(name, span, type, level, (attrs or {}).items())
        return self._open(ctx, FunctionBuilder(self, ctx), self._end_function)

    def _end_function(self, ctx: _FunctionCtx) -> Function:
        return Function(ctx.name, tuple(ctx.params), tuple(ctx.directions), tuple(ctx.return_types),
                        tuple(ctx.stmts), ctx.func_type, ctx.level, ctx.span, tuple(ctx.attrs))

    def for_loop(self, loop_var: Var, start: Any, stop: Any, step: Any, span: Optional[Span] = None,
                 kind: ForKind = ForKind.Sequential, attrs: Optional[dict] = None) -> _Block:
        """``with ib.for_loop(i, start, stop, step) as loop:`` builds a counted loop over the Var ``i``
        (``ib.var("i", ScalarType(INDEX))``); ``loop.iter_arg`` / ``loop.return_var`` add carried
        values, the body then ends with ``ib.emit(YieldStmt((next, ...)))``. ``attrs``: the loop's
        attributes (bool / int / float / str values, as ``pl.range(..., attrs={...})``)."""
        span = span or _caller_span()
        self._need_body("begin a for loop", span)
        if not isinstance(loop_var, Var):
            raise IRBuilderTypeError(f"the loop variable must be a Var (ib.var(...)), got {loop_var!r}", span)
        bounds = [_expr(v, span, w) for v, w in ((start, "start"), (stop, "stop"), (step, "step"))]
        for b, w in zip(bounds, ("start", "stop", "step")):
            if not (isinstance(b.type, ScalarType) and b.type.dtype.is_int()):
                raise IRBuilderTypeError(f"the loop {w} must be an integer scalar, got {describe(b.type)}", span)
        for k, v in (attrs or {}).items():
            if not isinstance(k, str) or not isinstance(v, (bool, int, float, str)):
                raise IRBuilderTypeError(f"loop attribute {k!r}: values must be bool / int / float / str, got {v!r}",
                                         span)
        if not isinstance(kind, ForKind):
            raise IRBuilderTypeError(f"kind must be an ir.ForKind, got {kind!r}", span)
        attrs = dict(attrs or {})
        # the reference's pipeline depth attribute is our ForStmt.stage (pl.pipeline(..., stage=F))
        stage = attrs.pop("pipeline_stages", 1)
        if kind != ForKind.Pipeline and stage != 1 or isinstance(stage, bool) or not isinstance(stage, int) \
                or stage < 1:
            raise IRBuilderTypeError(f"pipeline_stages={stage!r}: a positive int, on a ForKind.Pipeline loop", span)
        ctx = _ForCtx(span)
        ctx.loop_var, ctx.bounds, ctx.for_kind, ctx.stage = loop_var, bounds, kind, stage
        ctx.attrs = tuple(sorted(attrs.items()))
        return self._open(ctx, ForLoopBuilder(self, ctx), self._end_for)

    def _check_yield(self, ctx, body: list, targets: list, what: str) -> None:
        """A construct with carried values / results ends its body with a yield of one value each."""
        if not targets:
            if body and isinstance(body[-1], YieldStmt) and body[-1].values:
                raise IRBuilderError(f"{ctx.describe()} yields {len(body[-1].values)} value(s) but has no "
                                     f"{what}", body[-1].span)
            return
        if not body or not isinstance(body[-1], YieldStmt):
            raise IRBuilderError(f"{ctx.describe()} has {len(targets)} {what} but its body does not end with a "
                                 "yield of their values", ctx.span, "end the body with ib.emit(YieldStmt((v, ...)))")
        y = body[-1]
        if len(y.values) != len(targets):
            raise IRBuilderError(f"{ctx.describe()} yields {len(y.values)} value(s) for {len(targets)} {what}",
                                 y.span)
        for v, t in zip(y.values, targets):
            if not _fits(t.type, v.type):
                raise IRBuilderTypeError(f"{ctx.describe()} yields {describe(v.type)} for '{t.name}' of type "
                                         f"{describe(t.type)}", y.span)

    def _end_for(self, ctx: _ForCtx) -> ForStmt:
        if len(ctx.iter_args) != len(ctx.return_vars):
            raise IRBuilderError(f"{ctx.describe()} has {len(ctx.iter_args)} iteration arguments but "
                                 f"{len(ctx.return_vars)} return variables; they must match", ctx.span)
        self._check_yield(ctx, ctx.stmts, ctx.iter_args, "iteration arguments")
        start, stop, step = ctx.bounds
        s = ForStmt(ctx.loop_var, start, stop, step, tuple(ctx.iter_args), tuple(ctx.init_values),
                    tuple(ctx.stmts), tuple(ctx.return_vars), ctx.for_kind, ctx.span, stage=ctx.stage, attrs=ctx.attrs)
        self._top().add(s)
        return s

    def while_loop(self, condition: Any, span: Optional[Span] = None) -> _Block:
        """``with ib.while_loop(cond) as loop:`` builds a loop that runs while ``cond`` (a BOOL
        scalar) holds; a condition over the carried values is set after adding them, with
        ``loop.set_condition``."""
        span = span or _caller_span()
        self._need_body("begin a while loop", span)
        ctx = _WhileCtx(span)
        ctx.cond = _cond(condition, span)
        return self._open(ctx, WhileLoopBuilder(self, ctx), self._end_while)

    def _end_while(self, ctx: _WhileCtx) -> WhileStmt:
        if len(ctx.iter_args) != len(ctx.return_vars):
            raise IRBuilderError(f"{ctx.describe()} has {len(ctx.iter_args)} iteration arguments but "
                                 f"{len(ctx.return_vars)} return variables; they must match", ctx.span)
        self._check_yield(ctx, ctx.stmts, ctx.iter_args, "iteration arguments")
        s = WhileStmt(ctx.cond, tuple(ctx.iter_args), tuple(ctx.init_values), tuple(ctx.stmts),
                      tuple(ctx.return_vars), ctx.span)
        self._top().add(s)
        return s

    def if_stmt(self, condition: Any, span: Optional[Span] = None) -> _Block:
        """``with ib.if_stmt(cond) as b:`` builds an if statement: the then branch, ``b.else_()``,
        the else branch. Results (``b.return_var``) are yielded at the end of both branches."""
        span = span or _caller_span()
        self._need_body("begin an if statement", span)
        ctx = _IfCtx(_cond(condition, span), span)
        return self._open(ctx, IfStmtBuilder(self, ctx), self._end_if)

    def _end_if(self, ctx: _IfCtx) -> IfStmt:
        rvs = []
        for i, (name, t, sp) in enumerate(ctx.return_specs):
            if t is None:   # our extension: the type of the then branch's yield
                y = ctx.then[-1] if ctx.then and isinstance(ctx.then[-1], YieldStmt) else None
                if y is None or i >= len(y.values):
                    raise IRBuilderError(f"cannot infer the type of return variable '{name}': the then branch "
                                         "does not yield it", sp, "give its type: b.return_var(name, type)")
                t = y.values[i].type
            rvs.append(Var(name, t, sp))
        if rvs and ctx.else_ is None:
            raise IRBuilderError(f"{ctx.describe()} has return variables but no else branch", ctx.span,
                                 "both branches must yield their values: call b.else_() and yield there too")
        self._check_yield(ctx, ctx.then, rvs, "return variables")
        if ctx.else_ is not None:
            self._check_yield(ctx, ctx.else_, rvs, "return variables")
        s = IfStmt(ctx.cond, tuple(ctx.then), tuple(ctx.else_ or ()), tuple(rvs), ctx.span)
        self._top().add(s)
        return s

    def scope(self, scope_kind: ScopeKind, span: Optional[Span] = None, level: Optional[Level] = None,
              role: Any = None, split: Optional[SplitMode] = None, name_hint: str = "", core_num: Any = None,
              sync_start: Optional[bool] = None, manual: Optional[bool] = None,
              attrs: Optional[list] = None) -> _Block:
        """``with ib.scope(ScopeKind.InCore) as s:`` builds a scope (see the module docstring for
        each kind). ``split``: the outlined kernel's split mode (InCore), the region's mode
        (SplitAiv, required: its ``get_result()`` is then the region's statements, put in place,
        or the CORE_GROUP scope made for a bare region); ``core_num``: the block
        count (Spmd, required); ``manual`` (Runtime, required): the tasks inside are manual.
        ``role``, ``sync_start`` and ``attrs`` are accepted and not recorded (the simulator's
        dispatch has no use for them)."""
        span = span or _caller_span()
        self._need_body("begin a scope", span)
        if not isinstance(scope_kind, ScopeKind):
            raise IRBuilderTypeError(f"scope_kind must be an ir.ScopeKind, got {scope_kind!r}", span)
        if scope_kind == ScopeKind.Hierarchy and level is None:
            raise IRBuilderError("a Hierarchy scope requires a level", span)
        if scope_kind == ScopeKind.Runtime and manual is None:
            raise IRBuilderError("a Runtime scope requires the manual flag", span)
        if scope_kind == ScopeKind.Spmd and core_num is None:
            raise IRBuilderError("a Spmd scope requires core_num", span)
        if scope_kind == ScopeKind.SplitAiv:
            self._check_split_aiv(split, span)
        if scope_kind == ScopeKind.CommDomain:
            raise IRBuilderError("ScopeKind.CommDomain cannot be built with the IR builder: it is made by a "
                                 "compiler pass (as in the reference)", span)
        if scope_kind == ScopeKind.Hierarchy and level != Level.CORE_GROUP:
            raise UnsupportedFeatureError(f"a Hierarchy scope at level {level!r} is not supported; use "
                                          "Level.CORE_GROUP (or ScopeKind.InCore)", span)
        fn = self._find(_FunctionCtx)
        task = scope_kind in (ScopeKind.InCore, ScopeKind.Hierarchy, ScopeKind.Spmd, ScopeKind.Cluster)
        if task and fn.func_type not in (FunctionType.Orchestration, FunctionType.Opaque, FunctionType.Inline):
            raise IRBuilderError(f"a {scope_kind.name} scope is only allowed in an orchestration (or Opaque) "
                                 f"function, not in {fn.func_type!r} '{fn.name}'", span)
        if task and scope_kind != ScopeKind.Cluster and self._find(_ScopeCtx) is not None and any(
                c.scope_kind in (ScopeKind.InCore, ScopeKind.Hierarchy, ScopeKind.Spmd)
                for c in self._stack if isinstance(c, _ScopeCtx)):
            raise IRBuilderError("task scopes do not nest: this scope is inside another InCore / Spmd scope", span)
        if name_hint and not (isinstance(name_hint, str) and name_hint.isidentifier()):
            raise IRBuilderTypeError(f"name_hint must be an identifier string, got {name_hint!r}", span)
        ctx = _ScopeCtx(span)
        ctx.scope_kind, ctx.name_hint, ctx.manual = scope_kind, name_hint, bool(manual)
        ctx.region_mode = split if scope_kind == ScopeKind.SplitAiv else None
        ctx.split = None if split in (None, SplitMode.NONE) or scope_kind == ScopeKind.SplitAiv else split
        ctx.core_num = _expr(core_num, span, "core_num") if core_num is not None else None
        if ctx.core_num is not None and not (isinstance(ctx.core_num.type, ScalarType)
                                             and ctx.core_num.type.dtype.is_int()):
            raise IRBuilderTypeError(f"core_num must be an integer, got {describe(ctx.core_num.type)}", span)
        if isinstance(ctx.core_num, ConstInt) and ctx.core_num.value < 1:
            raise IRBuilderError(f"core_num must be positive, got {ctx.core_num.value}", span)
        return self._open(ctx, ScopeBuilder(self, ctx), self._end_scope)

    def _check_split_aiv(self, split, span: Span) -> None:
        """The rules the parser applies to ``for aiv_id in pl.split_aiv(2, mode=...)``."""
        if not isinstance(split, SplitMode):
            raise IRBuilderError(f"a SplitAiv scope requires split= (an ir.SplitMode), got {split!r}", span,
                                 "SplitMode.NONE: both lanes run the whole body; UP_DOWN / LEFT_RIGHT: "
                                 "tile.aiv_shard / tile.aic_gather split rows / columns between the lanes")
        if self._split_region() is not None:
            raise IRBuilderError("SplitAiv scopes do not nest", span, "close the outer region first")
        fn = self._find(_FunctionCtx)
        if self._task_scope() is None and fn.func_type in _KERNEL_TYPES:
            raise IRBuilderError(f"a SplitAiv scope belongs in an InCore / Spmd scope or an orchestration (or "
                                 f"Opaque) function, not directly in {fn.func_type!r} '{fn.name}'", span,
                                 "build it where the kernel is outlined from: it becomes a kernel there")

    def _task_scope(self) -> Optional[_ScopeCtx]:
        """The open InCore / Hierarchy / Spmd scope (a task scope), if any."""
        return next((c for c in self._stack if isinstance(c, _ScopeCtx)
                     and c.scope_kind in (ScopeKind.InCore, ScopeKind.Hierarchy, ScopeKind.Spmd)), None)

    def _split_region(self) -> Optional[_ScopeCtx]:
        """The open SplitAiv scope, if any."""
        return next((c for c in self._stack if isinstance(c, _ScopeCtx) and c.scope_kind == ScopeKind.SplitAiv),
                    None)

    def _split_aiv_body(self, ctx: _ScopeCtx) -> list:
        """The region as the parser writes it: the head ``aiv_id = tile.split_aiv_lane(mode)`` (the
        Var of a first statement binding ``tile.get_subblock_idx()``, the reference's form of the
        region's loop variable; else a fresh ``aiv_id``), then the rest of the body."""
        body = list(ctx.stmts)
        lane = self._op_call("tile.split_aiv_lane", (), {"mode": _SPLIT_INT[ctx.region_mode]}, ctx.span)
        first = body[0] if body else None
        if isinstance(first, AssignStmt) and isinstance(first.value, Call) \
                and first.value.op == "tile.get_subblock_idx" and not first.value.args:
            return [AssignStmt(first.var, lane.replace(span=first.value.span), first.span), *body[1:]]
        return [AssignStmt(Var("aiv_id", lane.type, ctx.span), lane, ctx.span), *body]

    def _in_manual(self, upto: _ScopeCtx) -> bool:
        return any(isinstance(c, _ScopeCtx) and c.scope_kind == ScopeKind.Runtime and c.manual
                   for c in self._stack if c is not upto)

    def _end_scope(self, ctx: _ScopeCtx):
        kind, body = ctx.scope_kind, list(ctx.stmts)
        manual = self._in_manual(ctx)
        if kind == ScopeKind.SplitAiv:
            body = self._split_aiv_body(ctx)
            if self._task_scope() is not None:   # in place, as the parser emits a region in a pl.at scope
                for s in body:
                    self._top().add(s)
                return tuple(body)
            # a bare region: its own CORE_GROUP scope, outlined into a kernel of its own (the parser's form)
            s = ScopeStmt(Level.CORE_GROUP, "", tuple(body), ctx.span, manual=manual)
            self._top().add(s)
            return s
        if kind in (ScopeKind.Cluster, ScopeKind.Runtime):
            if kind == ScopeKind.Runtime and ctx.manual:
                if manual:
                    raise IRBuilderError("a manual Runtime scope cannot be nested inside another manual one",
                                         ctx.span)
                body = list(_Manual().stmts(tuple(body)))
            for s in body:   # in place, as the parser does for pl.cluster() / pl.scope()
                self._top().add(s)
            return tuple(body)
        s = ScopeStmt(Level.CORE_GROUP, ctx.name_hint, tuple(body), ctx.span, manual=manual,
                      block_num=ctx.core_num, split=ctx.split)
        self._top().add(s)
        return s

    def program(self, name: str, span: Optional[Span] = None) -> _Block:
        """``with ib.program(name) as p:`` builds a program: functions are built inside it and added
        with ``p.add_function(f.get_result())``; ``p.get_result()`` after the block."""
        span = span or _caller_span()
        outer = self._find(_ProgramCtx)
        if outer is not None:
            raise IRBuilderError(f"cannot begin program '{name}': already inside {outer.describe()}", span)
        if self._stack:
            raise IRBuilderError(f"cannot begin program '{name}' inside {self._top().describe()}", span)
        ctx = _ProgramCtx(name, span)
        return self._open(ctx, ProgramBuilder(self, ctx), self._end_program)

    def _end_program(self, ctx: _ProgramCtx) -> Program:
        # (as the reference: a declared function need not be added, and a program may be empty; a
        # call of a function not added is refused at the call, ``ib.call``)
        return Program(ctx.name, tuple(ctx.functions), ctx.span)

    # ------------------------------------------------------------------ single statements

    def var(self, name: str, type: Type, span: Optional[Span] = None) -> Var:
        """A new Var (a loop variable, or a name to ``assign``)."""
        span = span or _caller_span()
        if not isinstance(type, Type):
            raise IRBuilderTypeError(f"the type of '{name}' must be an IR type, got {type!r}", span)
        return Var(name, type, span)

    def add_function_attrs(self, attrs: dict) -> None:
        """Merge ``attrs`` into the function being built (a key already present is an error)."""
        span = _caller_span()
        fn = self._need(_FunctionCtx, "add_function_attrs", span)
        for k, v in attrs.items():
            if any(k == key for key, _ in fn.attrs):
                raise IRBuilderError(f"duplicate function attribute '{k}' in function '{fn.name}'; each attribute "
                                     "may be declared only once", span)
            fn.attrs.append((k, v))

    def emit(self, stmt: Stmt) -> None:
        """Add a statement to the innermost open construct (e.g. ``YieldStmt((v,))``)."""
        span = getattr(stmt, "span", None) or _caller_span()
        top = self._need_body("emit a statement", _caller_span() if span.is_unknown() else span)
        if not isinstance(stmt, Stmt):
            raise IRBuilderTypeError(f"emit takes a statement, got {type(stmt).__name__}", _caller_span())
        for field in ("values",):   # a list given where the node keeps a tuple (YieldStmt([v]))
            if isinstance(getattr(stmt, field, None), list):
                stmt = stmt.replace(**{field: tuple(getattr(stmt, field))})
        if self._comments and self._comments[-1][1] is top:
            self._comments[-1] = ([], top)   # leading comments are consumed by the statement (not kept)
        top.add(stmt)

    def assign(self, var: Var, value: Any, span: Optional[Span] = None) -> AssignStmt:
        """Emit ``var = value``. Assigning a Var again is allowed (ConvertToSSA versions it)."""
        span = span or _caller_span()
        self._need_body("assign", span)
        if not isinstance(var, Var):
            raise IRBuilderTypeError(f"assign needs a Var to assign to, got {var!r}", span)
        v = _expr(value, span)
        if not _fits(var.type, v.type):
            raise IRBuilderTypeError(f"cannot assign {describe(v.type)} to '{var.name}' of type {describe(var.type)}",
                                     span)
        s = AssignStmt(var, v, span)
        self.emit(s)
        return s

    def let(self, name: str, value: Any, type: Optional[Type] = None, span: Optional[Span] = None) -> Var:
        """A new Var ``name`` bound to ``value`` (emits the assignment); its type is the value's.
        An explicit ``type`` must be of the same kind (tensor for tensor ...) and replaces the
        inferred one (e.g. a tile type with a memref)."""
        span = span or _caller_span()
        self._need_body("let", span)
        v = _expr(value, span)
        t = v.type
        if type is not None:
            if builtin_type(type) is not builtin_type(t):
                have, want = builtin_type(t).__name__, builtin_type(type).__name__
                raise IRBuilderTypeError(f"type override for '{name}' is incompatible: inferred {have} but the "
                                         f"override is {want}", span)
            t = type
        var = Var(name, t, span)
        self.emit(AssignStmt(var, v, span))
        return var

    def make_tuple(self, elements: Sequence[Any], span: Optional[Span] = None) -> MakeTuple:
        """A tuple expression of ``elements``."""
        span = span or _caller_span()
        return MakeTuple(tuple(_expr(e, span, "tuple element") for e in elements), span)

    def push_pending_leading_comments(self, comments: list) -> None:
        """Accepted for the reference's parser protocol; our IR keeps no comments, so the next
        statement consumes and drops them. Pair with ``pop_pending_leading_comments``."""
        self._comments.append((list(comments), self._top()))

    def pop_pending_leading_comments(self) -> list:
        """The comments of the matching push that no statement consumed."""
        if not self._comments:
            raise IRBuilderError("pop_pending_leading_comments without a matching push", _caller_span())
        return self._comments.pop()[0]

    def return_stmt(self, values: Any = None, span: Optional[Span] = None) -> ReturnStmt:
        """Emit ``return`` of no value, one value or a list of values."""
        span = span or _caller_span()
        self._need_body("return", span)
        if values is None:
            vals = ()
        elif isinstance(values, (list, tuple)):
            vals = tuple(_expr(v, span, "return value") for v in values)
        else:
            vals = (_expr(values, span, "return value"),)
        s = ReturnStmt(vals, span)
        self.emit(s)
        return s

    def eval_stmt(self, expr: Any, span: Optional[Span] = None) -> EvalStmt:
        """Emit an expression evaluated for its effect (e.g. ``ib.call("tensor.dump_tag", t)``)."""
        span = span or _caller_span()
        self._need_body("evaluate an expression", span)
        s = EvalStmt(_expr(expr, span), span)
        self.emit(s)
        return s

    def break_stmt(self, span: Optional[Span] = None):
        """Refused: our IR has no loop exits (the parser rewrites a source ``break`` into flags)."""
        span = span or _caller_span()
        raise UnsupportedFeatureError("break_stmt: the IR has no loop exits", span,
                                      "build a while_loop whose condition reads a carried flag, or write the "
                                      "kernel in the DSL (the parser rewrites 'break')")

    def continue_stmt(self, span: Optional[Span] = None):
        """Refused: our IR has no loop exits (the parser rewrites a source ``continue`` into flags)."""
        span = span or _caller_span()
        raise UnsupportedFeatureError("continue_stmt: the IR has no loop exits", span,
                                      "guard the rest of the body with an if_stmt, or write the kernel in the DSL "
                                      "(the parser rewrites 'continue')")

    def inline_stmt(self, body: str, language: InlineLanguage = InlineLanguage.Python, span: Optional[Span] = None):
        """Refused: inline source bodies are SubWorker functions, which do not exist here."""
        span = span or _caller_span()
        raise UnsupportedFeatureError("inline_stmt: inline SubWorker bodies are not supported", span)

    # ------------------------------------------------------------------ op and function calls (ours)

    def call(self, callee: Any, *args: Any, span: Optional[Span] = None, **kwargs: Any) -> Expr:
        """A call expression (our addition; the reference builds these with ``ir.op.*`` and
        ``ir.Call``). ``callee``:

        * an op name (``"tile.add"``, ``"tensor.dim"``; docs/ops.md): arguments bind to the op's
          schema by position and name, omitted ones take their defaults, Python ints / floats /
          lists of ints become constants and tuples, the type comes from the op's rule (which
          raises a located error for operands it rejects);
        * a :class:`GlobalVar` (``p.declare_function``), a built :class:`Function` or a function's
          name in the program: a call of that function, its result typed from the callee's return
          types with the arguments' dynamic dims bound (the callee must have been added to the
          program already, as the parser needs callees before callers).
        """
        span = span or _caller_span()
        if isinstance(callee, str) and callee in _ops():
            return self._op_call(callee, args, kwargs, span)
        if isinstance(callee, (GlobalVar, Function, str)):
            if kwargs:
                raise IRBuilderError(f"calls of functions take positional arguments only, got {sorted(kwargs)}", span)
            return self._func_call(callee, args, span)
        raise IRBuilderTypeError(f"cannot call {callee!r}: expected an op name (e.g. 'tile.add'), a GlobalVar or a "
                                 "Function", span)

    def _op_call(self, name: str, args, kwargs, span: Span) -> Call:
        op = _ops()[name]
        if name.endswith((".aiv_shard", ".aic_gather")):
            kwargs = self._crossing_mode(name, args, kwargs, span)
        if len(args) > len(op.params):
            raise InvalidOperationError(f"{name} takes at most {len(op.params)} arguments, got {len(args)}", span)
        by_name = dict(kwargs)
        for p, a in zip(op.params, args):
            if p.name in by_name:
                raise InvalidOperationError(f"{name} got multiple values for '{p.name}'", span)
            by_name[p.name] = a
        try:
            values = _bind_op(name, span, **by_name)
        except InternalError as e:   # a user's call: not a compiler bug
            raise InvalidOperationError(e.message.replace("ops.build", "ib.call"), span,
                                        f"the parameters of {name} are: {', '.join(p.name for p in op.params)}") \
                from None
        return Call(name, values, op.infer_type(values, span), span)

    def _crossing_mode(self, name: str, args, kwargs, span: Span) -> dict:
        """A crossing of a SplitAiv region takes the region's mode (as ``pl.aiv_shard(x)`` does in
        the DSL); an explicit ``split`` must be that mode. Outside a region ``split`` is required
        (the printed form of a region, after its ``tile.split_aiv_lane`` head)."""
        region = self._split_region()
        given = kwargs.get("split", args[1] if len(args) > 1 else None)
        if region is None:
            return kwargs
        want = _SPLIT_INT[region.region_mode]
        if given is None:
            return {**kwargs, "split": want}
        if isinstance(given, SplitMode):
            given = _SPLIT_INT[given]
        if given != want:
            raise IRBuilderError(f"{name}: split={given!r} in a SplitAiv scope of mode {region.region_mode!r} "
                                 f"(split={want})", span, "omit split: the crossing takes the region's mode")
        return kwargs

    def _func_call(self, callee, args, span: Span) -> FuncCall:
        prog = self._find(_ProgramCtx)
        name = callee.name if isinstance(callee, (GlobalVar, Function)) else callee
        if isinstance(callee, Function):
            func = callee
        else:
            func = next((f for f in (prog.functions if prog else ()) if f.name == name), None)
            if func is None:
                known = prog is not None and name in prog.declared
                raise IRBuilderError(
                    f"cannot call function '{name}': it " + ("is declared but not added to the program yet" if known
                                                             else "is no function of the program being built"), span,
                    "build the callee first and p.add_function(...) it (callees come before callers), or pass "
                    "the built Function")
        if func.func_type == FunctionType.Orchestration:
            raise IRBuilderError(f"'{name}' is an orchestration function: it is the program's entry, not a callee",
                                 span)
        vals = [_expr(a, span, f"argument {i} of {name}") for i, a in enumerate(args)]
        if len(vals) != len(func.params):
            raise IRBuilderError(f"{name}() takes {len(func.params)} arguments, got {len(vals)}", span)
        ptypes = [p.type for p in func.params]
        vals = [coerce_call_arg(a, t) for a, t in zip(vals, ptypes)]
        dims = bind_call(name, ptypes, vals, [span] * len(vals))
        rts = [bound_type(t, dims) for t in func.return_types]
        rtype = rts[0] if len(rts) == 1 else TupleType(tuple(rts))
        return FuncCall(name, tuple(vals), rtype, span, manual=self._in_manual(None))

    # ------------------------------------------------------------------ state queries

    def in_function(self) -> bool:
        """Whether a function is being built (at any depth)."""
        return self._find(_FunctionCtx) is not None

    def in_loop(self) -> bool:
        """Whether the innermost open construct is a for loop."""
        return isinstance(self._top(), _ForCtx)

    def in_if(self) -> bool:
        """Whether the innermost open construct is an if statement."""
        return isinstance(self._top(), _IfCtx)

    def in_while_loop(self) -> bool:
        """Whether the innermost open construct is a while loop."""
        return isinstance(self._top(), _WhileCtx)

    def in_program(self) -> bool:
        """Whether a program is being built."""
        return self._find(_ProgramCtx) is not None

    # ------------------------------------------------------------------ types

    def memref(self, memory_space_or_addr: Any, addr_or_size: Any, size_or_id: int, id: Optional[int] = None,
               span: Optional[Span] = None) -> MemRef:
        """A memory reference: ``memref(space, addr, size, id)`` (or the short ``memref(addr, size,
        id)``). Ours names the buffer ``mem_<space>_<id>`` with the tile at offset 0 and ``addr`` its
        byte address (an int; a symbolic address has no meaning on the simulator and is refused).
        The memory passes rebuild every kernel tile's memref, so a given one matters only to IR
        that is not compiled (e.g. printed)."""
        span = span or _caller_span()
        if isinstance(memory_space_or_addr, MemorySpace):
            if id is None:
                raise IRBuilderTypeError("memref(memory_space, addr, size, id) requires an explicit id", span)
            space, addr, size, ident = memory_space_or_addr, addr_or_size, size_or_id, id
        else:
            if id is not None:
                raise IRBuilderTypeError("memref(addr, size, id) takes exactly three positional arguments; pass "
                                         "span via span=", span)
            space, addr, size, ident = None, memory_space_or_addr, addr_or_size, size_or_id
        if isinstance(addr, ConstInt):
            addr = addr.value
        if not isinstance(addr, int) or not isinstance(size, int) or not isinstance(ident, int):
            raise IRBuilderTypeError(f"memref needs an int address, size and id, got {addr!r}, {size!r}, {ident!r}",
                                     span)
        base = f"mem_{space.value if space is not None else 'buf'}_{ident}"
        return MemRef(base, 0, size, addr)

    def tile_view(self, valid_shape: Sequence[Any], stride: Sequence[Any], start_offset: Any,
                  blayout: TileLayout = TileLayout.row_major, slayout: TileLayout = TileLayout.none_box,
                  fractal: int = 512, pad: PadValue = PadValue.null, span: Optional[Span] = None,
                  compact: CompactMode = CompactMode.null) -> TileView:
        """A tile view for ``tile_type``: its ``valid_shape`` (ints or integer scalars known at run
        time) becomes the tile's valid region; the rest is recorded only (see :class:`TileView`)."""
        span = span or _caller_span()
        vs = tuple(d.value if isinstance(d, ConstInt) else d if isinstance(d, int) else _expr(d, span, "valid extent")
                   for d in valid_shape)
        return TileView(vs, tuple(stride), start_offset, blayout, slayout, fractal, pad, compact)

    def tensor_view(self, stride: Sequence[Any], layout: TensorLayout, span: Optional[Span] = None) -> TensorView:
        """A tensor view for ``tensor_type`` (see :class:`TensorView`)."""
        return TensorView(tuple(stride), layout)

    def tensor_type(self, shape: Sequence[Any], dtype: DataType, memref: Optional[MemRef] = None,
                    tensor_view: Optional[TensorView] = None, span: Optional[Span] = None) -> TensorType:
        """A tensor type. Extents: ints, ``pl.dynamic`` dims, or integer Vars naming dynamic dims.
        ``memref`` is accepted and not kept (a tensor lives where the runtime puts it); a
        ``tensor_view`` must be row-major with contiguous strides or an MX scale layout."""
        span = span or _caller_span()
        dims = tuple(_dim(d, span, tile=False) for d in shape)
        layout = None
        if tensor_view is not None:
            if tensor_view.layout in (TensorLayout.MX_A_ZZ, TensorLayout.MX_B_NN):
                layout = tensor_view.layout
            elif tensor_view.layout != TensorLayout.ND:
                raise UnsupportedFeatureError(f"tensor layout {tensor_view.layout!r} is not supported: tensors are "
                                              "row-major (ND) here", span)
            strides = [s.value if isinstance(s, ConstInt) else s for s in tensor_view.stride]
            if strides and all(isinstance(d, int) for d in dims) and all(isinstance(s, int) for s in strides):
                dense, acc = [], 1
                for d in reversed(dims):
                    dense.insert(0, acc)
                    acc *= d
                if strides not in (dense, dense[::-1]):
                    raise UnsupportedFeatureError(f"tensor view strides {strides} are not the contiguous row-major "
                                                  f"strides {dense} of shape {list(dims)}: strided tensors are not "
                                                  "supported here", span)
        return TensorType(dims, dtype, layout)

    def tile_type(self, shape: Sequence[Any], dtype: DataType, memref: Optional[MemRef] = None,
                  tile_view: Optional[TileView] = None, memory_space: Optional[MemorySpace] = None,
                  span: Optional[Span] = None) -> TileType:
        """A tile type: static extents, the view's valid shape, ``memory_space`` and ``memref``."""
        span = span or _caller_span()
        dims = tuple(_dim(d, span, tile=True) for d in shape)
        if memref is not None and memory_space is None:
            raise IRBuilderTypeError("a tile type with a memref needs its memory_space", span)
        valid = tile_view.valid_shape if tile_view is not None else None
        return TileType(dims, dtype, memory_space, valid, memref)


def builtin_type(x):
    """``type(x)`` (the builder's methods take a parameter named ``type``, as the reference's)."""
    return x.__class__


def _ops() -> dict:
    _load_ops()
    return OPS


class _Manual(Mutator):
    """The body of a manual Runtime scope: every task inside is manual (as under
    ``pl.manual_scope()``)."""

    def stmt(self, s):
        s = super().stmt(s)
        if isinstance(s, ScopeStmt) and not s.manual:
            s = s.replace(manual=True)
        if isinstance(s, AssignStmt) and isinstance(s.value, FuncCall) and not s.value.manual:
            s = s.replace(value=s.value.replace(manual=True))
        if isinstance(s, EvalStmt) and isinstance(s.expr, FuncCall) and not s.expr.manual:
            s = s.replace(expr=s.expr.replace(manual=True))
        return s


# ----------------------------------------------------------------------------- helpers yielded by the blocks


class _Result:
    _kind = "construct"

    def __init__(self, builder: IRBuilder, ctx: _Ctx):
        self._builder, self._ctx, self._result = builder, ctx, None

    def get_result(self):
        """The built node (after the ``with`` block has ended)."""
        if self._result is None:
            raise IRBuilderError(f"{self._ctx.describe()} is not complete yet: read its result after its 'with' "
                                 "block", _caller_span())
        return self._result


class _Outputs(_Result):
    def output(self, index: int = 0) -> Var:
        """Return variable ``index`` of the completed statement."""
        if self._result is None:
            raise IRBuilderError(f"{self._ctx.describe()} is not complete yet", _caller_span())
        rvs = self._result.return_vars
        if not 0 <= index < len(rvs):
            raise IndexError(f"return variable index {index} out of range ({self._ctx.kind} has {len(rvs)} return "
                             "vars)")
        return rvs[index]

    def outputs(self) -> list:
        """All return variables of the completed statement."""
        if self._result is None:
            raise IRBuilderError(f"{self._ctx.describe()} is not complete yet", _caller_span())
        return list(self._result.return_vars)


class FunctionBuilder(_Result):
    """Yielded by ``ib.function(...)``: parameters, return types, the result."""

    def param(self, name: str, type: Type, span: Optional[Span] = None,
              direction: ParamDirection = ParamDirection.In) -> Var:
        """Add a parameter (``direction``: In, Out or InOut)."""
        span = span or _caller_span()
        fn = self._builder._need(_FunctionCtx, "param", span)
        if not isinstance(type, Type):
            raise IRBuilderTypeError(f"the type of parameter '{name}' must be an IR type, got {type!r}", span)
        if not isinstance(direction, ParamDirection):
            raise IRBuilderTypeError(f"direction must be an ir.ParamDirection, got {direction!r}", span)
        if direction != ParamDirection.In and not isinstance(type, TensorType):
            raise IRBuilderTypeError(f"parameter '{name}': only tensors can be {direction!r}, got {describe(type)}",
                                     span)
        if any(p.name == name for p in fn.params):
            raise IRBuilderError(f"function '{fn.name}' already has a parameter '{name}'", span)
        v = Var(name, type, span)
        fn.params.append(v)
        fn.directions.append(direction)
        return v

    def return_type(self, type: Type) -> None:
        """Add a return type."""
        span = _caller_span()
        fn = self._builder._need(_FunctionCtx, "return_type", span)
        if not isinstance(type, Type):
            raise IRBuilderTypeError(f"a return type must be an IR type, got {type!r}", span)
        fn.return_types.append(type)


class _LoopBuilder(_Outputs):
    _ctx_cls = _LoopCtx

    def iter_arg(self, name: str, init_value: Any, type: Optional[Type] = None, span: Optional[Span] = None) -> Var:
        """Add a loop-carried value starting at ``init_value``; returns the Var the body reads (of
        the initial value's type; a given ``type`` must equal it)."""
        span = span or _caller_span()
        ctx = self._builder._need(self._ctx_cls, "iter_arg", span)
        init = _expr(init_value, span, "initial value")
        if type is not None and type != init.type:
            raise IRBuilderTypeError(f"type mismatch in iter_arg '{name}': inferred {describe(init.type)}, given "
                                     f"{describe(type)}", span)
        v = Var(name, init.type, span)
        ctx.iter_args.append(v)
        ctx.init_values.append(init)
        return v

    def return_var(self, name: str, type: Optional[Type] = None, span: Optional[Span] = None) -> Var:
        """Add the Var holding the final value of the next iter_arg (its type by default)."""
        span = span or _caller_span()
        ctx = self._builder._need(self._ctx_cls, "return_var", span)
        i = len(ctx.return_vars)
        inferred = ctx.iter_args[i].type if i < len(ctx.iter_args) else None
        if type is None and inferred is None:
            raise IRBuilderTypeError(f"cannot infer the type of return_var '{name}': no iter_arg {i}; give its type",
                                     span)
        if type is not None and inferred is not None and type != inferred:
            raise IRBuilderTypeError(f"type mismatch in return_var '{name}': its iter_arg is {describe(inferred)}, "
                                     f"given {describe(type)}", span)
        v = Var(name, type if type is not None else inferred, span)
        ctx.return_vars.append(v)
        return v


class ForLoopBuilder(_LoopBuilder):
    """Yielded by ``ib.for_loop(...)``."""

    _ctx_cls = _ForCtx


class WhileLoopBuilder(_LoopBuilder):
    """Yielded by ``ib.while_loop(...)``."""

    _ctx_cls = _WhileCtx

    def set_condition(self, condition: Any) -> None:
        """Replace the loop condition (one that reads the iter_args, added after them)."""
        span = _caller_span()
        ctx = self._builder._need(_WhileCtx, "set_condition", span)
        ctx.cond = _cond(condition, span)


class ScopeBuilder(_Result):
    """Yielded by ``ib.scope(...)``. Its result is the ScopeStmt; for a Cluster or Runtime scope
    (body put in place) the tuple of the body's statements."""


class IfStmtBuilder(_Outputs):
    """Yielded by ``ib.if_stmt(...)``."""

    def else_(self, span: Optional[Span] = None) -> None:
        """Begin the else branch."""
        span = span or _caller_span()
        ctx = self._builder._need(_IfCtx, "else_", span)
        if ctx.else_ is not None:
            raise IRBuilderError("cannot begin the else branch: already in the else branch", span)
        ctx.else_ = []

    def return_var(self, name: str, type: Optional[Type] = None, span: Optional[Span] = None) -> None:
        """Add a result (a phi of the branches' yields); read it with ``output()`` after the block.
        ``type`` may be omitted (our addition): then it is the then branch's yielded value's."""
        span = span or _caller_span()
        ctx = self._builder._need(_IfCtx, "return_var", span)
        if type is not None and not isinstance(type, Type):
            raise IRBuilderTypeError(f"the type of return_var '{name}' must be an IR type, got {type!r}", span)
        ctx.return_specs.append((name, type, span))


class ProgramBuilder(_Result):
    """Yielded by ``ib.program(...)``: function declarations and the functions."""

    def declare_function(self, name: str) -> GlobalVar:
        """The GlobalVar of function ``name`` (the same one on every call), for ``ib.call``."""
        ctx = self._builder._find(_ProgramCtx)
        if ctx is None or ctx is not self._ctx:
            raise IRBuilderError("declare_function can only be called inside its program", _caller_span())
        return ctx.declared.setdefault(name, GlobalVar(name))

    def get_global_var(self, name: str) -> GlobalVar:
        """The GlobalVar of a declared (or added) function."""
        if name not in self._ctx.declared:
            raise IRBuilderError(f"function '{name}' is not declared in program '{self._ctx.name}'", _caller_span())
        return self._ctx.declared[name]

    def add_function(self, func: Function) -> None:
        """Add a built function (declared or not) to the program."""
        span = _caller_span()
        ctx = self._builder._find(_ProgramCtx)
        if ctx is not self._ctx or ctx.done:
            raise IRBuilderError("add_function can only be called inside its program", span)
        if not isinstance(func, Function):
            raise IRBuilderTypeError(f"add_function takes a built Function (f.get_result()), got {func!r}", span)
        if any(f.name == func.name for f in ctx.functions):
            raise IRBuilderError(f"program '{ctx.name}' already has a function '{func.name}'", span)
        ctx.declared.setdefault(func.name, GlobalVar(func.name))
        ctx.functions.append(func)
