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

# -- op entry points: pl.<name> dispatches on operand kinds (Tensor / Tile / scalar rhs)
add = DslOp("add")
sub = DslOp("sub")
mul = DslOp("mul")
div = DslOp("div")
exp = DslOp("exp")
neg = DslOp("neg")
abs = DslOp("abs")  # noqa: A001 - the DSL name shadows the builtin on purpose
cast = DslOp("cast")
load = DslOp("load")
store = DslOp("store")
move = DslOp("move")
create_tile = DslOp("create_tile")
create_tensor = DslOp("create_tensor")
assemble = DslOp("assemble")

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
    "program", "add", "sub", "mul", "div", "exp", "neg", "abs", "cast", "load", "store", "move",
    "create_tile", "create_tensor", "assemble", "tile", "tensor", "at", "range", "parallel", "unroll",
    "yield_", "const", "DslName", "DslOp", "OpNamespace",
]
