"""Python signatures and docstrings of the ``pl.<op>`` entry points, from the registry.

``help(pl.add)``, ``inspect.signature(pl.tile.add)`` and the stub ``pypto/language/__init__.pyi``
(:mod:`pypto.tools.stubgen`) all come from here, so what an IDE shows is the schema the parser
binds: parameter names in order, defaults, the kind of each argument, the op's ``doc``.
"""
from __future__ import annotations

import inspect
from typing import Any

from pypto.ops.registry import REQUIRED, OpDef, all_ops, dsl_candidates


def ops_for(name: str) -> list[OpDef]:
    """The ops ``pl.<name>`` answers to: ``"add"`` -> the dispatch candidates (tensor and tile,
    array and scalar forms), ``"tile.add"`` -> that op."""
    if "." in name:
        op = all_ops().get(name)
        return [op] if op is not None else []
    return list(dsl_candidates(name))


def _default(v: Any) -> Any:
    return inspect.Parameter.empty if v is REQUIRED else v


def _merged(ops: list[OpDef]) -> list[tuple[str, list[str], Any]]:
    """``[(name, annotations, default)]`` when the ops agree on parameter names positionally up to the
    shortest schema (the forms of one dsl name usually do: ``lhs, rhs``); None where they do not."""
    first = ops[0].params
    out = []
    for i, p in enumerate(first):
        anns = []
        for op in ops:
            if i >= len(op.params) or op.params[i].name != p.name:
                return None
            ann = op.params[i].kind_def.annotation
            if ann not in anns:
                anns.append(ann)
        out.append((p.name, anns, p.default))
    return out if all(len(op.params) == len(first) for op in ops) else None


def _annotation(anns: list[str], optional: bool) -> str:
    parts: list[str] = []
    for a in anns:
        for x in a.split(" | "):
            if x not in parts:
                parts.append(x)
    if optional and "None" not in parts and "Any" not in parts:
        parts.append("None")
    return " | ".join(parts)


def parameters(ops: list[OpDef]) -> list[tuple[str, str, Any]] | None:
    """``[(name, annotation source, default or REQUIRED)]`` of the call ``pl.<name>(...)`` for ``ops``,
    or None when its forms take differently named arguments (then ``(*args, **kwargs)``)."""
    merged = _merged(ops) if ops else None
    if merged is None:
        return None
    return [(n, _annotation(anns, d is None), d) for n, anns, d in merged]


def signature(name: str) -> inspect.Signature:
    """The signature ``inspect.signature(pl.<name>)`` reports (annotations as source text)."""
    params = parameters(ops_for(name))
    if params is None:
        return inspect.Signature([inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
                                  inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)])
    return inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=_default(d),
                                                annotation=a) for n, a, d in params])


def _form(op: OpDef) -> str:
    args = ", ".join(p.name if p.required else f"{p.name}={p.default!r}" for p in op.params)
    return f"pl.{op.name}({args})"


def docstring(name: str) -> str:
    """The docstring of ``pl.<name>``: what each form computes, its arguments' kinds, where it runs."""
    ops = ops_for(name)
    if not ops:
        return f"pl.{name}: no op of the registry answers to this name."
    lines = []
    if len(ops) == 1:
        op = ops[0]
        lines.append(f"{op.doc or op.name}.")
        lines.append("")
        lines.append(f"The {op.level} op ``{op.name}``: {_form(op)}")
    else:
        lines.append(f"{ops[0].doc or ops[0].name}; dispatches on the operands' kinds to one of:")
        lines.append("")
        for op in ops:
            lines.append(f"* ``{_form(op)}``: {op.doc}" if op.doc else f"* ``{_form(op)}``")
    lines.append("")
    lines.append("Arguments:")
    kinds: dict[str, list[str]] = {}
    defaults: dict[str, str] = {}
    for op in ops:
        for p in op.params:
            docs = kinds.setdefault(p.name, [])
            if p.kind_def.doc not in docs:
                docs.append(p.kind_def.doc)
            if not p.required:
                defaults.setdefault(p.name, f" (default {p.default!r})")
    for pname, docs in kinds.items():
        lines.append(f"* ``{pname}``: {' or '.join(docs)}{defaults.get(pname, '')}")
    lines.append("")
    lines.append("Parsed inside a ``@pl.jit`` kernel or a ``@pl.program`` function, never called from Python "
                 "(see docs/ops.md for dtypes and numerics).")
    return "\n".join(lines)
