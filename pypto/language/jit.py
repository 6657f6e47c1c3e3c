"""``@pl.jit`` and its family (``@pl.jit.incore``): kernels parsed at their first call,
specialised on argument shapes and dtypes, compiled once per signature and dispatched to the
simulator.

    kernel(*tensors, config=RunConfig(...))   compile (or reuse) and run; outputs written in place
    kernel.compile(*sample_args, config=...)  compile without running -> CompiledProgram
    kernel.lower(*sample_args, config=...)    the IR after the pass pipeline -> Program
"""
from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from pypto.language.enums import FunctionType, Level
from pypto.tracebacks import user_facing

_KINDS = {"entry": FunctionType.Orchestration, "incore": FunctionType.InCore, "inline": FunctionType.Inline,
          "opaque": FunctionType.Opaque}


class JITFunction:
    """A kernel: a Python function whose body is parsed into IR, never executed."""

    def __init__(self, fn: Callable, kind: str = "entry", level: Level | None = None):
        if kind not in _KINDS:
            raise ValueError(f"unknown kernel kind {kind!r}")
        from pypto.frontend.source import snapshot_source

        self.fn = fn
        self.kind = kind
        self.level = level
        # read once, now: a later specialisation must not see the file as edited since the import
        self.source_snapshot = snapshot_source(fn)
        self._cache: dict[tuple, Any] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn)

    @property
    def func_type(self) -> FunctionType:
        """The IR function kind this decorator produces."""
        return _KINDS[self.kind]

    def __repr__(self) -> str:
        return f"<pl.jit{'' if self.kind == 'entry' else '.' + self.kind} {self.fn.__name__}>"

    def _config(self, config):
        from pypto.runtime.config import RunConfig

        if config is None:
            return RunConfig()
        if not isinstance(config, RunConfig):
            raise TypeError(f"config must be a pypto.runtime.RunConfig, got {type(config).__name__}")
        return config

    def _specialize(self, args, kwargs):
        from pypto.frontend.specialize import signature_args, specialize

        if self.kind != "entry":
            raise TypeError(f"'{self.fn.__name__}' is a @pl.jit.{self.kind} function; call it from a @pl.jit "
                            "kernel, or decorate it with @pl.jit to run it directly")
        if not args and not any(hasattr(v, "shape") for v in kwargs.values()):
            import inspect

            args = signature_args(self, kwargs)
            names = set(inspect.signature(self.fn).parameters)
            kwargs = {k: v for k, v in kwargs.items() if k not in names}  # unknown ones fail in specialize
        return specialize(self, args, kwargs)

    @user_facing
    def lower(self, *args, config=None, **kwargs):
        """Specialise and run the pass pipeline; returns the lowered :class:`pypto.ir.Program`.

        No artifacts are written and the compile cache is not touched. When this process already
        compiled the signature with the same pipeline settings, that build's lowered program is
        returned instead of running the pipeline again (it is the same program: see
        :meth:`_lowered_of_build`).
        """
        from pypto.driver.build import run_pipeline
        from pypto.passes.manager import emit_diagnostics

        from pypto.passes.api import PassContext as OuterContext
        from pypto.passes.context import l0c_double_buffer_enabled

        cfg = self._config(config)
        spec = self._specialize(args, kwargs)
        options = cfg.compile_options()
        # the memory planner gates AutoTileMatmulL0's Acc double buffering as it does in compile()
        # (the config's planner, else an active PassContext's): without this, lower() under DSA_RP /
        # PTOAS showed a program other than the one that runs
        outer = OuterContext.current()
        planner = options.get("memory_planner") or (outer.get_memory_planner() if outer is not None else None)
        dbc = l0c_double_buffer_enabled(planner, outer.get_enable_pypto_l0c_double_buffer() if outer else None)
        built = self._lowered_of_build(spec, options, dbc)
        if built is not None:
            emit_diagnostics(built.diagnostics)
            return built.lowered
        result = run_pipeline(spec.program, dict(options, l0c_double_buffer=dbc))
        emit_diagnostics(result.diagnostics)
        return result.program

    def _cache_key(self, spec, options) -> tuple:
        """The in-memory compile cache's key of a specialisation under ``options``
        (``RunConfig.compile_options()``)."""
        import json
        import os

        from pypto.driver import artifacts
        from pypto.runtime.config import IdentityKey

        out = options.get("output_dir")
        return (artifacts.program_digest(spec.program), json.dumps(artifacts.options_key(options), sort_keys=True),
                os.path.abspath(out) if out else None, IdentityKey(options.get("passes")))

    def _lowered_of_build(self, spec, options, dbc: bool = False):
        """The build of this specialisation that :meth:`compile` made in this process with ``options``,
        when its pipeline ran here (not a build reused from disk) with exactly the settings
        :meth:`lower` runs it with: same program, pass list, platform, verification level,
        diagnostic phase, disabled diagnostics and L0C double buffering (``dbc``), no PassContext
        instruments. The pipeline is deterministic, so that build's lowered program is the one
        ``lower`` would compute; None when any of this does not hold."""
        from pypto.backend.platforms import get_platform
        from pypto.passes.api import PassContext as OuterContext, disabled_names

        if OuterContext.current() is not None:
            return None
        with self._lock:
            hit = self._cache.get(self._cache_key(spec, options))
        o = getattr(hit, "_options", None)
        if getattr(hit, "_lowered", None) is None or o is None:
            return None
        same = (o.get("platform") == get_platform(options.get("platform") or "a2a3sim").name
                and not o.get("instruments")
                and bool(o.get("l0c_double_buffer")) == dbc
                and o.get("verification_level") == options.get("verification_level")
                and o.get("diagnostic_phase") == options.get("diagnostic_phase")
                and bool(o.get("analyze_auto_scopes_for_deps")) == bool(options.get("analyze_auto_scopes_for_deps"))
                and o.get("disabled_diagnostics") == disabled_names(options.get("disabled_diagnostics")))
        return hit if same else None

    @user_facing
    def compile(self, *args, config=None, **kwargs):
        """Specialise and compile (or take the cached result); returns the ``CompiledProgram``.

        With no arguments the shapes come from the fully annotated signature ("signature mode").

        The cache key is the specialised program itself (its printed form and spans: every value
        the kernel captured from module globals or closures, every scalar constant bit for bit,
        shapes, dtypes, callee bodies) plus the compile options. A cached program whose artifact
        directory was deleted, pruned or overwritten by another build is compiled again.
        """
        from pypto.driver.build import compile as ir_compile

        cfg = self._config(config)
        spec = self._specialize(args, kwargs)
        options = cfg.compile_options()
        key = self._cache_key(spec, options)
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and hit.artifacts_intact():
            return hit
        compiled = ir_compile(spec.program, **options)
        with self._lock:
            self._cache[key] = compiled
        return compiled

    @user_facing
    def __call__(self, *args, config=None, **kwargs):
        """Compile for this signature (cached) and run on the simulator. Returns what the kernel
        returns only when the program returns values that are not written in place; ``None``
        otherwise (outputs land in the ``pl.Out`` tensors passed in)."""
        import inspect

        from pypto.language.constructs import RUNTIME

        if any(a is RUNTIME for a in (*args, *kwargs.values())):
            raise TypeError(f"@pl.jit function '{self.fn.__name__}': pl.RUNTIME marks a parameter in "
                            "kernel.compile(...); a call needs the actual value")
        compiled = self.compile(*args, config=config, **kwargs)
        bound = inspect.signature(self.fn).bind(*args, **kwargs)
        bound.apply_defaults()
        # specialisation constants (scalar arguments) are compiled in; pass only the parameters the
        # compiled program has
        runtime_args = [bound.arguments[name] for name in compiled.param_names]
        return compiled(*runtime_args, config=config)

    def cache_info(self) -> int:
        """How many compiled signatures are cached."""
        return len(self._cache)


class _JitDecorator:
    """``@pl.jit`` (entry kernels) with the ``.incore`` / ``.inline`` / ``.opaque`` sub-decorators.

    Each works bare or with parentheses. Only ``.incore`` takes ``level=``; ``auto_scope=`` is
    accepted (and ignored) on ``@pl.jit`` and ``.inline`` and rejected on ``.incore`` / ``.opaque``.
    """

    @staticmethod
    def _make(kind: str, fn, kwargs: dict, allow_auto_scope: bool, allow_level: bool):
        label = "@pl.jit" if kind == "entry" else f"@pl.jit.{kind}"
        if "level" in kwargs and not allow_level:
            raise TypeError(f"{label} does not accept a level= argument")
        if "auto_scope" in kwargs and not allow_auto_scope:
            raise TypeError(f"{label} does not accept an auto_scope= argument "
                            "(its body has no orchestration plane to scope)")
        level = kwargs.pop("level", None) if allow_level else None
        kwargs.pop("auto_scope", None)
        if kwargs:
            raise TypeError(f"{label} got unexpected arguments: {', '.join(kwargs)}")
        if fn is None:
            return lambda f: JITFunction(f, kind, level)
        return JITFunction(fn, kind, level)

    def __call__(self, fn: Callable | None = None, **kwargs):
        return self._make("entry", fn, dict(kwargs), True, False)

    def incore(self, fn: Callable | None = None, **kwargs):
        """A device kernel (an InCore function) called from a ``@pl.jit`` entry."""
        return self._make("incore", fn, dict(kwargs), False, True)

    def inline(self, fn: Callable | None = None, **kwargs):
        """A helper spliced into each call site (an Inline function; InlineFunctions removes it)."""
        return self._make("inline", fn, dict(kwargs), True, False)

    def opaque(self, fn: Callable | None = None, **kwargs):
        """A separate function with no plane yet: may hold orchestration loops and ``pl.at`` scopes."""
        return self._make("opaque", fn, dict(kwargs), False, False)

    def host(self, fn: Callable | None = None, **kwargs):
        """The HOST-level orchestrator of a multi-rank program: allocates window buffers and launches
        ``@pl.jit`` per-rank programs with ``device=r`` (docs/distributed.md)."""
        if "level" in kwargs:
            raise TypeError("@pl.jit.host does not accept a level= argument (HOST is implicit)")
        if kwargs:
            raise TypeError(f"@pl.jit.host got unexpected arguments: {', '.join(kwargs)}")
        from pypto.runtime.distributed.program import HostFunction

        return HostFunction if fn is None else HostFunction(fn)

    def extern(self, fn: Callable | None = None, **kwargs):
        """The reference's external C++ kernel (``@pl.jit.extern(aiv=..., aic=...)``). The
        simulators cannot run C++ kernel sources: the decorator is accepted so that a module defining
        one imports, and a kernel calling it raises a clear error."""
        why = "@pl.jit.extern (a kernel written in C++) is not supported: the simulators run kernels written in pl"
        hint = "write the kernel as a @pl.jit.incore function"
        return (lambda f: _Unsupported(f, "extern", why, hint)) if fn is None else _Unsupported(fn, "extern", why, hint)


class _Unsupported:
    """A decorated function of a kind the simulators cannot run (``@pl.jit.host`` / ``.extern``):
    any use raises :class:`pypto.errors.UnsupportedFeatureError` naming the decorator."""

    def __init__(self, fn: Callable, kind: str, why: str, hint: str):
        self.fn, self.kind, self.why, self.hint = fn, kind, why, hint
        functools.update_wrapper(self, fn)

    def _raise(self, *args, **kwargs):
        from pypto.errors import UnsupportedFeatureError

        raise UnsupportedFeatureError(f"'{self.fn.__name__}': {self.why}", None, self.hint)

    __call__ = compile = lower = _raise

    def __repr__(self) -> str:
        return f"<pl.jit.{self.kind} {self.fn.__name__} (not supported on the simulators)>"


jit = _JitDecorator()
