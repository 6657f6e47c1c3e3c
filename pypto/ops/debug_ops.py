"""Debugging ops: ``tensor.dump_tag`` (``pl.dump_tag(t)``).

``pl.dump_tag(t)`` is a statement in orchestration code: the runtime records a snapshot of ``t``
as it is at that point of the program (after every task that writes it and was submitted before).
The simulator keeps the snapshots in ``Runtime.dumps`` (``pypto.runtime.simulator.last_dumps()``
returns those of the latest run); the reference executor treats it as a no-op.
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.types import TensorType
from pypto.ops.registry import OpArgs, OpDef, Param, register


def _dump_tag_infer(a: OpArgs, span: Span) -> TensorType:
    return a.tensor.type


register(OpDef(
    name="tensor.dump_tag",
    params=(Param("tensor", "tensor"), Param("tag", "str", None)),
    infer=_dump_tag_infer,
    ref=lambda a: f"{a.tensor}",
    orch=lambda a: f"_rt.dump_tag({a.tensor}, {(a.tag if a.tag is not None else str(a.tensor))!r})",
    dsl="dump_tag", operand_kinds=("tensor",),
    doc="record a snapshot of a tensor at this point of the orchestration (debugging)",
))


# ---------------------------------------------------------------------------------------------------
# pl.debug_print(x, label=None): a run-time print inside a kernel (PTOAS's TPRINT; the reference
# PyPTO has no Python name for it, only the parse-time pl.static_print, so ours is debug_print).
# The simulator prints the value with the task (r<ring>t<index>), the core and the simulated time
# (pypto/ops/support/debug.py says how the time is taken without changing the schedule); the
# reference executor prints the same line labelled "reference".

def _debug_print_args(args: list, kwargs: dict, span: Span):
    """Fill ``label`` (the printed variable's name) and ``where`` (``file:line`` of the call) at
    parse time, so that both survive the pipeline's renaming and the printed form carries them."""
    import os

    from pypto.ir.nodes import Var

    value = args[0] if args else kwargs.get("value")
    if "label" not in kwargs and len(args) < 2:
        kwargs["label"] = value.name if isinstance(value, Var) else "value"
    if "where" not in kwargs and len(args) < 3 and span is not None and not span.is_unknown():
        kwargs["where"] = f"{os.path.basename(span.file)}:{span.line}"
    return args, kwargs


def _debug_print_infer(level: str):
    def infer(a: OpArgs, span: Span):
        from pypto.ir.types import ScalarType, TileType, TupleType
        from pypto.ops.rules import expect

        t = getattr(a.value, "type", None)
        ok = (TensorType,) if level == "tensor" else (TileType, ScalarType)
        what = "tensor" if level == "tensor" else "tile or a scalar"
        got = type(t).__name__ if t is not None else type(a.value).__name__
        expect(isinstance(t, ok), "pl.debug_print", f"prints a {what} of a kernel, got a {got}", span,
               "print a tile, a tensor or a scalar computed inside a 'with pl.at(...)' block")
        return TupleType(())   # a statement: no value
    return infer


def _debug_print_sim(a: OpArgs, dst, cycles: int = 0) -> str:
    from pypto.ir.types import TileType

    t = a.value.type
    vs = None
    if isinstance(t, TileType) and t.valid_shape is not None and all(isinstance(n, int) for n in t.valid_shape):
        vs = tuple(t.valid_shape)   # a run-time valid shape prints the whole tile (padding included)
    return (f"yield _pto.DebugPrint(_pto.debug_valid({a.value}, {vs!r}), {a.label}, {a.where}, {cycles})")


for _level in ("tensor", "tile"):
    register(OpDef(
        name=f"{_level}.debug_print",
        params=(Param("value", "any"), Param("label", "str", None), Param("where", "str", None)),
        infer=_debug_print_infer(_level),
        ref=lambda a: f"_pto.debug_print_ref({a.value}, {a.label}, {a.where})",
        sim=_debug_print_sim if _level == "tile" else None,
        lowers_to="tile.debug_print" if _level == "tensor" else None,
        yields=_level == "tile",
        dsl="debug_print", operand_kinds=("tensor",) if _level == "tensor" else (),
        dsl_args=_debug_print_args,
        doc="print a value inside a kernel at run time, with the task, the core and the simulated time "
            "(debugging; the reference executor prints it too)",
    ))
