"""The reference's pass-level API (its native ``pypto_core.passes`` module, which the reference
also imports as ``pypto.passes``) over our one pass pipeline (:data:`pypto.passes.PIPELINE`) and
manager (:mod:`pypto.passes.manager`). ``pypto.passes`` and ``pypto.pypto_core.passes`` both export
these names.

* ``pypto.passes.inline_functions()``, ``convert_to_ssa()``, ... return a :class:`Pass` running our
  pass of that name, for the configured backend's simulator (:func:`pypto.backend.set_backend_type`,
  default a2a3). In ``pypto.passes`` these names are our pass modules themselves, made callable
  (:class:`_CallablePassModule`): ``passes.convert_to_ssa.run(program, ctx)`` and
  ``passes.convert_to_ssa()(program)`` both work. ``fuse_create_assemble_to_slice`` is our
  FuseCreateAssembleToView; ``lower_composite_ops`` our LowerCompositeOps (not in PIPELINE: the
  device's sin/cos recipe, see its module); ``ctrl_flow_transform``
  and ``normalize_stmt_structure`` are :data:`BY_CONSTRUCTION`: what they establish holds in every
  program our frontend builds. Any other reference pass is an ``AttributeError`` naming it and
  what covers (or lacks) its work here (:data:`ABSENT`).
* :class:`PassContext` is a context manager (``with PassContext([...], verification_level)``). While
  it is active, ``ir.compile`` / ``PassManager.run_passes`` take its verification level, diagnostic
  phase, disabled checks, memory planner and runtime kind as defaults and run its instruments
  around each pass of the pipeline; a :class:`Pass` called directly and a :class:`PassPipeline` run
  them too (:class:`CallbackInstrument` before/after, :class:`VerificationInstrument` verifies with
  our verifier, :class:`DiagnosticInstrument` runs our diagnostic checks). A PassPipeline verifies
  per the context's level as the manager does (BASIC: the properties established so far, after
  every pass; ROUNDTRIP: also print -> parse -> structural equality).
* ``MemoryPlanner`` and ``RuntimeKind`` are accepted and recorded (``compiled_meta.json``); the
  simulator always plans memory with our MemoryReuse + AllocateMemoryAddr and runs the tensormap
  runtime; the planner only gates AutoTileMatmulL0's dbC=2 tiling (docs/compatibility.md).
"""
from __future__ import annotations

import enum
import importlib
import threading
import types

from pypto.backend.backend_type import default_platform
from pypto.backend.platforms import get_platform
from pypto.errors import UnsupportedFeatureError
from pypto.ir.nodes import ScopeStmt
from pypto.ir.verifier import verify
from pypto.ir.visit import iter_stmts
from pypto.language.enums import Level
from pypto.passes.context import PassContext as _Ctx
from pypto.passes.diagnostics import CHECKS, Diagnostic, DiagnosticPhase, resolve_phase
from pypto.passes.manager import (
    PassInfo, VerificationLevel, as_pass, emit_diagnostics, resolve_verification_level, run_one, run_passes,
)


class MemoryPlanner(enum.Enum):
    """Who plans on-chip memory in the reference. Here our planner always runs; the value is
    recorded and gates AutoTileMatmulL0's double-buffered Acc (dbC=2 under ``DSA_RP`` / ``PTOAS``)."""

    PYPTO = "PYPTO"
    DSA_RP = "DSA_RP"
    PTOAS = "PTOAS"


class RuntimeKind(enum.Enum):
    """The reference's runtime ABI. Here: recorded only (the simulator schedules by tensormap)."""

    TENSORMAP_AND_RINGBUFFER = "tensormap_and_ringbuffer"
    HOST_BUILD_GRAPH = "host_build_graph"


def runtime_kind_to_name(kind: RuntimeKind) -> str:
    """The wire name of a runtime kind (``"host_build_graph"``)."""
    return RuntimeKind(kind).value


def runtime_kind_from_name(name: str) -> RuntimeKind:
    """The runtime kind of a wire name."""
    try:
        return RuntimeKind(name)
    except ValueError:
        raise ValueError(f"unknown runtime {name!r}; choose one of: "
                         f"{', '.join(k.value for k in RuntimeKind)}") from None


class VerificationMode(enum.Enum):
    """When a :class:`VerificationInstrument` verifies: before, after or around each pass."""

    NONE = 0
    BEFORE = 1
    AFTER = 2
    BEFORE_AND_AFTER = 3


def _check_names() -> list[str]:
    return [c.name for c in CHECKS.values()]


# The reference's checks plus ours, by name. A reference check with no counterpart here
# (UnusedControlFlowResult) may be disabled (nothing to disable) but never fires.
DiagnosticCheck = enum.Enum("DiagnosticCheck", {n: n for n in dict.fromkeys(
    ["UnusedVariable", "UnusedControlFlowResult", "TileInnermostDimGranularity", "OutParamWriteDropped",
     *_check_names()])})
DiagnosticCheck.__doc__ = "A diagnostic check (warning or performance hint), by name."
DiagnosticCheck.__module__ = __name__


class DiagnosticCheckSet:
    """A mutable set of :class:`DiagnosticCheck` (the reference's bitset)."""

    __hash__ = None  # mutable

    def __init__(self, checks=()):
        self._s: set = {DiagnosticCheck(c) if not isinstance(c, DiagnosticCheck) else c for c in checks}

    def insert(self, check) -> None:
        """Add a check."""
        self._s.add(DiagnosticCheck(check) if not isinstance(check, DiagnosticCheck) else check)

    def remove(self, check) -> None:
        """Remove a check (absent is fine)."""
        self._s.discard(check)

    def contains(self, check) -> bool:
        """Whether the set holds ``check``."""
        return check in self._s

    def empty(self) -> bool:
        """Whether the set is empty."""
        return not self._s

    def difference(self, other: "DiagnosticCheckSet") -> "DiagnosticCheckSet":
        """Checks in this set and not in ``other``."""
        return DiagnosticCheckSet(self._s - other._s)

    def union_with(self, other: "DiagnosticCheckSet") -> "DiagnosticCheckSet":
        """Checks in either set."""
        return DiagnosticCheckSet(self._s | other._s)

    def to_list(self) -> list:
        """The checks, in declaration order."""
        return [c for c in DiagnosticCheck if c in self._s]

    def names(self) -> list[str]:
        """The names of the checks that exist here (what our diagnostics engine disables)."""
        ours = set(_check_names())
        return [c.name for c in self.to_list() if c.name in ours]

    def __iter__(self):
        return iter(self.to_list())

    def __len__(self) -> int:
        return len(self._s)

    def __eq__(self, other) -> bool:
        return isinstance(other, DiagnosticCheckSet) and self._s == other._s

    def __repr__(self) -> str:
        return "DiagnosticCheckSet(" + ", ".join(c.name for c in self.to_list()) + ")"

    __str__ = __repr__


def disabled_names(disabled) -> list[str] | None:
    """``disabled_diagnostics`` in any accepted form (DiagnosticCheckSet, checks, names, codes) as the
    names/codes :mod:`pypto.passes.diagnostics` takes; reference-only checks dropped."""
    if disabled is None:
        return None
    if isinstance(disabled, DiagnosticCheckSet):
        return disabled.names()
    ours = set(_check_names())
    out = []
    for d in disabled:
        if isinstance(d, DiagnosticCheck):
            if d.name in ours:
                out.append(d.name)
        else:
            out.append(d)
    return out


class PassInstrument:
    """Base class of what a :class:`PassContext` runs around each directly called pass."""

    def get_name(self) -> str:
        """The instrument's name."""
        return type(self).__name__

    def before(self, p: "Pass", program) -> None:  # noqa: D401 - hook
        """Called before the pass runs."""

    def after(self, p: "Pass", program) -> None:
        """Called after the pass ran, with its result."""


class CallbackInstrument(PassInstrument):
    """Calls ``before_pass(pass, program)`` / ``after_pass(pass, program)`` around each pass."""

    def __init__(self, before_pass=None, after_pass=None, name: str = "CallbackInstrument"):
        self._before, self._after, self._name = before_pass, after_pass, name

    def get_name(self) -> str:
        return self._name

    def before(self, p, program) -> None:
        if self._before is not None:
            self._before(p, program)

    def after(self, p, program) -> None:
        if self._after is not None:
            self._after(p, program)


class VerificationInstrument(PassInstrument):
    """Verifies the properties a pass requires (before) and produces (after) with our verifier."""

    def __init__(self, mode: VerificationMode = VerificationMode.AFTER):
        self.mode = VerificationMode(mode)

    def before(self, p, program) -> None:
        if self.mode in (VerificationMode.BEFORE, VerificationMode.BEFORE_AND_AFTER):
            _verify(program, p.info.requires, f"before {p.get_name()}")

    def after(self, p, program) -> None:
        if self.mode in (VerificationMode.AFTER, VerificationMode.BEFORE_AND_AFTER):
            _verify(program, p.info.produces, p.get_name())


def _verify(program, props, where: str) -> None:
    verify(program, ["TypeChecked", *props], _pass_ctx(), where)


class ReportInstrument(PassInstrument):
    """Records a report directory (``get_output_dir``). Nothing is written through it: ``ir.compile``
    writes its reports into ``<output_dir>/report/`` of the build (docs/compatibility.md)."""

    def __init__(self, output_dir: str):
        self._dir = str(output_dir)

    def get_output_dir(self) -> str:
        """The report directory."""
        return self._dir


class DiagnosticInstrument(PassInstrument):
    """Runs the given diagnostic checks after each pass and prints what they find."""

    def __init__(self, checks: DiagnosticCheckSet | None = None):
        self.checks = checks if checks is not None else DiagnosticCheckSet(DiagnosticCheck)

    def after(self, p, program) -> None:
        want = set(self.checks.names())
        found = []
        for c in CHECKS.values():
            if c.name in want:
                found += [Diagnostic(c.code, c.name, c.severity, msg, span, p.get_name())
                          for span, msg in c.run(program, _pass_ctx())]
        if found:
            emit_diagnostics(found)


_STACK = threading.local()


class PassContext:
    """Pass configuration for the compilations and direct pass calls in a ``with`` block.

    ``None`` for a setting means "the default" (``ir.compile``'s own defaults). Nesting is allowed;
    the innermost active context is :meth:`current`.
    """

    def __init__(self, instruments=(), verification_level=None, diagnostic_phase=None, disabled_diagnostics=None,
                 memory_planner=None, enable_pypto_l0c_double_buffer: bool = False, runtime=None):
        self._instruments = list(instruments or ())
        for i in self._instruments:
            if not isinstance(i, PassInstrument):
                raise TypeError(f"PassContext instruments must be PassInstrument objects, got {i!r}")
        self._verification_level = verification_level
        self._diagnostic_phase = diagnostic_phase
        self._disabled = disabled_diagnostics
        self._memory_planner = MemoryPlanner(memory_planner) if memory_planner is not None else None
        self._l0c_db = bool(enable_pypto_l0c_double_buffer)
        self._runtime = RuntimeKind(runtime) if runtime is not None else None

    def __enter__(self) -> "PassContext":
        stack = getattr(_STACK, "items", None)
        if stack is None:
            stack = _STACK.items = []
        stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _STACK.items.remove(self)

    @staticmethod
    def current() -> "PassContext | None":
        """The innermost active context, or ``None``."""
        stack = getattr(_STACK, "items", None)
        return stack[-1] if stack else None

    def get_verification_level(self):
        """The verification level (``None``: ir.compile's default)."""
        return self._verification_level

    def get_diagnostic_phase(self):
        """The diagnostic phase gate (``None``: the default)."""
        return self._diagnostic_phase

    def get_disabled_diagnostics(self):
        """The disabled checks (``None``: the default)."""
        return self._disabled

    def get_memory_planner(self) -> MemoryPlanner:
        """The memory planner (recorded only; ``PYPTO`` when unset)."""
        return self._memory_planner or MemoryPlanner.PYPTO

    def get_runtime(self) -> RuntimeKind:
        """The runtime kind (recorded only)."""
        return self._runtime or RuntimeKind.TENSORMAP_AND_RINGBUFFER

    def get_enable_pypto_l0c_double_buffer(self) -> bool:
        """Recorded only: the simulator has no L0C double buffering to switch."""
        return self._l0c_db

    def get_instruments(self) -> list:
        """The instruments."""
        return list(self._instruments)


def _pass_ctx() -> _Ctx:
    """Our per-compilation context for a directly called pass: the configured backend's simulator."""
    from pypto.passes.context import l0c_double_buffer_enabled

    outer = PassContext.current()
    dbc = outer is not None and l0c_double_buffer_enabled(outer.get_memory_planner(),
                                                          outer.get_enable_pypto_l0c_double_buffer())
    return _Ctx(platform=get_platform(default_platform()), l0c_double_buffer=dbc)


def observer(instruments):
    """The ``observe`` hook of :func:`pypto.passes.manager.run_passes` that runs ``instruments``
    (``before`` in order, ``after`` in order) around each pass; ``None`` when there are none."""
    instruments = list(instruments or ())
    if not instruments:
        return None

    def observe(when: str, info: PassInfo, program) -> None:
        p = Pass(info)
        for i in instruments:
            (i.before if when == "before" else i.after)(p, program)

    return observe


class Pass:
    """One of our passes as a callable object: ``pass_obj(program) -> program``.

    Called directly, it runs the active :class:`PassContext`'s instruments around the pass (the
    manager's per-pass verification is the job of a :class:`PassPipeline` or ``ir.compile``).
    """

    def __init__(self, p):
        self.info = as_pass(p)

    def __call__(self, program):
        ctx = PassContext.current()
        observe = observer(ctx.get_instruments() if ctx else ())
        if observe is not None:
            observe("before", self.info, program)
        out = run_one(self.info, program, _pass_ctx())
        if observe is not None:
            observe("after", self.info, out)
        return out

    def get_name(self) -> str:
        """The pass's name (``ConvertToSSA``)."""
        return self.info.name

    def get_required_properties(self) -> list[str]:
        """Properties the pass requires."""
        return list(self.info.requires)

    def get_produced_properties(self) -> list[str]:
        """Properties the pass produces."""
        return list(self.info.produces)

    def get_invalidated_properties(self) -> list[str]:
        """Properties the pass invalidates: none is tracked here (our verifier re-checks everything
        established so far after each pass, so an invalidated property would be an error)."""
        return []

    def __repr__(self) -> str:
        return f"Pass({self.get_name()})"


class PassPipeline:
    """An ordered list of :class:`Pass` run one after the other, verified as ``ir.compile`` verifies
    (the active context's verification level, else ``PYPTO_VERIFY_LEVEL``, else BASIC) with the
    context's instruments around each pass."""

    def __init__(self):
        self._passes: list[Pass] = []

    def add_pass(self, pass_obj) -> None:
        """Append a pass (a :class:`Pass`, a pass module or a ``Program -> Program`` function)."""
        self._passes.append(pass_obj if isinstance(pass_obj, Pass) else Pass(pass_obj))

    def run(self, program):
        """Run every pass in order and return the result."""
        ctx = PassContext.current()
        result = run_passes(program, [p.info for p in self._passes], _pass_ctx(),
                            verification_level=ctx.get_verification_level() if ctx else None,
                            diagnostic_phase=ctx.get_diagnostic_phase() if ctx else None,
                            disabled_diagnostics=disabled_names(ctx.get_disabled_diagnostics()) if ctx else None,
                            observe=observer(ctx.get_instruments() if ctx else ()))
        if result.diagnostics:
            emit_diagnostics(result.diagnostics)
        return result.program

    def get_pass_names(self) -> list[str]:
        """The pass names in order."""
        return [p.get_name() for p in self._passes]

    def get_passes(self) -> list[Pass]:
        """The passes in order."""
        return list(self._passes)


# --------------------------------------------------------------------------- pass factories

# The reference's factory name -> our pass module (same pass; the name differs only for
# fuse_create_assemble_to_slice, whose result here is a view of the assembled region).
FACTORIES = {name: name for name in (
    "inline_functions", "unroll_loops", "convert_to_ssa", "simplify", "flatten_call_expr", "outline_incore_scopes",
    "convert_tensor_to_tile_ops", "lower_composite_ops", "flatten_tile_nd_to_2d", "legalize_tile_cast",
    "auto_tile_matmul_l0", "infer_tile_memory_space", "expand_mixed_kernel", "normalize_return_order", "init_mem_ref",
    "memory_reuse", "allocate_memory_addr", "derive_call_directions", "auto_derive_task_dependencies",
    "lower_auto_vector_split", "inject_gm_pipe_buffer", "split_vector_kernel", "insert_comm_fence",
    "lower_pipeline_loops", "optimize_orch_tensors")}
FACTORIES["fuse_create_assemble_to_slice"] = "fuse_create_assemble"

# Reference passes whose post-condition holds by construction in our IR: the Pass returns the
# program unchanged. name -> why.
BY_CONSTRUCTION = {
    "ctrl_flow_transform": "the frontend already lowers break/continue into structured loops "
                           "(pypto/frontend/loop_exits.py): our IR has no break or continue statement",
    "normalize_stmt_structure": "our function and loop bodies are flat statement tuples by construction "
                                "(no nested statement sequences to normalise)",
    "outline_hierarchy_scopes": "the frontend accepts pl.at(level=pl.Level.CORE_GROUP) only (a hierarchy "
                                "level is a located UnsupportedFeatureError): there is no hierarchy scope to "
                                "outline; HOST-level programs run in the multi-rank engine",
    "outline_cluster_scopes": "the frontend has no pl.cluster scope (mixed kernels: docs/compatibility.md): "
                              "there is no cluster scope to outline",
}


def _only_core_group_scopes(program) -> None:
    """The invariant outline_hierarchy_scopes relies on here: every scope is a CORE_GROUP one."""
    for f in program.functions:
        for s in iter_stmts(f.body):
            if isinstance(s, ScopeStmt) and s.level != Level.CORE_GROUP:
                raise UnsupportedFeatureError(f"outline_hierarchy_scopes: a pl.at(level={s.level!r}) scope in "
                                              f"'{f.name}' (hierarchy scopes are not supported)", s.span)


_CHECK = {"outline_hierarchy_scopes": _only_core_group_scopes}

# Reference passes with no counterpart: name -> what covers (or lacks) its work here. Reaching one
# is an AttributeError with this text (docs/compatibility.md, "Pass-level API").
ABSENT = {
    "canonicalize_tile_slice": "tile slices are checked where they are built",
    "insert_mx_scale_addr": "MX-format scale tiles are not simulated",
    "materialize_tensor_strides": "tensor views carry their strides from the frontend",
    "resolve_backend_op_layouts": "the simulator has one layout per op",
    "stamp_tfree_split": "tfree splitting is not needed by the cluster executor",
    "skew_cross_core_pipeline": "cross-core pipelines are not skewed (the executor runs them in order)",
    "lower_pipeline_to_slots": "pl.pipeline loops are copied per stage by LowerPipelineLoops (lower_pipeline_loops)",
    "canonicalize_io_order": "NormalizeReturnOrder orders kernel results",
    "materialize_semantic_aliases": "tile aliases are tracked by InitMemRef / MemoryReuse",
    "fold_no_op_reshape": "Simplify / FinalSimplify fold what the simulator needs folded",
    "expand_manual_phase_fence": "manual scopes are ordered by the runtime's explicit deps",
    "materialize_dist_tensor_ctx": "a kernel's pld.get_comm_ctx reads the group its window carries at run time",
    "materialize_valid_shape_symbols": "valid shapes are values of the tile type",
    "materialize_runtime_scopes": "the simulator's runtime opens its scopes itself",
    "classify_iter_arg_carry": "ConvertToSSA classifies loop-carried values",
    "run_verifier": "use pypto.ir.verifier.verify or a VerificationInstrument",
}


def make_pass(name: str, *args, **kwargs) -> Pass:
    """The :class:`Pass` of the reference factory ``name`` (``"convert_to_ssa"``); arguments as the
    reference's (only ``auto_derive_task_dependencies(analyze_auto_scopes=False)`` takes one)."""
    if name in BY_CONSTRUCTION:
        if args or kwargs:
            raise TypeError(f"{name}() takes no arguments")
        title = "".join(w.capitalize() for w in name.split("_"))
        check = _CHECK.get(name, lambda program: None)

        def holds(program, ctx, _check=check):
            _check(program)
            return program

        return Pass(PassInfo(title, holds))
    if name not in FACTORIES:
        raise absent(name)
    mod = importlib.import_module(f"pypto.passes.{FACTORIES[name]}")
    if name == "auto_derive_task_dependencies":
        if len(args) + len(kwargs) > 1 or (kwargs and "analyze_auto_scopes" not in kwargs):
            raise TypeError("auto_derive_task_dependencies() takes one argument, analyze_auto_scopes")
        analyze = bool(kwargs.get("analyze_auto_scopes", args[0] if args else False))

        def run(program, ctx, _m=mod, _a=analyze):
            ctx.analyze_auto_scopes_for_deps = _a
            return _m.run(program, ctx)

        return Pass(PassInfo(mod.NAME, run, tuple(mod.REQUIRES), tuple(mod.PRODUCES)))
    if args or kwargs:
        raise TypeError(f"{name}() takes no arguments")
    return Pass(mod)


def absent(name: str) -> AttributeError:
    """The error for a reference pass (or name) with no counterpart here."""
    if name in ABSENT:
        return AttributeError(f"pypto.passes.{name}: the reference's pass of that name has no counterpart in this "
                              f"simulator's pipeline ({ABSENT[name]}); see docs/compatibility.md, 'Pass-level API'")
    return AttributeError(f"module 'pypto.passes' has no attribute {name!r} (the reference's pass factories here: "
                          f"{', '.join(sorted([*FACTORIES, *BY_CONSTRUCTION]))})")


def _factory(name: str):
    def make(*args, **kwargs) -> Pass:
        return make_pass(name, *args, **kwargs)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = f"The reference's ``passes.{name}()``: a :class:`Pass` (see :func:`make_pass`)."
    return make


for _name in (*FACTORIES, *BY_CONSTRUCTION):
    globals()[_name] = _factory(_name)
del _name


class _CallablePassModule(types.ModuleType):
    """The class of our pass modules once :func:`make_modules_callable` ran: calling the module
    (``pypto.passes.convert_to_ssa()``) is the reference's factory call and returns a :class:`Pass`;
    the module keeps ``NAME`` / ``run`` / ``REQUIRES`` / ``PRODUCES`` for the manager."""

    def __call__(self, *args, **kwargs) -> Pass:
        return make_pass(_REFERENCE_NAME.get(self.__name__.rsplit(".", 1)[1], self.__name__.rsplit(".", 1)[1]),
                         *args, **kwargs)


_REFERENCE_NAME = {ours: ref for ref, ours in FACTORIES.items()}


def make_modules_callable(modules) -> None:
    """Make each pass module callable as its reference factory (see :class:`_CallablePassModule`)."""
    for m in modules:
        if m.__name__.rsplit(".", 1)[1] in _REFERENCE_NAME:
            m.__class__ = _CallablePassModule


def get_default_verification_level() -> VerificationLevel:
    """``PYPTO_VERIFY_LEVEL`` or BASIC."""
    return resolve_verification_level(None)


def get_default_diagnostic_phase() -> DiagnosticPhase:
    """``PYPTO_WARNING_LEVEL`` or the default phase."""
    return resolve_phase(None)


__all__ = ["MemoryPlanner", "RuntimeKind", "runtime_kind_to_name", "runtime_kind_from_name", "VerificationMode",
           "VerificationLevel", "DiagnosticPhase", "DiagnosticCheck", "DiagnosticCheckSet", "PassInstrument",
           "CallbackInstrument", "VerificationInstrument", "ReportInstrument", "DiagnosticInstrument", "PassContext",
           "Pass", "PassPipeline", "get_default_verification_level", "get_default_diagnostic_phase",
           *FACTORIES, *BY_CONSTRUCTION]
