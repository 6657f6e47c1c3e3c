"""AccWindows: ``pl.matmul_acc`` into a column window of an accumulator tile accumulates into the
accumulator itself.

On the device ``win = pl.tile.slice(acc, [M, n], [0, c])`` of an Acc tile spanning all its rows is
a view of ``acc``'s L0C bytes (a block of whole columns is contiguous in the NZ layout), and
``win = pl.matmul_acc(win, a, b)`` accumulates in place there: ``acc`` holds the result although
the program never re-assigns it (the reference's ``matmul_acc`` column-window idiom). Our IR is
SSA with value semantics, where a slice is a copy; this pass makes the write explicit before
ConvertToSSA: in the same statement list, the pair

    win = tile.slice(acc, shape, offset)
    win = tile.matmul_acc(win, lhs, rhs[, init_cond=c])

becomes

    win = tile.slice(acc, shape, offset)
    acc = tile.matmul_acc_window(acc, lhs, rhs, offset[, init_cond=c])
    win = tile.slice(acc, shape, offset)

so ``acc`` is re-assigned (ConvertToSSA carries it through loops) and ``win`` still reads the
window. The window op checks the window is whole columns at a 16-column boundary (a row window is
not contiguous in L0C, an error as on the device).

Requires: nothing (it runs on the frontend's pre-SSA IR, after UnrollLoops). Produces:
AccWindowsExplicit (a property name only).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import fields, replace

from pypto.ir.nodes import AssignStmt, Call, Program, Stmt, Var
from pypto.ir.types import TileType
from pypto.ir.visit import iter_exprs
from pypto.ops.builder import build
from pypto.passes.context import PassContext

NAME = "AccWindows"
REQUIRES = ()
PRODUCES = ("AccWindowsExplicit",)

_BODIES = ("body", "then_body", "else_body")


def run(program: Program, ctx: PassContext) -> Program:
    funcs = tuple(_function(f) if _has_pair(f.body) else f for f in program.functions)
    return program.replace(functions=funcs)


def _function(f):
    # reads of each Var other than as a matmul_acc accumulator: a window read only there needs
    # neither its first slice (the copy the device does not make) nor the slice after the write
    others: Counter = Counter()
    for e in iter_exprs(f.body):
        if isinstance(e, Call) and e.op == "tile.matmul_acc" and isinstance(e.args[0], Var):
            others[id(e.args[0])] -= 1
        elif isinstance(e, Var):
            others[id(e)] += 1
    return f.replace(body=_block(f.body, others))


def _has_pair(stmts) -> bool:
    """Whether any statement list holds a tile.matmul_acc (cheap pre-check: most programs have none)."""
    for s in stmts:
        if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tile.matmul_acc":
            return True
        for name in _BODIES:
            if isinstance(getattr(s, name, None), tuple) and _has_pair(getattr(s, name)):
                return True
    return False


def _nested(s: Stmt, others: Counter) -> Stmt:
    changes = {f.name: _block(getattr(s, f.name), others) for f in fields(s)
               if f.name in _BODIES and isinstance(getattr(s, f.name), tuple)}
    return replace(s, **changes) if changes else s


def _block(stmts: tuple, others: Counter) -> tuple:
    out: list = []
    windows: dict[int, Call] = {}       # id(window Var) -> the tile.slice of a tile that defined it
    for s in stmts:
        s = _nested(s, others)
        if isinstance(s, AssignStmt) and isinstance(s.value, Call):
            c = s.value
            if c.op == "tile.matmul_acc" and isinstance(c.args[0], Var) and id(c.args[0]) in windows \
                    and not any(getattr(c.args[i], "value", False) for i in (3, 4) if i < len(c.args)):
                sl = windows[id(c.args[0])]
                parent = sl.args[0]
                init = c.args[5] if len(c.args) > 5 else None
                used = others[id(s.var)] > 0
                if out and isinstance(out[-1], AssignStmt) and out[-1].value is sl:
                    out.pop()          # the window's copy: nothing reads it before it is re-assigned
                out.append(AssignStmt(parent, build("tile.matmul_acc_window", c.span, acc=parent, lhs=c.args[1],
                                                    rhs=c.args[2], offset=sl.args[2], init_cond=init), s.span))
                if used:
                    out.append(AssignStmt(s.var, Call("tile.slice", sl.args, sl.type, sl.span), s.span))
                continue
        _forget(windows, s)
        if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tile.slice" \
                and isinstance(s.value.args[0], Var) and isinstance(s.value.args[0].type, TileType) \
                and s.value.args[0] is not s.var:
            windows[id(s.var)] = s.value
        out.append(s)
    return tuple(out)


def _forget(windows: dict, s: Stmt) -> None:
    """Drop the windows a statement invalidates: the window Var re-assigned, or its parent."""
    if not windows:
        return
    assigned = {id(s.var)} if isinstance(s, AssignStmt) else set()
    for name in _BODIES:   # a compound statement may re-assign anything inside
        if isinstance(getattr(s, name, None), tuple):
            windows.clear()
            return
    for k in [k for k, sl in windows.items() if k in assigned or id(sl.args[0]) in assigned]:
        del windows[k]
