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
window. The ``matmul_acc`` may also be inside a ``for`` / ``while`` / ``if`` below the slice (the
slice before a K loop, the accumulations in it: on the device the window is the same L0C bytes
wherever it is written); the pair is then rewritten there when the compound statement re-assigns
neither ``acc`` nor a Var of the offset, and ``win`` only by such ``matmul_acc`` s (anything else
would make ``win`` stop being the window). The window op checks the window is whole columns at a 16-column boundary (a row window is
not contiguous in L0C, an error as on the device).

Requires: nothing (it runs on the frontend's pre-SSA IR, after UnrollLoops). Produces:
AccWindowsExplicit (a property name only).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import fields, replace

from pypto.errors import PassError
from pypto.ir.nodes import AssignStmt, Call, ForStmt, IfStmt, Program, Stmt, Var, WhileStmt
from pypto.ir.types import TileType
from pypto.ir.visit import iter_exprs, walk_expr
from pypto.language.enums import MemorySpace
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
    done: set = set()   # the window Vars whose matmul_accs were rewritten
    body = _block(f.body, others, done)
    if done:
        # a window slice nothing reads any more (its writes became window writes, possibly in a
        # loop below it) is dropped: it would be a copy of the accumulator for nothing (a vector
        # op on an Acc tile, which made the kernel a mixed one)
        read = {id(e) for e in iter_exprs(body) if isinstance(e, Var)}
        body = _drop_slices(body, {k for k in done if k not in read})
    return f.replace(body=body)


def _drop_slices(stmts: tuple, dead: set) -> tuple:
    """``stmts`` without the ``tile.slice`` assignments to the Vars of ``dead``, at any depth."""
    if not dead:
        return stmts
    out = []
    for s in stmts:
        if isinstance(s, AssignStmt) and id(s.var) in dead and isinstance(s.value, Call) and s.value.op == "tile.slice":
            continue
        changes = {f.name: _drop_slices(getattr(s, f.name), dead) for f in fields(s)
                   if f.name in _BODIES and isinstance(getattr(s, f.name), tuple)}
        out.append(replace(s, **changes) if changes else s)
    return tuple(out)


def _has_pair(stmts) -> bool:
    """Whether any statement list holds a tile.matmul_acc (cheap pre-check: most programs have none)."""
    for s in stmts:
        if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tile.matmul_acc":
            return True
        for name in _BODIES:
            if isinstance(getattr(s, name, None), tuple) and _has_pair(getattr(s, name)):
                return True
    return False


def _nested(s: Stmt, others: Counter, done: set, windows: dict) -> Stmt:
    """``s`` with its nested statement lists rewritten; a loop or an ``if`` sees the enclosing
    block's windows that stay windows inside it (:func:`_kept_windows`)."""
    inner = _kept_windows(s, windows) if isinstance(s, (ForStmt, WhileStmt, IfStmt)) else {}
    for k, sl in windows.items():
        if k not in inner:
            _refuse_stuck(s, k, sl)
    changes = {f.name: _block(getattr(s, f.name), others, done, inner) for f in fields(s)
               if f.name in _BODIES and isinstance(getattr(s, f.name), tuple)}
    return replace(s, **changes) if changes else s


def _accumulates(c) -> bool:
    """Whether a ``tile.matmul_acc`` call is the form the window op takes (no operand transposes)."""
    return not any(getattr(c.args[i], "value", False) for i in (3, 4) if i < len(c.args))


def _kept_windows(s: Stmt, windows: dict) -> dict:
    """The windows still windows everywhere inside compound statement ``s``: it re-assigns neither
    the sliced tile nor a Var of the offset, and the window Var only by ``matmul_acc`` s into it
    (each becomes a window write)."""
    if not windows:
        return {}
    defs: dict = {}
    for name in _BODIES:
        if isinstance(getattr(s, name, None), tuple):
            _definitions(getattr(s, name), defs)
    for v in (getattr(s, "loop_var", None), *getattr(s, "iter_args", ()), *getattr(s, "return_vars", ())):
        if v is not None:
            defs.setdefault(id(v), []).append(None)
    kept = {}
    for k, sl in windows.items():
        if id(sl.args[0]) in defs or any(isinstance(x, Var) and id(x) in defs for x in walk_expr(sl.args[2])):
            continue
        if all(isinstance(c, Call) and c.op == "tile.matmul_acc" and isinstance(c.args[0], Var)
               and id(c.args[0]) == k and _accumulates(c) for c in defs.get(k, ())):
            kept[k] = sl
    return kept


def _refuse_stuck(s: Stmt, k: int, sl: Call) -> None:
    """A located error when compound statement ``s`` writes the window of an Acc tile it cannot keep
    a window: every value it assigns the window Var is a ``matmul_acc`` into it (so each one writes
    the window on the device), but ``s`` re-assigns the sliced tile or a Var of the offset. The pass
    would leave a copy that no matmul_acc can write, refused later with a message about memory
    spaces."""
    parent = sl.args[0]
    if getattr(parent.type, "memory_space", None) != MemorySpace.Acc:
        return
    defs: dict = {}
    for name in _BODIES:
        if isinstance(getattr(s, name, None), tuple):
            _definitions(getattr(s, name), defs)
    writes = defs.get(k, ())
    if not writes or not all(isinstance(c, Call) and c.op == "tile.matmul_acc" and isinstance(c.args[0], Var)
                             and id(c.args[0]) == k and _accumulates(c) for c in writes):
        return
    moved = [v.name for v in [parent, *(x for x in walk_expr(sl.args[2]) if isinstance(x, Var))] if id(v) in defs]
    first = next(_assignments_in(s, k))
    raise PassError(
        f"pl.matmul_acc into '{first.var.name}', a column window of the Acc tile '{parent.name}' sliced "
        f"at line {sl.span.line}: the {'if' if isinstance(s, IfStmt) else 'loop'} writing it re-assigns "
        f"{', '.join(repr(n) for n in dict.fromkeys(moved))}, so the window it writes is no longer the one "
        "the slice named", first.value.span,
        "slice the window next to its matmul_acc (win = pl.tile.slice(acc, ...) in the same block), or keep "
        "the sliced tile and the offset's Vars unchanged in the loop")


def _assignments_in(s: Stmt, k: int):
    """The assignments to the Var of id ``k`` inside compound statement ``s``, in order."""
    for name in _BODIES:
        for t in getattr(s, name, None) or ():
            if isinstance(t, AssignStmt) and id(t.var) == k:
                yield t
            yield from _assignments_in(t, k)


def _definitions(stmts, defs: dict) -> None:
    """id(Var) -> the values assigned to it anywhere in ``stmts`` (None: a loop / phi definition)."""
    for s in stmts:
        if isinstance(s, AssignStmt):
            defs.setdefault(id(s.var), []).append(s.value)
        for v in (getattr(s, "loop_var", None), *getattr(s, "iter_args", ()), *getattr(s, "return_vars", ())):
            if isinstance(v, Var):
                defs.setdefault(id(v), []).append(None)
        for name in _BODIES:
            if isinstance(getattr(s, name, None), tuple):
                _definitions(getattr(s, name), defs)


def _block(stmts: tuple, others: Counter, done: set, inherited: dict | None = None) -> tuple:
    out: list = []
    # id(window Var) -> the tile.slice of a tile that defined it (here, or in an enclosing block
    # when this is the body of a loop / if that keeps it a window)
    windows: dict[int, Call] = dict(inherited or {})
    for orig in stmts:
        s = _nested(orig, others, done, windows)
        if isinstance(s, AssignStmt) and isinstance(s.value, Call):
            c = s.value
            if c.op == "tile.matmul_acc" and isinstance(c.args[0], Var) and id(c.args[0]) in windows \
                    and _accumulates(c):
                sl = windows[id(c.args[0])]
                parent = sl.args[0]
                init = c.args[5] if len(c.args) > 5 else None
                used = others[id(s.var)] > 0
                done.add(id(s.var))
                if out and isinstance(out[-1], AssignStmt) and out[-1].value is sl:
                    out.pop()          # the window's copy: nothing reads it before it is re-assigned
                out.append(AssignStmt(parent, build("tile.matmul_acc_window", c.span, acc=parent, lhs=c.args[1],
                                                    rhs=c.args[2], offset=sl.args[2], init_cond=init), s.span))
                if used:
                    out.append(AssignStmt(s.var, Call("tile.slice", sl.args, sl.type, sl.span), s.span))
                continue
        _forget(windows, orig)   # (as written: the window writes rewritten inside it keep the windows)
        if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tile.slice" \
                and isinstance(s.value.args[0], Var) and isinstance(s.value.args[0].type, TileType) \
                and s.value.args[0] is not s.var:
            windows[id(s.var)] = s.value
        out.append(s)
    return tuple(out)


def _forget(windows: dict, s: Stmt) -> None:
    """Drop the windows a statement invalidates: the window Var re-assigned, or its parent; after a
    compound statement, those it did not keep windows (:func:`_kept_windows`; the others were
    rewritten inside it and are still windows)."""
    if not windows:
        return
    for name in _BODIES:   # a compound statement may re-assign anything inside
        if isinstance(getattr(s, name, None), tuple):
            kept = _kept_windows(s, windows) if isinstance(s, (ForStmt, WhileStmt, IfStmt)) else {}
            for k in [k for k in windows if k not in kept]:
                del windows[k]
            return
    assigned = {id(s.var)} if isinstance(s, AssignStmt) else set()
    for k in [k for k, sl in windows.items() if k in assigned or id(sl.args[0]) in assigned]:
        del windows[k]
