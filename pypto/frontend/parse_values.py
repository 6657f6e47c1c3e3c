"""Values of the parser that are not IR yet: the operand kind of a value (:func:`kind_of`), a Python
constant as an IR literal (:func:`to_expr`), how an error names a static value, and the sentinels
the parser and its mixins (:mod:`.parser_tasks`, :mod:`.op_binding`) share."""
from __future__ import annotations

import ast
import math
import types as pytypes
from dataclasses import dataclass
from typing import Any

from pypto.errors import ParserTypeError, PyptoError, Span
from pypto.ir.nodes import ConstBool, ConstFloat, ConstInt, Expr
from pypto.ir.types import HandleType, ScalarType, TensorType, TileType, Type, describe
from pypto.language.constructs import DslName
from pypto.language.dtypes import FP32, INDEX, TASK_ID
from pypto.language.enums import SplitMode


_UNBOUND = object()


def _is_static(v: Any) -> bool:
    return not isinstance(v, Expr)


def kind_of(v: Any) -> str:
    """Operand kind used for op dispatch: tensor / tile / scalar / other."""
    if isinstance(v, Expr):
        t = v.type
        if isinstance(t, TensorType):
            return "tensor"
        if isinstance(t, TileType):
            return "tile"
        if isinstance(t, ScalarType):
            return "scalar"
        if isinstance(t, HandleType):
            return "handle"
        return "other"
    if isinstance(v, (bool, int, float)):
        return "scalar"
    return "other"


def to_expr(v: Any, span: Span) -> Expr:
    """A Python constant as an IR literal (int -> INDEX, float -> FP32, bool -> BOOL)."""
    if isinstance(v, Expr):
        return v
    if isinstance(v, bool):
        return ConstBool(v, span)
    if isinstance(v, int):
        if not -(1 << 63) <= v < (1 << 63):
            # (issue 13: an int that no scalar register holds used to crash deep in torch)
            raise ParserTypeError(f"integer {v} does not fit in 64 bits (INDEX / INT64): no scalar of the "
                                  "device holds it", span, "use a value in [-2**63, 2**63)")
        return ConstInt(v, INDEX, span)
    if isinstance(v, float):
        if math.isfinite(v) and abs(v) > _FP32_MAX:
            # (a float literal is an FP32 scalar: 1e39 silently became an infinity)
            raise ParserTypeError(f"float {v!r} does not fit FP32 (largest finite value {_FP32_MAX:.6g}), the type of "
                                  "every float literal: it would become an infinity", span,
                                  "write float('inf') / -float('inf') if an infinity is meant, or a value in range")
        return ConstFloat(v, FP32, span)
    raise ParserTypeError(f"expected a value, got {_describe_static(v)}", span)


_FP32_MAX = 3.4028234663852886e38   # torch.finfo(torch.float32).max


def _describe_static(v: Any) -> str:
    if isinstance(v, Expr):
        return describe(v.type)
    if isinstance(v, DslName):
        return repr(v)
    if isinstance(v, pytypes.ModuleType):
        return f"module {v.__name__}"
    return f"{type(v).__name__} {v!r}"


def _is_task_ids(t: Type) -> bool:
    """A TaskId scalar, or a TaskId array (``pl.array.create(n, pl.TASK_ID)``: a 1-D TASK_ID tensor type)."""
    return getattr(t, "dtype", None) == TASK_ID and isinstance(t, (ScalarType, TensorType))


def _is_construct_call(node: ast.AST, resolve, name: str) -> bool:
    if not isinstance(node, ast.Call):
        return False
    try:
        fn = resolve(node.func)
    except PyptoError:
        return False
    return isinstance(fn, DslName) and fn.name == name


@dataclass(frozen=True)
class _SelfMethod:
    name: str


# a pl.split_aiv region's mode as the int its ops carry (0 NONE, 1 UP_DOWN, 2 LEFT_RIGHT)
_MODE_INT = {SplitMode.NONE: 0, SplitMode.UP_DOWN: 1, SplitMode.LEFT_RIGHT: 2}


def _assigned_names(stmts: list[ast.stmt]) -> list[str]:
    """Names (re)bound anywhere in ``stmts``, in first-assignment order (a pre-pass, so loops are
    emitted once). ``out[...] = e`` rebinds ``out``."""
    out: dict[str, None] = {}

    def target(t: ast.AST) -> None:
        if isinstance(t, ast.Name):
            out.setdefault(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                target(e)
        elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            out.setdefault(t.value.id)

    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    target(t)
            elif isinstance(n, (ast.AnnAssign, ast.AugAssign)):
                target(n.target)
    return list(out)
