"""IR nodes: frozen dataclasses with real fields.

* Expressions carry their ``type``; statements and expressions carry a ``span`` (ignored by
  equality: two programs are structurally equal when they compute the same thing).
* A :class:`Var` is identified by object identity, never by name (``eq=False``); its ``name`` is a
  hint for printing.
* An op call (:class:`Call`) stores its operands in the op's schema order (see :mod:`pypto.ops`):
  each is an :class:`Expr` or an attribute value (a ``DataType``, an enum member, a string, ``None``).
* Passes build new nodes (``dataclasses.replace``); nothing mutates IR in place.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Optional

from pypto.errors import Span
from pypto.ir.types import ScalarType, Type
from pypto.language.dtypes import BOOL, FP32, INDEX, DataType
from pypto.language.enums import FunctionType, ForKind, Level, ParamDirection
from pypto.ir.types import TupleType

_NOSPAN = field(default_factory=Span.unknown, compare=False, repr=False)


class Node:
    """Base class of every IR node."""

    def replace(self, **changes):
        """A copy with some fields replaced."""
        return replace(self, **changes)


# ----------------------------------------------------------------------------- expressions


class Expr(Node):
    """Base class of expressions; every expression has a ``type``."""

    type: Type


@dataclass(frozen=True, eq=False)
class Var(Expr):
    """A named SSA value. Identity-compared; ``name`` only guides printing."""

    name: str
    type: Type
    span: Span = _NOSPAN

    def __repr__(self) -> str:
        return f"Var({self.name})"


@dataclass(frozen=True)
class ConstInt(Expr):
    """An integer literal; a bare DSL int literal is ``INDEX``."""

    value: int
    dtype: DataType = INDEX
    span: Span = _NOSPAN

    @property
    def type(self) -> Type:
        return ScalarType(self.dtype)


@dataclass(frozen=True)
class ConstFloat(Expr):
    """A floating-point literal; a bare DSL float literal is ``FP32``."""

    value: float
    dtype: DataType = FP32
    span: Span = _NOSPAN

    @property
    def type(self) -> Type:
        return ScalarType(self.dtype)


@dataclass(frozen=True)
class ConstBool(Expr):
    """A boolean literal."""

    value: bool
    span: Span = _NOSPAN

    @property
    def type(self) -> Type:
        return ScalarType(BOOL)


@dataclass(frozen=True)
class Call(Expr):
    """A call of a registered op (``op`` is its name, e.g. ``"tile.add"``); ``args`` in schema order."""

    op: str
    args: tuple[Any, ...]
    type: Type
    span: Span = _NOSPAN

    def __post_init__(self):
        # a pass may build a call with the leading arguments only: the trailing optional ones
        # take their schema defaults, so that every Call holds the full schema (and equals its
        # printed-and-parsed form)
        from pypto.ops.registry import OPS, REQUIRED, _load

        _load()
        op = OPS.get(self.op)
        if op is not None and len(self.args) < len(op.params):
            rest = op.params[len(self.args):]
            if all(p.default is not REQUIRED for p in rest):
                object.__setattr__(self, "args", tuple(self.args) + tuple(p.default for p in rest))


@dataclass(frozen=True)
class FuncCall(Expr):
    """A call of another function of the program (printed ``self.<func>(...)``)."""

    func: str
    args: tuple[Expr, ...]
    type: Type
    span: Span = _NOSPAN
    # task attributes of the dispatch (docs/language.md, "Task dependencies"), set by OutlineIncoreScopes from the pl.at
    # scope or by ``pl.submit``: explicit TaskId dependencies, argument indices tagged NO_DEP,
    # argument indices dumped at enable_dump_args=1, submitted as in a manual scope, and the Var
    # this call *defines* bound to the task's TaskId (``res, tid = pl.submit(...)``; not a use)
    deps: tuple[Expr, ...] = ()
    no_dep_args: tuple[int, ...] = ()
    dump_args: tuple[int, ...] = ()
    manual: bool = False
    task_id_var: Optional[Var] = None
    # the runtime tag of each argument (``INPUT`` / ``INOUT`` / ``OUTPUT_EXISTING`` / ``NO_DEP`` for
    # tensors, ``SCALAR`` for scalars), decided by DeriveCallDirections; empty before it (printed as
    # ``attrs={"arg_directions": [...]}``)
    arg_directions: tuple[str, ...] = ()
    # ``(argument index, (producer site, ...))`` per argument whose tensormap lookup the compiler
    # replaced (AutoDeriveTaskDependencies): the argument's tag was rewritten (INPUT -> NO_DEP,
    # INOUT -> OUTPUT_EXISTING) and the runtime waits for the latest task of each producer *site*
    # (the ordinal of a task call in its orchestration function, :func:`pypto.passes.
    # auto_derive_task_dependencies.task_sites`) instead; printed ``attrs={"compiler_dep_edges": {...}}``
    compiler_dep_edges: tuple[tuple[int, tuple[int, ...]], ...] = ()
    # ``pl.submit(..., predicate=(t[i, j] == 3))``: ``(cmp, value, t, i, j)`` with ``cmp`` one of
    # eq ne lt le gt ge and ``value`` an int literal; the runtime reads the element when the task's
    # dependencies are done and retires the task without running it when the comparison is false
    # (docs/language.md, "Task dependencies"). Flat, so generic walkers and mutators see ``t`` and the indices as uses
    predicate: tuple = ()
    # ``pl.spmd_submit(..., core_num=n)`` / ``with pl.spmd(n)``: one task of ``n`` blocks, block ``i``
    # on its own core reading ``pl.tile.get_block_idx() == i``; None: one block
    block_num: Optional[Expr] = None


@dataclass(frozen=True)
class BinOp(Expr):
    """Scalar arithmetic or comparison: ``op`` is one of :data:`BINOPS`."""

    op: str
    lhs: Expr
    rhs: Expr
    type: Type
    span: Span = _NOSPAN


# scalar binary operators: name -> Python operator spelling (the printer and parser share this table)
BINOPS = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
    "and": "and", "or": "or", "min": "min", "max": "max",
    # integer-only (the parser refuses them on floats): shifts are arithmetic (sign-extending)
    "lshift": "<<", "rshift": ">>", "bitand": "&", "bitor": "|", "bitxor": "^",
}
INT_BINOPS = frozenset({"lshift", "rshift", "bitand", "bitor", "bitxor"})
COMPARISONS = frozenset({"lt", "le", "gt", "ge", "eq", "ne", "and", "or"})


@dataclass(frozen=True)
class UnaryOp(Expr):
    """Scalar ``neg`` / ``not`` / ``abs``, or ``cast:<mode>`` (``pl.cast`` of a scalar to
    ``type``'s dtype under a rounding mode, as :func:`pypto.numerics.cast.cast_tensor`)."""

    op: str
    operand: Expr
    type: Type
    span: Span = _NOSPAN


@dataclass(frozen=True)
class MakeTuple(Expr):
    """A list of scalar expressions (offsets, shapes) or of call results."""

    elements: tuple[Expr, ...]
    span: Span = _NOSPAN

    @property
    def type(self) -> Type:
        return TupleType(tuple(e.type for e in self.elements))


@dataclass(frozen=True)
class TupleGetItem(Expr):
    """Element ``index`` of a tuple-typed value."""

    value: Expr
    index: int
    type: Type
    span: Span = _NOSPAN


# ----------------------------------------------------------------------------- statements


class Stmt(Node):
    """Base class of statements."""


@dataclass(frozen=True)
class AssignStmt(Stmt):
    """``var = value``; the definition site of ``var``."""

    var: Var
    value: Expr
    span: Span = _NOSPAN


@dataclass(frozen=True)
class EvalStmt(Stmt):
    """An expression evaluated for its effect (e.g. ``pl.dump_tag(t)``)."""

    expr: Expr
    span: Span = _NOSPAN


@dataclass(frozen=True)
class ReturnStmt(Stmt):
    """``return v0, v1, ...``"""

    values: tuple[Expr, ...]
    span: Span = _NOSPAN


@dataclass(frozen=True)
class YieldStmt(Stmt):
    """The last statement of a loop body or if branch: values for the iter_args / return_vars."""

    values: tuple[Expr, ...]
    span: Span = _NOSPAN


@dataclass(frozen=True)
class ForStmt(Stmt):
    """A counted loop in SSA form.

    ``iter_args`` are the loop-carried values inside the body (initialised from ``init_values``),
    the body ends in a :class:`YieldStmt` when there are any, and ``return_vars`` hold the final
    values after the loop.
    """

    loop_var: Var
    start: Expr
    stop: Expr
    step: Expr
    iter_args: tuple[Var, ...]
    init_values: tuple[Expr, ...]
    body: tuple[Stmt, ...]
    return_vars: tuple[Var, ...]
    kind: ForKind = ForKind.Sequential
    span: Span = _NOSPAN
    # ``pl.pipeline(..., stage=F)``: the body is replicated F times per iteration of stride F * step
    # (UnrollLoops lowers it; 1 for every other kind)
    stage: int = 1
    # loop attributes (the reference's ``ForStmt.attrs``): sorted ``(key, value)`` pairs, values
    # bool / int / float / str. Passes read them as scheduling marks, e.g. AutoTileMatmulL0's
    # ``pipeline_double_buffer_c`` (the loop's cube results alternate between two Acc slots). The
    # printer writes them as ``attrs={...}`` on the loop header and the parser reads them back.
    attrs: tuple = ()

    def attr(self, key: str, default=None):
        """The value of loop attribute ``key`` (``default`` when absent)."""
        return dict(self.attrs).get(key, default)


@dataclass(frozen=True)
class WhileStmt(Stmt):
    """A loop with a run-time exit, in SSA form (the reference's ``WhileStmt``).

    ``iter_args`` start as ``init_values``; before every iteration ``cond`` (a BOOL scalar reading
    the iter_args) is evaluated and the loop ends when it is false; the body ends in a
    :class:`YieldStmt` giving the iter_args' next values when there are any, and ``return_vars``
    hold their values after the loop. Pre-SSA (straight from a plain ``while c:``) there are no
    iter_args: ``cond`` reads Vars the body re-assigns and ConvertToSSA makes them carried.
    A loop whose condition stays true is stopped by the executors after
    ``RunConfig.max_while_iterations`` iterations with a located error (never a hang).
    """

    cond: Expr
    iter_args: tuple[Var, ...]
    init_values: tuple[Expr, ...]
    body: tuple[Stmt, ...]
    return_vars: tuple[Var, ...]
    span: Span = _NOSPAN


@dataclass(frozen=True)
class IfStmt(Stmt):
    """``if cond: then else: else_``; branches end in yields binding ``return_vars`` (phis)."""

    cond: Expr
    then_body: tuple[Stmt, ...]
    else_body: tuple[Stmt, ...]
    return_vars: tuple[Var, ...]
    span: Span = _NOSPAN


@dataclass(frozen=True)
class ScopeStmt(Stmt):
    """``with pl.at(level=..., name_hint=..., deps=[...], no_dep_args=[...], dumps=[...]) as task_id:``
    — outlined into a kernel by OutlineIncoreScopes.

    ``task_id`` (a ``pl.TASK_ID`` scalar Var) is *defined* by the scope and visible after it;
    ``deps`` are TaskId expressions (or TaskId arrays) the task waits for; ``no_dep_args`` / ``dumps``
    are captured tensors (uses at the scope); ``manual`` is set inside ``with pl.manual_scope():``.
    """

    level: Level
    name_hint: str
    body: tuple[Stmt, ...]
    span: Span = _NOSPAN
    task_id: Optional[Var] = None
    deps: tuple[Expr, ...] = ()
    no_dep_args: tuple[Expr, ...] = ()
    dumps: tuple[Expr, ...] = ()
    manual: bool = False
    # ``with pl.spmd(n, predicate=(t[i] > 0)) as tid:`` / ``for i in pl.spmd(n):``: the task's block
    # count (None: one block) and dispatch predicate (as :attr:`FuncCall.predicate`), uses at the scope
    block_num: Optional[Expr] = None
    predicate: tuple = ()
    # ``pl.at(..., optimizations=[pl.split(mode)])``: the split mode of the outlined kernel (its
    # ``split`` attr; None: no split)
    split: Any = None
    # ``pl.cross_core_slot(slot_num=n)`` (or ``pl.split(mode, slot_num=n)``): the ring depth of the
    # outlined kernel's automatic cross-core pipes (its ``slot_num`` attr; None: the default)
    slot_num: Any = None


# ----------------------------------------------------------------------------- functions


@dataclass(frozen=True)
class Function(Node):
    """An IR function: parameters (with directions), body, return types and kind."""

    name: str
    params: tuple[Var, ...]
    directions: tuple[ParamDirection, ...]
    return_types: tuple[Type, ...]
    body: tuple[Stmt, ...]
    func_type: FunctionType = FunctionType.Opaque
    level: Optional[Level] = None
    span: Span = _NOSPAN
    # ``@pl.function(attrs={...})``: (key, value) pairs in source order, values static (bool, int,
    # float, str, an enum member such as ``pl.SplitMode.UP_DOWN``); e.g. ``("dual_aiv_dispatch", True)``
    # (an AIV kernel that runs on both vector lanes of its cluster) or ``("split", SplitMode.UP_DOWN)``
    attrs: tuple = ()
    # ``(message, span, hint)`` per construct the reference's PTOAS memory planner refuses at code
    # generation (pypto.frontend.slot_placements); raised by codegen under memory_planner=PTOAS only.
    # Not printed and not part of the function's identity.
    ptoas_refusals: tuple = field(default=(), compare=False, repr=False)

    def attr(self, key: str, default: Any = None) -> Any:
        """The value of ``attrs[key]`` (``default`` when absent)."""
        return next((v for k, v in self.attrs if k == key), default)

    def as_python(self, prefix: str = "pl", concise: bool = False) -> str:
        """The function printed in the ``@pl.function`` DSL form (``concise``: without the
        annotations the parser re-infers)."""
        from pypto.ir.printer import print_function

        return print_function(self, concise)


class FunctionTable(tuple):
    """``Program.functions``: the functions in order (a tuple: iterating yields Functions), also
    readable as a mapping by name as the reference's ``program.functions`` is —
    ``functions["kernel"]``, ``"kernel" in functions``, ``.keys()``, ``.values()``, ``.items()``,
    ``.get(name)``. (Iteration differs from a dict's: it yields the functions, not their names.)"""

    def __getitem__(self, key):
        if isinstance(key, str):
            for f in self:
                if f.name == key:
                    return f
            raise KeyError(key)
        return tuple.__getitem__(self, key)

    def __contains__(self, key) -> bool:
        if isinstance(key, str):
            return any(f.name == key for f in self)
        return tuple.__contains__(self, key)

    def get(self, name: str, default=None):
        """The function called ``name``, or ``default``."""
        return self[name] if name in self else default

    def keys(self) -> list[str]:
        """Function names, in order."""
        return [f.name for f in self]

    def values(self) -> list["Function"]:
        """The functions, in order."""
        return list(self)

    def items(self) -> list[tuple[str, "Function"]]:
        """``(name, function)`` pairs, in order."""
        return [(f.name, f) for f in self]


@dataclass(frozen=True)
class Program(Node):
    """A set of functions, printed as an ``@pl.program`` class (callees before callers)."""

    name: str
    functions: tuple[Function, ...]
    span: Span = _NOSPAN

    def __post_init__(self):
        if not isinstance(self.functions, FunctionTable):
            object.__setattr__(self, "functions", FunctionTable(self.functions))

    def get_function(self, name: str) -> Function:
        """The function called ``name`` (``KeyError`` if absent)."""
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    def __getitem__(self, name: str) -> Function:
        return self.get_function(name)

    @property
    def entry(self) -> Function:
        """The function a call of the program runs: the Orchestration function, else the last one."""
        for f in self.functions:
            if f.func_type == FunctionType.Orchestration:
                return f
        return self.functions[-1]

    def as_python(self, prefix: str = "pl", concise: bool = False) -> str:
        """The program printed as DSL source that :func:`pypto.ir.parse` reads back (``concise``:
        without the assignment annotations the parser re-infers; still parses back equal)."""
        from pypto.ir.printer import print_program

        return print_program(self, concise)

    def __str__(self) -> str:
        return self.as_python()
