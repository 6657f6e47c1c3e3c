"""``@pl.jit`` and its family (``@pl.jit.incore``): kernels parsed at their first call,
specialised on argument shapes and dtypes, compiled once per signature and dispatched to the
simulator.

    kernel(*tensors, config=RunConfig(...))   compile (or reuse) and run; outputs written in place
    kernel.compile(*sample_args, config=...)  compile without running -> CompiledProgram
    kernel.lower(*sample_args, config=...)    the IR after the pass pipeline -> Program
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from pypto.language.enums import FunctionType, Level

_KINDS = {"entry": FunctionType.Orchestration, "incore": FunctionType.InCore}


class JITFunction:
    """A kernel: a Python function whose body is parsed into IR, never executed."""

    def __init__(self, fn: Callable, kind: str = "entry", level: Level | None = None):
        if kind not in _KINDS:
            raise ValueError(f"unknown kernel kind {kind!r}")
        self.fn = fn
        self.kind = kind
        self.level = level
        self._cache: dict[tuple, Any] = {}
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
            args = signature_args(self, kwargs)
            kwargs = {k: v for k, v in kwargs.items() if not hasattr(v, "shape")}
        return specialize(self, args, kwargs)

    def lower(self, *args, config=None, **kwargs):
        """Specialise and run the pass pipeline; returns the lowered :class:`pypto.ir.Program`.

        No artifacts are written and the compile cache is not touched.
        """
        from pypto.ir.compile import run_pipeline

        cfg = self._config(config)
        spec = self._specialize(args, kwargs)
        return run_pipeline(spec.program, cfg.compile_options()).program

    def compile(self, *args, config=None, **kwargs):
        """Specialise and compile (or take the cached result); returns the ``CompiledProgram``.

        With no arguments the shapes come from the fully annotated signature ("signature mode").
        """
        cfg = self._config(config)
        spec = self._specialize(args, kwargs)
        key = (spec.key, cfg.cache_key())
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        from pypto.ir.compile import compile as ir_compile

        compiled = ir_compile(spec.program, **cfg.compile_options())
        self._cache[key] = compiled
        return compiled

    def __call__(self, *args, config=None, **kwargs):
        """Compile for this signature (cached) and run on the simulator. Returns what the kernel
        returns only when the program returns values that are not written in place; ``None``
        otherwise (outputs land in the ``pl.Out`` tensors passed in)."""
        import inspect

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
    """``@pl.jit`` (entry kernels) with the ``.incore`` sub-decorator."""

    def __call__(self, fn: Callable | None = None, **kwargs):
        if kwargs and "auto_scope" not in kwargs:
            raise TypeError(f"@pl.jit got unexpected arguments: {', '.join(kwargs)}")
        if "level" in kwargs:
            raise TypeError("@pl.jit does not accept a level= argument")
        if fn is None:
            return lambda f: JITFunction(f, "entry")
        return JITFunction(fn, "entry")

    def incore(self, fn: Callable | None = None, *, level: Level | None = None, **kwargs):
        """A device kernel (an InCore function) called from a ``@pl.jit`` entry."""
        if "auto_scope" in kwargs:
            raise TypeError("@pl.jit.incore does not accept an auto_scope= argument")
        if kwargs:
            raise TypeError(f"@pl.jit.incore got unexpected arguments: {', '.join(kwargs)}")
        if fn is None:
            return lambda f: JITFunction(f, "incore", level)
        return JITFunction(fn, "incore", level)


jit = _JitDecorator()
