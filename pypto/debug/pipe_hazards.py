"""Ordering bugs around the cross-core pipes of a mixed kernel, found from the lowered program (part of
the race detector's report, :func:`pypto.debug.races.detect_races`).

A popped tile lives in its pipe slot until ``tfree``; afterwards the producer may refill the slot
with its next push, so the consumer must not read the tile again (on the device it would read
whichever push got there first: a race between the two cores that no dependency orders). Each
AIC / AIV function is checked, per block in program order:

* **read after tfree** (slot reuse before release): a statement reading ``x`` after ``tfree(x)`` --
  both source lines (the release and the read) are reported;
* **tfree without tpop** (a release the consumer never waited for): ``tfree(x)`` of a tile that no
  ``tpop`` of this function produced, or freed twice.

The simulator itself reports the other ordering failures when they happen: a pop that can never be
matched, a ring never released (a deadlock naming both sides, :mod:`pypto.runtime.cross_core`).
"""
from __future__ import annotations

from dataclasses import dataclass

from pypto.ir.nodes import AssignStmt, Call, EvalStmt, ForStmt, IfStmt, ScopeStmt, Var
from pypto.ir.visit import iter_stmts, use_exprs, walk_expr
from pypto.language.enums import FunctionType

_POPS = ("tile.tpop_from_aiv", "tile.tpop_from_aic")
_FREES = ("tile.tfree_to_aiv", "tile.tfree_to_aic")


@dataclass
class PipeHazard:
    """One ordering bug on a cross-core pipe: its kind, kernel, tile and both source lines."""

    kind: str       # "read after tfree" / "tfree without tpop"
    kernel: str
    tile: str
    first: str      # file:line of the tfree (the release)
    second: str     # file:line of the read (or of the tpop-less tfree's tile definition / the tfree again)
    fix: str

    def format(self) -> str:
        """Human-readable report line."""
        return f"{self.kind}: kernel '{self.kernel}', tile '{self.tile}': {self.first} then {self.second}\n  fix: {self.fix}"


def _where(span) -> str:
    return "?" if span is None or span.is_unknown() else f"{span.file}:{span.line}"


def _reads(s, v: Var) -> bool:
    return any(x is v for st in iter_stmts([s]) for e in use_exprs(st) for x in walk_expr(e))


def _call(s):
    e = s.value if isinstance(s, AssignStmt) else s.expr if isinstance(s, EvalStmt) else None
    return e if isinstance(e, Call) else None


def _block(f, stmts, popped: set, out: list) -> None:
    freed: dict[int, object] = {}   # id(tile) -> the tfree statement
    for s in stmts:
        c = _call(s)
        if c is not None and c.op in _FREES:
            x = c.args[0]
            if id(x) in freed or id(x) not in popped:
                why = "freed twice" if id(x) in freed else "never popped by this kernel"
                out.append(PipeHazard("tfree without tpop", f.name, getattr(x, "name", "?"),
                                      _where(freed[id(x)].span) if id(x) in freed else _where(getattr(x, "span", None)),
                                      _where(s.span), f"each tfree releases the slot of one tpop ({why}): "
                                      "free the tile a tpop returned, once"))
            freed[id(x)] = s
            continue
        for xid, fs in list(freed.items()):
            x = _call(fs).args[0]
            if _reads(s, x):
                out.append(PipeHazard("read after tfree", f.name, x.name, _where(fs.span), _where(s.span),
                                      f"move pl.{_call(fs).op.split('.')[1]}({x.name}) after the last use of "
                                      f"'{x.name}' (the producer may refill the slot once it is freed)"))
                del freed[xid]
        if c is not None and c.op in _POPS and isinstance(s, AssignStmt):
            popped.add(id(s.var))
        for body in ([s.body] if isinstance(s, (ForStmt, ScopeStmt)) else
                     [s.then_body, s.else_body] if isinstance(s, IfStmt) else []):
            _block(f, body, popped, out)


def pipe_hazards(program) -> list[PipeHazard]:
    """Every pipe ordering bug of the AIC / AIV functions of ``program`` (a lowered Program)."""
    out: list[PipeHazard] = []
    for f in program.functions:
        if f.func_type in (FunctionType.AIC, FunctionType.AIV):
            _block(f, f.body, set(), out)
    return out
