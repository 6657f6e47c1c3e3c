"""Which op's error explains the gap: recompute one op differently and see whether the gap closes.

A lint says what *could* go wrong (a reduction over a padded tile, FP16 accumulation); it does not
say that this is what went wrong here. The doctor attributes an error by experiment instead: it runs
the lowered program on the reference executor (:mod:`pypto.debug.torch_codegen`, bit-identical to
the simulator for race-free programs) with one candidate op recomputed —

* ``accumulation``: a ``row_sum`` / ``col_sum`` of FP16/BF16 data computed in FP32 (same order,
  same scratch: only the precision changes) and rounded back once;
* ``padding``: the reduction's operand with its padding filled with the reduction's identity
  (zero before a sum, -inf before a max, +inf before a min);
* ``loop_accumulation``: an FP16/BF16 value carried through a loop and added to on every trip,
  carried in FP32 instead (rounded once, when it is stored);
* ``cast_chain``: a multi-hop cast chain (what LegalizeTileCast emits) replaced by one direct
  conversion of the chain's source —

and compares the result with the golden. The candidate that closes the gap is the cause; one that
could have mattered but changes nothing is named as harmless. Max and min reductions are exact in any
precision, so they are never ``accumulation`` candidates.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import torch

from pypto.errors import Span
from pypto.ops.registry import op_trait
from pypto.ops.traits import Reduction


def _reduction(op_name: str):
    """``(axis, kind)`` of a tile reduction over the whole tile, padding included (the ``Reduction``
    trait with ``reads_padding``: row/col sum, max, min), else None."""
    r = op_trait(op_name, Reduction)
    if r is None or not r.reads_padding or not op_name.startswith("tile."):
        return None
    return r.axis, r.kind

_IDENTITY = {"sum": "zero", "max": "min", "min": "max"}


@dataclass(frozen=True)
class Candidate:
    """One op the doctor can recompute differently."""

    kind: str          # "accumulation" or "padding"
    op: str            # e.g. "row_sum"
    span: Span         # the op's source location
    dtype: str         # the operand's dtype (FP16, ...)
    pad: str           # padding experiments: the identity to fill with ("zero", "min", "max")
    length: int        # elements reduced per result
    call_id: int       # id() of the lowered Call
    keep_fp32: bool = False   # accumulation: every use of the sum casts it to FP32, so keep it there
    source: Any = field(default=None, compare=False, hash=False)   # cast_chain: the chain's first operand

    @property
    def where(self) -> str:
        """``row_sum at file:line:col``."""
        if self.kind == "loop_accumulation":
            return f"the accumulation of '{self.op}' in the loop at {self.span}"
        return f"{self.op} at {self.span}"

    def change(self) -> str:
        """The recomputation, in words."""
        if self.kind == "cast_chain":
            return f"the {self.dtype} cast chain replaced by one direct conversion"
        if self.kind == "loop_accumulation":
            return f"'{self.op}' carried through the loop in FP32 instead of {self.dtype}"
        if self.kind == "accumulation":
            kept = " (the sum kept in FP32: its only use casts it to FP32)" if self.keep_fp32 else ""
            return f"{self.op} accumulated in FP32 instead of {self.dtype}{kept}"
        return f"the padding filled with PadValue.{self.pad} before {self.op}"


def candidates(lowered) -> list[Candidate]:
    """Every reduction of the lowered program that one of the experiments applies to."""
    from pypto.ir.nodes import AssignStmt, Call
    from pypto.ir.types import TileType
    from pypto.ir.visit import iter_stmts

    out: list[Candidate] = []
    seen = set()
    for f in lowered.functions:
        uses: dict[int, list] = {}
        for s in iter_stmts(f.body):
            if isinstance(s, AssignStmt) and isinstance(s.value, Call):
                for a in s.value.args:
                    uses.setdefault(id(a), []).append(s.value)
        for s in iter_stmts(f.body):
            if not (isinstance(s, AssignStmt) and isinstance(s.value, Call) and _reduction(s.value.op)):
                continue
            c = s.value
            axis, kind = _reduction(c.op)
            t = getattr(c.args[0], "type", None)
            if not isinstance(t, TileType):
                continue
            span = c.span if not c.span.is_unknown() else s.span
            op = c.op.split(".", 1)[1]
            n = t.shape[axis]
            if kind == "sum" and t.dtype.name in ("FP16", "BF16") and (op, span, "acc") not in seen:
                seen.add((op, span, "acc"))
                users = uses.get(id(s.var), [])
                keep = bool(users) and all(u.op == "tile.cast" and getattr(u.args[1], "name", "") == "FP32"
                                           for u in users)
                out.append(Candidate("accumulation", op, span, t.dtype.name, "", n, id(c), keep))
            if t.valid_shape is not None and (op, span, "pad") not in seen:
                seen.add((op, span, "pad"))
                out.append(Candidate("padding", op, span, t.dtype.name, _IDENTITY[kind], n, id(c)))
    return out


def loop_candidates(lowered) -> list[Candidate]:
    """Every FP16/BF16 loop-carried value that the loop adds to (``acc = acc + x`` on every trip)."""
    from pypto.ir.nodes import AssignStmt, Call, ConstInt, ForStmt
    from pypto.ir.visit import iter_stmts

    out = []
    for f in lowered.functions:
        for loop in iter_stmts(f.body):
            if not isinstance(loop, ForStmt) or not loop.iter_args or not loop.body:
                continue
            ys = getattr(loop.body[-1], "values", ())
            trips = 0
            if all(isinstance(x, ConstInt) for x in (loop.start, loop.stop, loop.step)) and loop.step.value:
                trips = max(0, -(-(loop.stop.value - loop.start.value) // loop.step.value))
            for it, y in zip(loop.iter_args, ys):
                dt = getattr(getattr(it, "type", None), "dtype", None)
                if getattr(dt, "name", "") not in ("FP16", "BF16"):
                    continue
                for st in iter_stmts(loop.body):
                    if isinstance(st, AssignStmt) and st.var is y and isinstance(st.value, Call) \
                            and st.value.op in ("tile.add", "tile.sub") and any(a is it for a in st.value.args):
                        span = loop.span if not loop.span.is_unknown() else st.span
                        out.append(Candidate("loop_accumulation", it.name.split("_")[0] or it.name, span, dt.name,
                                             "", trips, id(st.value), True))
    return out


def cast_chain_candidates(lowered) -> list[Candidate]:
    """Every cast chain of two hops or more, as a ``cast_chain`` candidate (``dtype``: the chain)."""
    from pypto.passes.diagnostics import cast_chains

    out = []
    for f in lowered.functions:
        producer = {}
        from pypto.ir.nodes import AssignStmt, Call
        from pypto.ir.visit import iter_stmts

        for s in iter_stmts(f.body):
            if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tile.cast":
                producer[id(s.var)] = s
        for last, types, mode in cast_chains(f if hasattr(f, "functions") else _as_program(lowered, f)):
            if len(types) < 3:
                continue
            first = last
            while id(first.value.args[0]) in producer:
                first = producer[id(first.value.args[0])]
            span = last.value.span if not last.value.span.is_unknown() else last.span
            out.append(Candidate("cast_chain", "cast", span, " -> ".join(types), mode, 0, id(last.value),
                                 source=first.value.args[0]))
    return out


def _as_program(lowered, f):
    return lowered.replace(functions=(f,))


def _generator(overrides: dict):
    """A torch_codegen function generator that recomputes the calls in ``overrides``
    (``id(call) -> [Candidate, ...]``)."""
    from pypto.debug.torch_codegen import _FuncGen

    class _Gen(_FuncGen):
        def value(self, e):
            todo = overrides.get(id(e))
            if not todo:
                return super().value(e)
            loop = next((c for c in todo if c.kind == "loop_accumulation"), None)
            if loop is not None:
                a, b = (self.expr(x) for x in e.args[:2])
                sign = "+" if e.op == "tile.add" else "-"
                return f"(({a}).float() {sign} ({b}).float())"
            chain = next((c for c in todo if c.kind == "cast_chain"), None)
            if chain is not None:
                from pypto.ir.nodes import Call

                direct = Call("tile.cast", (chain.source, e.args[1], e.args[2]), e.type, e.span)
                return super().value(direct)
            axis, kind = _reduction(e.op)
            x, tmp = e.args[0], (e.args[1] if len(e.args) > 1 else None)
            xs = self.expr(x)
            ts = self.expr(tmp) if tmp is not None else "None"
            pad = next((c for c in todo if c.kind == "padding"), None)
            if pad is not None:
                valid = "[" + ", ".join(str(d) if isinstance(d, int) else self.expr(d)
                                        for d in x.type.valid_shape) + "]"
                xs = f"_pto.fillpad({xs}, {valid}, {pad.pad!r})"
            acc = next((c for c in todo if c.kind == "accumulation"), None)
            if acc is not None:
                tmp32 = f"({ts}).float()" if tmp is not None else "None"
                back = "" if acc.keep_fp32 else f".to(({self.expr(x)}).dtype)"
                return f"_pto.reduce(({xs}).float(), {tmp32}, {axis}, {kind!r}){back}"
            return f"_pto.reduce({xs}, {ts}, {axis}, {kind!r})"
    return _Gen


def run_reference(compiled, bound: dict, recompute: Iterable[Candidate] = ()) -> dict:
    """Run the lowered program of ``compiled`` on the reference executor with the given candidates
    recomputed; returns every parameter's value after the run, by name."""
    from pypto.ir.printer import _callee_order

    overrides: dict[int, list] = {}
    for c in recompute:
        overrides.setdefault(c.call_id, []).append(c)
    lowered = compiled.lowered
    gen = _generator(overrides)
    funcs = _callee_order(lowered)
    src = ["import torch", "from pypto.ops import support as _pto"]
    for f in funcs:
        src.append("\n".join(gen(f, False, {g.name: g for g in funcs}).generate()))
    ns: dict = {}
    exec(compile("\n\n".join(src) + "\n", f"<doctor experiment {lowered.name}>", "exec"), ns)
    names = compiled.param_names
    args = [bound[n].detach().clone() if isinstance(bound[n], torch.Tensor) else bound[n] for n in names]
    ns[lowered.entry.name](*args)
    return dict(zip(names, args))
