"""``pypto.ir.pass_manager`` (this module, :mod:`pypto.driver.pass_manager`): ``PassManager`` and ``OptimizationStrategy`` (the reference's names)
over our pass pipeline (:data:`pypto.passes.PIPELINE`) and manager (:mod:`pypto.passes.manager`).

``PassManager.get_strategy().run_passes(program)`` lowers a program exactly as :func:`pypto.ir.compile`
does (same passes, verification and diagnostics), for the configured backend's simulator
(:func:`pypto.backend.set_backend_type`; a2a3 when unset).
"""
from __future__ import annotations

from pathlib import Path

from pypto.backend.backend_type import default_platform
from pypto.driver.build import compile_settings, default_pipeline, run_pipeline
from pypto.passes.manager import PassDumpLevel, VerificationLevel, resolve_dump_level
from pypto.pypto_core.passes import Pass
from pypto.runtime.config import OptimizationStrategy  # defined with RunConfig, below the driver


def coerce_dump_level(dump_passes) -> PassDumpLevel:
    """``True`` -> CONCISE, ``False`` -> NONE, a :class:`PassDumpLevel` as is."""
    return resolve_dump_level(dump_passes)


class PassManager:
    """The pipeline of one optimisation strategy."""

    def __init__(self, strategy: OptimizationStrategy = OptimizationStrategy.Default, *,
                 analyze_auto_scopes_for_deps: bool = False):
        if not isinstance(strategy, OptimizationStrategy):
            raise ValueError(f"strategy must be an OptimizationStrategy, got {strategy!r}")
        if not isinstance(analyze_auto_scopes_for_deps, bool):
            raise ValueError(f"analyze_auto_scopes_for_deps must be a bool, got {analyze_auto_scopes_for_deps!r}")
        self.strategy = strategy
        self.analyze_auto_scopes_for_deps = analyze_auto_scopes_for_deps

    @classmethod
    def get_strategy(cls, strategy: OptimizationStrategy = OptimizationStrategy.Default, *,
                     analyze_auto_scopes_for_deps: bool = False) -> "PassManager":
        """The pass manager of ``strategy``."""
        return cls(strategy, analyze_auto_scopes_for_deps=analyze_auto_scopes_for_deps)

    @property
    def passes(self) -> tuple:
        """The pipeline's passes (:class:`pypto.pypto_core.passes.Pass`), in order."""
        return tuple(Pass(p) for p in default_pipeline())

    @property
    def pass_names(self) -> list[str]:
        """The pass names, in order."""
        return [p.get_name() for p in self.passes]

    def get_pass_names(self) -> list[str]:
        """The pass names, in order."""
        return self.pass_names

    def run_passes(self, input_ir, dump_ir=False, output_dir=None, prefix: str = "pl"):
        """Lower ``input_ir`` through the whole pipeline and return the result.

        ``dump_ir`` (bool or :class:`PassDumpLevel`) writes one file per pass into ``output_dir``
        (required then). ``prefix`` is accepted for the reference's signature: our printer always
        writes ``pl.`` (the only prefix the parser reads back).
        """
        level = coerce_dump_level(dump_ir)
        if level != PassDumpLevel.NONE and output_dir is None:
            raise ValueError("run_passes(dump_ir=...) needs output_dir: the directory to write the pass dumps to")
        if prefix != "pl":
            raise ValueError(f"run_passes(prefix={prefix!r}): only the 'pl' prefix is supported (the printer "
                             "writes programs the parser reads back)")
        options = compile_settings(platform=default_platform(),
                                   analyze_auto_scopes_for_deps=self.analyze_auto_scopes_for_deps)
        options["dump_passes"] = level
        result = run_pipeline(input_ir, options, Path(output_dir) if output_dir is not None else None)
        return result.program


__all__ = ["OptimizationStrategy", "PassDumpLevel", "PassManager", "VerificationLevel", "coerce_dump_level"]
