"""Mutants of the repository's example kernels for the differential fuzzer.

A mutant is an example module whose ``@pl.jit`` functions got one to three random edits of their
AST: an op swapped for another of the same arity, a number changed (including the hostile ones: 0,
negative, fractional, huge, ``1e39``), a dtype swapped (any of the language's twelve), ``pl.Out``
dropped or turned into ``pl.InOut``, ``pl.range`` <-> ``pl.parallel``, an argument pair swapped, a
statement (or the ``return``) deleted. The rest of the module is unchanged, so module constants
and helpers still resolve. Arguments come from the mutated signature (random data of the
annotated shapes and dtypes; scalar parameters get small values), so a mutant that changes a
shape is run at its new shape.
"""
from __future__ import annotations

import ast
from pypto import pyast  # ast.parse behind a lock (CPython 3.11 is not thread-safe there)
import random
from dataclasses import dataclass
from pathlib import Path

from pypto.tools.difffuzz.generate import DTYPES

_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")
_UNARY = ("exp", "neg", "abs", "relu", "sqrt", "rsqrt", "recip", "log")
_ROW = ("row_sum", "row_max", "row_min")
_COL = ("col_sum", "col_max", "col_min")
_EXPAND = ("row_expand_add", "row_expand_sub", "row_expand_mul", "row_expand_div", "row_expand_max",
           "row_expand_min")
_GROUPS = (_BINARY, _UNARY, _ROW, _COL, _EXPAND)
_NUMBERS = (0, 1, 2, -1, 3, 7, 16, 31, 64, 65, 128, 1000, 2.5, 0.5, -0.0, 1e39, 10 ** 20, 2 ** 63)


@dataclass
class Mutant:
    """A mutated module: its source, the example it came from and the edits made."""

    source: str
    origin: str
    edits: list
    kernels: list          # names of the edited @pl.jit functions


def example_files(root: Path) -> list[Path]:
    """The example modules under ``root`` that define ``@pl.jit`` kernels (helpers excluded)."""
    return sorted(p for p in root.rglob("*.py") if not p.name.startswith("_") and "@pl.jit" in p.read_text())


def _jit_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
            out.append(node)
    return out


class _Edit:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def candidates(self, fn: ast.FunctionDef) -> list:
        """(kind, node, parent info) of every editable spot."""
        spots = []
        for node in ast.walk(fn):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "pl":
                if any(node.attr in g for g in _GROUPS):
                    spots.append(("op", node))
                elif node.attr in DTYPES:
                    spots.append(("dtype", node))
                elif node.attr in ("range", "parallel"):
                    spots.append(("loop", node))
                elif node.attr in ("Out", "InOut"):
                    spots.append(("direction", node))
            elif isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                    and not isinstance(node.value, bool):
                spots.append(("number", node))
            elif isinstance(node, ast.Call) and len(node.args) >= 2:
                spots.append(("swap_args", node))
        for parent in ast.walk(fn):
            for fld in ("body", "orelse"):
                block = getattr(parent, fld, None)
                if isinstance(block, list) and len(block) > 1:
                    for i in range(len(block)):
                        spots.append(("delete", (block, i)))
        return spots

    def apply(self, kind, node) -> str:
        rng = self.rng
        if kind == "op":
            group = next(g for g in _GROUPS if node.attr in g)
            new = rng.choice([o for o in group if o != node.attr] or [node.attr])
            old, node.attr = node.attr, new
            return f"op {old} -> {new}"
        if kind == "dtype":
            old, node.attr = node.attr, rng.choice(DTYPES)
            return f"dtype {old} -> {node.attr}"
        if kind == "loop":
            old, node.attr = node.attr, "parallel" if node.attr == "range" else "range"
            return f"loop {old} -> {node.attr}"
        if kind == "direction":
            old, node.attr = node.attr, "InOut" if node.attr == "Out" else "Out"
            return f"direction {old} -> {node.attr}"
        if kind == "number":
            old = node.value
            node.value = rng.choice(_NUMBERS) if rng.random() < 0.5 else type(old)(old * rng.choice((2, 0.5)))
            return f"number {old!r} -> {node.value!r}"
        if kind == "swap_args":
            node.args[0], node.args[1] = node.args[1], node.args[0]
            return "swap args of " + ast.unparse(node.func)
        if kind == "delete":
            block, i = node
            if i >= len(block):
                return "delete (nothing)"
            old = ast.unparse(block[i]).splitlines()[0]
            del block[i]
            return f"delete '{old[:60]}'"
        raise AssertionError(kind)


def _drop_out(fn: ast.FunctionDef, rng: random.Random) -> str | None:
    """``pl.Out[T]`` -> ``T`` on one parameter (the classic forgotten output annotation)."""
    outs = [a for a in fn.args.args if a.annotation is not None and isinstance(a.annotation, ast.Subscript)
            and ast.unparse(a.annotation.value) in ("pl.Out", "pl.InOut")]
    if not outs:
        return None
    a = rng.choice(outs)
    a.annotation = a.annotation.slice
    return f"drop {ast.unparse(a.annotation)[:40]} direction of '{a.arg}'"


def mutate(path: Path, seed: int) -> Mutant | None:
    """A mutant of the example module at ``path`` (None when it has no kernel to edit)."""
    rng = random.Random(seed)
    tree = pyast.parse(path.read_text())
    fns = _jit_functions(tree)
    if not fns:
        return None
    edits = []
    touched: list[str] = []
    ed = _Edit(rng)
    for _ in range(rng.choice((1, 1, 2, 3))):
        fn = rng.choice(fns)
        if fn.name not in touched:
            touched.append(fn.name)
        if rng.random() < 0.08:
            e = _drop_out(fn, rng)
            if e:
                edits.append(e)
                continue
        spots = ed.candidates(fn)
        if not spots:
            continue
        kind, node = rng.choice(spots)
        edits.append(ed.apply(kind, node))
    ast.fix_missing_locations(tree)
    try:
        src = ast.unparse(tree)
    except Exception:   # an edit the unparser cannot print (should not happen): no mutant
        return None
    return Mutant(src + "\n", str(path), edits, touched)
