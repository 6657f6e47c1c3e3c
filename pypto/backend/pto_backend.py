"""``pypto.backend.pto_backend``: code generation of a lowered program into the files of a work
directory (the reference's module name; here it emits the simulator's Python kernel and orchestration
modules, not PTO/MLIR). :func:`pypto.ir.compile` calls :func:`generate`.
"""
from __future__ import annotations

from pypto.errors import CodegenError
from pypto.backend.backend_type import default_platform
from pypto.backend.platforms import get_platform
from pypto.language.enums import KERNEL_TYPES, FunctionType


class PartialCodegenError(CodegenError, RuntimeError):
    """Code generation failed after producing some files; ``files`` maps their relative paths to their
    text (``ir.compile`` writes them before raising, so they can be inspected)."""

    def __init__(self, message: str, files: dict[str, str], span=None, hint=None):
        super().__init__(message, span, hint)
        self.files = dict(files)


def kernel_path(name: str) -> str:
    """Where the kernel of InCore function ``name`` goes, relative to the work directory."""
    return f"kernels/aiv/{name}.py"


def orchestration_path(name: str) -> str:
    """Where the orchestration module of entry ``name`` goes, relative to the work directory."""
    return f"orchestration/{name}.py"


def generate(program, output_dir=None, *, platform=None, skip_ptoas: bool = False, **options) -> dict[str, str]:
    """The files of a lowered program: ``{relative path: text}``, one kernel module per InCore function
    and one orchestration module for an Orchestration entry.

    ``platform`` is the simulated platform (default: the configured backend's). ``output_dir`` is
    accepted for the reference's signature (nothing is written: the caller writes the files);
    ``skip_ptoas`` and the reference's other options (``emit_source_loc``, ...) have no meaning
    here: there is no ptoas step. ``memory_planner=MemoryPlanner.PTOAS`` refuses what the
    reference's PTOAS codegen refuses (``Function.ptoas_refusals``: co-live multi-buffer slots,
    pypto.frontend.slot_placements), after generating the other functions, as the reference does.
    A ``CodegenError`` after the first file becomes a :class:`PartialCodegenError` carrying the
    files produced so far.
    """
    from pypto.codegen import generate_kernel, generate_orchestration
    from pypto.codegen.group import generate_group

    planner = options.pop("memory_planner", None)
    ptoas = str(getattr(planner, "name", planner)).upper() == "PTOAS"
    del output_dir, skip_ptoas, options
    plat = get_platform(platform or default_platform())
    files: dict[str, str] = {}
    refused = [(f, r) for f in program.functions for r in f.ptoas_refusals] if ptoas else []
    try:
        for f in program.functions:
            if any(g is f for g, _ in refused):
                continue
            if f.func_type in KERNEL_TYPES:
                files[kernel_path(f.name)] = generate_kernel(f, plat)
            elif f.func_type == FunctionType.Group:   # a mixed kernel: one cluster task
                files[kernel_path(f.name)] = generate_group(f, program)
        entry = program.entry
        if entry.func_type == FunctionType.Orchestration:
            files[orchestration_path(entry.name)] = generate_orchestration(entry, program)
        if refused:
            f, (message, span, hint) = refused[0]
            raise CodegenError(f"function '{f.name}': {message}", span, hint)
    except CodegenError as e:
        # a kernel the generator refuses (a user-facing error); an InternalError stays what it is
        if not files:
            raise
        raise PartialCodegenError(e.message, files, e.span, e.hint) from e
    return files


__all__ = ["PartialCodegenError", "generate", "kernel_path", "orchestration_path"]
