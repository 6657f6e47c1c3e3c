"""``pypto.ir.compiled_program``: where the reference defines ``CompiledProgram``; ours is
:class:`pypto.ir.compiled.CompiledProgram` (one class, re-exported here)."""
from pypto.ir.compiled import CompiledProgram

__all__ = ["CompiledProgram"]
