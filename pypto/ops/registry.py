"""THE op registry: every op of the IR is declared once, as an :class:`OpDef`.

An ``OpDef`` holds everything the rest of the compiler needs to know about an op, so that the
parser, printer, type checker, verifier, reference executor (``torch_codegen``) and simulator all
dispatch from here and none of them has an if/elif over op names:

* ``params``: the argument schema (name, kind, default). Calls store arguments in this order.
* ``infer``: the type rule, ``(args, span) -> Type``; raises :class:`InvalidOperationError`.
* ``ref``: the reference semantics as a torch source expression built from the arguments' source
  text (:class:`Src`, a ``str`` that also knows the IR type). It is the living definition of the op;
  ``torch_codegen`` emits it verbatim.
* ``sim``: the simulator implementation, as the source of one statement for a generated kernel
  module: ``sim(args, dst)`` where ``dst`` is the source of the result's view of core memory (at the
  tile's allocated address). The statement is one vectorised torch op writing into ``dst``.
  Tensor-level ops have no ``sim``: they are lowered to tile ops (``lowers_to``) before anything
  runs on the simulated device. Ops legal in orchestration code have ``orch`` instead.
* ``dsl`` / ``operand_kinds``: which ``pl.<name>`` call dispatches here, for which operand kinds.
* ``platforms``: where the op exists natively.
* ``traits``: what the op is, for the code that asks (:mod:`pypto.ops.traits`: Elementwise,
  Reduction, GlobalMemoryAccess, Scratch, Lockstep, MemorySpaces, ...). The pre-trait keywords
  ``gm``/``batch``/``scratch``/``inplace_safe``/``input_spaces``/``result_space`` are still
  accepted and become traits (the compatibility path, ``traits.from_legacy``).
"""
from __future__ import annotations

import threading
from dataclasses import InitVar, dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

from pypto.errors import InvalidOperationError, Span
from pypto.ops import traits as _traits

if TYPE_CHECKING:  # annotations only: importing pypto.ir here is circular when pypto.ops is imported first
    from pypto.ir.types import Type

T = TypeVar("T")
REQUIRED = object()

@dataclass(frozen=True)
class ParamKind:
    """What a kind of argument is, for the code that handles arguments of any op (the builder, the
    generators, the signatures of ``pl.<op>`` and the stub): ``value``: an operand, an IR expression
    (else an attribute); ``exprs``: an attribute held as IR expressions (``ints``: a MakeTuple);
    ``annotation``: its Python type as the stub and ``help(pl.<op>)`` show it."""

    name: str
    value: bool
    annotation: str
    doc: str
    exprs: bool = False

    def source(self, arg: Any, expr: Callable[[Any], str]) -> "Src":
        """An attribute argument as source text of generated code: IR expressions through ``expr``,
        plain values as literals (operands are the generator's business: views, casts)."""
        from pypto.ir.pysource import py_literal  # (ir sits below ops; imported late as the IR imports the registry)

        return Src(expr(arg) if self.exprs else py_literal(arg), None)


# Argument kinds. Value kinds hold IR expressions; attribute kinds hold plain Python values.
KINDS: dict[str, ParamKind] = {k.name: k for k in (
    ParamKind("tensor", True, "Tensor", "a tensor"),
    ParamKind("tile", True, "Tile", "a tile"),
    ParamKind("scalar", True, "Scalar | int | float", "a scalar (a literal or a scalar value)"),
    ParamKind("value", True, "Tensor | Tile", "a tensor or a tile"),
    ParamKind("any", True, "Tensor | Tile | Scalar", "a tensor, a tile or a scalar (what pl.debug_print prints)"),
    ParamKind("handle", True, "Any", "an opaque handle (pl.PrefetchAsyncContext, pl.AsyncEvent, pl.AsyncSession)"),
    ParamKind("ints", False, "Sequence[int | Scalar]", "a list of integers (offsets, shapes)", exprs=True),
    ParamKind("task_ids", False, "Sequence[Any]", "a list of TaskIds / TaskId arrays (pl.system.task_dummy)",
              exprs=True),
    ParamKind("dtype", False, "DataType", "a dtype (pl.FP32)"),
    ParamKind("mem", False, "MemorySpace", "a memory space (pl.Mem.Vec)"),
    ParamKind("mode", False, "str", "a rounding mode ('round', 'rint', ...)"),
    ParamKind("pad", False, "PadValue", "a pad value (pl.PadValue.zero)"),
    ParamKind("atomic", False, "AtomicType", "an atomic mode (pl.AtomicType.Add)"),
    ParamKind("str", False, "Any", "a plain attribute (a name, a constant)"),
    ParamKind("bool", False, "bool", "a flag"),
)}
VALUE_KINDS = frozenset(k for k, v in KINDS.items() if v.value)
ATTR_KINDS = frozenset(k for k, v in KINDS.items() if not v.value)


@dataclass(frozen=True)
class Param:
    """One argument of an op: ``kind`` is a value kind or an attribute kind (see module doc)."""

    name: str
    kind: str
    default: Any = REQUIRED
    optional: bool = False  # for "ints": may be None
    # other keyword names a call may use for it: the reference PyPTO's spelling where it differs
    # from ours (``pl.cast(x, target_type=pl.FP16)``, ``pl.store(t, offs, output_tensor=out)``)
    aliases: tuple[str, ...] = ()

    @property
    def required(self) -> bool:
        """True when the caller must supply it."""
        return self.default is REQUIRED

    @property
    def kind_def(self) -> "ParamKind":
        """The :class:`ParamKind` object of ``kind``."""
        return KINDS[self.kind]


class Src(str):
    """Python source text of an argument, carrying the IR ``type`` of the value it denotes."""

    type: Any

    def __new__(cls, text: str, type: Any = None):
        obj = super().__new__(cls, text)
        obj.type = type
        return obj


class OpArgs:
    """The arguments of one call by parameter name (``args.lhs``), in schema order (``args.values``)."""

    __slots__ = ("op", "values", "_by_name")

    def __init__(self, op: "OpDef", values: tuple):
        self.op = op
        self.values = values
        self._by_name = {p.name: v for p, v in zip(op.params, values)}

    def __getattr__(self, name: str):
        try:
            return self._by_name[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass(frozen=True)
class OpDef:
    """The single definition of an op. See the module docstring for the meaning of each field."""

    name: str
    params: tuple[Param, ...]
    infer: Callable[[OpArgs, Span], Type]
    ref: Callable[[OpArgs], str]
    sim: Optional[Callable[[OpArgs, "Src"], str]] = None
    orch: Optional[Callable[[OpArgs], str]] = None
    dsl: Optional[str] = None
    operand_kinds: tuple[str, ...] = ()
    lowers_to: Optional[str] = None
    platforms: frozenset[str] = frozenset({"a2a3", "a5"})
    # a finer per-call form of ``platforms``: ``(arch, call args) -> message | None``, the message
    # when that call (its dtypes) has no instruction on ``arch`` (tile.div: integer TDIV is A5-only)
    platform_rule: Optional[Callable[[str, tuple], Optional[str]]] = None
    doc: str = ""
    # custom tensor->tile lowering for ops that are more than one tile op (see ConvertTensorToTileOps)
    lower: Optional[Callable[..., Any]] = None
    # extra check of a dispatched ``pl.<dsl>(...)`` call, ``(positional args, kwargs, span)``, run by
    # the parser before binding; the explicit ``pl.<level>.<name>(...)`` form skips it (e.g. tile
    # row reductions: ``pl.row_sum(tile)`` needs tmp_tile, ``pl.tile.row_sum(x)`` is sequential)
    dsl_check: Optional[Callable[..., None]] = None
    # the reference PyPTO's positional order where it differs from the schema's:
    # ``(positional args, kwargs, span) -> (args, kwargs)`` in schema terms, run by the parser on
    # every ``pl.<name>`` / ``pl.<level>.<name>`` call before binding. It must leave a call in
    # schema form (what the printer writes) unchanged, so both spellings parse.
    dsl_args: Optional[Callable[..., tuple]] = None
    # the (tensor) param this op writes into and returns a new version of (``tile.store``'s
    # ``tensor``, ``tensor.assemble``'s ``target``): passes treat that operand as a destination,
    # not a read, and the parser rebinds its name when the call is a statement
    writes: Optional[str] = None
    # the param whose NEW VERSION the result is, the operand being read too (``matmul_acc``'s
    # ``acc``): a call used as a statement (``pl.tile.matmul_acc(acc, a, b)``) rebinds that name,
    # as the reference's in-place update does
    updates: Optional[str] = None
    # ``fold(args) -> value | None``: the op's value when the arguments decide it at compile time
    # (``pl.tensor.dim`` of a static extent is that int); the parser then uses the value, not a call
    fold: Optional[Callable[[OpArgs], Any]] = None
    # ``sim`` is a ``yield`` handing a record to the scheduler (``pl.debug_print``): the kernel
    # generator passes it ``cycles=`` (the instructions' cycles since the kernel's previous yield)
    yields: bool = False
    # ``sim`` may wait on a peer core of the cluster (a cross-core pipe op, :mod:`pypto.ops.cross_core`):
    # the kernel generator yields the pending cycles first and passes ``where=`` (the source line)
    waits: bool = False
    # the op's traits (:mod:`pypto.ops.traits`): what passes, diagnostics and generators query
    # (``op.trait(Reduction)``, ``op.has(Elementwise)``) instead of lists of op names
    traits: tuple = ()
    # the compatibility path: the pre-trait keywords, turned into traits by ``traits.from_legacy``
    # in ``__post_init__`` (not stored; reading ``op.gm`` etc. answers from the traits, see below)
    gm: InitVar[Optional[str]] = None
    batch: InitVar[Optional[str]] = None
    scratch: InitVar[Optional[str]] = None
    inplace_safe: InitVar[bool] = False
    input_spaces: InitVar[tuple] = ()
    result_space: InitVar[Any] = None

    def __post_init__(self, gm, batch, scratch, inplace_safe, input_spaces, result_space):
        legacy = _traits.from_legacy(gm, batch, scratch, inplace_safe, input_spaces, result_space)
        object.__setattr__(self, "traits", _traits.normalize(self.name, tuple(self.traits) + legacy))

    def trait(self, cls: type[T]) -> Optional[T]:
        """This op's trait of class ``cls``, or None."""
        for t in self.traits:
            if isinstance(t, cls):
                return t
        return None

    def has(self, cls: type) -> bool:
        """True when the op has a trait of class ``cls``."""
        return self.trait(cls) is not None

    @property
    def write_index(self) -> Optional[int]:
        """Position of the ``writes`` param in the schema, or None for an op that writes nothing."""
        if self.writes is None:
            return None
        return [p.name for p in self.params].index(self.writes)

    @property
    def level(self) -> str:
        """``"tensor"`` or ``"tile"`` (the namespace of the name)."""
        return self.name.split(".", 1)[0]

    def param(self, name: str) -> Param:
        """The parameter called ``name``."""
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def args(self, values: tuple) -> OpArgs:
        """Wrap call arguments for by-name access."""
        return OpArgs(self, values)

    def infer_type(self, values: tuple, span: Span) -> Type:
        """Apply the type rule to call arguments (schema order). Low-precision operands are
        screened first, for every op at once (:func:`pypto.ops.rules.low_precision_guard`)."""
        from pypto.ops.rules import low_precision_guard  # rules imports the IR, which imports this module

        low_precision_guard(self, values, span)
        return self.infer(OpArgs(self, values), span)


# Reading the pre-trait fields (the compatibility path for code written before traits): each
# answers from the traits. Set after the class so the dataclass keeps them as init-only keywords.
def _space_of(op: OpDef) -> _traits.MemorySpaces:
    return op.trait(_traits.MemorySpaces) or _traits.MemorySpaces()


OpDef.gm = property(lambda op: getattr(op.trait(_traits.GlobalMemoryAccess), "mode", None),
                    doc="``GlobalMemoryAccess.mode`` or None (compatibility; query the trait)")
OpDef.batch = property(lambda op: getattr(op.trait(_traits.Lockstep), "form", None),
                       doc="``Lockstep.form`` or None (compatibility; query the trait)")
OpDef.scratch = property(lambda op: getattr(op.trait(_traits.Scratch), "param", None),
                         doc="``Scratch.param`` or None (compatibility; query the trait)")
OpDef.inplace_safe = property(lambda op: op.has(_traits.InPlaceSafe),
                              doc="has ``InPlaceSafe`` (compatibility; query the trait)")
OpDef.input_spaces = property(lambda op: _space_of(op).inputs,
                              doc="``MemorySpaces.inputs`` (compatibility; query the trait)")
OpDef.result_space = property(lambda op: _space_of(op).result,
                              doc="``MemorySpaces.result`` (compatibility; query the trait)")


OPS: dict[str, OpDef] = {}
_BY_DSL: dict[str, list[OpDef]] = {}


def register(op: OpDef) -> OpDef:
    """Add an op to the registry; an op name may be defined only once."""
    if op.name in OPS:
        raise RuntimeError(f"op {op.name!r} defined twice")
    OPS[op.name] = op
    if op.dsl:
        _BY_DSL.setdefault(op.dsl, []).append(op)
    return op


def get_op(name: str, span: Span | None = None) -> OpDef:
    """The op called ``name``; :class:`InvalidOperationError` naming the op if there is none."""
    _load()
    try:
        return OPS[name]
    except KeyError:
        raise InvalidOperationError(f"unknown op '{name}'", span) from None


def op_trait(op_name: str, cls: type[T]) -> Optional[T]:
    """The trait of class ``cls`` of the op called ``op_name``; None if it has none or there is no
    such op (for code that looks at calls of any kind)."""
    _load()
    op = OPS.get(op_name)
    return None if op is None else op.trait(cls)


def dsl_candidates(dsl_name: str) -> list[OpDef]:
    """The ops a ``pl.<dsl_name>(...)`` call may dispatch to."""
    _load()
    return _BY_DSL.get(dsl_name, [])


def dsl_names() -> set[str]:
    """Every ``pl.<name>`` an op of the registry answers to."""
    _load()
    return set(_BY_DSL)


def write_target(op_name: str, updates: bool = False) -> Optional[int]:
    """Argument position an op writes into (see ``OpDef.writes``; with ``updates`` also the
    operand an op returns a new version of, ``OpDef.updates``); None if there is none."""
    _load()
    op = OPS.get(op_name)
    if op is None:
        return None
    if op.writes is None and updates and op.updates is not None:
        return [p.name for p in op.params].index(op.updates)
    return op.write_index


def write_targets() -> dict[str, int]:
    """``{op name: argument position it writes into}`` for every op that writes a tensor."""
    _load()
    return {name: op.write_index for name, op in OPS.items() if op.writes is not None}


def all_ops() -> dict[str, OpDef]:
    """Every registered op by name."""
    _load()
    return dict(OPS)


_loaded = False
# Re-entrant: importing an op family module may itself call into the registry.
_load_lock = threading.RLock()
_loader: int | None = None  # the thread importing the families


def _load() -> None:
    # The op families register on import; import them lazily so that importing the registry
    # itself stays cheap and free of cycles. ``_loaded`` turns true only once every family is in:
    # setting it first let a second thread see a half-filled registry (``pl.load`` missing). The
    # thread that holds the lock and is importing sees the families as they arrive (re-entrant).
    global _loaded, _loader
    if _loaded:
        return
    with _load_lock:
        if _loaded or _loader == threading.get_ident():
            return  # done, or a nested call from inside the imports below (it sees what is in so far)
        _loader = threading.get_ident()
        try:
            from pypto.ops import elementwise, memory, cast, matmul  # noqa: F401
            from pypto.ops import reduction, padding  # noqa: F401
            from pypto.ops import compare, broadcast, layout  # noqa: F401
            from pypto.ops import debug_ops, task_ops, array_ops  # noqa: F401
            from pypto.ops import bitwise, argreduce, elementwise_ext, index, creation, sort  # noqa: F401  (issue 15: the catalogue's further families)
            from pypto.ops import views, paged  # noqa: F401  (issue 15: reinterpret_view, write, ...; gather_row, paged_gather)
            from pypto.ops import shape_ops, block_ops  # noqa: F401  (issue 16: dynamic extents, multi-block tasks)
            from pypto.ops import matmul_ext  # noqa: F401  (issue 15: matmul_bias, gemv*, batch_matmul*)
            from pypto.ops import matmul_mx  # noqa: F401  (issue 15: matmul_mx, matmul_mx_acc, matmul_mx_bias)
            from pypto.ops import cross_core  # noqa: F401  (issue 16: AIC <-> AIV pipes of a mixed kernel)
            from pypto.ops import aiv_split  # noqa: F401  (issue 16: pl.split_aiv regions: aiv_shard, aic_gather)
            from pypto.ops import sync  # noqa: F401  (issue 16: pl.system flags, events, barriers, fence, syncall)
            from pypto.ops import distributed  # noqa: F401  (issue 17: pld.* ops in kernels)
            from pypto.ops import prefetch  # noqa: F401  (issue 16: pl.prefetch async GM -> L2 prefetch)
        finally:
            _loader = None
        _loaded = True
