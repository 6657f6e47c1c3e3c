"""``pypto.pypto_core.passes``: the reference's pass-level API (its native module) as adapters over
our one pass pipeline (:mod:`pypto.passes`) and manager (:mod:`pypto.passes.manager`).

* ``inline_functions()``, ``convert_to_ssa()``, ... return a :class:`Pass` wrapping our pass module of
  the same name; calling it runs that pass on a Program for the configured backend's simulator
  (:func:`pypto.backend.set_backend_type`, default a2a3). A reference pass with no counterpart here
  (its pipeline has passes ours folds into others or does not need) is an ``AttributeError`` that
  lists ours.
* :class:`PassContext` is a context manager (``with PassContext([...], memory_planner=...)``): while
  active, :func:`pypto.ir.compile` takes its verification level, diagnostic phase, disabled checks,
  memory planner and runtime kind as defaults, and a :class:`Pass` called directly runs its
  instruments (:class:`CallbackInstrument` before/after, :class:`VerificationInstrument`).
* ``l0_tile_chooser.choose_l0_tile(cfg)`` is the reference's roofline design-point chooser (see
  :mod:`pypto.pypto_core.l0_tile_chooser`; our AutoTileMatmulL0 does not realise its tiles yet).
* ``MemoryPlanner`` and ``RuntimeKind`` are accepted and recorded (``compiled_meta.json``); the
  simulator always plans memory with our MemoryReuse + AllocateMemoryAddr and runs the
  tensormap runtime, so they change no result (docs/compatibility.md).
"""
from __future__ import annotations

import enum
import threading

from pypto.passes.diagnostics import DiagnosticPhase
from pypto.passes.manager import VerificationLevel


class MemoryPlanner(enum.Enum):
    """Who plans on-chip memory in the reference. Here: recorded only (our planner always runs)."""

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
    from pypto.passes.diagnostics import CHECKS

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
    from pypto.ir.verifier import verify

    verify(program, ["TypeChecked", *props], _pass_ctx(), where)


class ReportInstrument(PassInstrument):
    """Names the directory reports go to (``ir.compile`` writes ``report/`` there)."""

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
        from pypto.passes.diagnostics import CHECKS
        from pypto.passes.manager import emit_diagnostics
        from pypto.passes.diagnostics import Diagnostic

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


def _pass_ctx():
    """Our per-compilation context for a directly called pass: the configured backend's simulator."""
    from pypto.backend.backend_type import default_platform
    from pypto.backend.platforms import get_platform
    from pypto.passes.context import PassContext as _Ctx

    return _Ctx(platform=get_platform(default_platform()))


class Pass:
    """One of our passes as a callable object: ``pass_obj(program) -> program``."""

    def __init__(self, p):
        from pypto.passes.manager import as_pass

        self.info = as_pass(p)

    def __call__(self, program):
        from pypto.errors import PyptoError

        ctx = PassContext.current()
        instruments = ctx.get_instruments() if ctx else []
        for i in instruments:
            i.before(self, program)
        try:
            out = self.info.run(program, _pass_ctx())
        except PyptoError:
            raise
        except Exception as e:
            from pypto.errors import InternalError

            raise InternalError(f"pass '{self.get_name()}' failed: {type(e).__name__}: {e}") from e
        for i in instruments:
            i.after(self, out)
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

    def __repr__(self) -> str:
        return f"Pass({self.get_name()})"


class PassPipeline:
    """An ordered list of :class:`Pass` run one after the other."""

    def __init__(self):
        self._passes: list[Pass] = []

    def add_pass(self, pass_obj: Pass) -> None:
        """Append a pass."""
        self._passes.append(pass_obj if isinstance(pass_obj, Pass) else Pass(pass_obj))

    def run(self, program):
        """Run every pass in order."""
        for p in self._passes:
            program = p(program)
        return program

    def get_pass_names(self) -> list[str]:
        """The pass names in order."""
        return [p.get_name() for p in self._passes]

    def get_passes(self) -> list[Pass]:
        """The passes in order."""
        return list(self._passes)


def _factory(module_name: str):
    def make(*args, **kwargs) -> Pass:
        import importlib

        mod = importlib.import_module(f"pypto.passes.{module_name}")
        if module_name == "auto_derive_task_dependencies":
            analyze = kwargs.pop("analyze_auto_scopes", args[0] if args else False)
            from pypto.passes.manager import PassInfo

            def run(program, ctx, _m=mod, _a=bool(analyze)):
                ctx.analyze_auto_scopes_for_deps = _a
                return _m.run(program, ctx)

            return Pass(PassInfo(mod.NAME, run, tuple(mod.REQUIRES), tuple(mod.PRODUCES)))
        if args or kwargs:
            raise TypeError(f"{module_name}() takes no arguments")
        return Pass(mod)

    make.__name__ = module_name
    make.__doc__ = f"The pass ``pypto.passes.{module_name}`` as a :class:`Pass`."
    return make


# One factory per pass of our pipeline; the reference names its factories after the same passes.
_PASS_MODULES = ("inline_functions", "unroll_loops", "convert_to_ssa", "simplify", "flatten_call_expr",
                 "outline_incore_scopes", "convert_tensor_to_tile_ops", "flatten_tile_nd_to_2d",
                 "legalize_tile_cast", "auto_tile_matmul_l0", "infer_tile_memory_space", "normalize_return_order",
                 "init_mem_ref", "memory_reuse", "allocate_memory_addr", "derive_call_directions",
                 "auto_derive_task_dependencies")
for _m in _PASS_MODULES:
    globals()[_m] = _factory(_m)
del _m


def _l0_tile_chooser_module():
    from pypto.pypto_core import l0_tile_chooser as module

    return module


def get_default_verification_level() -> VerificationLevel:
    """``PYPTO_VERIFY_LEVEL`` or BASIC."""
    from pypto.passes.manager import resolve_verification_level

    return resolve_verification_level(None)


def get_default_diagnostic_phase() -> DiagnosticPhase:
    """``PYPTO_WARNING_LEVEL`` or the default phase."""
    from pypto.passes.diagnostics import resolve_phase

    return resolve_phase(None)


def __getattr__(name: str):
    if name == "l0_tile_chooser":  # our AutoTileMatmulL0's rule in the reference's vocabulary
        return _l0_tile_chooser_module()
    raise AttributeError(
        f"pypto.pypto_core.passes has no {name!r}: the reference's pass or helper of that name has no "
        f"counterpart in this simulator's pipeline (its work is done by: {', '.join(_PASS_MODULES)}; "
        "see docs/compatibility.md)")


__all__ = ["MemoryPlanner", "RuntimeKind", "runtime_kind_to_name", "runtime_kind_from_name", "VerificationMode",
           "VerificationLevel", "DiagnosticPhase", "DiagnosticCheck", "DiagnosticCheckSet", "PassInstrument",
           "CallbackInstrument", "VerificationInstrument", "ReportInstrument", "DiagnosticInstrument", "PassContext",
           "Pass", "PassPipeline", "get_default_verification_level", "get_default_diagnostic_phase",
           *_PASS_MODULES]
