"""``CompiledProgram``: the artifacts of one compilation and the way to run them."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from pypto.backend.backend_type import BackendType
from pypto.driver.artifacts import dir_lock, read_meta, read_sources
from pypto.ir.nodes import Program
from pypto.runtime.modules import module_from_source
from pypto.runtime.simulator import execute
from pypto.runtime.worker import current_worker


class CompiledProgram:
    """A compiled kernel: ``output_dir`` holds the generated modules; calling it runs them on the
    simulator.

    * ``program`` is the program given to the compiler (before the passes), ``lowered`` the result
      of the pipeline (``None`` after :meth:`from_dir`).
    * Call with every parameter to write outputs in place (returns ``None``), or with the inputs
      only when the entry has pure ``Out`` parameters: those are allocated (zeros) and returned.
    """

    def __init__(self, program: Optional[Program], lowered: Optional[Program], output_dir: Path, platform: str,
                 meta: dict, sources: Optional[dict] = None, options: Optional[dict] = None):
        self.program = program
        self._lowered = lowered
        self._options = options  # the compile options, to recompute ``lowered`` for a reused build
        self.output_dir = Path(output_dir)
        self.platform = platform
        self.meta = meta
        # relative path -> text of each generated module, as written or as verified when reopened;
        # runs execute this text, never what the directory holds later (see pypto.runtime.modules)
        self.sources: dict[str, str] = dict(sources or {})
        self.diagnostics: list = []  # compile-time findings (pypto.passes.diagnostics.Diagnostic)
        self._meta_stat = _stat(self.output_dir)
        self._loaded = None     # load_modules' memo: (what it was built from, kernels, orchestration)

    @property
    def cache_key(self) -> Optional[str]:
        """The artifact key of this build (see :mod:`pypto.driver.artifacts`); None for old directories."""
        return self.meta.get("cache_key")

    @property
    def lowered(self) -> Optional[Program]:
        """The program after the pass pipeline. A build reused from disk did not run the pipeline in
        this process: it is recomputed on first access (the same key gives the same result)."""
        if self._lowered is None and self.program is not None and self._options is not None:
            from pypto.driver import build  # build imports this module

            self._lowered = build.run_pipeline(self.program, self._options).program
        return self._lowered

    @lowered.setter
    def lowered(self, value: Optional[Program]) -> None:
        self._lowered = value

    def load_modules(self) -> tuple[dict, object]:
        """``({kernel name: module}, orchestration module)`` built from :attr:`sources`."""
        if not self.sources:  # built by hand (no text kept): read the directory once
            sources = read_sources(self.output_dir, self.meta)
            if sources is None:
                rels = list(self.meta["kernels"].values()) + [self.meta["orchestration"]]
                sources = {r: (self.output_dir / r).read_text(encoding="utf-8") for r in rels if r}
            self.sources = sources
        out = self.output_dir
        orch_rel = self.meta["orchestration"]
        # Every call loads the modules; hashing their text (module_from_source's cache key) cost
        # ~0.4 ms of a Qwen3-layer call. The result is remembered with what it was built from: the
        # key holds the text objects themselves, so an unchanged program compares by identity (a
        # tuple compares its items identity first) and replaced sources, a changed meta or another
        # output_dir build again (equal text gives the same cached module anyway).
        key = (out, orch_rel, orch_rel and self.sources[orch_rel],
               tuple((name, rel, self.sources[rel]) for name, rel in self.meta["kernels"].items()))
        memo = getattr(self, "_loaded", None)   # (absent on an instance made without __init__)
        if memo is not None and memo[0] == key:
            return dict(memo[1]), memo[2]
        kernels = {name: module_from_source(self.sources[rel], out / rel) for name, rel in self.meta["kernels"].items()}
        orch = module_from_source(self.sources[orch_rel], out / orch_rel) if orch_rel else None
        self._loaded = (key, kernels, orch)
        return dict(kernels), orch

    def refresh_stat(self) -> None:
        """Remember the current identity of ``compiled_meta.json`` (after the build is in place)."""
        self._meta_stat = _stat(self.output_dir)

    def artifacts_intact(self) -> bool:
        """Whether ``output_dir`` still holds this build (not deleted, pruned or replaced by another
        compile into the same directory). Cheap when nothing changed: one ``stat``."""
        st = _stat(self.output_dir)
        if st is None:
            return False
        if st == self._meta_stat:
            return True
        meta = read_meta(self.output_dir)
        if meta is None or meta.get("cache_key") != self.cache_key or self.cache_key is None:
            return False
        self._meta_stat = st
        return True

    @property
    def backend_type(self):
        """``BackendType.Ascend910B`` or ``BackendType.Ascend950`` (a str enum: equal to its name)."""
        return BackendType(self.meta["backend_type"])

    @property
    def name(self) -> str:
        """The program's name (a multi-orchestration sub-build is named after its orchestration)."""
        return self.meta["name"]

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
        """Re-open an artifact directory from its ``compiled_meta.json``. The generated modules are
        read once, now, and checked against the hashes the meta records."""
        p = Path(path)
        meta_path = p / "compiled_meta.json"
        if not meta_path.is_file():
            raise FileNotFoundError(f"{meta_path} not found: not a pypto artifact directory")
        with dir_lock(p, exclusive=False):  # a writer replaces the files under an exclusive lock
            try:
                meta = json.loads(meta_path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as e:
                raise ValueError(f"{meta_path} is not valid JSON: {e}") from None
            if not isinstance(meta, dict) or meta.get("schema") != 1:
                raise ValueError(f"{meta_path}: unsupported schema "
                                 f"{meta.get('schema') if isinstance(meta, dict) else meta!r}")
            sources = read_sources(p, meta) if "module_sha256" in meta else None
        if sources is None and "module_sha256" in meta:
            raise ValueError(f"{p}: the generated modules do not match compiled_meta.json (edited, damaged "
                             "or half replaced); compile again")
        return cls(None, None, p, platform or meta["platform"], meta, sources=sources)

    # -- the manual-dispatch surface (simpler.worker.Worker), see pypto.driver.chip_surface
    @property
    def chip_callable(self):
        """The program as handed to ``simpler.worker.Worker.register`` (one object per program)."""
        from pypto.driver.chip_surface import ChipCallable

        if getattr(self, "_chip_callable", None) is None:
            self._chip_callable = ChipCallable(self)
        return self._chip_callable

    @property
    def runtime_name(self) -> str:
        """The runtime ABI the build targets (``"tensormap_and_ringbuffer"``)."""
        from pypto.driver.chip_surface import RUNTIME_NAME

        return RUNTIME_NAME

    @property
    def runtime_config(self) -> dict:
        """The runtime settings baked into the build."""
        from pypto.driver.chip_surface import runtime_config

        return runtime_config(self)

    def build_call_config(self, config=None, *, aicpu_thread_num=None, dfx_dir=None):
        """A ``CallConfig`` for ``Worker.run`` from a RunConfig (``aicpu_thread_num`` overrides it)."""
        from pypto.driver.chip_surface import build_call_config

        return build_call_config(self, config, aicpu_thread_num=aicpu_thread_num, dfx_dir=dfx_dir)

    def build_orch_args(self, *args, worker=None):
        """``(orch_args, coerced, return_style)`` for ``Worker.run`` (see pypto.driver.chip_surface)."""
        from pypto.driver.chip_surface import build_orch_args

        return build_orch_args(self, args, worker)

    def __call__(self, *args, config=None, **kwargs):
        """Run on the simulator. See the class docstring for the two calling conventions."""
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


def _stat(directory: Path):
    """Identity of ``directory/compiled_meta.json`` (inode, size, mtime) or None when it is gone."""
    try:
        st = (Path(directory) / "compiled_meta.json").stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
