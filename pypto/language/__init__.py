"""The PyPTO kernel language, imported as ``pl``::

    import pypto.language as pl

    @pl.jit
    def add(a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
            out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, b)
        return out

Kernel bodies are parsed into IR, never executed. See ``docs/`` for the language guide.
"""
from __future__ import annotations

from pypto.language.annotations import InOut, MemRef, Out, Scalar, Tensor, Tile, TileView, Tuple
from pypto.language.constructs import RUNTIME, DslName, DslOp, OpNamespace
from pypto.language.dtypes import (
    BF16, BOOL, FP16, FP32, INDEX, INT8, INT16, INT32, INT64, TASK_ID, UINT8, UINT16, UINT32, UINT64,
    DataType,
)
from pypto.language.enums import (
    AtomicType, ForKind, FunctionType, Level, Mem, MemorySpace, PadValue, ParamDirection, Role,
)
from pypto.language.enums import ParamDirection as Direction
from pypto.language.jit import JITFunction, jit
from pypto.language.program import function, loads, parse, program

# -- op entry points: pl.<name> for every DSL name in the op registry (pl.add, pl.load, ...) is
# resolved by __getattr__ below, so an op is declared once, in pypto/ops, and nowhere else.
tile = OpNamespace("tile")
tensor = OpNamespace("tensor")

# -- constructs
at = DslName("at")
range = DslName("range")  # noqa: A001
parallel = DslName("parallel")
unroll = DslName("unroll")
yield_ = DslName("yield_")
const = DslName("const")

__all__ = [
    "BF16", "BOOL", "FP16", "FP32", "INDEX", "INT8", "INT16", "INT32", "INT64", "TASK_ID", "UINT8",
    "UINT16", "UINT32", "UINT64", "DataType", "AtomicType", "ForKind", "FunctionType", "Level", "Mem",
    "MemorySpace", "PadValue", "ParamDirection", "Direction", "Role", "InOut", "MemRef", "Out", "Scalar",
    "Tensor", "Tile", "TileView", "Tuple", "RUNTIME", "JITFunction", "jit", "function", "loads", "parse",
    "program", "tile", "tensor", "at", "range", "parallel", "unroll",
    "yield_", "const", "DslName", "DslOp", "OpNamespace",
]


def _dsl_names() -> set[str]:
    from pypto.ops.registry import dsl_names

    return dsl_names()


def __getattr__(name: str):
    """``pl.<op>``: a dispatching entry point for each DSL name the op registry declares."""
    if not name.startswith("_") and name in _dsl_names():
        op = DslOp(name)
        globals()[name] = op  # cache: later lookups are plain attribute reads
        return op
    raise AttributeError(f"module 'pypto.language' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _dsl_names())
