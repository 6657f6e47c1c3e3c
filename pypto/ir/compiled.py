"""``CompiledProgram``: the artifacts of one compilation and the way to run them."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from pypto.ir.nodes import Program


class CompiledProgram:
    """A compiled kernel: ``output_dir`` holds the generated modules; calling it runs them on the
    simulator.

    * ``program`` is the program given to the compiler (before the passes), ``lowered`` the result
      of the pipeline (``None`` after :meth:`from_dir`).
    * Call with every parameter to write outputs in place (returns ``None``), or with the inputs
      only when the entry has pure ``Out`` parameters: those are allocated (zeros) and returned.
    """

    def __init__(self, program: Optional[Program], lowered: Optional[Program], output_dir: Path, platform: str,
                 meta: dict):
        self.program = program
        self.lowered = lowered
        self.output_dir = Path(output_dir)
        self.platform = platform
        self.meta = meta
        self.diagnostics: list = []  # compile-time findings (pypto.passes.diagnostics.Diagnostic)

    @property
    def backend_type(self):
        """``BackendType.Ascend910B`` or ``BackendType.Ascend950`` (a str enum: equal to its name)."""
        from pypto.backend.backend_type import BackendType

        return BackendType(self.meta["backend_type"])

    @property
    def param_names(self) -> list[str]:
        """Names of the entry's parameters, in order."""
        return [p["name"] for p in self.meta["params"]]

    @property
    def output_indices(self) -> list[int]:
        """Indices of the pure ``Out`` parameters."""
        return [i for i, p in enumerate(self.meta["params"]) if p["direction"] == "Out"]

    @property
    def has_return(self) -> bool:
        """Whether the entry returns values."""
        return self.meta.get("num_return_types", 0) > 0

    @classmethod
    def from_dir(cls, path, *, platform: str | None = None) -> "CompiledProgram":
        """Re-open an artifact directory from its ``compiled_meta.json``."""
        p = Path(path)
        meta_path = p / "compiled_meta.json"
        if not meta_path.is_file():
            raise FileNotFoundError(f"{meta_path} not found: not a pypto artifact directory")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ValueError(f"{meta_path} is not valid JSON: {e}") from None
        if not isinstance(meta, dict) or meta.get("schema") != 1:
            raise ValueError(f"{meta_path}: unsupported schema {meta.get('schema') if isinstance(meta, dict) else meta!r}")
        return cls(None, None, p, platform or meta["platform"], meta)

    def __call__(self, *args, config=None, **kwargs):
        """Run on the simulator. See the class docstring for the two calling conventions."""
        from pypto.runtime.simulator import execute
        from pypto.runtime.worker import current_worker

        if config is None and current_worker() is not None:
            return current_worker().run(self, *args, **kwargs)  # inside ``with ChipWorker(...)``
        return execute(self, args, kwargs, config)

    def validate_ir(self, tensors: dict, expected: dict, *, rtol: float = 5e-2, atol: float = 5e-2, **kwargs):
        """Which pass changed the result? Runs every pass dump of this compilation through
        ``torch_codegen`` on ``tensors`` and compares the outputs named in ``expected`` with the golden
        and with the previous pass. Pass your own tolerance: the 5e-2 defaults are loose (a warning
        says so). Returns a :class:`pypto.debug.validate_ir.ValidationReport`; raises
        ``AssertionError`` naming the first diverging pass when there is one. Needs
        ``dump_passes=True`` at compile time."""
        from pypto.debug.validate_ir import validate_pass_ir_codegen_results

        return validate_pass_ir_codegen_results(self.output_dir / "passes_dump", tensors, expected,
                                                rtol=rtol, atol=atol, **kwargs)

    def __fspath__(self) -> str:
        return str(self.output_dir)

    def __str__(self) -> str:
        return str(self.output_dir)

    def __repr__(self) -> str:
        return f"CompiledProgram({str(self.output_dir)!r}, platform={self.platform!r})"
