"""LegalizeTileCast: a ``tile.cast`` the platform cannot do in one instruction becomes a chain of
native casts, found by the shortest-path search of :func:`pypto.backend.cast_table.cast_path`.

Requires: IncoreTileOps. Produces: CastsNative. Every hop keeps the original rounding mode; the
intermediates are named ``<var>__cast_<dtype>_tmp_v<k>`` and the final hop keeps the original Var.
A pair with no path is a compile error naming both dtypes and the architecture.
"""
from __future__ import annotations

from pypto.backend.cast_table import CastPathError, cast_path
from pypto.errors import PassTypeError
from pypto.ir.nodes import AssignStmt, Call, Program, Var
from pypto.ir.visit import Mutator
from pypto.language.dtypes import dtype_from_name
from pypto.language.enums import KERNEL_TYPES, FunctionType
from pypto.ops.builder import build
from pypto.ops.registry import get_op
from pypto.passes.context import PassContext

NAME = "LegalizeTileCast"
REQUIRES = ("IncoreTileOps",)
PRODUCES = ("CastsNative",)


def run(program: Program, ctx: PassContext) -> Program:
    arch = ctx.platform.arch
    return program.replace(functions=tuple(
        _Legalize(arch).function(f) if f.func_type in KERNEL_TYPES else f for f in program.functions))


class _Legalize(Mutator):
    def __init__(self, arch: str):
        super().__init__()
        self.arch = arch

    def visit_AssignStmt(self, s: AssignStmt):
        s = self.default_stmt(s)
        v = s.value
        if not (isinstance(v, Call) and v.op == "tile.cast"):
            return s
        x, dst, mode = v.args
        src = x.type.dtype
        if src == dst:
            return s
        try:
            hops = cast_path(src.name, dst.name, self.arch)
        except CastPathError as e:
            raise PassTypeError(str(e), v.span, _hint(src.name, dst.name, self.arch)) from None
        if len(hops) <= 1:
            return s
        out = []
        cur = x
        for k, name in enumerate(hops[:-1]):
            step = build("tile.cast", v.span, x=cur, dtype=dtype_from_name(name), mode=mode)
            tmp = Var(f"{s.var.name}__cast_{name.lower()}_tmp_v{k}", step.type, s.var.span)
            out.append(AssignStmt(tmp, step, s.span))
            cur = tmp
        out.append(s.replace(value=v.replace(args=(cur, dst, mode))))
        return out


def _hint(src: str, dst: str, arch: str) -> str:
    """The fix for a pair with no path: a dtype this arch converts from / to nothing at all is named
    (with the archs that do convert it); otherwise an explicit intermediate."""
    from pypto.backend.cast_table import ARCHS, NATIVE_CASTS

    def touches(a: str, name: str) -> bool:
        rows = NATIVE_CASTS[a]
        return name in rows or any(name in ds for ds in rows.values())

    for name in (src, dst):
        if not touches(arch, name):
            others = [a for a in ARCHS if a != arch and touches(a, name)]
            where = f"only {', '.join(others)} converts it (run on {others[0]}sim)" if others else \
                "no platform converts it (it holds data from the host only)"
            return f"{arch} has no conversion from or to {name}: {where}"
    return "cast through an intermediate type explicitly"
