"""The scratch contract: reading a tile after an op used it as scratch (diagnostic PTO-W004).

Decision (issue 13, item 5). A reduction given a ``tmp_tile`` (``pl.row_max(t, u)``; every op with
the ``Scratch`` trait) uses that tile's buffer for the partial results of its tree, as the device does:
afterwards the tile holds those partial results (its leading region, in the tree's layout —
``pypto.ops.support._reduce_last``), not its old value. Both executors model exactly that (the
reference's ``_pto.reduce`` writes the same partial results into its ``tmp`` as the simulator's
``reduce_into`` leaves in core memory), so results agree bit for bit; but a kernel that reads the
tile again almost always meant its old value, so the read is warned about at compile time, at the
read, naming the call that clobbered it. Using the same tile again as the scratch of a later
reduction is not warned about (that op writes before it reads); neither is writing the name again
(a new value: SSA).

"Again" includes the next iteration of an enclosing loop when the tile was defined outside that loop
(the call clobbers it in iteration i, a read earlier in the body sees that in iteration i + 1).

Runs on SSA form, before OutlineIncoreScopes (user-level code only: the compiler's own scratch
tiles are fresh per call).
"""
from __future__ import annotations

from pypto.errors import PyptoError
from pypto.ir.nodes import AssignStmt, Call, EvalStmt, ForStmt, Function, IfStmt, Program, ScopeStmt, Var, WhileStmt
from pypto.ir.visit import use_exprs, walk_expr
from pypto.ops.registry import get_op
from pypto.ops.traits import Scratch


def find(program: Program) -> list:
    """``[(span, message)]``: the first read of each clobbered scratch tile."""
    found = []
    for f in program.functions:
        found.extend(_check_function(f))
    return found


def _scratch_operand(s):
    """``(call, scratch Var)`` when ``s`` is a call of an op with a scratch operand given a Var."""
    c = s.value if isinstance(s, AssignStmt) else s.expr if isinstance(s, EvalStmt) else None
    if not isinstance(c, Call):
        return None
    try:
        op = get_op(c.op)
    except PyptoError:
        return None
    scratch = op.trait(Scratch)
    if scratch is None:
        return None
    names = [p.name for p in op.params]
    i = names.index(scratch.param)
    a = c.args[i] if i < len(c.args) else None
    return (c, a) if isinstance(a, Var) else None


def _check_function(f: Function) -> list:
    flat: list[tuple[object, tuple[int, ...]]] = []   # (statement, start positions of enclosing loops)
    loop_end: dict[int, int] = {}                      # loop start position -> end (exclusive)
    defined_at: dict[int, int] = {}                    # id(Var) -> flat position of its definition

    def flatten(stmts, loops):
        for s in stmts:
            pos = len(flat)
            flat.append((s, loops))
            if isinstance(s, AssignStmt):
                defined_at[id(s.var)] = pos
            if isinstance(s, (ForStmt, WhileStmt)):
                for v in (*s.iter_args, *((s.loop_var,) if isinstance(s, ForStmt) else ())):
                    defined_at[id(v)] = pos
                flatten(s.body, loops + (pos,))
                loop_end[pos] = len(flat)
                for v in s.return_vars:
                    defined_at[id(v)] = len(flat) - 1
            elif isinstance(s, IfStmt):
                flatten(s.then_body, loops)
                flatten(s.else_body, loops)
                for v in s.return_vars:
                    defined_at[id(v)] = len(flat) - 1
            elif isinstance(s, ScopeStmt):
                flatten(s.body, loops)

    flatten(f.body, ())
    found = []
    for pos, (s, loops) in enumerate(flat):
        hit = _scratch_operand(s)
        if hit is None:
            continue
        c, u = hit
        start = pos + 1
        dpos = defined_at.get(id(u), -1)
        # the outermost enclosing loop that does not define u: its next iteration comes later too
        for lp in loops:
            if dpos < lp or dpos >= loop_end[lp]:
                start = lp + 1
                break
        for k in range(start, len(flat)):
            if k == pos:
                continue
            t = flat[k][0]
            if k > pos and defined_at.get(id(u)) == k:
                break   # (not in SSA form: a new value under the same Var)
            again = _scratch_operand(t)
            exprs = use_exprs(t)
            if again is not None and again[1] is u:
                exprs = [a for a in again[0].args if a is not u]
            if any(x is u for e in exprs for x in walk_expr(e)):
                op = c.op.split(".")[-1]
                line = f"line {c.span.line}" if c.span.line else "an earlier call"
                found.append((getattr(t, "span", None) or c.span,
                              f"tile '{u.name}' is read after {op} (at {line}) used it as its tmp_tile scratch: "
                              f"it now holds the reduction's partial results, not its earlier value. Give "
                              f"{op} a tile of its own as scratch (pl.create_tile(...)) if you meant the "
                              f"earlier value"))
                break
    return found
