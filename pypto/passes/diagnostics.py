"""Compile-time diagnostics: a registry of checks with codes, severities and phases.

Every check — warnings, perf hints and precision checks alike — is governed by the same two knobs
(an improvement on the reference, where pass-emitted perf hints bypass them):

* ``diagnostic_phase`` (``ir.compile`` / ``RunConfig``, default from ``PYPTO_WARNING_LEVEL``):
  ``NONE`` runs no check; ``PRE_PIPELINE`` only the checks on the frontend program;
  ``POST_PASS`` adds the checks that run after each pass; ``POST_PIPELINE`` (the default) runs all.
* ``disabled_diagnostics``: codes or check names to silence.

Output: ``file:line:col: warning: message [CODE]`` with the source line and a caret, on stderr and in
``report/diagnostics.log`` of the artifact directory.
"""
from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from typing import Callable, Iterable

from pypto.errors import Span
from pypto.ir.nodes import AssignStmt, Call, ForStmt, Program, Var, WhileStmt
from pypto.ir.types import TileType
from pypto.ir.visit import iter_calls, iter_stmts, use_exprs, walk_expr
from pypto.language.enums import KERNEL_TYPES, ParamDirection
from pypto.errors import PyptoError
from pypto.ir.nodes import ConstInt
from pypto.ir.types import TensorType
from pypto.numerics.cast_exactness import classify_chain
from pypto.ops.registry import VALUE_KINDS, get_op, op_trait
from pypto.ops.traits import Reduction
from pypto.passes import acc_windows, convert_to_ssa, flatten_call_expr, param_writes
from pypto.passes.parallel_overlap import find


class DiagnosticPhase(enum.IntEnum):
    """When checks run; each level includes the ones before it."""

    NONE = 0
    PRE_PIPELINE = 1
    POST_PASS = 2
    POST_PIPELINE = 3


class Severity(enum.Enum):
    """How a diagnostic is rendered."""

    Warning = "warning"
    PerfHint = "perf_hint"


@dataclass(frozen=True)
class Diagnostic:
    """One finding: its check's code and name, severity, message, source span and where it ran."""

    code: str
    name: str
    severity: Severity
    message: str
    span: Span
    where: str = ""

    def render(self) -> str:
        """``file:line:col: warning: message [CODE]`` + source line + caret."""
        return self.span.render(f"{self.message} [{self.code}]", self.severity.value)


@dataclass(frozen=True)
class Check:
    """A registered check: ``run(program, ctx) -> [(span, message)]``."""

    code: str
    name: str
    severity: Severity
    phase: DiagnosticPhase
    run: Callable
    doc: str


CHECKS: dict[str, Check] = {}


def check(code: str, name: str, severity: Severity, phase: DiagnosticPhase):
    """Register a check function under ``code`` / ``name``."""
    def deco(fn):
        CHECKS[code] = Check(code, name, severity, phase, fn, (fn.__doc__ or "").strip())
        return fn
    return deco


def resolve_phase(phase) -> DiagnosticPhase:
    """Argument, else ``PYPTO_WARNING_LEVEL`` (none / pre_pipeline / post_pass / post_pipeline), else all."""
    if isinstance(phase, DiagnosticPhase):
        return phase
    if isinstance(phase, str):
        return DiagnosticPhase[phase.upper()]
    if phase is not None:
        raise ValueError(f"diagnostic_phase must be a DiagnosticPhase, got {phase!r}")
    env = os.environ.get("PYPTO_WARNING_LEVEL", "").strip().upper()
    return DiagnosticPhase[env] if env in DiagnosticPhase.__members__ else DiagnosticPhase.POST_PIPELINE


def has_checks(phase: DiagnosticPhase) -> bool:
    """Whether any check is registered at ``phase`` (none runs after each pass today: the manager
    then skips the per-pass call, which validated the disabled names every time)."""
    return any(c.phase == phase for c in CHECKS.values())


def run_checks(program: Program, phase: DiagnosticPhase, enabled: DiagnosticPhase, disabled: Iterable[str],
               ctx, where: str) -> list[Diagnostic]:
    """Run the checks registered at ``phase`` if ``enabled`` reaches it and they are not disabled."""
    if enabled < phase or enabled == DiagnosticPhase.NONE:
        return []
    off = set(disabled or ())
    unknown = off - set(CHECKS) - {c.name for c in CHECKS.values()}
    if unknown:
        raise ValueError(f"unknown diagnostic(s) in disabled_diagnostics: {sorted(unknown)}; known: "
                         f"{', '.join(f'{c.code} ({c.name})' for c in CHECKS.values())}")
    out = []
    for c in CHECKS.values():
        if c.phase != phase or c.code in off or c.name in off:
            continue
        for span, msg in c.run(program, ctx):
            out.append(Diagnostic(c.code, c.name, c.severity, msg, span, where))
    return out


# ============================================================================ checks

_SSA_MEMO: list = []   # [(program, its SSA form)]: the three frontend checks convert the same program


def ssa_form(program: Program) -> Program:
    """The frontend (pre-SSA) program as ConvertToSSA + FlattenCallExpr make it, for the
    ``PRE_PIPELINE`` checks: they reason about values, and in SSA form one Var is one value
    (a re-assigned Var would hide a dead store; a re-assigned ``create_tile`` result would look
    unwritten) and one call is one statement. A program these passes reject is returned as is:
    the pipeline reports the error."""
    memo = tuple(_SSA_MEMO)  # one read: another thread may replace the entry between two
    if memo and memo[0][0] is program:
        return memo[0][1]
    try:
        out = flatten_call_expr.run(convert_to_ssa.run(program, None), None)
    except PyptoError:
        out = program
    _SSA_MEMO[:] = [(program, out)]
    return out


def _write_roots(f) -> set[int]:
    """ids of parameters written somewhere in ``f`` (through assemble/store chains)."""
    root = {id(p): id(p) for p in f.params}
    written = set()
    for s in iter_stmts(f.body):
        if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op in ("tensor.assemble", "tile.store"):
            tgt = s.value.args[0 if s.value.op == "tensor.assemble" else 2]
            if id(tgt) in root:
                root[id(s.var)] = root[id(tgt)]
                written.add(root[id(tgt)])
        elif isinstance(s, (ForStmt, WhileStmt)):
            for it, init, rv in zip(s.iter_args, s.init_values, s.return_vars):
                if id(init) in root:
                    root[id(it)] = root[id(rv)] = root[id(init)]
        elif isinstance(s, AssignStmt) and not isinstance(s.value, Call):
            pass
    return written


@check("PTO-W001", "OutParamWriteDropped", Severity.Warning, DiagnosticPhase.PRE_PIPELINE)
def _out_param_write_dropped(program: Program, ctx):
    """``out = expr`` on an Out parameter rebinds the name only; the caller's buffer is never written."""
    frontend = {f.name: f for f in program.functions}
    program = ssa_form(program)
    found = []
    for f in program.functions:
        written = _write_roots(f)
        for p, d in zip(f.params, f.directions):
            if d != ParamDirection.Out or id(p) in written:
                continue
            # SSA form has dropped plain copies (``out = acc``); the frontend program still has them
            pre = frontend.get(f.name)
            copies = [s for s in (iter_stmts(pre.body) if pre is not None else ())
                      if isinstance(s, AssignStmt) and isinstance(s.value, Var) and s.value.name != p.name]
            for s in [*iter_stmts(f.body), *copies]:
                if isinstance(s, AssignStmt) and s.var.name == p.name and isinstance(s.value, (Call, Var)):
                    found.append((s.span, f"Assigning to Out parameter '{p.name}' in function '{f.name}' rebinds the "
                                          f"name only — the caller's buffer is never written. Use "
                                          f"'{p.name}[:] = <expr>' (or pl.store / pl.assemble) to write it"))
                    break
    return found


@check("PTO-W007", "InParamWritten", Severity.Warning, DiagnosticPhase.PRE_PIPELINE)
def _in_param_written(program: Program, ctx):
    """A tensor parameter declared ``In`` is written: it is treated as ``InOut`` (the write reaches
    the caller's tensor, tasks are ordered around it), as the reference writes it in place
    (:mod:`pypto.passes.param_writes`)."""
    found = []
    for f, p, span, how in param_writes.find_writes(ssa_form(program)):
        found.append((span, f"'{f.name}' writes its In parameter '{p.name}' ({how}): it is treated as "
                            f"pl.InOut (the caller's tensor is written in place); declare it pl.InOut[...] "
                            f"(or pl.Out[...] if the function never reads it) to say so"))
    return found


@check("PTO-W002", "UnusedVariable", Severity.Warning, DiagnosticPhase.PRE_PIPELINE)
def _unused_variable(program: Program, ctx):
    """A value computed and never used."""
    program = ssa_form(program)
    found = []
    for f in program.functions:
        used = {id(x) for s in iter_stmts(f.body) for e in use_exprs(s) for x in walk_expr(e) if isinstance(x, Var)}
        for s in iter_stmts(f.body):
            if isinstance(s, AssignStmt) and id(s.var) not in used and not s.var.name.startswith("_") \
                    and not (isinstance(s.value, Call) and s.value.op in ("tile.store", "tensor.assemble")):
                found.append((s.span, f"Unused variable '{s.var.name}' in function '{f.name}'"))
    return found


@check("PTO-W003", "ParallelStoreOverlap", Severity.Warning, DiagnosticPhase.PRE_PIPELINE)
def _parallel_store_overlap(program: Program, ctx):
    """Tasks of one ``pl.parallel`` loop store into overlapping regions with no order between them
    (:mod:`pypto.passes.parallel_overlap`)."""
    return find(ssa_form(program))


@check("PTO-W004", "ScratchReadAfterReduction", Severity.Warning, DiagnosticPhase.PRE_PIPELINE)
def _scratch_read_after_reduction(program: Program, ctx):
    """A tile read after a reduction used it as ``tmp_tile``: it holds the partial results then
    (:mod:`pypto.passes.scratch_reads`)."""
    from pypto.passes.scratch_reads import find

    return find(ssa_form(program))


def _padding_reduction(c: Call):
    """The ``Reduction`` trait of a tile call that reduces the whole tile, padding included (not
    row_prod / col_prod and the arg reductions: they reduce only the valid extent,
    pypto/ops/argreduce.py); else None."""
    r = op_trait(c.op, Reduction)
    return r if r is not None and r.reads_padding and c.op.startswith("tile.") else None


@check("PTO-P001", "ReductionOverPadding", Severity.Warning, DiagnosticPhase.POST_PIPELINE)
def _reduction_over_padding(program: Program, ctx):
    """A reduction over a tile with a ``valid_shape``: the padding participates (fillpad first)."""
    found = []
    for f in program.functions:
        for s in iter_stmts(f.body):
            if isinstance(s, AssignStmt) and isinstance(s.value, Call) and _padding_reduction(s.value):
                x = s.value.args[0]
                t = getattr(x, "type", None)
                if isinstance(t, TileType) and t.valid_shape is not None:
                    op = s.value.op.split(".")[1]
                    pad = {"max": "min", "min": "max"}.get(_padding_reduction(s.value).kind, "zero")
                    name = getattr(x, "name", "t")
                    # fillpad's result is fully valid (the reference's type rule): feed it to the
                    # reduction only; storing it would write the padding into the output too
                    found.append((s.span, f"{op} reads the whole {list(t.shape)} tile but only {list(t.valid_shape)} "
                                          f"is valid: the padding takes part in the reduction. Fill it with the "
                                          f"reduction's identity inside the call: pl.{op}(pl.fillpad({name}, "
                                          f"pl.PadValue.{pad}), ...); the filled tile is fully valid, so keep "
                                          f"storing '{name}' itself"))
    return found


_LONG_REDUCTION = 1024
_LONG_LOOP = 64


@check("PTO-P002", "LowPrecisionAccumulation", Severity.Warning, DiagnosticPhase.POST_PIPELINE)
def _low_precision_accumulation(program: Program, ctx):
    """FP16/BF16 accumulation over a long reduction: the error grows with the length."""
    found = []
    for f in program.functions:
        for s in iter_stmts(f.body):
            red = _padding_reduction(s.value) if isinstance(s, AssignStmt) and isinstance(s.value, Call) else None
            if red is not None and red.kind == "sum":
                t = s.value.args[0].type
                n = t.shape[red.axis]
                if t.dtype.name in ("FP16", "BF16") and n >= _LONG_REDUCTION:
                    found.append((s.span, f"{s.value.op.split('.')[1]} accumulates {n} {t.dtype.name} values in "
                                          f"{t.dtype.name}; the error grows with the length. Cast to FP32 first "
                                          "(pl.cast(t, pl.FP32)) and accumulate there"))
            if isinstance(s, ForStmt):
                trips = _trip_count(s)
                if trips is None or trips < _LONG_LOOP:
                    continue
                for it, y in zip(s.iter_args, s.body[-1].values if s.body and hasattr(s.body[-1], "values") else ()):
                    t = it.type
                    if getattr(getattr(t, "dtype", None), "name", "") in ("FP16", "BF16") and _is_accumulation(s, it, y):
                        found.append((s.span, f"'{it.name}' accumulates in {t.dtype.name} over {trips} iterations; "
                                              "the rounding error grows with the trip count. Accumulate in FP32"))
    return found


def _trip_count(s: ForStmt):
    if all(isinstance(x, ConstInt) for x in (s.start, s.stop, s.step)) and s.step.value != 0:
        return max(0, -(-(s.stop.value - s.start.value) // s.step.value))
    return None


def _is_accumulation(loop: ForStmt, it: Var, y) -> bool:
    for st in iter_stmts(loop.body):
        if isinstance(st, AssignStmt) and st.var is y and isinstance(st.value, Call) \
                and st.value.op.split(".")[1] in ("add", "adds", "sub", "matmul_acc") \
                and any(a is it for a in st.value.args):
            return True
    return False


def cast_chains(program: Program):
    """Every chain of consecutive ``tile.cast`` ops of one rounding mode in ``program`` (what
    LegalizeTileCast expands a cast into): yields ``(last statement, dtype names from source to destination, mode)``; a lone
    cast is a chain of one hop."""
    for f in program.functions:
        producer = {}
        for s in iter_stmts(f.body):
            if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tile.cast":
                producer[id(s.var)] = s
        consumed = {id(s.value.args[0]) for s in producer.values()}
        for s in producer.values():
            if id(s.var) in consumed:
                continue  # not the end of a chain
            chain = [s]
            # LegalizeTileCast keeps the mode on every hop: a cast of another mode feeding this one
            # was written so (LowerCompositeOps' round-to-INT32-and-back is deliberate), not a chain
            while id(chain[0].value.args[0]) in producer \
                    and producer[id(chain[0].value.args[0])].value.args[2] == chain[0].value.args[2]:
                chain.insert(0, producer[id(chain[0].value.args[0])])
            types = [chain[0].value.args[0].type.dtype.name] + [c.var.type.dtype.name for c in chain]
            yield s, types, s.value.args[2]


@check("PTO-P003", "InexactCastChain", Severity.Warning, DiagnosticPhase.POST_PIPELINE)
def _inexact_cast_chain(program: Program, ctx):
    """A multi-hop cast chain (from LegalizeTileCast) that double-rounds for values in range."""
    found = []
    for s, types, mode in cast_chains(program):
        if len(types) < 3:
            continue
        v = classify_chain(types, mode)
        if not v.exact:
            found.append((s.span, f"cast chain {' -> '.join(types)} (mode '{mode}') is not bit-identical to a "
                                  f"direct cast: {v.reason}"))
    return found


@check("PTO-P004", "ReadBeforeWrite", Severity.Warning, DiagnosticPhase.PRE_PIPELINE)
def _read_before_write(program: Program, ctx):
    """A tile from ``create_tile`` read before anything wrote it: its contents are unspecified."""
    # (with matmul_acc into accumulator windows made explicit: the device writes the accumulator)
    program = ssa_form(acc_windows.run(program, ctx))
    found = []
    for f in program.functions:
        fresh = {}
        for s, c in iter_calls(f.body):
            if c.op == "tile.create":
                if isinstance(s, AssignStmt) and s.value is c:
                    fresh[id(s.var)] = s.var
                continue
            op = get_op(c.op)
            for p, a in zip(op.params, c.args):
                # (a window accumulation writes its accumulator in place: the rest is not read)
                scratch = p.name in ("tmp_tile", "tmp", "acc_out", "dst") or (
                    c.op == "tile.matmul_acc_window" and p.name == "acc")
                if p.kind in VALUE_KINDS and isinstance(a, Var) and id(a) in fresh and not scratch:
                    found.append((c.span, f"tile '{a.name}' from create_tile is read by {c.op} before anything "
                                          "wrote it: its contents are whatever the buffer held"))
                    del fresh[id(a)]
    return found


@check("PH001", "TileInnermostDimGranularity", Severity.PerfHint, DiagnosticPhase.POST_PIPELINE)
def _innermost_dim(program: Program, ctx):
    """A tile load whose rows are short moves many small bursts."""
    threshold = 512 if getattr(getattr(ctx, "platform", None), "arch", "a2a3") == "a2a3" else 128
    found = []
    for f in program.functions:
        if f.func_type not in KERNEL_TYPES:
            continue
        for s in iter_stmts(f.body):
            if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tile.load":
                t = s.var.type
                row = t.shape[-1] * t.dtype.itemsize
                if row < threshold:
                    rows = t.nbytes // row
                    found.append((s.span, f"tile.load has innermost dim = {row}B (tile {t.dtype.name}{list(t.shape)}); "
                                          f"moves {t.nbytes}B as {rows} x {row}B rows; recommended >= {threshold}B for "
                                          f"{ctx.platform.arch}"))
    return found


_MIXED_OPS = frozenset({"add", "sub", "mul", "div", "maximum", "minimum", "cmp", "sel"})


@check("PTO-W005", "MixedDtypePromotion", Severity.Warning, DiagnosticPhase.PRE_PIPELINE)
def _mixed_dtype_promotion(program: Program, ctx):
    """A binary op on operands of two dtypes: one is converted (the promotion rule of
    :func:`pypto.ops.rules.promote`) — said at the op, so that no promotion is silent (with bare
    ``pl.Tensor`` annotations the dtypes come from the call's tensors)."""
    found = []
    for f in ssa_form(program).functions:
        for s, c in iter_calls(f.body):
            if c.op.split(".")[-1] not in _MIXED_OPS:
                continue
            arrays = [a for a in c.args if isinstance(getattr(a, "type", None), (TensorType, TileType))]
            if c.op.endswith("sel"):
                arrays = arrays[1:]   # (the mask is BOOL by definition)
            dts = [a.type.dtype for a in arrays]
            if len(dts) == 2 and dts[0] != dts[1]:
                res = getattr(getattr(s, "var", None), "type", None)
                to = res.dtype.name if res is not None and hasattr(res, "dtype") and not c.op.endswith("cmp") else \
                    "their common type"
                found.append((c.span, f"{c.op.split('.')[-1]} mixes {dts[0].name} and {dts[1].name} operands: "
                                      f"they are converted to {to} (the promotion rule: float over int, the wider "
                                      f"type). Cast explicitly (pl.cast(x, ...)) to make the conversion visible"))
    return found


@check("PTO-W006", "CastModeIgnoredByDevice", Severity.Warning, DiagnosticPhase.PRE_PIPELINE)
def _cast_mode_ignored(program: Program, ctx):
    """A ``pl.cast`` into FP8E4M3FN / FP8E5M2 / HF8 / FP4 with a rounding mode the device does not
    apply (:func:`pypto.numerics.cast.device_mode`: FP8 rounds to nearest-even, HF8 ties away, FP4
    has no round-to-odd). Both executors round as the device does; the default mode and the one
    the device uses are not reported."""
    from pypto.numerics.cast import device_mode, normalize_mode

    found = []
    for f in ssa_form(program).functions:
        for _, c in iter_calls(f.body):
            if c.op not in ("tensor.cast", "tile.cast"):
                continue
            dst, mode = c.args[1], normalize_mode(c.args[2])
            applied = device_mode(dst, mode)
            if applied != mode and mode != "round" and not (applied == "rint" and mode == "none"):
                found.append((c.span, f"cast to {dst.name} with mode '{mode}': the device rounds casts into "
                                      f"{dst.name} with '{applied}' whatever mode is asked, and so do the "
                                      f"simulators; say mode='{applied}' to make it visible"))
    return found