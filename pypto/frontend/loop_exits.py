"""``break`` / ``continue`` in a sequential ``pl.range`` loop, rewritten away at the AST level.

The IR has no loop exits, so the parser rewrites the loop body before parsing it:

* ``continue`` sets a per-iteration flag ``_pl_skip`` (reset to ``False`` at the top of every
  iteration); every statement that follows a statement that may have set it is guarded by
  ``if not _pl_skip:``; statements after the ``continue`` in its own block are dead and dropped.
* ``break`` sets ``_pl_skip`` and a flag ``_pl_brk`` that is ``False`` before the loop and carried
  across iterations; the whole body is guarded by ``if not _pl_brk:``. The remaining iterations
  still run, doing nothing: the same results, at the cost of the empty trips (and, in
  orchestration code, the loop's later tasks are not submitted).

Where the reference allows them: in a sequential loop (``pl.range``), anywhere in its body except
inside a nested loop (which has its own). ``pl.parallel`` / ``pl.unroll`` / ``pl.pipeline`` /
``pl.spmd`` loops reject them with a located error, as the reference does. A loop with
``init_values`` (explicit carried values ending in ``pl.yield_``) is refused too: its yield would
have to be guarded as well.
"""
from __future__ import annotations

import ast

SKIP = "_pl_skip"
BRK = "_pl_brk"


def find_exit(stmts: list[ast.stmt]) -> ast.stmt | None:
    """The first ``break`` / ``continue`` of a loop body (not inside a nested loop or function)."""
    for s in stmts:
        if isinstance(s, (ast.Break, ast.Continue)):
            return s
        if isinstance(s, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFor, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(s, field, None)
            if isinstance(inner, list):
                hit = find_exit(inner)
                if hit is not None:
                    return hit
        if isinstance(s, ast.With):
            hit = find_exit(s.body)
            if hit is not None:
                return hit
    return None


def has_break(stmts: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Break) for n in _walk_body(stmts))


def _walk_body(stmts):
    for s in stmts:
        yield s
        if isinstance(s, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFor, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(s, field, None)
            if isinstance(inner, list):
                yield from _walk_body(inner)


def _assign(name: str, value: bool, at: ast.AST) -> ast.stmt:
    node = ast.Assign(targets=[ast.Name(name, ast.Store())], value=ast.Constant(value))
    return ast.fix_missing_locations(ast.copy_location(node, at))


def _guard(flag: str, stmts: list[ast.stmt], at: ast.AST) -> ast.stmt:
    node = ast.If(test=ast.UnaryOp(ast.Not(), ast.Name(flag, ast.Load())), body=stmts, orelse=[])
    ast.copy_location(node, at)
    for n in ast.walk(node.test):
        ast.copy_location(n, at)
    return node


def _rewrite(stmts: list[ast.stmt]) -> tuple[list[ast.stmt], bool]:
    """(new statements, whether they may set the skip flag)."""
    out: list[ast.stmt] = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Continue):
            out.append(_assign(SKIP, True, s))
            return out, True
        if isinstance(s, ast.Break):
            out.append(_assign(BRK, True, s))
            out.append(_assign(SKIP, True, s))
            return out, True
        may = False
        if isinstance(s, ast.If):
            body, mb = _rewrite(s.body)
            orelse, me = _rewrite(s.orelse)
            s = ast.copy_location(ast.If(test=s.test, body=body or [ast.copy_location(ast.Pass(), s)],
                                         orelse=orelse), s)
            may = mb or me
        elif isinstance(s, ast.With) and find_exit(s.body) is not None:
            body, may = _rewrite(s.body)
            s = ast.copy_location(ast.With(items=s.items, body=body), s)
        out.append(s)
        if may:
            rest, _ = _rewrite(stmts[i + 1:])
            if rest:
                out.append(_guard(SKIP, rest, stmts[i + 1]))
            return out, True
    return out, False


def rewrite_body(body: list[ast.stmt], at: ast.AST) -> list[ast.stmt]:
    """The loop body without ``break`` / ``continue`` (see the module docstring)."""
    new, _ = _rewrite(body)
    new = [_assign(SKIP, False, at)] + new
    if has_break(body):
        new = [_guard(BRK, new, at)]
    return new
