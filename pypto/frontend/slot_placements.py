"""The reference's refusal of co-live multi-buffer slots under ``memory_planner=PTOAS``.

``pl.MemRef([name,] slots=N)[index]`` in a tile annotation places the tile in one of N slots of one
on-chip allocation (pypto.frontend.parser._slot_memref). On the simulators the placement changes
nothing. The reference's PTOAS planner lowers such an allocation to a ptoas multi-buffer region,
and refuses at code generation (a ``PartialCodegenError`` from ``ir.compile``) an allocation two of
whose slots are selected in one loop body: ptoas 0.54 guards only the first slot selected in an
iteration, so the second would be overwritten by the next iteration while still being read (a
wrong result on the device). Under the PYPTO / DSA_RP planners the same program is legal.

We make the same refusal under PTOAS, so that a program written against the reference fails here
where it fails there. The rule (the reference's): inside a ``for`` / ``while`` body, counting the
statements of its ``if`` / ``with`` blocks but not those of nested loops (each loop body is its own
iteration), two annotated assignments select slots of the same ``pl.MemRef`` object. Straight-line
code (no loop) is accepted. The parser records each refusal on the Function
(``Function.ptoas_refusals``); :func:`pypto.backend.pto_backend.generate` raises it when the
planner is PTOAS. The reference's other multi-buffer refusals under PTOAS (slot counts, mixed slot
shapes or valid shapes, memory spaces other than Vec / Mat / Acc, a slot carried as a phi) are not
modelled: those programs compile under every planner here (docs/compatibility.md).
"""
from __future__ import annotations

import ast
from typing import Any, Callable

from pypto.errors import PyptoError, Span
from pypto.language import annotations as ann


def _slot_ref(annotation: ast.AST, resolve: Callable[[ast.AST], Any]):
    """``(MemRef, source name)`` of the slot placement in a ``pl.Tile[...]`` annotation, or None."""
    if not isinstance(annotation, ast.Subscript):
        return None
    items = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
    for item in items[2:]:
        if not (isinstance(item, ast.Subscript) and isinstance(item.value, (ast.Name, ast.Attribute))):
            continue
        try:
            ref = resolve(item.value)
        except (PyptoError, NameError, AttributeError, KeyError):
            continue
        if isinstance(ref, ann.MemRef) and ref.slots is not None:
            name = ref.base if isinstance(ref.base, str) else ast.unparse(item.value)
            return ref, name
    return None


def _iteration(stmts):
    """The statements one iteration of a loop body runs: into ``if`` / ``with`` blocks, not into
    nested loops."""
    for s in stmts:
        yield s
        if isinstance(s, (ast.If, ast.With)):
            yield from _iteration(s.body)
            yield from _iteration(getattr(s, "orelse", ()))


def ptoas_refusals(fdef: ast.FunctionDef, resolve: Callable[[ast.AST], Any], span_of) -> tuple:
    """``(message, span, hint)`` per slotted allocation with two slots selected in one loop body of
    ``fdef`` (``resolve``: the parser's static name resolution; ``span_of``: AST node -> Span)."""
    out: list[tuple[str, Span, str]] = []
    reported: set[int] = set()
    for loop in ast.walk(fdef):
        if not isinstance(loop, (ast.For, ast.While)):
            continue
        first: dict[int, ast.AST] = {}
        for s in _iteration(loop.body):
            if not (isinstance(s, ast.AnnAssign) and s.value is not None):
                continue
            found = _slot_ref(s.annotation, resolve)
            if found is None:
                continue
            ref, name = found
            if id(ref) not in first:
                first[id(ref)] = s
                continue
            if id(ref) in reported:
                continue
            reported.add(id(ref))
            out.append((
                f"the declared allocation 'pl.MemRef(\"{name}\", slots={ref.slots})' cannot be lowered to a ptoas "
                "multi-buffer region under memory_planner=PTOAS: two of its slots are live at once inside a loop "
                f"(lines {span_of(first[id(ref)]).line} and {span_of(s).line}), and ptoas guards only the first slot selected "
                "in an iteration, so the second would be read while the next iteration overwrites it",
                span_of(first[id(ref)]),
                "select one slot per iteration (the ping-pong shape the region form is for), or compile with the "
                "default memory planner (MemoryPlanner.PYPTO), which keeps the slots apart"))
    return tuple(out)
